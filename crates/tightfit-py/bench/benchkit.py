"""What the peer benchmarks share: the input history, the timer, the agent loop, the format.

The scripts beside this file import it (a script's own folder is on Python's path).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "Cargo.toml").is_file() and "[workspace]" in (p / "Cargo.toml").read_text())
SHARED = ROOT.parent / "shared"
#: The 1M-token agent history of the shared corpus: 4,857 real mini-swe-agent messages.
HISTORY = "concat/mini-swe-deepseek/1M"


def agent_history() -> list[dict[str, Any]]:
    """The messages of :data:`HISTORY`, as OpenAI dicts."""
    with (SHARED / "data" / "extreme_long.jsonl").open(encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["id"] == HISTORY:
                return record["messages"]
    raise SystemExit(f"{HISTORY} is missing from the shared corpus")


def best(fn: Callable[[], Any], budget_s: float = 1.5, most: int = 30) -> float:
    """The best time of `fn` in seconds over up to `most` runs within about `budget_s`
    seconds: three runs at least, or one when it alone takes longer than `budget_s`."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < most and (len(times) < 3 or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if times[0] > budget_s:
            break
    return min(times)


def agent_loop(turn: Callable[[list[Any]], Any], full: list[Any], turns: int = 500, every: int = 1) -> float:
    """Seconds for `turns` turns of an agent: append the next message of `full`, then
    `turn(messages)`, starting from `full` less its last `turns` messages. With `every` > 1
    only every `every`-th turn is timed (the messages are still appended) and the time is
    scaled up by `every`: for a peer whose turns cost about the same each and take hours."""
    messages = list(full[: len(full) - turns])
    elapsed = 0.0
    for n, message in enumerate(full[len(full) - turns :], 1):
        messages.append(message)
        if n % every:
            continue
        start = time.perf_counter()
        turn(messages)
        elapsed += time.perf_counter() - start
    return elapsed * every


def fmt(seconds: float) -> str:
    """A time in s, ms or µs, right-aligned."""
    if seconds >= 1:
        return f"{seconds:9.2f} s "
    return f"{seconds * 1e3:9.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:9.1f} µs"
