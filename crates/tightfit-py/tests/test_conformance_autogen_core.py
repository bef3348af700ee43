"""Every case of the autogen conformance corpus (``../shared/conformance/autogen_*.jsonl``)
through ``tightfit.compat.autogen_core``, under the corpus README's three rules:

1. where autogen-core's history was valid (no new ``orphan_tool_result``,
   ``unanswered_tool_calls``, ``starts_with_tool`` or ``reordered``), ours is equal as JSON;
2. where it was broken, ours is valid (``tightfit.validate``, in input order), within the same
   limit, and autogen's minus only the steps autogen cut;
3. where autogen raised, ours raises the same exception type.

The contexts are fed with ``add_message`` one message at a time, then ``get_messages()``, as
the corpus was made. The counters the cases name are model clients, built as a user would:
autogen-ext's ``OpenAIChatCompletionClient`` for ``openai:<model>``, and a
``ChatCompletionClient`` subclass for ``fake_chars4:<max>``.
"""

from __future__ import annotations

import asyncio
import builtins
import math
from pathlib import Path
from typing import Any

import pytest

from conftest import BROKEN, CONFORMANCE, conformance_cases

autogen_core = pytest.importorskip("autogen_core")
pytest.importorskip("autogen_ext.models.openai")

import tightfit  # noqa: E402
from autogen_core import FunctionCall, Image  # noqa: E402
from autogen_core.models import (  # noqa: E402
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    ModelInfo,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.openai import OpenAIChatCompletionClient  # noqa: E402

from tightfit.compat import autogen_core as ours  # noqa: E402

cases = conformance_cases


def ids(name: str) -> list[str]:
    return [c["case_id"] for c in cases(name)]


# --- autogen dicts <-> autogen messages -------------------------------------------------------


def to_autogen(d: dict[str, Any]) -> Any:
    role = d["role"]
    if role == "system":
        return SystemMessage(content=d["content"])
    if role == "user":
        content = d["content"]
        if isinstance(content, list):
            content = [
                p if isinstance(p, str) else p["text"] if p["type"] == "text" else Image.from_uri(p["image_url"]["url"])
                for p in content
            ]
        return UserMessage(content=content, source=d["name"])
    if role == "assistant":
        if "tool_calls" in d:
            calls = [
                FunctionCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                for c in d["tool_calls"]
            ]
            return AssistantMessage(content=calls, source=d["name"], thought=d.get("content"))
        return AssistantMessage(content=d["content"], source=d["name"], thought=d.get("thought"))
    assert role == "tool", role
    return FunctionExecutionResultMessage(
        content=[
            FunctionExecutionResult(content=r["content"], name=r["name"], call_id=r["tool_call_id"], is_error=r["is_error"])
            for r in d["results"]
        ]
    )


def placeholder_dict(m: Any) -> dict[str, Any]:
    assert isinstance(m, UserMessage) and isinstance(m.content, str), m
    return {"role": "user", "name": m.source, "content": m.content}


def to_openai(dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """autogen dicts as OpenAI messages, for the validator (a results message is one tool
    message per result)."""
    out: list[dict[str, Any]] = []
    for d in dicts:
        if d["role"] == "tool":
            out += [{"role": "tool", "tool_call_id": r["tool_call_id"], "content": r["content"]} for r in d["results"]]
        elif d["role"] == "assistant" and "tool_calls" in d:
            out.append({"role": "assistant", "content": d["content"], "tool_calls": d["tool_calls"]})
        else:
            out.append({k: v for k, v in d.items() if k != "thought"})
    return out


# --- the counters the cases name ------------------------------------------------------------


class FakeChars4Client(ChatCompletionClient):
    """The corpus's ``fake_chars4:<max>`` counter as a model client: ⌈chars / 4⌉ per text,
    4 per message, 85 per image; ``remaining_tokens = max - count``."""

    def __init__(self, max_tokens: int) -> None:
        self._max = max_tokens

    @staticmethod
    def message_tokens(m: Any) -> int:
        q = lambda s: math.ceil(len(s) / 4)  # noqa: E731
        if isinstance(m, SystemMessage):
            return 4 + q(m.content)
        if isinstance(m, UserMessage):
            if isinstance(m.content, str):
                return 4 + q(m.content)
            text = "".join(p for p in m.content if isinstance(p, str))
            return 4 + q(text) + 85 * sum(1 for p in m.content if isinstance(p, Image))
        if isinstance(m, AssistantMessage):
            if isinstance(m.content, str):
                return 4 + q(m.content)
            return 4 + sum(q(c.name + c.arguments) for c in m.content) + q(m.thought or "")
        return 4 + sum(q(r.content) for r in m.content)

    def count_tokens(self, messages: Any, *, tools: Any = []) -> int:
        return sum(self.message_tokens(m) for m in messages)

    def remaining_tokens(self, messages: Any, *, tools: Any = []) -> int:
        return self._max - self.count_tokens(messages, tools=tools)

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def create_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def close(self) -> None:
        pass

    def actual_usage(self) -> Any:
        raise NotImplementedError

    def total_usage(self) -> Any:
        raise NotImplementedError

    @property
    def capabilities(self) -> Any:
        raise NotImplementedError

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(vision=True, function_calling=True, json_output=False, family="unknown", structured_output=False)


def client_for(spec: str) -> tuple[ChatCompletionClient, int]:
    """The client of a counter spec and its model limit."""
    kind, arg = spec.split(":", 1)
    if kind == "fake_chars4":
        return FakeChars4Client(int(arg)), int(arg)
    assert kind == "openai", spec
    limits = {"gpt-4o": 128_000, "gpt-4": 8_192}
    return OpenAIChatCompletionClient(model=arg, api_key="not-used"), limits[arg]


def openai_encoding(model: str) -> str:
    return {"gpt-4o": "o200k_base", "gpt-4": "cl100k_base"}[model]


# --- running a case -------------------------------------------------------------------------


def make_context(case: dict[str, Any]) -> Any:
    p = dict(case["params"])
    op = case["operation"]
    if op == "unbounded":
        return ours.UnboundedChatCompletionContext(**p)
    if op == "buffered":
        return ours.BufferedChatCompletionContext(**p)
    if op == "head_and_tail":
        return ours.HeadAndTailChatCompletionContext(**p)
    assert op == "token_limited", op
    client, _ = client_for(p.pop("counter"))
    return ours.TokenLimitedChatCompletionContext(client, **p)


async def run(case: dict[str, Any], messages: list[Any]) -> list[Any]:
    context = make_context(case)
    for m in messages:
        await context.add_message(m)
    return await context.get_messages()


def expect_error(case: dict[str, Any], call: Any) -> None:
    name = case["output"]["error"].split(":", 1)[0]
    with pytest.raises(getattr(builtins, name)) as raised:
        call()
    assert str(raised.value), "a clear message"


def output_dicts(case: dict[str, Any], messages: list[Any], out: list[Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """Our output as autogen dicts (an input message as its input dict, found by identity),
    and the input index of each (-1 for a placeholder)."""
    index = {id(m): i for i, m in enumerate(messages)}
    dicts, src = [], []
    for m in out:
        i = index.get(id(m), -1)
        src.append(i)
        dicts.append(case["input"][i] if i >= 0 else placeholder_dict(m))
    return dicts, src


def check_context_case(case: dict[str, Any]) -> None:
    messages = [to_autogen(d) for d in case["input"]]
    if isinstance(case["output"], dict):
        expect_error(case, lambda: asyncio.run(run(case, messages)))
        return
    out = asyncio.run(run(case, messages))
    dicts, src = output_dicts(case, messages, out)
    new_flags = set(case["meta"].get("new_flags", []))
    if not new_flags & BROKEN:
        assert dicts == case["output"]
        return
    # rule 2: valid, in order, within the same limit, autogen's less the steps it cut
    assert tightfit.validate(to_openai(dicts), "openai") == []
    kept = [i for i in src if i >= 0]
    assert kept == sorted(kept) and -1 not in src
    peer = [i for i in case["meta"]["src"] if isinstance(i, int)]
    assert set(kept) <= set(peer), "only removes from autogen's history"
    cut = set(peer) - set(kept)
    for i in cut:
        d = case["input"][i]
        assert d["role"] == "tool" or "tool_calls" in d, f"message {i} went but is no part of a tool step"
    spec = case["params"]["counter"]
    client, model_limit = client_for(spec)
    limit = case["params"]["token_limit"] or model_limit
    if isinstance(client, FakeChars4Client):
        assert client.count_tokens(out) <= limit
    else:  # the engine's copy of autogen-ext's counter (held to it by test_count_tokens_openai)
        assert ours.count_tokens_openai(out, spec.split(":", 1)[1]) <= limit


@pytest.mark.parametrize("case", cases("autogen_core_unbounded.jsonl"), ids=ids("autogen_core_unbounded.jsonl"))
def test_unbounded(case: dict[str, Any]) -> None:
    check_context_case(case)


@pytest.mark.parametrize("case", cases("autogen_core_buffered.jsonl"), ids=ids("autogen_core_buffered.jsonl"))
def test_buffered(case: dict[str, Any]) -> None:
    check_context_case(case)


@pytest.mark.parametrize("case", cases("autogen_core_head_and_tail.jsonl"), ids=ids("autogen_core_head_and_tail.jsonl"))
def test_head_and_tail(case: dict[str, Any]) -> None:
    check_context_case(case)


@pytest.mark.parametrize("case", cases("autogen_core_token_limited.jsonl"), ids=ids("autogen_core_token_limited.jsonl"))
def test_token_limited(case: dict[str, Any]) -> None:
    check_context_case(case)


@pytest.mark.parametrize(
    "case", cases("autogen_ext_count_tokens_openai.jsonl"), ids=ids("autogen_ext_count_tokens_openai.jsonl")
)
def test_count_tokens_openai(case: dict[str, Any]) -> None:
    messages = [to_autogen(d) for d in case["input"]]
    model = case["params"]["model"]
    count = lambda: ours.count_tokens_openai(messages, model)  # noqa: E731
    if isinstance(case["output"], dict):
        expect_error(case, count)
    else:
        assert count() == case["output"]


def test_every_corpus_file_is_run() -> None:
    names = {p.name for p in Path(CONFORMANCE).glob("autogen*.jsonl")}
    assert names == {
        "autogen_core_unbounded.jsonl",
        "autogen_core_buffered.jsonl",
        "autogen_core_head_and_tail.jsonl",
        "autogen_core_token_limited.jsonl",
        "autogen_ext_count_tokens_openai.jsonl",
    }
