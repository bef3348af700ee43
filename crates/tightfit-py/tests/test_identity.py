"""Unchanged messages come back as the caller's own dicts; the input is never mutated."""

from __future__ import annotations

import copy

import tightfit
from conftest import extreme, records


def _check_identity(messages: list, result: tightfit.FitResult) -> tuple[int, int]:
    """Every output entry with an input index and no new message is the caller's object; every
    other one is a new dict. Returns (shared, new)."""
    shared = new = 0
    for entry, message in zip(result.plan.output, result.messages, strict=True):
        if "message" not in entry:
            assert message is messages[entry["input"]]
            shared += 1
        else:
            assert all(message is not m for m in messages)
            assert message == entry["message"]
            new += 1
    return shared, new


def test_unchanged_messages_are_the_callers_objects_and_input_is_untouched() -> None:
    messages = extreme("concat/mini-swe-deepseek/250k")
    before = copy.deepcopy(messages)
    result = tightfit.fit(messages, "gpt-4o", budget=32_000)
    assert messages == before
    shared, new = _check_identity(messages, result)
    # the ladder truncated or cleared some tool results and kept many messages as they came
    assert shared > 10 and new > 0


def test_a_history_that_fits_comes_back_as_the_same_objects() -> None:
    messages = records("agent_tau_bench_airline_gpt4o.jsonl")[0]["messages"]
    result = tightfit.fit(messages, "gpt-4o")
    assert not result.report.was_compressed
    assert len(result.messages) == len(messages)
    assert all(out is mine for out, mine in zip(result.messages, messages, strict=True))
    assert result.messages is not messages  # a new list: the caller's list is not handed back


def test_rewritten_messages_are_new_dicts_and_the_originals_stay() -> None:
    messages = [
        {"role": "system", "content": "You are in a group chat."},
        {"role": "user", "name": "alice", "content": "hello"},
        {"role": "assistant", "content": "Hi Alice."},
        {"role": "user", "name": "bob", "content": "and me?"},
    ]
    before = copy.deepcopy(messages)
    result = tightfit.fit(messages, "gpt-4o", pipeline=[tightfit.ContentName()])
    assert messages == before
    assert result.messages[0] is messages[0] and result.messages[2] is messages[2]
    assert result.messages[1] is not messages[1]
    assert result.messages[1]["content"] == "alice:\nhello"
    assert result.messages[1]["name"] == "alice"  # unknown-to-us fields are carried over


def test_nested_values_of_the_input_are_not_shared_with_new_messages() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "x " * 5000}], "meta": {"k": [1, 2]}},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go on"},
    ]
    before = copy.deepcopy(messages)
    pipeline = tightfit.Pipeline([tightfit.TruncateText(max_length=100, roles=["user"], keep_newest_user_turn=True)])
    result = tightfit.fit(messages, "gpt-4o", pipeline=pipeline)
    cut = result.messages[0]
    assert cut is not messages[0] and len(cut["content"][0]["text"]) < 200
    cut["meta"]["k"].append(3)
    assert messages == before


def test_tuples_of_messages_are_accepted_and_indexed() -> None:
    messages = tuple(records("chat_hh_rlhf_harmless_test.jsonl")[0]["messages"])
    result = tightfit.fit(messages, "gpt-4o")
    assert all(out is mine for out, mine in zip(result.messages, messages, strict=True))
