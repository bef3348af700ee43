"""Numbers JSON holds but a float does not (an int beyond 64 bits, a Decimal of 400 digits)
go through tightfit as they came, also when a step writes their message again."""

from __future__ import annotations

import decimal
from decimal import Decimal

import pytest

import tightfit

BIG = 2**100
PRECISE = Decimal("3." + ("1415926535" * 40)[:399])
TRUNCATE = tightfit.Pipeline([tightfit.TruncateToolResults(max_length=500)])
NUMBERS = {"big": BIG, "precise": PRECISE, "negative": -BIG, "tenth": 0.1, "small": 7}


def history() -> list[dict]:
    log = "The parser rejects dates before 1970 in every locale we ship. " * 300
    call = {"id": "call_0", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Why does the date test fail?", "meta": dict(NUMBERS)},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": log, "meta": dict(NUMBERS)},
        {"role": "user", "content": "Thanks."},
    ]


def test_a_message_written_again_keeps_its_numbers_exactly() -> None:
    messages = history()
    result = tightfit.fit(messages, "gpt-4o", budget=800, pipeline=TRUNCATE)
    assert [s["step"] for s in result.report.steps] == ["truncate_tool_results"]
    tool = result.messages[2]
    assert tool is not messages[2] and len(tool["content"]) < len(messages[2]["content"])  # written by Rust
    assert tool["meta"] == NUMBERS
    assert type(tool["meta"]["big"]) is int and type(tool["meta"]["precise"]) is Decimal
    assert str(tool["meta"]["precise"]) == str(PRECISE)  # all 400 digits
    assert type(tool["meta"]["tenth"]) is float
    assert result.messages[0] is messages[0]  # a kept message is still the caller's dict
    assert messages == history()  # the input is not touched


def tool_use(numbers: dict) -> list[dict]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "calc", "input": numbers}
    return [
        {"role": "user", "content": "Compute it."},
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"}]},
    ]


def test_count_reads_them_as_their_text() -> None:
    assert tightfit.count(history(), "gpt-4o").total > 0
    # a tool_use input is counted as its JSON text: the 31-digit integer and the 400 digits
    # cost what their text costs
    exact = tightfit.count(tool_use(NUMBERS), "claude-sonnet-4-5").total
    short = tightfit.count(tool_use({**NUMBERS, "big": 1, "precise": Decimal("3.14")}), "claude-sonnet-4-5").total
    assert exact > short + 100


def test_a_kept_tool_use_input_is_the_callers_with_its_numbers() -> None:
    messages = tool_use(NUMBERS)
    messages[2]["content"][0]["content"] = "The parser rejects dates before 1970. " * 300
    result = tightfit.fit(messages, "claude-sonnet-4-5", budget=800, pipeline=TRUNCATE)
    assert [s["step"] for s in result.report.steps] == ["truncate_tool_results"]
    assert result.messages[2] is not messages[2]
    assert result.messages[1] is messages[1]  # kept: the caller's own dict
    assert result.messages[1]["content"][0]["input"] == NUMBERS


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("-Infinity"), Decimal("sNaN")])
def test_a_decimal_that_is_not_a_number_is_named_where_it_sits(value: Decimal) -> None:
    messages = [{"role": "user", "content": "hi", "meta": {"x": [value]}}]
    with pytest.raises(tightfit.FormatError) as info:
        tightfit.count(messages)
    assert info.value.path == "messages[0].meta.x[0]"
    assert "not a finite number" in str(info.value)


def test_decimal_text_in_any_context_precision() -> None:
    # the text is taken as it is, not through the running decimal context's precision
    with decimal.localcontext() as context:
        context.prec = 5
        result = tightfit.fit(history(), "gpt-4o", budget=800, pipeline=TRUNCATE)
    assert str(result.messages[2]["meta"]["precise"]) == str(PRECISE)
