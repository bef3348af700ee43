"""tightfit.compat.swarms against swarms itself (swarms 16.0.3), same inputs, same settings.

Inputs: the first 100 and 1,000 messages and the whole of the 1M-token agent history of
``extreme_long.jsonl`` (4,857 real mini-swe-agent messages; the shared corpus beside the
repository). ``MessageTransforms(TransformConfig(enabled=True, model_name="gpt-4o", ...))``
with ``max_tokens`` 4k, 32k and 128k, and with ``max_messages=100`` (gpt-4o's window
besides). Ours is timed on a new ``MessageTransforms`` each run ("first call") and on one kept
across runs ("again": it remembers each message's tokens, as an agent's transforms do from
turn to turn). Prints the best of several runs per operation (a single run where one takes more than
a few seconds) and the ratio swarms / tightfit.

swarms removes one message at a time and recounts the whole remaining history with litellm
after each removal, so a history far over the limit costs it minutes (4 to 5 for 4,857
messages). The ``agent loop`` row is what an agent sees: 500 turns of appending one message and
then ``transform_messages`` at 128k, starting from the history less its last 500 messages;
swarms' side times every ``--every``-th turn (default 100) and multiplies by that number (its
turns cost about the same each; all 500 would take about a day and a half). The whole script
takes about 50 minutes.

    python crates/tightfit-py/bench/bench_swarms.py [--every N] [--quick]

``--quick`` leaves out the whole history (minutes on swarms' side) and the agent loop. Needs
``swarms==16.0.3``; litellm reads its model table from the package, and swarms' workspace goes
to a temporary directory, so nothing is downloaded or written beside the script.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from benchkit import agent_history, agent_loop, best, fmt

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WORKSPACE_DIR", tempfile.mkdtemp(prefix="swarms-workspace-"))
os.environ.setdefault("SWARMS_TELEMETRY_ON", "false")

from loguru import logger  # noqa: E402

import swarms.structs.transforms as peer  # noqa: E402

from tightfit.compat import swarms as ours  # noqa: E402

logger.disable("swarms")  # its warnings (one per empty message counted) would be timed too
peer.llm_backend.backend_module()  # import litellm before timing


def transforms(module: Any, **config: Any) -> Any:
    return module.MessageTransforms(module.TransformConfig(enabled=True, model_name="gpt-4o", **config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=100, help="swarms' agent loop: time every N-th turn, times N")
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 messages only, no agent loop")
    args = parser.parse_args()
    full = agent_history()
    sizes = [100, 1000] + ([] if args.quick else [len(full)])
    operations = [(f"transform_messages, max_tokens={b // 1000}k", {"max_tokens": b}) for b in (4_000, 32_000, 128_000)]
    operations.append(("transform_messages, max_messages=100", {"max_messages": 100}))
    rows: list[tuple[str, int, float, float]] = []
    for n in sizes:
        messages = full[:n]
        for name, config in operations:
            a, b = transforms(peer, **config), transforms(ours, **config)
            theirs = best(lambda: a.transform_messages(messages))
            # ours remembers the messages' counts: a new MessageTransforms each run, then one
            # kept across runs (as a swarms agent keeps it, turn after turn)
            first = best(lambda: transforms(ours, **config).transform_messages(messages))
            rows.append((name + " first call", n, theirs, first))
            rows.append((name + " again", n, theirs, best(lambda: b.transform_messages(messages))))
            print(f"  {name} on {n} messages: swarms {fmt(theirs).strip()}", flush=True)
    if not args.quick:
        rows.append((f"agent loop: 500 turns at 128k (swarms: every {args.every}th, ×{args.every})", len(full),
                     agent_loop(transforms(peer, max_tokens=128_000).transform_messages, full, every=args.every),
                     agent_loop(transforms(ours, max_tokens=128_000).transform_messages, full)))
    print(f"{'operation':<62} {'msgs':>6} {'swarms':>12} {'tightfit':>12} {'swarms/ours':>11}")
    for name, n, theirs, mine in rows:
        print(f"{name:<62} {n:>6} {fmt(theirs):>12} {fmt(mine):>12} {theirs / mine:>10.1f}×")


if __name__ == "__main__":
    main()
