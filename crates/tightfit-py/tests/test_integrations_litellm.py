"""tightfit.integrations.litellm through real LiteLLM calls: the model answers with LiteLLM's
``mock_response`` machinery (``litellm.mock_completion``) behind a custom provider
(``recording/...``, LiteLLM's ``CustomLLM``) that records what it receives, so nothing leaves
the machine."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import litellm
import pytest
from litellm import CustomLLM
from litellm.caching.dual_cache import DualCache
from litellm.proxy._types import UserAPIKeyAuth

import tightfit
from integrations_support import README_BUDGET, check_request, extends, readme_example, tool_output, transcript
from tightfit.integrations.litellm import TightfitHook

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


class RecordingProvider(CustomLLM):
    """A LiteLLM provider that records the messages of each call and answers with
    ``mock_response``."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[list[Any]] = []

    def completion(self, *args: Any, **kwargs: Any) -> Any:
        self.requests.append(list(kwargs["messages"]))
        return litellm.mock_completion(model="gpt-4o", messages=kwargs["messages"], mock_response="Done.")

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        return self.completion(*args, **kwargs)


#: a deployment of gpt-4o served by the recording provider (a name LiteLLM does not take for
#: one of OpenAI's models, which it would send to OpenAI's handler whatever the prefix)
DEPLOYMENT = "recording/my-gpt-4o"


@pytest.fixture
def provider() -> Iterator[RecordingProvider]:
    """The ``recording`` provider; LiteLLM's globals restored after."""
    saved = (litellm.custom_provider_map, litellm.callbacks)
    fake = RecordingProvider()
    litellm.custom_provider_map = [{"provider": "recording", "custom_handler": fake}]
    litellm.callbacks = []
    yield fake
    litellm.custom_provider_map, litellm.callbacks = saved


def test_the_readme_example_fits_acompletion_and_completion(provider: RecordingProvider) -> None:
    history = transcript()
    namespace = {"history": history, "tools": TOOLS, "deployment": DEPLOYMENT}
    exec(readme_example("LiteLLM"), namespace)
    assert len(provider.requests) == 2
    for request in provider.requests:
        check_request(request, model="gpt-4o", budget=README_BUDGET, tools=TOOLS)
        assert len(request) < len(history)
    assert provider.requests[0] == provider.requests[1]  # one session: the same cut both times
    assert history == transcript()  # the caller's messages are not changed


def test_turns_extend_each_other(provider: RecordingProvider) -> None:
    litellm.callbacks = [TightfitHook(model="gpt-4o", budget=8_000)]
    messages = transcript()
    stateless = []  # what a stateless fit of the same histories would send
    for n in range(12):
        asyncio.run(litellm.acompletion(model=DEPLOYMENT, messages=messages, tools=TOOLS))
        stateless.append(tightfit.fit(messages, "gpt-4o", budget=8_000, tools=TOOLS).messages)
        call = {"id": f"c{n}", "type": "function", "function": {"name": "bash", "arguments": '{"command": "make"}'}}
        messages = [*messages, {"role": "assistant", "content": None, "tool_calls": [call]}]
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": tool_output(n)})
    requests = provider.requests
    for request in requests:
        check_request(request, model="gpt-4o", budget=8_000, tools=TOOLS)
    assert sum(extends(b, a) for a, b in zip(requests, requests[1:])) >= len(requests) - 1 - 3
    # the stateless cut moves every turn: no request extends the one before
    assert sum(extends(b, a) for a, b in zip(stateless, stateless[1:])) == 0


def test_a_short_request_is_passed_on_unchanged(provider: RecordingProvider) -> None:
    hook = TightfitHook(model="gpt-4o")
    litellm.callbacks = [hook]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    asyncio.run(litellm.acompletion(model=DEPLOYMENT, messages=messages))
    assert provider.requests == [messages]
    # the hook hands LiteLLM the caller's own dicts (LiteLLM copies them on its way)
    fitted = asyncio.run(hook.async_pre_call_deployment_hook({"model": DEPLOYMENT, "messages": messages}, "acompletion"))
    assert all(a is b for a, b in zip(fitted["messages"], messages)) and len(fitted["messages"]) == 2


def test_the_proxy_hook_fits_once_and_says_so() -> None:
    hook = TightfitHook(model="gpt-4o", budget=8_000)
    history = transcript()
    data = {"model": "my-gpt", "messages": history, "metadata": {"user_api_key": "hashed"}}
    fitted = asyncio.run(hook.async_pre_call_hook(UserAPIKeyAuth(), DualCache(), data, "completion"))
    check_request(fitted["messages"], model="gpt-4o", budget=8_000)
    report = fitted["metadata"]["tightfit"]
    assert report["original_tokens"] > 8_000 >= report["compressed_tokens"]
    assert fitted["metadata"]["user_api_key"] == "hashed" and "tightfit" not in data["metadata"]
    # after routing, litellm.acompletion calls the deployment hook: the request is not fitted again
    assert asyncio.run(hook.async_pre_call_deployment_hook(fitted, "acompletion")) is None
    # a request that is not a chat completion is left alone
    embedding = {"model": "my-gpt", "input": ["text"]}
    assert asyncio.run(hook.async_pre_call_hook(UserAPIKeyAuth(), DualCache(), embedding, "embeddings")) is embedding


def test_bad_arguments_and_unknown_models_raise_clear_errors(provider: RecordingProvider) -> None:
    with pytest.raises(TypeError, match="model"):
        TightfitHook(model=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="budget"):
        TightfitHook(model="gpt-4o", budget="lots")  # type: ignore[arg-type]
    litellm.callbacks = [TightfitHook()]
    with pytest.raises(tightfit.UnknownModel, match="my-llm"):
        asyncio.run(litellm.acompletion(model="recording/my-llm", messages=[{"role": "user", "content": "Hi"}]))
    assert provider.requests == []
