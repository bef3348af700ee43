"""tightfit.integrations.langchain and .langgraph, in real LangChain v1 / LangGraph agents
driven by LangChain's own fake chat model: what the model receives is within budget and valid,
turns extend each other, a short history is passed on as the caller's objects, and the agent's
state keeps every message."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages import convert_to_messages, convert_to_openai_messages
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import create_react_agent
from pydantic import Field

import tightfit
from integrations_support import README_BUDGET, check_request, extends, readme_example, tool_output, transcript
from tightfit.integrations.langchain import TightfitMiddleware
from tightfit.integrations.langgraph import pre_model_hook

_calls = itertools.count()


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return tool_output(next(_calls))


TOOLS = [convert_to_openai_tool(bash)]


class RecordingModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering with the scripted messages; it records every
    request it receives and takes any tools."""

    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def fake_model(tool_turns: int) -> RecordingModel:
    """A model that calls ``bash`` ``tool_turns`` times, then answers."""
    script = [
        AIMessage(content="", tool_calls=[{"name": "bash", "args": {"command": f"make test {i}"}, "id": f"call_t{i}"}])
        for i in range(tool_turns)
    ]
    return RecordingModel(messages=iter([*script, AIMessage(content="All tests pass.")]))


def as_dicts(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return convert_to_openai_messages(messages)


def test_the_readme_example_runs_and_the_model_receives_a_fitted_history() -> None:
    model, history = fake_model(3), convert_to_messages(transcript())
    namespace = {"model": model, "tools": [bash], "history": history}
    exec(readme_example("LangChain v1 agents"), namespace)
    assert len(model.requests) == 4
    for request in model.requests:
        check_request(as_dicts(request), model="gpt-4o", budget=README_BUDGET, tools=TOOLS)
    assert len(model.requests[0]) < len(history)  # the 26k-token history was cut
    state = namespace["result"]["messages"]
    assert [m.content for m in state[: len(history)]] == [m.content for m in history]  # the state keeps it all
    assert len(state) == len(history) + 3 * 2 + 1


def test_turns_extend_each_other_until_a_compaction() -> None:
    model = fake_model(12)
    agent = create_agent(
        model, [bash], system_prompt="You fix bugs.", middleware=[TightfitMiddleware(model="gpt-4o", budget=8_000)]
    )
    agent.invoke({"messages": convert_to_messages(transcript())})
    requests = [as_dicts(r) for r in model.requests]
    for request in requests:
        check_request(request, model="gpt-4o", budget=8_000, tools=TOOLS)
    extended = sum(extends(later, earlier) for earlier, later in zip(requests, requests[1:]))
    # each turn adds ~650 tokens; a compaction cuts to 60% of the budget, so it holds ~5 turns
    assert extended >= len(requests) - 1 - 3, [len(r) for r in requests]


def test_a_short_history_reaches_the_model_as_the_callers_own_objects() -> None:
    model = fake_model(0)
    agent = create_agent(model, [bash], system_prompt="Be brief.", middleware=[TightfitMiddleware(model="gpt-4o")])
    history = [HumanMessage("What is 2+2?", id="h1"), AIMessage("4", id="a1"), HumanMessage("And 3+3?", id="h2")]
    result = agent.invoke({"messages": history})
    (request,) = model.requests
    assert isinstance(request[0], SystemMessage) and request[0].content == "Be brief."
    state = result["messages"]
    assert all(sent is kept for sent, kept in zip(request[1:], state[:3]))
    assert [m.content for m in request[1:]] == ["What is 2+2?", "4", "And 3+3?"]


def test_a_cut_tool_result_keeps_its_call_id_and_the_agent_runs_async() -> None:
    model = fake_model(2)
    middleware = TightfitMiddleware(model="gpt-4o", budget=3_000, policy=[tightfit.TruncateToolResults(max_tokens=200)])
    agent = create_agent(model, [bash], middleware=[middleware])
    history = [
        HumanMessage("Check the repository."),
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "ls"}, "id": "call_ls"}]),
        ToolMessage("\n".join(f"file_{i}.py" for i in range(2_000)), tool_call_id="call_ls", id="t1"),
    ]
    asyncio.run(agent.ainvoke({"messages": history}))
    first = model.requests[0]
    cut = first[2]
    assert isinstance(cut, ToolMessage) and cut.tool_call_id == "call_ls" and cut.id == "t1"
    assert len(cut.content) < len(history[2].content)
    for request in model.requests:
        check_request(as_dicts(request), model="gpt-4o", budget=3_000, tools=TOOLS)


def test_bad_arguments_raise_when_the_middleware_is_made() -> None:
    with pytest.raises(TypeError, match="model"):
        TightfitMiddleware(model=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="budget"):
        TightfitMiddleware(model="gpt-4o", budget="lots")  # type: ignore[arg-type]
    with pytest.raises(tightfit.ConfigError, match="nope"):
        TightfitMiddleware(model="gpt-4o", policy="nope")
    with pytest.raises(tightfit.UnknownModel, match="gpt-9000"):
        TightfitMiddleware(model="gpt-9000")
    with pytest.raises(TypeError, match="high_waters"):
        TightfitMiddleware(model="gpt-4o", high_waters=0.8)


def test_the_langgraph_readme_example_runs_and_the_state_keeps_every_message() -> None:
    model, history = fake_model(3), convert_to_messages(transcript())
    namespace = {"model": model, "tools": [bash], "history": history}
    exec(readme_example("LangGraph"), namespace)
    assert len(model.requests) == 4
    for request in model.requests:
        check_request(as_dicts(request), model="gpt-4o", budget=README_BUDGET, tools=TOOLS)
    assert len(model.requests[0]) < len(history)
    assert len(namespace["result"]["messages"]) == len(history) + 3 * 2 + 1


def test_the_langgraph_hook_extends_each_turn_and_passes_a_short_history_untouched() -> None:
    hook = pre_model_hook("gpt-4o", budget=8_000)
    model = fake_model(12)
    create_react_agent(model, [bash], pre_model_hook=hook).invoke({"messages": convert_to_messages(transcript())})
    requests = [as_dicts(r) for r in model.requests]
    for request in requests:
        check_request(request, model="gpt-4o", budget=8_000, tools=TOOLS)
    assert sum(extends(b, a) for a, b in zip(requests, requests[1:])) >= len(requests) - 1 - 3
    short = [HumanMessage("Hi", id="h1"), AIMessage("Hello", id="a1"), HumanMessage("Bye", id="h2")]
    fitted = hook({"messages": short})["llm_input_messages"]
    assert all(a is b for a, b in zip(fitted, short)) and len(fitted) == 3
    with pytest.raises(TypeError, match="messages"):
        hook({"history": short})
