"""tightfit.compat.langchain against langchain-core on the same inputs: the first 100, 1,000
and 4,857 ("5,000") messages of the 1M-token agent history in ../shared/data/extreme_long.jsonl
(`concat/mini-swe-deepseek/1M`), trimmed to 4k, 32k and 128k. Prints, per operation, the
best time of each side and the ratio peer / ours.

Not a test: run it by hand on a release build, with langchain-core and tiktoken installed::

    maturin develop --release -m crates/tightfit-py/Cargo.toml
    python crates/tightfit-py/bench/bench_langchain.py [--quick]

tiktoken's vocabularies come from ../shared/tools/tiktoken_cache.py (no download at run time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages
from langchain_core.messages import utils as peer

from tightfit.compat import langchain as ours

from benchkit import HISTORY, SHARED, agent_history, agent_loop, best


def history() -> list[BaseMessage]:
    return convert_to_messages(agent_history())


def tiktoken_counter() -> Callable[[list[BaseMessage]], int]:
    """A user's tiktoken counter (cl100k_base, 3 per message, names, tool calls)."""
    cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or Path.home() / ".cache" / "tightfit-tiktoken")
    subprocess.run([sys.executable, str(SHARED / "tools" / "tiktoken_cache.py"), str(cache)], check=True, capture_output=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")

    def tokens(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    def count(messages: list[BaseMessage]) -> int:
        total = 0
        for m in messages:
            content = m.content if isinstance(m.content, str) else json.dumps(m.content)
            total += 3 + tokens(content) + (1 + tokens(m.name) if m.name else 0)
            if isinstance(m, AIMessage):
                for c in m.tool_calls:
                    total += 3 + tokens(c["name"]) + tokens(json.dumps(c["args"], ensure_ascii=False))
            if isinstance(m, ToolMessage):
                total += tokens(m.tool_call_id)
        return total

    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    per = 0.2 if args.quick else 1.0
    full = history()
    cl100k = tiktoken_counter()
    sizes = [100, 1000, len(full)]
    budgets = [4_000, 32_000, 128_000]
    ops: list[tuple[str, str, dict[str, Any]]] = [
        ("trim last, 'approximate'", "count", {"token_counter": "approximate"}),
        ("trim last + system + start_on, count_tokens_approximately", "count",
         {"token_counter": peer.count_tokens_approximately, "include_system": True, "start_on": "human"}),
        ("trim first + allow_partial, 'approximate'", "count",
         {"token_counter": "approximate", "strategy": "first", "allow_partial": True}),
        ("trim last, a tiktoken function (the same on both sides)", "count", {"token_counter": cl100k}),
        ("trim last, len (max_tokens = budget/1000 messages)", "free", {"token_counter": len}),
    ]
    print(f"history: {HISTORY}; times are the best of repeated runs; ratio = langchain-core / tightfit")
    print(f"{'operation':58} {'msgs':>5} {'budget':>7} {'langchain':>11} {'tightfit':>10} {'ratio':>7}")
    for name, _kind, kw in ops:
        for n in sizes:
            messages = full[:n]
            for budget in budgets:
                max_tokens = budget // 1000 if kw["token_counter"] is len else budget
                call = dict(kw, max_tokens=max_tokens)
                theirs = peer.trim_messages(messages, **call)
                mine = ours._trim(messages, keep_tool_pairs=False, **call)
                assert mine == theirs, (name, n, budget)
                t_peer = best(lambda: peer.trim_messages(messages, **call), per)
                t_ours = best(lambda: ours.trim_messages(messages, **call), per)
                print(f"{name:58} {n:>5} {budget:>7} {t_peer * 1e3:>9.3f}ms {t_ours * 1e3:>8.3f}ms {t_peer / t_ours:>6.1f}x")
    # the switch from a tiktoken function to tightfit's exact counter: LangChain with the
    # tiktoken function against tightfit.compat.langchain with count_tokens
    name = "trim last: tiktoken fn (LangChain) vs count_tokens (ours)"
    for n in sizes:
        messages = full[:n]
        for budget in budgets:
            t_peer = best(lambda: peer.trim_messages(messages, max_tokens=budget, token_counter=cl100k), per)
            t_ours = best(lambda: ours.trim_messages(messages, max_tokens=budget, token_counter=ours.count_tokens), per)
            print(f"{name:58} {n:>5} {budget:>7} {t_peer * 1e3:>9.3f}ms {t_ours * 1e3:>8.3f}ms {t_peer / t_ours:>6.1f}x")
    # an agent's turns: the history grows by one message, and is trimmed to 128k again
    loops = [
        ("agent loop 500 turns, 'approximate'", 1, dict(token_counter="approximate"), dict(token_counter="approximate")),
        ("agent loop 500 turns, tiktoken fn vs count_tokens (LangChain: every 25th turn ×25)", 25,
         dict(token_counter=cl100k), dict(token_counter=ours.count_tokens)),
    ]
    for name, every, theirs_kw, ours_kw in loops:
        t_peer = agent_loop(lambda m: peer.trim_messages(m, max_tokens=128_000, **theirs_kw), full, every=every)
        t_ours = agent_loop(lambda m: ours.trim_messages(m, max_tokens=128_000, **ours_kw), full)
        print(f"{name:58} {len(full):>5} {128_000:>7} {t_peer * 1e3:>9.0f}ms {t_ours * 1e3:>8.0f}ms {t_peer / t_ours:>6.1f}x")
    for n in sizes:
        messages = full[:n]
        assert ours.count_tokens_approximately(messages) == peer.count_tokens_approximately(messages)
        t_peer = best(lambda: peer.count_tokens_approximately(messages), per)
        t_ours = best(lambda: ours.count_tokens_approximately(messages), per)
        print(f"{'count_tokens_approximately':58} {n:>5} {'-':>7} {t_peer * 1e3:>9.3f}ms {t_ours * 1e3:>8.3f}ms {t_peer / t_ours:>6.1f}x")


if __name__ == "__main__":
    main()
