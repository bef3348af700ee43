"""OpenAI Responses API items through the Python package: read, fitted, validated, handed back."""

from __future__ import annotations

from typing import Any

import pytest

import tightfit


def agent_items(rounds: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for i in range(rounds):
        items += [
            {
                "type": "reasoning",
                "id": f"rs_{i}",
                "summary": [{"type": "summary_text", "text": f"Read file {i}."}],
                "encrypted_content": "gAAAA",
            },
            {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"call_{i}", "output": f"line {i}\n" * 80},
        ]
    return items


def test_items_are_fitted_in_their_shape_and_kept_ones_are_the_callers_dicts() -> None:
    items = agent_items(10)
    result = tightfit.fit(items, "gpt-4o", budget=1_500)
    assert result.report.compressed_token_count <= 1_500
    assert tightfit.validate(result.messages, provider="responses") == []
    ids = {id(item) for item in items}
    kept = [m for m in result.messages if id(m) in ids]
    assert kept and kept[0] is items[0]
    for i, item in enumerate(result.messages):
        if item.get("type") == "reasoning":
            assert result.messages[i + 1]["type"] == "function_call"
    assert items == agent_items(10), "the input is not mutated"


def test_format_responses_count_and_validate_take_items_and_bodies() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert tightfit.fit(plain, "gpt-4o", format="responses").messages == plain
    body = {"model": "gpt-4o", "instructions": "Be brief.", "input": "What is 2+2?", "max_output_tokens": 50}
    counted = tightfit.count(body, "gpt-4o")
    assert len(counted.per_message) == 2, "instructions, then the input"
    broken = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"role": "user", "content": "again"},
    ]
    assert [(v.index, v.rule) for v in tightfit.validate(broken)] == [(1, "lone_reasoning")]
    # fit takes the body too, and hands back the body with `input` still a string
    fitted = tightfit.fit(body)
    assert fitted.body == body and list(fitted.body) == list(body)
    assert fitted.messages == [{"role": "user", "content": "What is 2+2?"}]
    with pytest.raises(tightfit.FormatError, match="mixes formats"):
        tightfit.count(
            [
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {"role": "assistant", "content": None, "tool_calls": []},
                {"role": "tool", "tool_call_id": "c", "content": "x", "tool_calls": [{"id": "c"}]},
            ],
            "gpt-4o",
        )
