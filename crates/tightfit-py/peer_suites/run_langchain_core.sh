#!/usr/bin/env bash
# langchain-core's own tests of trim_messages (and count_tokens_approximately) against
# tightfit.compat.langchain: fetches langchain-core's source distribution (which ships its
# tests), copies tests/unit_tests/messages/test_utils.py beside langchain_core/conftest.py (which
# swaps the peer's functions for ours), and runs the trim_messages and
# count_tokens_approximately tests.
#
# Needs, in the Python environment that runs it ($PYTHON, default: the repository's .venv):
# tightfit installed, pytest, langchain-core==$VERSION.  Exit status: pytest's.
# Usage: crates/tightfit-py/peer_suites/run_langchain_core.sh [extra pytest args]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
version="${LANGCHAIN_CORE_VERSION:-1.7.2}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-binary :all: --no-deps -d "$work/sdist" "langchain-core==$version"
tar -xzf "$work"/sdist/langchain_core-*.tar.gz -C "$work"
suite="$work/suite"
mkdir -p "$suite"
cp "$work"/langchain_core-*/tests/unit_tests/messages/test_utils.py "$suite/"
cp "$here/langchain_core/conftest.py" "$suite/"
cd "$suite"
"$python" -m pytest test_utils.py -p no:cacheprovider -q -rA \
  -k "trim_messages or count_tokens_approximately" "$@"
