"""Offload from Python: a fit given a store leaves handles in what it sends, ``tightfit.recall``
gives the messages back as they came, and the recall tool answers a model's calls."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

import tightfit
from conftest import records

HANDLE = re.compile(r"tf-[0-9a-f]{16}")


def texts(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages)


def recalled(handle: str, store: Any) -> list[dict[str, Any]]:
    return json.loads(tightfit.recall(handle, store=store))


@pytest.mark.parametrize("store_kind", ["memory", "file"])
def test_what_a_fit_removes_or_cuts_is_recalled_as_it_came(store_kind: str, tmp_path: Path) -> None:
    store = tightfit.MemoryStore() if store_kind == "memory" else tmp_path / "offload.db"
    messages = records("agent_mini_swe_deepseek.jsonl")[0]["messages"]
    before = copy.deepcopy(messages)
    result = tightfit.fit(messages, "gpt-4o", budget=6_000, store=store)
    assert messages == before, "the input is not mutated"
    assert result.report.compressed_token_count <= 6_000
    offloaded = result.report.offloaded
    assert {o["kind"] for o in offloaded} == {"removed", "cut"}
    sent = texts(result.messages)
    back: dict[int, dict[str, Any]] = {}
    for entry in offloaded:
        assert entry["handle"] in sent, "every handle is named in what is sent"
        entries = recalled(entry["handle"], store)
        assert [e["index"] for e in entries] == entry["messages"]
        back.update({e["index"]: e["message"] for e in entries})
    # every message is sent as it came, or recallable as it came
    kept = {id(m) for m in result.messages}
    for index, message in enumerate(messages):
        assert id(message) in kept or back.get(index) == message, f"message {index}"
    # paging: the pages put together are the whole
    handle = offloaded[0]["handle"]
    whole = tightfit.recall(handle, store=store)
    pages = [tightfit.recall(handle, store=store, offset=at, limit=1000) for at in range(0, len(whole), 1000)]
    assert "".join(pages) == whole


def test_the_recall_tool_answers_openai_and_anthropic_calls() -> None:
    store = tightfit.MemoryStore()
    messages = records("agent_mini_swe_deepseek.jsonl")[1]["messages"]
    result = tightfit.fit(messages, "gpt-4o", budget=5_000, store=store)
    handle = next(o["handle"] for o in result.report.offloaded if o["kind"] == "removed")
    assert handle in texts(result.messages)
    schema = tightfit.recall_tool()
    assert schema["type"] == "function" and schema["function"]["name"] == "tightfit_recall"
    assert tightfit.recall_tool("anthropic")["input_schema"]["required"] == ["handle"]

    call = {"id": "call_1", "type": "function", "function": {"name": "tightfit_recall", "arguments": json.dumps({"handle": handle, "limit": 500})}}
    answer = tightfit.answer_recall(call, store=store)
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_1"
    page = json.loads(answer["content"])
    assert len(page["content"]) == 500 and page["next_offset"] == 500
    assert page["content"] == tightfit.recall(handle, store=store)[:500]

    # the OpenAI SDK's own object is read too
    from openai.types.chat import ChatCompletionMessageToolCall

    sdk_call = ChatCompletionMessageToolCall.model_validate(call)
    assert tightfit.answer_recall(sdk_call, store=store) == answer

    block = {"type": "tool_use", "id": "toolu_1", "name": "tightfit_recall", "input": {"handle": handle, "offset": 500, "limit": 100}}
    result_block = tightfit.answer_recall(block, store=store)
    assert result_block["type"] == "tool_result" and result_block["tool_use_id"] == "toolu_1"
    assert json.loads(result_block["content"])["offset"] == 500

    # what the model gets wrong is answered with an error it can read, not raised
    unknown = tightfit.answer_recall({"id": "c", "function": {"name": "tightfit_recall", "arguments": '{"handle": "tf-0000000000000000"}'}}, store=store)
    assert unknown["content"].startswith("error: ") and "tf-0000000000000000" in unknown["content"]
    missing = tightfit.answer_recall({"id": "c", "function": {"name": "tightfit_recall", "arguments": "{}"}}, store=store)
    assert "needs a \"handle\"" in missing["content"]


def test_recall_errors_name_the_handle_and_the_store() -> None:
    store = tightfit.MemoryStore()
    with pytest.raises(tightfit.StoreError, match="no offloaded content under tf-0000000000000000") as unknown:
        tightfit.recall("tf-0000000000000000", store=store)
    assert unknown.value.kind == "not_found" and unknown.value.store == "memory"
    with pytest.raises(tightfit.ConfigError, match="not a tightfit handle"):
        tightfit.recall("hello", store=store)
    with pytest.raises(TypeError, match="store"):
        tightfit.recall("tf-0000000000000000", store=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="store"):
        tightfit.fit([{"role": "user", "content": "hi"}], "gpt-4o", store=3.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("given_store", [True, False])
def test_a_session_offloads_what_its_compactions_remove(given_store: bool) -> None:
    messages = records("agent_mini_swe_deepseek.jsonl")[0]["messages"]
    session = tightfit.Session("gpt-4o", budget=6_000, store=tightfit.MemoryStore() if given_store else None)
    # the session's own store answers, whether the caller gave one or not
    store: Any = session
    plain = tightfit.Session("gpt-4o", budget=6_000, offload=False)
    handles = 0
    for end in range(2, len(messages) + 1):
        if messages[end - 1]["role"] == "assistant" or (end < len(messages) and messages[end]["role"] == "tool"):
            continue
        result = session.fit(messages[:end])
        if result.report.session.compacted:
            for entry in result.report.offloaded:
                assert entry["handle"] in texts(result.messages)
                for back in recalled(entry["handle"], store):
                    assert back["message"] == messages[back["index"]]
                handles += 1
        assert not HANDLE.search(texts(plain.fit(messages[:end]).messages))
    assert handles >= 2
    handle = HANDLE.search(texts(result.messages)).group(0)
    assert session.recall(handle) == tightfit.recall(handle, store=session)
    call = {"id": "c1", "function": {"name": "tightfit_recall", "arguments": json.dumps({"handle": handle})}}
    # (the tool answers a page of 20,000 characters unless the model asks for another limit)
    assert json.loads(tightfit.answer_recall(call, store=session)["content"])["content"] == session.recall(handle, limit=20_000)
