"""validate: every rule a provider would reject the history for, with index and reason."""

from __future__ import annotations

import tightfit
from conftest import records

BROKEN = [
    {"role": "system", "content": "s"},
    {"role": "tool", "tool_call_id": "x", "content": "early"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "user", "content": "moved on"},
]


def test_violations_name_index_rule_and_reason() -> None:
    found = tightfit.validate(BROKEN)
    assert [(v.index, v.rule) for v in found] == [(1, "leading_tool_result"), (3, "unanswered_tool_call")]
    assert found[1].reason == 'tool call "a" gets no result'
    assert str(found[1]) == 'messages[3]: tool call "a" gets no result'
    assert found[0] == tightfit.validate(BROKEN)[0]


def test_real_conversations_are_valid() -> None:
    for record in records("agent_tau_bench_airline_gpt4o.jsonl")[:50]:
        assert tightfit.validate(record["messages"], "openai") == []


def test_the_provider_decides_the_rules() -> None:
    two_users = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert tightfit.validate(two_users) == []
    assert [v.rule for v in tightfit.validate(two_users, provider="anthropic")] == ["not_alternating"]


def test_the_repair_pass_makes_a_broken_history_valid() -> None:
    result = tightfit.fit(BROKEN, "gpt-4o")
    assert result.report.repairs
    assert tightfit.validate(result.messages) == []
