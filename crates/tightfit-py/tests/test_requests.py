"""What people hold: request bodies and Anthropic's `system=` go into `fit` and come back in the
same shape; there is no default model."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import tightfit
from conftest import SHARED

DATA2 = SHARED / "data2"


def anthropic_records(least_messages: int, limit: int) -> list[dict[str, Any]]:
    """Real Anthropic-shaped conversations with a system prompt, the longest first."""
    found = []
    for name in ("agent_tau2_airline_claude45_thinking_anthropic.jsonl", "agent_moatless_claude35_anthropic.jsonl"):
        with open(DATA2 / name, encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                if record.get("system") and len(record["messages"]) >= least_messages:
                    found.append(record)
    found.sort(key=lambda r: -len(r["messages"]))
    return found[:limit]


def body_of(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": record["system"],
        "messages": record["messages"],
        "temperature": 0,
        "metadata": {"user_id": "u-42"},
    }


@pytest.mark.parametrize("record", anthropic_records(20, 4), ids=lambda r: r["id"])
def test_an_anthropic_body_is_fitted_and_handed_back_whole(record: dict[str, Any]) -> None:
    body = body_of(record)
    before = copy.deepcopy(body)
    whole = tightfit.count(body).total
    budget = whole // 2
    result = tightfit.fit(body, budget=budget)
    assert body == before, "the caller's body is not mutated"
    out = result.body
    assert out is not None and out is not body
    # every field as it came, in its order; the model from the body
    assert list(out) == list(body)
    assert {k: out[k] for k in ("model", "max_tokens", "temperature", "metadata")} == {
        k: body[k] for k in ("model", "max_tokens", "temperature", "metadata")
    }
    assert out["system"] == body["system"] == result.system
    assert out["messages"] is result.messages
    # within budget by a fresh count of what will be sent, and valid for Anthropic
    sent = tightfit.count(out).total
    assert sent == result.report.compressed_token_count <= budget < whole
    assert tightfit.validate(out) == []
    # the messages sent unchanged are the caller's own objects
    originals = {id(m) for m in body["messages"]}
    unchanged = [m for m in result.messages if id(m) in originals]
    assert unchanged and result.messages[-1] is body["messages"][-1]
    # `system=` beside the list gives the same history
    beside = tightfit.fit(body["messages"], "claude-sonnet-4-5", system=body["system"], budget=budget)
    assert beside.messages == result.messages and beside.system == body["system"]
    assert beside.body is None


def test_an_openai_body_keeps_its_fields_and_its_system_message() -> None:
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(30):
        messages += [
            {"role": "user", "content": f"question {i}: " + "tell me more about it " * 20},
            {"role": "assistant", "content": f"answer {i}: " + "here is more about it " * 20},
        ]
    body = {"model": "gpt-4o-mini", "messages": messages, "stream": True, "n": 1}
    result = tightfit.fit(body, budget=1_000)
    assert result.body is not None and list(result.body) == ["model", "messages", "stream", "n"]
    assert result.body["messages"][0] is messages[0], "the system message is kept, as it came"
    assert result.body["messages"][-1] is messages[-1]
    assert tightfit.count(result.body).total == result.report.compressed_token_count <= 1_000
    assert result.system is None, "an OpenAI system prompt is a message"


def test_a_body_that_fits_comes_back_equal() -> None:
    body = {"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "Be brief."}],
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    result = tightfit.fit(body)
    assert result.body == body and result.messages[0] is body["messages"][0]
    assert result.system == body["system"]


def test_there_is_no_default_model() -> None:
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(tightfit.ConfigError, match="^model: none given"):
        tightfit.count(messages)
    with pytest.raises(tightfit.ConfigError, match="^model: none given, and no budget"):
        tightfit.fit(messages)
    with pytest.raises(tightfit.ConfigError, match="^model: none given, and no budget"):
        tightfit.Session()
    with pytest.raises(tightfit.ConfigError, match="^model: none given"):
        tightfit.calibrate(messages, usage=10)
    # a bare budget is counted with o200k_base, and the report says so
    fitted = tightfit.fit(messages, budget=100)
    assert fitted.report.counter == "o200k_base" and fitted.report.budget == 100
    assert tightfit.Session(budget=100).model is None
    # a request body's model counts
    claude = tightfit.count({"model": "claude-sonnet-4-5", "messages": messages})
    assert claude.model == "anthropic/claude-sonnet-4-5" and not claude.exact
    # the argument wins over the body
    assert tightfit.count({"model": "claude-sonnet-4-5", "messages": messages}, "gpt-4o").model == "openai/gpt-4o"


def test_system_is_anthropics_and_one_place_only() -> None:
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(TypeError, match="^system: a request body carries its own"):
        tightfit.fit({"model": "claude-sonnet-4-5", "messages": messages}, system="x")
    with pytest.raises(tightfit.ConfigError, match="^system: "):
        tightfit.fit(messages, "gpt-4o", system="x", format="openai")
    with pytest.raises(TypeError, match="^system: expected a string or a list of text blocks"):
        tightfit.count(messages, "claude-sonnet-4-5", system=5)
    # counted as Anthropic counts a system prompt
    assert (
        tightfit.count(messages, "claude-sonnet-4-5", system="Be brief.").total
        == tightfit.count({"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": messages}).total
    )


def test_an_empty_history_for_a_gemini_model_is_read_as_gemini() -> None:
    # as in the CLI: messages that say nothing of their shape are read in the model's format
    assert tightfit.fit([], "gemini-2.5-pro", budget=100).plan.format == "gemini"
    assert tightfit.fit([], "gpt-4o", budget=100).plan.format == "openai"
