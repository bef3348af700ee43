"""tightfit.integrations.pydantic_ai in a real pydantic-ai agent driven by pydantic-ai's own
FunctionModel: the history each request carries is within budget and valid, requests extend
each other, messages the fit left alone are the caller's objects, and every part kind is read."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import tightfit
from integrations_support import README_BUDGET, check_request, extends, readme_example, tool_output, transcript
from tightfit.integrations.pydantic_ai import TightfitCapability, TightfitHistoryProcessor

_calls = itertools.count()


def bash(command: str) -> str:
    """Run a shell command."""
    return tool_output(next(_calls))


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


class Scripted:
    """A FunctionModel function: calls ``bash`` ``tool_turns`` times (thinking first), then
    answers; records the history of every request."""

    def __init__(self, tool_turns: int) -> None:
        self.left = tool_turns
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        if self.left == 0:
            return ModelResponse(parts=[TextPart("All tests pass.")])
        self.left -= 1
        n = next(_calls)
        return ModelResponse(
            parts=[ThinkingPart("Run the tests again."), ToolCallPart("bash", {"command": f"make {n}"}, tool_call_id=f"c{n}")]
        )


def from_openai(messages: list[dict[str, Any]]) -> list[ModelMessage]:
    """An OpenAI history as pydantic-ai messages: system and user prompts and tool returns in
    requests, each assistant step a response of its thinking, text and tool calls."""
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    request: list[Any] = []
    for m in messages:
        if m["role"] == "assistant":
            if request:
                out.append(ModelRequest(parts=request))
                request = []
            parts: list[Any] = []
            if m.get("reasoning_content"):
                parts.append(ThinkingPart(m["reasoning_content"]))
            if m.get("content"):
                parts.append(TextPart(m["content"]))
            for call in m.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append(ToolCallPart(call["function"]["name"], call["function"]["arguments"], tool_call_id=call["id"]))
            out.append(ModelResponse(parts=parts))
        elif m["role"] == "system":
            request.append(SystemPromptPart(m["content"]))
        elif m["role"] == "user":
            request.append(UserPromptPart(m["content"]))
        else:
            request.append(ToolReturnPart(names[m["tool_call_id"]], m["content"], tool_call_id=m["tool_call_id"]))
    if request:
        out.append(ModelRequest(parts=request))
    return out


def as_openai(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """What a request sends, as OpenAI dicts (the test's own reading, to check the result by)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            calls = [
                {"id": p.tool_call_id, "type": "function", "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            thinking = "".join(p.content for p in message.parts if isinstance(p, ThinkingPart))
            d: dict[str, Any] = {"role": "assistant", "content": text or None}
            if thinking:
                d["reasoning_content"] = thinking
            if calls:
                d["tool_calls"] = calls
            out.append(d)
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": part.content if isinstance(part.content, str) else str(part.content)})
            elif isinstance(part, ToolReturnPart):
                out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response_str()})
    return out


def test_the_readme_example_runs_and_each_request_is_fitted() -> None:
    model = Scripted(3)
    history = from_openai(transcript())
    namespace = {"model": FunctionModel(model), "bash": bash, "history": history}
    exec(readme_example("pydantic-ai"), namespace)
    result = namespace["result"]
    assert result.output == "All tests pass."
    assert len(model.requests) == 4
    for request in model.requests:
        check_request(as_openai(request), model="gpt-4o", budget=README_BUDGET, tools=TOOLS)
    assert len(model.requests[0]) < len(history)  # the 26k-token history was cut
    # the run's history keeps every message: the capability changes only what is sent
    assert result.all_messages()[: len(history)] == history
    assert len(result.all_messages()) == len(history) + 1 + 3 * 2 + 1


def run_twelve_turns(capability: Any) -> list[list[dict[str, Any]]]:
    """The requests of an agent run of twelve tool calls on the real history, as OpenAI dicts."""
    model = Scripted(12)
    history = from_openai(transcript())
    Agent(FunctionModel(model), tools=[bash], capabilities=[capability]).run_sync("Go on.", message_history=history)
    requests = [as_openai(r) for r in model.requests]
    for request in requests:
        check_request(request, model="gpt-4o", budget=8_000, tools=TOOLS)
    assert len(requests) == 13
    return requests


def test_requests_extend_each_other_until_a_compaction() -> None:
    requests = run_twelve_turns(TightfitCapability("gpt-4o", budget=8_000))
    assert transcript()[-1] in requests[0]  # the newest steps are kept
    assert sum(extends(b, a) for a, b in zip(requests, requests[1:])) >= len(requests) - 1 - 3


def test_the_history_processor_fits_through_process_history() -> None:
    requests = run_twelve_turns(ProcessHistory(TightfitHistoryProcessor("gpt-4o", budget=8_000)))
    assert sum(extends(b, a) for a, b in zip(requests, requests[1:])) >= len(requests) - 1 - 3


def test_a_short_history_is_returned_as_the_same_objects() -> None:
    processor = TightfitHistoryProcessor("gpt-4o")
    history = [
        ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart(["What is this?", ImageUrl("https://example.com/a.png")])]),
        ModelResponse(parts=[ThinkingPart("Look it up."), ToolCallPart("search", {"q": "a.png"}, tool_call_id="s1")]),
        ModelRequest(parts=[ToolReturnPart("search", "Bad query", tool_call_id="s1", outcome="retried")]),
        ModelResponse(parts=[ToolCallPart("search", {"q": "a png"}, tool_call_id="s2")]),
        ModelRequest(parts=[ToolReturnPart("search", {"hits": 3}, tool_call_id="s2")]),
        ModelResponse(parts=[TextPart("An image!")]),
        ModelRequest(parts=[RetryFeedbackPart("No exclamation marks.", retry=RetryInfo(cause="model_retry"))]),
        ModelResponse(parts=[TextPart("An image.")]),
        ModelRequest(parts=[UserPromptPart("Thanks!")], instructions="Answer in one line."),
    ]
    fitted = processor(history)
    # untouched also says every part was read as what it is sent as: had the retried return not
    # answered call s1, the repair pass would have answered it and changed the history
    assert len(fitted) == len(history) and all(a is b for a, b in zip(fitted, history))


def test_dropped_thinking_leaves_the_tool_call_and_a_cut_return_keeps_its_id() -> None:
    long_output = "\n".join(f"row {i}: ok" for i in range(3_000))
    history = [
        ModelRequest(parts=[UserPromptPart("List the rows.")]),
        ModelResponse(parts=[ThinkingPart("I will list them."), ToolCallPart("rows", {}, tool_call_id="r1")]),
        ModelRequest(parts=[ToolReturnPart("rows", long_output, tool_call_id="r1")]),
        ModelResponse(parts=[TextPart("3,000 rows, all ok.")]),
        ModelRequest(parts=[UserPromptPart("Thanks.")]),
    ]
    policy = [tightfit.DropThinking(), tightfit.TruncateToolResults(max_tokens=100)]
    fitted = TightfitHistoryProcessor("gpt-4o", budget=2_000, policy=policy, high_water=0.5, low_water=0.3)(history)
    assert fitted[0] is history[0]
    response, returned = fitted[1], fitted[2]
    assert [p.part_kind for p in response.parts] == ["tool-call"] and response.parts[0] is history[1].parts[1]
    (part,) = returned.parts
    assert part.tool_call_id == "r1" and part.tool_name == "rows" and len(part.content) < len(long_output)
    assert history[1].parts[0].part_kind == "thinking"  # the caller's messages are not changed
    check_request(as_openai(fitted), model="gpt-4o", budget=2_000)


def test_bad_input_and_arguments_raise_clear_errors() -> None:
    with pytest.raises(TypeError, match="model"):
        TightfitHistoryProcessor(42)  # type: ignore[arg-type]
    with pytest.raises(tightfit.ConfigError, match="low_water"):
        TightfitHistoryProcessor("gpt-4o", high_water=0.5, low_water=0.9)
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        TightfitHistoryProcessor("gpt-4o")([ModelRequest(parts=[UserPromptPart("Hi")]), {"role": "user"}])  # type: ignore[list-item]
