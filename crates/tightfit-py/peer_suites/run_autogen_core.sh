#!/usr/bin/env bash
# autogen-core's own tests of its model contexts (tests/test_model_context.py from its source
# distribution), run against tightfit.compat.autogen_core by a conftest that swaps the classes.
#
# Usage: crates/tightfit-py/peer_suites/run_autogen_core.sh [PYTHON [PYTEST ARGS...]]
#   PYTHON defaults to .venv/bin/python at the repository root; tightfit must be installed in
#   it. The script installs what the tests import (pinned below) into that environment, fetches
#   the sdist with pip, and fills a tiktoken cache from ../shared/tools (the Ollama client's
#   counter loads cl100k_base, which would otherwise be downloaded).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/crates/tightfit-py/peer_suites"
python="${1:-$root/.venv/bin/python}"
if [ $# -gt 0 ]; then shift; fi
version=0.7.5

"$python" -m pip install --quiet "autogen-core==$version" "autogen-ext[openai,ollama]==$version" \
  "pytest>=8" "pytest-asyncio>=0.23"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-binary :all: --no-deps "autogen-core==$version" -d "$work"
tar -xzf "$work"/autogen_core-"$version".tar.gz -C "$work"
suite="$work/suite"
mkdir -p "$suite"
cp "$work/autogen_core-$version/tests/test_model_context.py" "$suite/"
cp "$here/autogen_core/conftest.py" "$suite/"

if [ -z "${TIKTOKEN_CACHE_DIR:-}" ]; then
  export TIKTOKEN_CACHE_DIR="$work/tiktoken"
  "$python" "$root/../shared/tools/tiktoken_cache.py" "$TIKTOKEN_CACHE_DIR" >/dev/null
fi

cd "$suite"
"$python" -m pytest test_model_context.py -p no:cacheprovider -o asyncio_mode=strict -rA "$@" 2>&1 \
  | sed "s#$work#<sdist>#g"
