"""tightfit.integrations.openai_agents in real OpenAI Agents SDK runs driven by a fake Model
(the SDK's model interface): every model call's input is within budget and valid, calls extend
each other, the session keeps every item, and a short input is passed on as the SDK's objects."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.run_config import CallModelData, ModelInputData
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import tightfit
from integrations_support import README_BUDGET, check_request, extends, readme_example, tool_output, transcript
from tightfit.integrations.openai_agents import TightfitInputFilter

set_tracing_disabled(True)  # the SDK would send traces to OpenAI

_calls = itertools.count()


@function_tool
def bash(command: str) -> str:
    """Run a shell command."""
    return tool_output(next(_calls))


#: the Responses API's schema of ``bash``
TOOLS = [{"type": "function", "name": "bash", "description": "Run a shell command.", "parameters": bash.params_json_schema}]


class FakeModel(Model):
    """The SDK's model interface, answering from a script: ``bash`` ``tool_turns`` times, then
    text. Records the instructions and input of every call."""

    def __init__(self, tool_turns: int) -> None:
        self.left = tool_turns
        self.requests: list[list[Any]] = []

    async def get_response(self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        head = [{"role": "system", "content": system_instructions}] if system_instructions else []
        self.requests.append(head + (list(input) if isinstance(input, list) else [{"role": "user", "content": input}]))
        if self.left == 0:
            text = ResponseOutputText(text="All tests pass.", type="output_text", annotations=[])
            output: list[Any] = [ResponseOutputMessage(id="msg_end", role="assistant", status="completed", type="message", content=[text])]
        else:
            self.left -= 1
            n = next(_calls)
            output = [ResponseFunctionToolCall(type="function_call", call_id=f"c{n}", name="bash", arguments=f'{{"command": "make {n}"}}')]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    async def stream_response(self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any) -> Any:
        """The same script as one `response.completed` event: what a streamed run reads its
        items from."""
        answer = await self.get_response(system_instructions, input, *args, **kwargs)
        response = Response(
            id="resp_fake", created_at=0, model="fake", object="response", output=answer.output,
            parallel_tool_calls=False, tool_choice="auto", tools=[],
        )
        yield ResponseCompletedEvent(type="response.completed", sequence_number=0, response=response)


def as_items(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """An OpenAI history as the system prompt and Responses input items: user messages,
    reasoning items (DeepSeek's thinking as a summary), assistant text, function calls and their
    outputs."""
    system, items = "", []
    for i, m in enumerate(messages):
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "user":
            items.append({"role": "user", "content": m["content"]})
        elif m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        else:
            if m.get("reasoning_content"):
                summary = [{"type": "summary_text", "text": m["reasoning_content"]}]
                items.append({"type": "reasoning", "id": f"rs_{i}", "summary": summary})
            if m.get("content"):
                text = [{"type": "output_text", "text": m["content"], "annotations": []}]
                items.append({"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed", "content": text})
            for call in m.get("tool_calls") or []:
                items.append({"type": "function_call", "call_id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"]})
    return system, items


def check(request: list[Any], budget: int) -> None:
    check_request(request, model="gpt-4o", budget=budget, tools=TOOLS, format="responses")


def test_the_readme_example_runs_and_each_model_call_is_fitted() -> None:
    model = FakeModel(3)
    system, history = as_items(transcript())
    namespace = {"model": model, "bash": bash, "history": history, "SYSTEM": system}
    exec(readme_example("OpenAI Agents SDK"), namespace)
    assert namespace["result"].final_output == "All tests pass."
    assert len(model.requests) == 4
    for request in model.requests:
        check(request, README_BUDGET)
    assert len(model.requests[0]) < len(history)  # the 26k-token history was cut


def test_calls_extend_each_other_and_the_session_keeps_every_item() -> None:
    model = FakeModel(12)
    system, history = as_items(transcript())
    agent = Agent(name="fixer", instructions=system, model=model, tools=[bash])
    session = SQLiteSession("fixer")
    asyncio.run(session.add_items(history))
    config = RunConfig(call_model_input_filter=TightfitInputFilter("gpt-4o", budget=8_000))
    Runner.run_sync(agent, "Go on.", session=session, run_config=config, max_turns=20)
    for request in model.requests:
        check(request, 8_000)
    requests = model.requests
    assert sum(extends(b, a) for a, b in zip(requests, requests[1:])) >= len(requests) - 1 - 3
    stored = asyncio.run(session.get_items())
    assert len(stored) == len(history) + 1 + 12 * 2 + 1  # + the prompt, 12 calls and outputs, the answer


def test_a_streamed_run_is_fitted_too() -> None:
    model = FakeModel(4)
    system, history = as_items(transcript())
    agent = Agent(name="fixer", instructions=system, model=model, tools=[bash])
    config = RunConfig(call_model_input_filter=TightfitInputFilter("gpt-4o", budget=8_000))

    async def run() -> Any:
        streamed = Runner.run_streamed(agent, history, run_config=config, max_turns=10)
        async for _ in streamed.stream_events():
            pass
        return streamed

    streamed = asyncio.run(run())
    assert streamed.final_output == "All tests pass."
    assert len(model.requests) == 5
    for request in model.requests:
        check(request, 8_000)
    assert len(model.requests[0]) < len(history)  # the 26k-token history was cut


def test_a_short_input_is_passed_on_as_the_sdks_own_items() -> None:
    items = [
        {"role": "user", "content": "What is 2+2?"},
        {"type": "function_call", "call_id": "c1", "name": "calc", "arguments": '{"x": "2+2"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "4"},
    ]
    agent = Agent(name="calc", instructions="Be brief.", model=FakeModel(0))
    data = CallModelData(model_data=ModelInputData(input=list(items), instructions="Be brief."), agent=agent, context=None)
    fitted = asyncio.run(TightfitInputFilter("gpt-4o")(data))
    assert fitted.instructions == "Be brief."
    assert len(fitted.input) == 3 and all(a is b for a, b in zip(fitted.input, items))


def test_bad_arguments_raise_clear_errors() -> None:
    with pytest.raises(TypeError, match="model"):
        TightfitInputFilter("")
    with pytest.raises(tightfit.ConfigError, match="budget"):
        TightfitInputFilter("gpt-4o", budget=10**9)
    with pytest.raises(TypeError, match="CallModelData"):
        TightfitInputFilter("gpt-4o").fit([{"role": "user", "content": "Hi"}])  # type: ignore[arg-type]

