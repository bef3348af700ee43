"""Speed of tightfit.compat.autogen_core against autogen-core 0.7.5, on the same inputs.

Histories: the first 100, 1,000 and 5,000 messages of real agent transcripts in
``../shared/data/extreme_long.jsonl`` (OpenAI messages; a run of tool results becomes one
autogen results message, so the autogen histories are a little shorter). Budgets for the
token-limited context: 4k, 32k and 128k tokens, counted by autogen-ext's
``OpenAIChatCompletionClient("gpt-4o")``.

Operations (each: best of several runs, or one run when it is slow):

- ``buffered`` / ``head_and_tail``: ``get_messages()`` of a filled context (buffer 50; head 5,
  tail 50). Ours is timed warm (the engine's copy is up to date, as in an agent loop) and cold
  (a context just filled, so the first call copies every message into the engine).
- ``token_limited <budget>``: ``get_messages()`` of a filled context: cold for both (autogen
  has nothing to reuse; ours counts every message once).
- ``count_tokens``: the client's count of the whole history vs the engine's copy.
- ``agent loop``: 500 turns of ``add_message`` + ``get_messages()`` on the token-limited
  context at 128k, starting from the history less its last 500 messages.

autogen's token-limited context re-counts the whole history after each message it drops, so
it is slow on long histories: it is measured only where one run is estimated to take less than
``--peer-limit`` seconds (default 60); the others are printed as skipped with the estimate.

Usage: python crates/tightfit-py/bench/bench_autogen_core.py [--sizes 100,1000,5000]
Needs autogen-core and autogen-ext[openai] 0.7.5; tiktoken's vocabularies come from
``TIKTOKEN_CACHE_DIR``, filled from ``../shared/tools/tiktoken_cache.py`` when unset.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "Cargo.toml").is_file() and (p / "crates").is_dir())
SHARED = ROOT.parent / "shared"

if not os.environ.get("TIKTOKEN_CACHE_DIR"):
    cache = Path(tempfile.gettempdir()) / "tightfit-bench-tiktoken"
    subprocess.run([sys.executable, str(SHARED / "tools" / "tiktoken_cache.py"), str(cache)], check=True, capture_output=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)

import autogen_core.model_context as peer  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import (  # noqa: E402
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.openai import OpenAIChatCompletionClient  # noqa: E402

from tightfit.compat import autogen_core as ours  # noqa: E402

BUDGETS = [4_000, 32_000, 128_000]


def history(n: int) -> list[Any]:
    """The first ``n`` OpenAI messages of the long agent transcripts, as autogen messages."""
    openai: list[dict[str, Any]] = []
    with (SHARED / "data" / "extreme_long.jsonl").open(encoding="utf-8") as f:
        records = {r["id"]: r for r in map(json.loads, f)}
    for name in ["concat/mini-swe-deepseek/1M", "concat/tau-bench-airline/250k"]:
        openai += records[name]["messages"]
    return autogen_messages(openai[:n])


def autogen_messages(openai: list[dict[str, Any]]) -> list[Any]:
    """OpenAI dicts as autogen messages (a run of tool results is one results message)."""
    out: list[Any] = []
    for m in openai:
        role = m["role"]
        if role == "system":
            out.append(SystemMessage(content=m["content"]))
        elif role == "user":
            out.append(UserMessage(content=m["content"], source="user"))
        elif role == "assistant" and m.get("tool_calls"):
            calls = [
                FunctionCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                for c in m["tool_calls"]
            ]
            out.append(AssistantMessage(content=calls, source="assistant", thought=m.get("content") or None))
        elif role == "assistant":
            out.append(AssistantMessage(content=m.get("content") or "", source="assistant"))
        else:
            result = FunctionExecutionResult(content=m["content"], name=m.get("name", "tool"), call_id=m["tool_call_id"])
            if out and isinstance(out[-1], FunctionExecutionResultMessage):
                out[-1].content.append(result)
            else:
                out.append(FunctionExecutionResultMessage(content=[result]))
    return out


def now(coro: Any) -> Any:
    """Runs a coroutine that never waits (the contexts' methods), without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("the coroutine waited")


def filled(make: Callable[[], Any], messages: list[Any]) -> Any:
    context = make()
    for m in messages:
        now(context.add_message(m))
    return context


def best(run: Callable[[], Any], *, min_time: float = 0.3, max_runs: int = 200) -> float:
    """The best time of several runs (one when a run takes over ``min_time``)."""
    times: list[float] = []
    spent = 0.0
    while len(times) < max_runs and (spent < min_time or len(times) < 3):
        start = time.perf_counter()
        run()
        t = time.perf_counter() - start
        times.append(t)
        spent += t
        if t > min_time:
            break
    return min(times)


def cold(make: Callable[[], Any], messages: list[Any]) -> float:
    """The first ``get_messages`` of a freshly filled context (a new context per run)."""
    times = []
    for _ in range(3):
        context = filled(make, messages)
        start = time.perf_counter()
        now(context.get_messages())
        times.append(time.perf_counter() - start)
        if times[-1] > 1.0:
            break
    return min(times)


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def row(size: int, n_autogen: int, op: str, peer_s: float | None, ours_s: float, note: str = "") -> None:
    ratio = f"{peer_s / ours_s:,.1f}×" if peer_s is not None and ours_s > 0 else "-"
    print(f"| {size:>5} | {n_autogen:>5} | {op:<26} | {fmt(peer_s):>11} | {fmt(ours_s):>11} | {ratio:>9} | {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--peer-limit", type=float, default=60.0, help="skip a peer run estimated longer (s)")
    args = parser.parse_args()
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-used")
    client.count_tokens([UserMessage(content="warm up", source="user")])  # tiktoken loads its vocabulary

    print("| msgs | autogen msgs | operation | autogen-core | tightfit | speed-up | note")
    print("| ---: | ---: | --- | ---: | ---: | ---: | --- |")
    peer_cost: dict[int, float] = {}  # per budget: seconds per (message²) of the last peer run
    for size in [int(s) for s in args.sizes.split(",")]:
        messages = history(size)
        n = len(messages)
        for op, mk_peer, mk_ours in [
            (
                "buffered(50)",
                lambda: peer.BufferedChatCompletionContext(50),
                lambda: ours.BufferedChatCompletionContext(50),
            ),
            (
                "head_and_tail(5, 50)",
                lambda: peer.HeadAndTailChatCompletionContext(5, 50),
                lambda: ours.HeadAndTailChatCompletionContext(5, 50),
            ),
        ]:
            p, o = filled(mk_peer, messages), filled(mk_ours, messages)
            assert now(p.get_messages())[-1] is now(o.get_messages())[-1]
            peer_s = best(lambda: now(p.get_messages()))
            row(size, n, op, peer_s, best(lambda: now(o.get_messages())), "warm")
            row(size, n, op, peer_s, cold(mk_ours, messages), "cold: first call copies the history")

        ours_count = best(lambda: ours.count_tokens_openai(messages, "gpt-4o"))
        peer_count = best(lambda: client.count_tokens(messages))
        assert client.count_tokens(messages) == ours.count_tokens_openai(messages, "gpt-4o")
        row(size, n, "count_tokens", peer_count, ours_count, f"{client.count_tokens(messages):,} tokens")

        for budget in BUDGETS:
            mk_peer = lambda: peer.TokenLimitedChatCompletionContext(client, token_limit=budget)  # noqa: E731
            mk_ours = lambda: ours.TokenLimitedChatCompletionContext(client, token_limit=budget)  # noqa: E731
            ours_s = cold(mk_ours, messages)
            estimate = peer_cost.get(budget, 0.0) * n * n
            if estimate > args.peer_limit:
                row(size, n, f"token_limited({budget // 1000}k)", None, ours_s, f"autogen skipped: ~{estimate:,.0f} s est.")
                continue
            p = filled(mk_peer, messages)
            start = time.perf_counter()
            expected = now(p.get_messages())
            peer_s = time.perf_counter() - start
            peer_cost[budget] = peer_s / (n * n)
            got = now(filled(mk_ours, messages).get_messages())
            same = "same output" if got == expected else f"output differs ({len(got)} vs {len(expected)} msgs)"
            row(size, n, f"token_limited({budget // 1000}k)", peer_s, ours_s, same)

        if size >= 1000:
            loop_start = messages[:-500]
            turns = messages[-500:]

            def loop(make: Callable[[], Any]) -> float:
                context = filled(make, loop_start)
                now(context.get_messages())
                start = time.perf_counter()
                for m in turns:
                    now(context.add_message(m))
                    now(context.get_messages())
                return time.perf_counter() - start

            ours_s = loop(lambda: ours.TokenLimitedChatCompletionContext(client, token_limit=128_000))
            estimate = peer_cost.get(128_000, 0.0) * n * n * 500
            if estimate > args.peer_limit:
                row(size, n, "agent loop 500 (128k)", None, ours_s, f"autogen skipped: ~{estimate:,.0f} s est.")
            else:
                peer_s = loop(lambda: peer.TokenLimitedChatCompletionContext(client, token_limit=128_000))
                row(size, n, "agent loop 500 (128k)", peer_s, ours_s)


if __name__ == "__main__":
    main()
