"""Every adapter against its peer, one after the other: AG2, autogen-core, LangChain, swarms.

Each script times our adapter and the real peer on the same inputs from ../shared/data/ (the
first 100, 1,000 and all 4,857 messages of the 1M-token agent history; budgets 4k, 32k and
128k), prints the ratio per operation and a 500-turn agent loop. Run on a release build with
the peers installed (``crates/tightfit-py/requirements-test.txt``)::

    maturin develop --release -m crates/tightfit-py/Cargo.toml
    python crates/tightfit-py/bench/bench_all.py [ag2 autogen_core langchain swarms]

It takes about two hours (swarms' side alone about 50 minutes): the peers are slow where the
targets say they are. Python's
tiktoken (which the AG2 and autogen-ext peers count with) reads its vocabularies from a cache
filled by ../shared/tools/tiktoken_cache.py; no download happens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = next(p for p in HERE.parents if (p / "Cargo.toml").is_file() and "[workspace]" in (p / "Cargo.toml").read_text()).parent / "shared"
PEERS = ["ag2", "autogen_core", "langchain", "swarms"]


def main() -> None:
    chosen = sys.argv[1:] or PEERS
    unknown = sorted(set(chosen) - set(PEERS))
    if unknown:
        raise SystemExit(f"unknown peer {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    env = dict(os.environ)
    if "TIKTOKEN_CACHE_DIR" not in env:
        cache = tempfile.mkdtemp(prefix="tiktoken-")
        subprocess.run([sys.executable, str(SHARED / "tools" / "tiktoken_cache.py"), cache], check=True, capture_output=True)
        env["TIKTOKEN_CACHE_DIR"] = cache
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    failed = []
    for peer in chosen:
        print(f"\n=== {peer} ===", flush=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(HERE / f"bench_{peer}.py")], env=env)
        print(f"({peer}: {time.perf_counter() - start:.0f} s)", flush=True)
        if done.returncode:
            failed.append(peer)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
