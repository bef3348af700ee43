"""Shared helpers: the repository root (found from this file) and the corpus beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

# litellm (swarms counts tokens with it) reads its model table from the package, not the network
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


def repo_root() -> Path:
    """The repository root: the first parent whose Cargo.toml declares the workspace."""
    for parent in Path(__file__).resolve().parents:
        manifest = parent / "Cargo.toml"
        if manifest.is_file() and "[workspace]" in manifest.read_text(encoding="utf-8"):
            return parent
    raise RuntimeError("cannot find the repository root above " + __file__)


SHARED = repo_root().parent / "shared"
DATA = SHARED / "data"
CONFORMANCE = SHARED / "conformance"

#: The validity flags of the conformance README's rule 2: where the peer's output gained one of
#: these, ours must be valid instead of equal.
BROKEN = frozenset({"orphan_tool_result", "unanswered_tool_calls", "starts_with_tool", "reordered"})


@lru_cache(maxsize=None)
def conformance_cases(name: str) -> tuple[dict[str, Any], ...]:
    """Every case of a conformance file, read once per session."""
    path = CONFORMANCE / name
    if not path.is_file():
        pytest.fail(f"missing {path}: the shared conformance corpus must sit beside the repository")
    with path.open(encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


@lru_cache(maxsize=None)
def records(name: str) -> tuple[dict[str, Any], ...]:
    """Every record (one conversation a line) of a corpus file, read once per session."""
    path = DATA / name
    if not path.is_file():
        pytest.fail(f"missing {path}: the shared corpus must sit beside the repository")
    with path.open(encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def stats(name: str) -> dict[str, Any]:
    """The converter's figures for a corpus file (tiktoken o200k_base counts)."""
    table = json.loads((DATA / "stats.json").read_text(encoding="utf-8"))
    return next(entry for entry in table if entry["file"] == name)


def extreme(record_id: str) -> list[dict[str, Any]]:
    """The messages of one of the extreme histories of `extreme_long.jsonl`."""
    return next(r for r in records("extreme_long.jsonl") if r["id"] == record_id)["messages"]


LARGEST = "concat/mini-swe-deepseek/1M"


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """AG2's transforms module (the peer the AG2 adapters are checked against), with a tiktoken
    cache it can read offline (AG2 counts tokens with tiktoken)."""
    transforms = pytest.importorskip("autogen.agentchat.contrib.capabilities.transforms")
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        cache = tmp_path_factory.mktemp("tiktoken")
        subprocess.run([sys.executable, str(SHARED / "tools" / "tiktoken_cache.py"), str(cache)], check=True, capture_output=True)
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return transforms
