#!/usr/bin/env bash
# The Python wheel as users get it: built with the size-first `wheel` profile (stripped, LTO),
# installed into a fresh virtual environment whose PATH has no Rust toolchain, and used there:
# `tightfit --version`, `python -m tightfit count` and `tightfit fit` on a shipped example, then
# the smoke tests (the installed command against the Rust binary byte for byte, the package's
# stubs and exports, count, pipelines, validate, errors: the test files that need nothing but
# the package and pytest). Fails when the wheel is 15 MB or more.
#
# Usage: scripts/wheel_check.sh [PYTHON]
#   PYTHON        the interpreter with maturin beside it (default .venv/bin/python, as
#                 scripts/test.sh makes it); the fresh environment is made from it too
#   TIGHTFIT_BIN  the Rust binary the installed command is compared with (default: the debug
#                 build in the cargo target directory, built here if missing)
# Takes about 12 minutes on 2 cores from a cold target directory, nearly all of it the LTO
# build of the wheel (under 2 minutes of build when only the workspace's crates changed).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
python=${1:-.venv/bin/python}
maturin="$(dirname "$python")/maturin"
max_bytes=15000000

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "${TIGHTFIT_BIN:-}" ]; then
  cargo build --quiet -p tightfit-cli
  TIGHTFIT_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/tightfit"
fi
export TIGHTFIT_BIN

start=$SECONDS
"$maturin" build --quiet --interpreter "$python" -m crates/tightfit-py/Cargo.toml --out "$work/dist"
wheel=$(echo "$work"/dist/tightfit-*.whl)
bytes=$(stat -c %s "$wheel")
echo "wheel: $(basename "$wheel"), $bytes bytes, built in $((SECONDS - start)) s"
if [ "$bytes" -ge "$max_bytes" ]; then
  echo "the wheel is $bytes bytes: over the limit of $max_bytes" >&2
  exit 1
fi

start=$SECONDS
"$python" -m venv "$work/venv"
# the environment a user has: the fresh venv, the system's binaries, and no cargo or rustc
clean_path="$work/venv/bin:/usr/bin:/bin"
in_venv() { (cd "$work" && env PATH="$clean_path" "$@"); }
if in_venv sh -c 'command -v cargo || command -v rustc'; then
  echo "a Rust toolchain is on the clean PATH ($clean_path)" >&2
  exit 1
fi
in_venv pip install --quiet --disable-pip-version-check "$wheel" "pytest>=8"

example="$repo/data/examples/agent_session.json"
in_venv tightfit --version
in_venv python -m tightfit count "$example" > "$work/count.txt"
grep -q '^total 593 tokens' "$work/count.txt" || { cat "$work/count.txt"; echo "unexpected count" >&2; exit 1; }
in_venv tightfit fit "$example" --budget 300 > "$work/fitted.json" 2> "$work/report.txt"
in_venv python -c 'import json, sys; body = json.load(open(sys.argv[1])); assert body["messages"], body' "$work/fitted.json"
cat "$work/report.txt"

tests=crates/tightfit-py/tests
in_venv python -m pytest -q -p no:cacheprovider \
  "$repo/$tests/test_cli.py" "$repo/$tests/test_package.py" "$repo/$tests/test_count.py" \
  "$repo/$tests/test_pipeline.py" "$repo/$tests/test_validate.py" "$repo/$tests/test_errors.py"
echo "installed and checked in $((SECONDS - start)) s"
