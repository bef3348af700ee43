#!/usr/bin/env bash
# Every check, as CI runs it: formatting, lints, then all tests (unit, integration, doc) with
# every feature. Developers run the same script.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings
echo "== cargo test"
cargo test --workspace --all-features
