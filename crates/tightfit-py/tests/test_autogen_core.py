"""tightfit.compat.autogen_core as a drop-in: autogen-core's classes, signatures, state and
component configs; the caller's own message objects back; the history kept in step with
``_messages``; the model client's counter called when it is not autogen-ext's OpenAI one; and
the deliberate difference (a cut tool step goes whole)."""

from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("autogen_core")
pytest.importorskip("autogen_ext.models.openai")

import autogen_core.model_context as peer  # noqa: E402
from autogen_core import Component, FunctionCall  # noqa: E402
from autogen_core.model_context import ChatCompletionContext  # noqa: E402
from autogen_core.models import (  # noqa: E402
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.openai import OpenAIChatCompletionClient  # noqa: E402

import tightfit  # noqa: E402
from tightfit.compat import autogen_core as ours  # noqa: E402
from test_conformance_autogen_core import FakeChars4Client  # noqa: E402

NAMES = [
    "UnboundedChatCompletionContext",
    "BufferedChatCompletionContext",
    "HeadAndTailChatCompletionContext",
    "TokenLimitedChatCompletionContext",
]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def user(text: str) -> UserMessage:
    return UserMessage(content=text, source="user")


def said(text: str) -> AssistantMessage:
    return AssistantMessage(content=text, source="assistant")


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(
        content=[FunctionCall(id=i, name="lookup", arguments='{"q": "x"}') for i in ids], source="assistant"
    )


def results(*ids: str) -> FunctionExecutionResultMessage:
    return FunctionExecutionResultMessage(
        content=[FunctionExecutionResult(content="found " * 20, name="lookup", call_id=i) for i in ids]
    )


def conversation() -> list[Any]:
    return [
        SystemMessage(content="Use tools."),
        user("What is up?"),
        calls("c1", "c2"),
        results("c1", "c2"),
        said("Both found."),
        user("Thanks, and now?"),
        said("Nothing more."),
    ]


async def fill(context: Any, messages: list[Any]) -> Any:
    for m in messages:
        await context.add_message(m)
    return await context.get_messages()


def both(name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return getattr(ours, name)(*args, **kwargs), getattr(peer, name)(*args, **kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_same_signature_and_bases_as_autogen(name: str) -> None:
    cls = getattr(ours, name)
    assert issubclass(cls, ChatCompletionContext)
    assert issubclass(cls, Component)
    ours_sig = inspect.signature(cls.__init__).parameters
    peer_sig = inspect.signature(getattr(peer, name).__init__).parameters
    assert [(p.name, p.kind, p.default) for p in ours_sig.values()] == [
        (p.name, p.kind, p.default) for p in peer_sig.values()
    ]
    assert cls.component_type == "chat_completion_context"
    assert cls.component_provider_override == f"tightfit.compat.autogen_core.{name}"


@pytest.mark.parametrize(
    "name,args",
    [
        ("UnboundedChatCompletionContext", ()),
        ("BufferedChatCompletionContext", (3,)),
        ("HeadAndTailChatCompletionContext", (1, 2)),
    ],
)
def test_returns_what_autogen_returns_as_the_callers_objects(name: str, args: tuple[Any, ...]) -> None:
    messages = conversation()
    mine, theirs = both(name, *args)
    got, expected = run(fill(mine, messages)), run(fill(theirs, messages))
    assert got == expected
    originals = {id(m) for m in messages}
    for m in got:
        assert id(m) in originals or (isinstance(m, UserMessage) and m.source == "System")


def test_head_and_tail_placeholder_is_autogens() -> None:
    got = run(fill(ours.HeadAndTailChatCompletionContext(1, 1), [user("a"), said("b"), user("c"), said("d")]))
    assert got[1] == UserMessage(content="Skipped 2 messages.", source="System")
    assert len(got) == 3


def test_unbounded_returns_the_contexts_own_list() -> None:
    context = ours.UnboundedChatCompletionContext(initial_messages=[user("a")])
    assert run(context.get_messages()) is context._messages


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_sizes_raise_value_error(bad: int) -> None:
    for make in (
        lambda: ours.BufferedChatCompletionContext(bad),
        lambda: ours.HeadAndTailChatCompletionContext(bad, 1),
        lambda: ours.HeadAndTailChatCompletionContext(1, bad),
        lambda: ours.TokenLimitedChatCompletionContext(FakeChars4Client(100), token_limit=bad),
    ):
        with pytest.raises(ValueError, match="greater than 0|at least 0"):
            make()


def test_state_round_trips_and_equals_autogens() -> None:
    messages = conversation()
    mine, theirs = both("BufferedChatCompletionContext", 4)
    run(fill(mine, messages))
    run(fill(theirs, messages))
    state = run(mine.save_state())
    assert state == run(theirs.save_state())
    json.dumps(state)  # plain data
    run(mine.clear())
    assert run(mine.get_messages()) == []
    run(mine.load_state(state))
    assert run(mine.get_messages()) == run(theirs.get_messages())
    # a state saved by autogen's context loads into ours
    other = ours.BufferedChatCompletionContext(10)
    run(other.load_state(run(theirs.save_state())))
    assert run(other.get_messages()) == messages


def test_follows_changes_to_messages_made_behind_its_back() -> None:
    context = ours.BufferedChatCompletionContext(2)
    run(fill(context, [user("a"), said("b")]))
    context._messages.append(user("c"))
    assert [m.content for m in run(context.get_messages())] == ["b", "c"]
    context._messages = [said("x"), user("y"), said("z")]
    assert [m.content for m in run(context.get_messages())] == ["y", "z"]
    del context._messages[1:]
    context._messages += [user("p"), said("q")]
    assert [m.content for m in run(context.get_messages())] == ["p", "q"]


def test_component_configs_load_both_ways() -> None:
    mine = ours.HeadAndTailChatCompletionContext(2, 3, initial_messages=[user("hi")])
    theirs = peer.HeadAndTailChatCompletionContext(2, 3, initial_messages=[user("hi")])
    dumped = mine.dump_component()
    assert dumped.provider == "tightfit.compat.autogen_core.HeadAndTailChatCompletionContext"
    assert dumped.config == theirs.dump_component().config
    # ours through autogen's loader, and autogen's saved config into ours
    loaded = ChatCompletionContext.load_component(dumped)
    assert type(loaded) is ours.HeadAndTailChatCompletionContext
    assert (loaded._head_size, loaded._tail_size) == (2, 3)
    loaded = ours.HeadAndTailChatCompletionContext.load_component(theirs.dump_component().model_dump())
    assert type(loaded) is ours.HeadAndTailChatCompletionContext
    assert run(loaded.get_messages()) == [user("hi")]
    with pytest.raises(TypeError):
        ours.BufferedChatCompletionContext.load_component(theirs.dump_component())


def test_token_limited_component_keeps_its_client() -> None:
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-used")
    mine = ours.TokenLimitedChatCompletionContext(client, token_limit=100)
    loaded = ours.TokenLimitedChatCompletionContext.load_component(mine.dump_component())
    assert type(loaded) is ours.TokenLimitedChatCompletionContext
    assert loaded._token_limit == 100
    assert isinstance(loaded._model_client, OpenAIChatCompletionClient)


class CountingClient(FakeChars4Client):
    """A client of its own: the context must count with it."""

    def __init__(self, max_tokens: int) -> None:
        super().__init__(max_tokens)
        self.calls: list[tuple[str, int]] = []

    def count_tokens(self, messages: Any, *, tools: Any = []) -> int:
        self.calls.append(("count", len(messages)))
        return super().count_tokens(messages, tools=tools)

    def remaining_tokens(self, messages: Any, *, tools: Any = []) -> int:
        self.calls.append(("remaining", len(messages)))
        return self._max - super().count_tokens(messages, tools=tools)


def test_any_other_client_counts_as_autogen_calls_it() -> None:
    messages = [user("x" * 40), said("y" * 40), user("z" * 40), said("w" * 40)]  # 14 tokens each
    for limit, kind in ((30, "count"), (None, "remaining")):
        mine_client, peer_client = CountingClient(30), CountingClient(30)
        mine = ours.TokenLimitedChatCompletionContext(mine_client, token_limit=limit)
        theirs = peer.TokenLimitedChatCompletionContext(peer_client, token_limit=limit)
        assert run(fill(mine, messages)) == run(fill(theirs, messages))
        assert mine_client.calls == peer_client.calls
        assert {k for k, _ in mine_client.calls} == {kind}


def test_token_limited_drops_the_rest_of_a_step_autogen_cuts() -> None:
    # the deliberate difference: autogen removes the middle message (the results) and keeps
    # the call without them; ours drops the call too, within the same limit
    messages = [user("u" * 20), calls("c1"), results("c1"), said("a" * 20), user("v" * 20)]
    client = FakeChars4Client(1000)
    total = client.count_tokens(messages)
    limit = total - 1
    theirs = run(fill(peer.TokenLimitedChatCompletionContext(client, token_limit=limit), messages))
    mine = run(fill(ours.TokenLimitedChatCompletionContext(client, token_limit=limit), messages))
    assert theirs == [messages[0], messages[1], messages[3], messages[4]]
    assert mine == [messages[0], messages[3], messages[4]]
    assert client.count_tokens(mine) <= limit


def test_openai_client_counts_in_the_engine() -> None:
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-used")
    messages = conversation()
    total = ours.count_tokens_openai(messages, "gpt-4o")
    context = ours.TokenLimitedChatCompletionContext(client, token_limit=total)
    assert run(fill(context, messages)) == messages
    context = ours.TokenLimitedChatCompletionContext(client, token_limit=total - 1)
    got = run(fill(context, messages))
    assert len(got) < len(messages)
    assert ours.count_tokens_openai(got, "gpt-4o") <= total - 1
    # a client whose counter was replaced is asked, not the engine
    asked: list[int] = []
    client.count_tokens = lambda msgs, tools=[]: asked.append(len(msgs)) or 0  # type: ignore[method-assign]
    run(fill(ours.TokenLimitedChatCompletionContext(client, token_limit=5), messages))
    assert asked == [len(messages)]


def test_openai_counter_raises_where_autogen_ext_raises() -> None:
    with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
        ours.count_tokens_openai([user("a <|endoftext|> b")], "gpt-4o")
    with pytest.raises(ValueError, match="Invalid name"):
        ours.count_tokens_openai([UserMessage(content="hi", source="not valid")], "gpt-4o")
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-used")
    context = ours.TokenLimitedChatCompletionContext(client, token_limit=100)
    run(context.add_message(user("<|endoftext|>")))
    with pytest.raises(ValueError):
        run(context.get_messages())


def test_tool_schemas_count_beside_the_messages() -> None:
    tool = {
        "name": "lookup",
        "description": "Look a thing up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": "what"}}},
    }
    messages = [user("hi")]
    assert ours.count_tokens_openai(messages, "gpt-4o", tools=[tool]) > ours.count_tokens_openai(messages, "gpt-4o")


def test_engine_steps_run_in_a_pipeline() -> None:
    history = [
        {"role": "user", "name": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next"},
    ]
    result = tightfit.fit(history, "gpt-4o", pipeline=[tightfit.AutogenBuffered(3)])
    assert result.messages == history[2:][1:]
    result = tightfit.fit(history, "gpt-4o", pipeline=[tightfit.AutogenHeadAndTail(1, 2)])
    assert [m["content"] for m in result.messages] == ["go", "Skipped 2 messages.", "done", "next"]


def test_works_on_autogen_dicts_without_autogen_installed() -> None:
    script = """
import asyncio, sys
sys.modules["autogen_core"] = None  # as if it were not installed
from tightfit.compat import autogen_core as ours
assert not ours.HAVE_AUTOGEN
async def main():
    c = ours.HeadAndTailChatCompletionContext(1, 1)
    for m in [{"role": "user", "name": "u", "content": str(i)} for i in range(4)]:
        await c.add_message(m)
    print([m["content"] for m in await c.get_messages()])
    dumped = c.dump_component()
    print(dumped["provider"], type(ours.HeadAndTailChatCompletionContext.load_component(dumped)).__name__)
asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "['0', 'Skipped 2 messages.', '3']",
        "tightfit.compat.autogen_core.HeadAndTailChatCompletionContext HeadAndTailChatCompletionContext",
    ]
