"""tightfit.compat.ag2 against AG2 itself (ag2 0.14), same inputs, same settings.

Inputs: the first 100 and 1,000 messages and the whole of the 1M-token agent history of
``extreme_long.jsonl`` (4,857 real mini-swe-agent messages; the shared corpus beside the
repository). Token budgets 4k, 32k and 128k (``model="gpt-4o"``, whose AG2 cap is 128,000).
Prints the best of several runs per operation and the ratio AG2 / tightfit.

Our ``MessageTokenLimiter`` remembers what it counted (AG2 runs it on every turn over the
whole history), so it is timed both ways: ``first call`` on a new limiter each run, and
``again`` on the same limiter and history. The ``agent loop`` rows are what an agent sees:
500 turns of appending one message, then ``apply_transform`` and ``get_logs`` (as AG2's
``TransformMessages`` calls them), starting from the history less its last 500 messages;
AG2's side times every 25th turn and multiplies by 25 (its 500 turns take about 30 minutes).

    TIKTOKEN_CACHE_DIR=... python crates/tightfit-py/bench/bench_ag2.py

Needs ``ag2==0.14.0``; fills a tiktoken cache with the shared tool when none is set.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable

from benchkit import SHARED, agent_history, agent_loop, best, fmt

if "TIKTOKEN_CACHE_DIR" not in os.environ:
    cache = tempfile.mkdtemp(prefix="tiktoken-")
    subprocess.run([sys.executable, str(SHARED / "tools" / "tiktoken_cache.py"), cache], check=True, capture_output=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache

from autogen.agentchat.contrib.capabilities import transforms as peer  # noqa: E402

from tightfit.compat import ag2 as ours  # noqa: E402


def limit_and_log(limiter: Any) -> Callable[[list[dict[str, Any]]], Any]:
    """One AG2 turn of `limiter`, as ``TransformMessages`` runs it: apply, then log."""
    return lambda messages: limiter.get_logs(messages, limiter.apply_transform(messages))


def main() -> None:
    full = agent_history()
    sizes = [100, 1000, len(full)]
    rows: list[tuple[str, int, float, float]] = []
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet:
        for n in sizes:
            messages = full[:n]
            for keep_first in (False, True):
                for max_messages in (20, 200):
                    name = f"MessageHistoryLimiter(max_messages={max_messages}, keep_first={keep_first})"
                    a = peer.MessageHistoryLimiter(max_messages=max_messages, keep_first_message=keep_first)
                    b = ours.MessageHistoryLimiter(max_messages=max_messages, keep_first_message=keep_first)
                    rows.append((name, n, best(lambda: a.apply_transform(messages)), best(lambda: b.apply_transform(messages))))
            for budget in (4_000, 32_000, 128_000):
                name = f"MessageTokenLimiter({budget // 1000}k, per_message=2000, gpt-4o)"
                kwargs = dict(max_tokens=budget, max_tokens_per_message=2000, model="gpt-4o")
                a = peer.MessageTokenLimiter(**kwargs)
                b = ours.MessageTokenLimiter(**kwargs)
                theirs = best(lambda: a.apply_transform(messages))
                rows.append((name + " first call", n, theirs,
                             best(lambda: ours.MessageTokenLimiter(**kwargs).apply_transform(messages))))
                rows.append((name + " again", n, theirs, best(lambda: b.apply_transform(messages))))
                post = b.apply_transform(messages)
                theirs = best(lambda: a.get_logs(messages, post))
                rows.append((f"MessageTokenLimiter.get_logs ({budget // 1000}k) first call", n, theirs,
                             best(lambda: ours.MessageTokenLimiter(**kwargs).get_logs(messages, post))))
                rows.append((f"MessageTokenLimiter.get_logs ({budget // 1000}k) again", n, theirs,
                             best(lambda: b.get_logs(messages, post))))
            a = peer.TextMessageContentName()
            b = ours.TextMessageContentName()
            rows.append(("TextMessageContentName()", n, best(lambda: a.apply_transform(messages)), best(lambda: b.apply_transform(messages))))
        for budget in (32_000, 128_000):
            kwargs = dict(max_tokens=budget, max_tokens_per_message=2000, model="gpt-4o")
            rows.append((f"agent loop: 500 turns, MessageTokenLimiter({budget // 1000}k) + get_logs", len(full),
                         agent_loop(limit_and_log(peer.MessageTokenLimiter(**kwargs)), full, every=25),
                         agent_loop(limit_and_log(ours.MessageTokenLimiter(**kwargs)), full)))
    print(f"{'operation':<62} {'msgs':>6} {'AG2':>12} {'tightfit':>12} {'AG2/ours':>9}")
    for name, n, theirs, mine in rows:
        print(f"{name:<62} {n:>6} {fmt(theirs):>12} {fmt(mine):>12} {theirs / mine:>8.1f}×")


if __name__ == "__main__":
    main()
