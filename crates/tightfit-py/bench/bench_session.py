"""tightfit.Session from Python: a warm turn of an agent loop at 1,500 messages.

The first 1,501 messages of the 1M-token agent history (real mini-swe-agent messages), fitted
to 32k with the ``cache`` policy:

- *warm turn*: the session has fitted the 1,501 messages before and fits them again (the
  steady state of a turn: every dict hashed, the messages of the previous call taken back,
  the epoch's decision replayed), from a fresh list of fresh dicts each time, as a framework
  that rebuilds its messages hands them;
- *agent loop*: 200 turns from 1,300 messages, one message appended per turn, compactions
  included where they fall;
- the reference, in the same run: a stateless ``tightfit.Fitter().fit`` of the same turns
  (counts remembered, the cut decided afresh).

Run with a release build of the package installed: ``python crates/tightfit-py/bench/bench_session.py``.
"""

from __future__ import annotations

import copy

import tightfit
from benchkit import agent_history, agent_loop, best, fmt

BUDGET = 32_000


def main() -> None:
    history = agent_history()[:1_501]
    session = tightfit.Session("gpt-4o", budget=BUDGET)
    session.fit(history[:1_500])
    session.fit(history)
    result = session.fit(history)
    assert not result.report.session.compacted, "the warm turn replays the epoch's decision"

    fresh = [copy.deepcopy(history) for _ in range(12)]
    turns = iter(fresh * 100)
    warm = best(lambda: session.fit(next(turns)), most=200)
    fitter = tightfit.Fitter()
    fitter.fit(history, model="gpt-4o", budget=BUDGET)
    stateless = best(lambda: fitter.fit(next(turns), model="gpt-4o", budget=BUDGET), most=200)
    print(f"warm turn, 1,501 messages:  session {fmt(warm)}   stateless Fitter {fmt(stateless)}   "
          f"ratio {stateless / warm:.1f}x")

    loop_session = tightfit.Session("gpt-4o", budget=BUDGET)
    loop_fitter = tightfit.Fitter()
    full = agent_history()[:1_500]
    with_session = agent_loop(lambda m: loop_session.fit(m), full, turns=200)
    with_fitter = agent_loop(lambda m: loop_fitter.fit(m, model="gpt-4o", budget=BUDGET), full, turns=200)
    print(f"agent loop, 200 turns from 1,300 messages:  session {fmt(with_session / 200)} a turn   "
          f"stateless Fitter {fmt(with_fitter / 200)} a turn")


if __name__ == "__main__":
    main()
