"""Counts from Python equal tiktoken's (the corpus figures) and the engine's framing."""

from __future__ import annotations

import asyncio

import pytest

import tightfit
from conftest import extreme, records, stats

# per file: the converter's tiktoken o200k_base figures (stats.json) under OpenAI's framing
FILES = ["agent_tau_bench_airline_gpt4o.jsonl", "agent_swe_agent_demos.jsonl", "chat_hh_rlhf_harmless_test.jsonl"]


@pytest.mark.parametrize("name", FILES)
def test_counts_equal_tiktoken_on_real_conversations(name: str) -> None:
    totals = [tightfit.count(r["messages"], model="gpt-4o").total for r in records(name)]
    expected = stats(name)
    assert sum(totals) == expected["tokens_o200k"]
    low, median, high = expected["tokens_min_med_max"]
    assert (min(totals), high) == (low, max(totals))
    assert sorted(totals)[len(totals) // 2] == median  # the converter takes the upper median


@pytest.mark.parametrize(
    ("record_id", "tokens"),
    [("concat/mini-swe-deepseek/1M", 1_006_590), ("concat/tau-bench-airline/250k", 251_091)],
)
def test_extreme_histories_count_as_tiktoken(record_id: str, tokens: int) -> None:
    count = tightfit.count(extreme(record_id), "gpt-4o")
    assert count.total == tokens
    assert count.total == sum(count.per_message) + count.tools + count.priming
    assert len(count.per_message) == len(extreme(record_id))


def test_count_reports_model_counter_and_framing() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
    count = tightfit.count(messages, "gpt-4o")
    # the engine's documented example: 7 + 6 + 3 of reply priming
    assert (count.per_message, count.priming, count.total, int(count)) == ([7, 6], 3, 16, 16)
    assert (count.model, count.counter, count.context_window) == ("openai/gpt-4o", "o200k_base", 128_000)
    assert tightfit.count(messages, "gpt-4").counter == "cl100k_base"
    claude = tightfit.count(messages, "claude-sonnet-4-5")
    assert claude.counter != "o200k_base" and claude.total > 0


def test_tools_are_counted() -> None:
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather of a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    bare = tightfit.count(messages, "gpt-4o")
    with_tools = tightfit.count(messages, "gpt-4o", tools=tools)
    assert bare.tools == 0 and with_tools.tools > 10
    assert with_tools.total == bare.total + with_tools.tools


def test_anthropic_messages_are_detected_and_counted() -> None:
    messages = [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt b.txt"}]},
    ]
    count = tightfit.count(messages, "claude-sonnet-4-5")
    assert len(count.per_message) == 3 and all(n > 0 for n in count.per_message)
    # the same list read as OpenAI is a different document: the explicit format wins
    with pytest.raises(tightfit.FormatError):
        tightfit.count([{"role": "user", "content": [{"type": "tool_result"}]}], "claude-sonnet-4-5", format="anthropic")


def test_acount_gives_the_same_count() -> None:
    messages = records("agent_swe_agent_demos.jsonl")[0]["messages"]
    assert asyncio.run(tightfit.acount(messages, "gpt-4o")).total == tightfit.count(messages, "gpt-4o").total


def test_a_request_body_is_counted_with_its_system_prompt_and_tools() -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "description": "Find a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    body = {"model": "gpt-4o", "messages": messages, "tools": tools}
    assert tightfit.count(body, "gpt-4o").total == tightfit.count(messages, "gpt-4o", tools=tools).total
    # Anthropic's system prompt is a field of the request
    anthropic = {"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": messages}
    as_list = [{"role": "system", "content": "Be brief."}, *messages]
    assert (
        tightfit.count(anthropic, "claude-sonnet-4-5").total
        == tightfit.count(as_list, "claude-sonnet-4-5", format="anthropic").total
    )
    assert tightfit.validate(anthropic) == []
