"""fit on real histories: within budget, valid, the report and plan consistent with the output."""

from __future__ import annotations

import json

import pytest

import tightfit
from conftest import LARGEST, extreme, records


def test_the_largest_real_history_fits_128k_within_budget() -> None:
    messages = extreme(LARGEST)  # 4,857 messages, 1,006,590 tokens
    result = tightfit.fit(messages, "gpt-4o", budget=128_000)
    report = result.report
    assert report.original_token_count == 1_006_590
    assert report.original_message_count == len(messages)
    assert report.compressed_token_count <= 128_000
    assert report.compressed_token_count == tightfit.count(result.messages, "gpt-4o").total
    assert report.compressed_message_count == len(result.messages)
    assert report.was_compressed and report.budget == 128_000
    assert report.compression_ratio == pytest.approx(report.compressed_token_count / 1_006_590)
    assert tightfit.validate(result.messages, "openai") == []
    # the system prompt and the newest user turn are kept as they came
    assert result.messages[0] is messages[0]
    assert result.messages[-1] is messages[-1]
    assert [s["step"] for s in report.steps][-1] == "middle_out"
    assert all(line.startswith(s["step"]) for line, s in zip(report.lines(), report.steps))


@pytest.mark.parametrize(
    "record_id", ["aider/chat-history/ALL-SESSIONS", "concat/mini-swe-deepseek/250k", "concat/tau-bench-airline/250k"]
)
def test_extreme_histories_fit_the_model_window(record_id: str) -> None:
    messages = extreme(record_id)
    result = tightfit.fit(messages, "gpt-4o")
    # gpt-4o: a 128,000-token window less the 4,096 output tokens reserved by default
    assert result.report.budget == 128_000 - 4_096
    assert tightfit.count(result.messages, "gpt-4o").total == result.report.compressed_token_count <= 123_904
    assert tightfit.validate(result.messages) == []


def test_report_and_plan_describe_the_run() -> None:
    messages = extreme("concat/tau-bench-airline/250k")
    result = tightfit.fit(messages, budget=16_000, reserve_output=0)
    report = result.report.to_dict()
    for key in (
        "original_token_count",
        "compressed_token_count",
        "original_message_count",
        "compressed_message_count",
        "compression_ratio",
        "was_compressed",
        "steps",
        "repairs",
    ):
        assert key in report
    assert report["compressed_token_count"] == result.report.compressed_token_count
    plan = json.loads(result.plan.to_json())
    assert plan == result.plan.to_dict()
    assert plan["input_messages"] == len(messages) == result.plan.input_messages
    assert len(plan["output"]) == len(result.messages)
    assert sum(u["messages"][1] - u["messages"][0] for u in plan["units"]) == len(messages)
    assert {u["action"] for u in result.plan.units} >= {"kept", "dropped"}
    assert result.plan.changes_anything()


def test_reserve_output_and_budget() -> None:
    messages = records("agent_tau_bench_airline_gpt4o.jsonl")[0]["messages"]
    assert tightfit.fit(messages, "gpt-4o", reserve_output=1000).report.budget == 127_000
    assert tightfit.fit(messages, "gpt-4o", budget=5_000).report.budget == 5_000


def test_tools_count_against_the_budget() -> None:
    messages = [{"role": "user", "content": "hi"}]
    tools = [{"type": "function", "function": {"name": "f" * 40, "description": "d " * 200, "parameters": {"type": "object"}}}]
    with pytest.raises(tightfit.CannotFit) as info:
        tightfit.fit(messages, budget=100, tools=tools)
    assert "tool schemas" in info.value.what


def test_anthropic_histories_stay_anthropic_and_valid() -> None:
    messages = [{"role": "user", "content": "Start."}]
    for i in range(30):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"n": i}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "data " * 300}]})
    messages.append({"role": "assistant", "content": "Done."})
    messages.append({"role": "user", "content": "Summarize."})
    result = tightfit.fit(messages, "claude-sonnet-4-5", budget=3_000)
    assert result.plan.format == "anthropic"
    assert result.report.compressed_token_count <= 3_000
    assert tightfit.validate(result.messages, "anthropic") == []
    assert result.messages[-1] is messages[-1]


def test_a_fitter_answers_as_fit_turn_after_turn_and_model_after_model() -> None:
    # an agent loop on a real history: each turn appends a message and refits; the fitter's
    # remembered counts must never change an answer, also when the model (and so the
    # counter) changes between turns
    full = extreme("concat/tau-bench-airline/250k")
    fitter = tightfit.Fitter()
    messages = list(full[:1_500])
    for turn, message in enumerate(full[1_500:1_560]):
        messages.append(message)
        model = "gpt-4o" if turn % 3 else "gpt-4"
        budget = 8_000 if model == "gpt-4" else 30_000
        remembered = fitter.fit(messages, model, budget=budget)
        fresh = tightfit.fit(messages, model, budget=budget)
        assert remembered.messages == fresh.messages, turn
        inputs = {id(m) for m in messages}
        assert all(a is b for a, b in zip(remembered.messages, fresh.messages) if id(b) in inputs), "the caller's dicts"
        for key in ("original_token_count", "compressed_token_count", "compressed_message_count"):
            assert getattr(remembered.report, key) == getattr(fresh.report, key), (turn, key)
        assert remembered.plan.to_json() == fresh.plan.to_json()
    assert messages[:1_500] == full[:1_500], "the input is not mutated"


def test_a_fitter_is_shared_by_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    history = extreme("concat/tau-bench-airline/250k")[:800]
    fitter = tightfit.Fitter()
    budgets = [4_000, 16_000, 64_000] * 4
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda b: fitter.fit(history, "gpt-4o", budget=b).report.compressed_token_count, budgets))
    assert results == [tightfit.fit(history, "gpt-4o", budget=b).report.compressed_token_count for b in budgets]


def test_openai_sdk_messages_are_read_as_their_json_and_come_back_as_given() -> None:
    """``messages.append(response.choices[0].message)``: the SDK's pydantic objects are read
    through ``model_dump``; kept ones come back as the same objects."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall

    call = ChatCompletionMessageToolCall(
        id="call_1", type="function", function={"name": "lookup", "arguments": '{"city": "Paris"}'}
    )
    reply = ChatCompletionMessage(role="assistant", content=None, tool_calls=[call])
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        reply,
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, clear"},
    ]
    as_dicts = [messages[0], reply.model_dump(mode="json", exclude_none=True), messages[2]]
    assert tightfit.count(messages, "gpt-4o").total == tightfit.count(as_dicts, "gpt-4o").total
    assert tightfit.validate(messages) == []
    result = tightfit.fit(messages, "gpt-4o")
    assert result.messages[1] is reply
    assert tightfit.Session("gpt-4o").fit(messages).messages[1] is reply
