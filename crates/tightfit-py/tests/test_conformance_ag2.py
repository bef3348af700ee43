"""Conformance: every case of the AG2 corpus (what ag2 0.14 itself returned) through
``tightfit.compat.ag2``, under the three rules of the corpus README:

1. where AG2's history was valid (no new ``orphan_tool_result``, ``unanswered_tool_calls``,
   ``starts_with_tool`` or ``reordered``), ours is equal as JSON;
2. where AG2's history was broken, ours is valid (no such fault the input did not have, and
   ``tightfit.validate`` finds nothing where the input was clean), in input order, within the
   same limit, and differs only by the messages of the steps AG2 split;
3. where AG2 raised, ours raises the same exception type.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import io
import json
from typing import Any

import pytest

import tightfit
from conftest import BROKEN, conformance_cases
from tightfit.compat import ag2

cases = conformance_cases


def faults(messages: list[dict[str, Any]]) -> set[str]:
    """The corpus's validity findings of a history (without ``reordered``)."""
    found = set()
    issued: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in issued:
                found.add("orphan_tool_result")
            answered.add(message.get("tool_call_id"))
        for call in message.get("tool_calls") or []:
            issued.add(call.get("id"))
    if issued - answered:
        found.add("unanswered_tool_calls")
    if messages and messages[0].get("role") == "tool":
        found.add("starts_with_tool")
    return found


def same_message(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two messages are one message, its content cut or not."""
    keys = ("role", "name", "tool_call_id", "tool_calls", "function_call")
    return all(a.get(k) == b.get(k) for k in keys)


def sources(output: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[int]:
    """The input index of each output message, matched in order (fails if out of order)."""
    found, start = [], 0
    for message in output:
        index = next((i for i in range(start, len(messages)) if same_message(message, messages[i])), None)
        assert index is not None, f"output message not found in input order: {message!r}"
        found.append(index)
        start = index + 1
    return found


def run(case: dict[str, Any], transform: type) -> Any:
    with contextlib.redirect_stdout(io.StringIO()):
        return transform(**case["params"]).apply_transform(case["input"])


def check(case: dict[str, Any], transform: type, limit_holds) -> None:
    messages = case["input"]
    pristine = copy.deepcopy(messages)
    expected = case["output"]
    if isinstance(expected, dict):
        kind = getattr(builtins, expected["error"].split(":", 1)[0])
        with pytest.raises(kind) as raised:
            run(case, transform)
        assert str(raised.value), "a clear message"
        return
    ours = run(case, transform)
    assert messages == pristine, "the input is not mutated"
    new_flags = set(case["meta"].get("new_flags", ()))
    if not new_flags & BROKEN:
        assert ours == expected
        return
    # rule 2: valid, ordered, within the limit, closest
    assert not faults(ours) - faults(messages), f"{case['case_id']}: {faults(ours)}"
    if not faults(messages) and not tightfit.validate(messages, "openai"):
        assert tightfit.validate(ours, "openai") == [], case["case_id"]
    ours_src = sources(ours, messages)
    assert limit_holds(case, ours, expected)
    # meta.src: the input index of each of AG2's messages ("~i" when AG2 changed its content)
    theirs = [messages[int(str(i).lstrip("~"))] for i in case["meta"]["src"] if i is not None]
    for i, message in zip(ours_src, ours):
        assert message in expected or any(same_message(message, e) for e in expected), case["case_id"]
    missing = [m for m in theirs if not any(same_message(m, o) for o in ours)]
    for message in missing:
        assert message.get("role") in ("tool", "function") or message.get("tool_calls"), (
            f"{case['case_id']}: only the messages of a split tool step may go, not {message!r}"
        )


def history_limit(case: dict[str, Any], ours: list, expected: list) -> bool:
    limit = case["params"].get("max_messages")
    return limit is None or len(ours) <= limit


text_tokens = ag2.MessageTokenLimiter()._native.text_tokens


def token_limit(case: dict[str, Any], ours: list, expected: list) -> bool:
    return text_tokens(ours) <= text_tokens(expected)


HISTORY = cases("ag2_message_history_limiter.jsonl")
TOKENS = cases("ag2_message_token_limiter.jsonl")


@pytest.mark.parametrize("case", HISTORY, ids=lambda c: c["case_id"])
def test_message_history_limiter(case: dict[str, Any]) -> None:
    check(case, ag2.MessageHistoryLimiter, history_limit)


@pytest.mark.parametrize("case", TOKENS, ids=lambda c: c["case_id"])
def test_message_token_limiter(case: dict[str, Any]) -> None:
    check(case, ag2.MessageTokenLimiter, token_limit)


def outcome(call: Any) -> Any:
    """What `call` returns, or the type and text of what it raises."""
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - compared, not handled
        return (type(e), str(e))


def test_a_token_limiter_kept_across_histories_answers_as_a_new_one() -> None:
    # AG2 keeps one limiter for an agent's life; ours remembers counts and cuts by text, so
    # one limiter per setting runs every case of the corpus, twice, and must give what a new
    # limiter gives each time
    shared: dict[str, ag2.MessageTokenLimiter] = {}
    compared = 0
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(2):
            for case in TOKENS:
                if isinstance(case["output"], dict):
                    continue
                key = json.dumps(case["params"], sort_keys=True)
                limiter = shared.setdefault(key, ag2.MessageTokenLimiter(**case["params"]))
                fresh = ag2.MessageTokenLimiter(**case["params"])
                kept = limiter.apply_transform(case["input"])
                assert kept == fresh.apply_transform(case["input"]), case["case_id"]
                logs = outcome(lambda: limiter.get_logs(case["input"], kept))
                assert logs == outcome(lambda: fresh.get_logs(case["input"], kept)), case["case_id"]
                compared += 1
    assert compared > 1000 and len(shared) < compared / 4, "limiters are shared across many histories"


def test_the_corpus_is_whole() -> None:
    assert len(HISTORY) == 748 and len(TOKENS) == 719
    rule = lambda c: "raise" if isinstance(c["output"], dict) else (
        "closest valid" if set(c["meta"].get("new_flags", ())) & BROKEN else "equal"
    )
    counts = {name: {r: sum(rule(c) == r for c in group) for r in ("equal", "closest valid", "raise")}
              for name, group in (("history", HISTORY), ("tokens", TOKENS))}
    # every rule is exercised in both files
    assert all(n > 0 for group in counts.values() for n in group.values()), counts
