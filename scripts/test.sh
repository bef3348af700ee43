#!/usr/bin/env bash
# Every check, as CI runs it: formatting, lints, then all tests (unit, integration, doc) with
# every feature; then the Python package: build the wheel, install it into .venv, run pytest; then
# the release wheel in a fresh venv without Rust (scripts/wheel_check.sh); then the proxy through
# the real openai and anthropic SDKs.
# Developers run the same script.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings
echo "== cargo test"
cargo test --workspace --all-features
echo "== the engine without its peer emulation (feature compat off): lints and unit tests"
cargo clippy -p tightfit --all-targets -- -D warnings
cargo test -p tightfit --lib

echo "== python: wheel, install, pytest"
# the virtual environment at the repository root (gitignored), made once and reused
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# the build and test tools and the peer libraries (a no-op when they are there)
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r crates/tightfit-py/requirements-test.txt
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
# a dev-profile wheel: it shares the build with the Rust tests above instead of a release build
.venv/bin/maturin build --quiet --profile dev --interpreter .venv/bin/python \
  -m crates/tightfit-py/Cargo.toml --out "$wheels"
.venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheels"/tightfit-*.whl
# TIGHTFIT_BIN: the Rust binary (built by cargo test above) the package's command is compared with
TIGHTFIT_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/tightfit" .venv/bin/python -m pytest crates/tightfit-py/tests -q -p no:cacheprovider

echo "== the wheel as users get it: size-first profile, a fresh venv without Rust, the command inside"
TIGHTFIT_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/tightfit" scripts/wheel_check.sh .venv/bin/python

echo "== the proxy through the real openai and anthropic SDKs (tightfit serve, a fake upstream)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r crates/tightfit-proxy/tests/sdk/requirements.txt
# the binary `cargo test` built above; built here only when missing (a plain `cargo build`
# resolves other features than the tests' build did, and would compile the workspace again)
bin="${CARGO_TARGET_DIR:-$PWD/target}/debug/tightfit"
[ -x "$bin" ] || cargo build -p tightfit-cli
TIGHTFIT_BIN="$bin" .venv/bin/python -m pytest crates/tightfit-proxy/tests/sdk -q -p no:cacheprovider

echo "== peer suites: autogen-core's and langchain-core's own tests against the adapters"
crates/tightfit-py/peer_suites/run_autogen_core.sh "$PWD/.venv/bin/python" -q
crates/tightfit-py/peer_suites/run_langchain_core.sh
