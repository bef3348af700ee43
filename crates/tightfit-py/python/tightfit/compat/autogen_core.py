"""autogen-core's chat completion contexts, backed by tightfit's engine.

Change the import and keep the code::

    # from autogen_core.model_context import BufferedChatCompletionContext
    from tightfit.compat.autogen_core import BufferedChatCompletionContext

``UnboundedChatCompletionContext``, ``BufferedChatCompletionContext``,
``HeadAndTailChatCompletionContext`` and ``TokenLimitedChatCompletionContext`` take the same
arguments as autogen-core 0.7.5's, return the same messages (the caller's own objects), and
are subclasses of autogen-core's ``ChatCompletionContext`` and components of the same config
shape (a saved config of autogen's class loads into ours with ``load_component``).

What is different, on purpose (see the package README, "autogen-core"):

- autogen's windows can split a tool step (the token-limited context drops a call and keeps its
  results, or the reverse). Ours drop the rest of a step they cut, so every kept result answers
  a kept call: the history stays valid for the provider and within the same limit.
- With an OpenAI client (``autogen_ext``'s ``OpenAIChatCompletionClient``), the token-limited
  context counts with the engine's copy of that client's ``count_tokens``: each message once,
  instead of the whole history again after each message it drops. With any other client it
  calls the client's ``count_tokens`` / ``remaining_tokens`` as autogen does.

Where the selection happens: in the engine (``crates/tightfit/src/compat/autogen/context.rs``),
over a copy of the messages that grows with ``add_message``; this module only translates
autogen's message objects and hands back slices of the context's own list. A context notices
appends to ``_messages`` and a replaced list (``clear``, ``load_state``); replacing single items
of ``_messages`` in place is not noticed.

Without autogen-core installed the classes still work, on messages given as autogen dicts
(``{"role": "user", "name": "user", "content": "hi"}``, ``{"role": "tool", "results": [...]}``),
with plain-dict state and component configs.
"""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Sequence

from tightfit import _native

__all__ = [
    "UnboundedChatCompletionContext",
    "BufferedChatCompletionContext",
    "HeadAndTailChatCompletionContext",
    "TokenLimitedChatCompletionContext",
    "count_tokens_openai",
]

_PROVIDER = "tightfit.compat.autogen_core."
_PEER_PROVIDER = "autogen_core.model_context."

try:
    from autogen_core import Component, ComponentModel, FunctionCall, Image
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import (
        AssistantMessage,
        ChatCompletionClient,
        FunctionExecutionResultMessage,
        LLMMessage,
        SystemMessage,
        UserMessage,
    )
    from autogen_core.tools import ToolSchema
    from pydantic import BaseModel

    HAVE_AUTOGEN = True
except ImportError:  # pragma: no cover - exercised where autogen-core is not installed
    HAVE_AUTOGEN = False


# --- messages: autogen objects to the engine's autogen dicts --------------------------------


def _skeleton(message: Any) -> dict[str, Any]:
    """What the count-free contexts need of a message: its kind and its call ids."""
    if isinstance(message, dict):
        return message
    if isinstance(message, AssistantMessage):
        if isinstance(message.content, list):
            calls = [
                {"id": c.id, "type": "function", "function": {"name": "", "arguments": ""}}
                for c in message.content
                if isinstance(c, FunctionCall)
            ]
            return {"role": "assistant", "content": None, "tool_calls": calls}
        return {"role": "assistant", "content": ""}
    if isinstance(message, FunctionExecutionResultMessage):
        return {"role": "tool", "results": [{"tool_call_id": r.call_id, "content": ""} for r in message.content]}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": ""}
    return {"role": "user", "content": ""}


def _user_part(part: Any) -> Any:
    if isinstance(part, Image):
        width, height = part.image.size
        return {"type": "image", "width": width, "height": height}
    if isinstance(part, str):
        return part
    # autogen's counter raises ValueError on such a part; the engine's reader does too
    return {"type": type(part).__name__}


def _full(message: Any) -> dict[str, Any]:
    """Everything autogen-ext's counter reads of a message."""
    if isinstance(message, dict):
        return message
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        content = message.content
        if not isinstance(content, str):
            content = [_user_part(p) for p in content]
        return {"role": "user", "name": message.source, "content": content}
    if isinstance(message, AssistantMessage):
        if isinstance(message.content, list):
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.content
            ]
            return {"role": "assistant", "name": message.source, "content": message.thought, "tool_calls": calls}
        return {"role": "assistant", "name": message.source, "content": message.content, "thought": message.thought}
    if isinstance(message, FunctionExecutionResultMessage):
        results = [{"tool_call_id": r.call_id, "name": r.name, "content": r.content} for r in message.content]
        return {"role": "tool", "results": results}
    raise TypeError(f"not an autogen LLMMessage: {type(message).__name__}")


def _placeholder(text: str) -> Any:
    """The message autogen's head-and-tail context puts where it skipped messages."""
    if HAVE_AUTOGEN:
        return UserMessage(content=text, source="System")
    return {"role": "user", "name": "System", "content": text}


class _Mirror:
    """The engine's copy of a context's ``_messages``, kept in step lazily: appended
    messages are added, a replaced or shrunk list is read again."""

    __slots__ = ("native", "source", "last", "wire")

    def __init__(self, wire: Callable[[Any], dict[str, Any]]) -> None:
        self.native = _native.AutogenHistory()
        self.source: list[Any] | None = None
        self.last: Any = None
        self.wire = wire

    def sync(self, messages: list[Any]) -> None:
        n = len(self.native)
        if messages is not self.source or n > len(messages) or (n and messages[n - 1] is not self.last):
            self.native.clear()
            self.source = messages
            n = 0
        if n < len(messages):
            wire = self.wire
            self.native.extend([wire(m) for m in messages[n:]])
            self.last = messages[-1]

    def view(self, messages: list[Any], context: Any, **options: Any) -> list[Any]:
        self.sync(messages)
        parts = self.native.view(context, **options)
        if len(parts) == 1 and type(parts[0]) is tuple:
            start, end = parts[0]
            return messages[start:end]
        out: list[Any] = []
        for part in parts:
            if type(part) is tuple:
                out += messages[part[0] : part[1]]
            else:
                out.append(_placeholder(part))
        return out


# --- the OpenAI client's counter, in the engine ----------------------------------------------


def _openai_counter(client: Any) -> tuple[str, bool, Callable[[], int]] | None:
    """``(encoding, include_name, model_limit)`` when ``client`` counts exactly as autogen-ext's
    OpenAI client (not subclassed in its counting, no name prefixes, OpenAI's message shapes,
    an encoding the engine has); ``None`` otherwise, and the client's own methods count."""
    try:
        import tiktoken.model
        from autogen_ext.models.openai import _message_transform, _model_info
        from autogen_ext.models.openai._openai_client import BaseOpenAIChatCompletionClient
        from autogen_ext.models.openai._transformation import get_transformer
    except ImportError:
        return None
    if not isinstance(client, BaseOpenAIChatCompletionClient):
        return None
    cls = type(client)
    if (
        "count_tokens" in vars(client)
        or "remaining_tokens" in vars(client)
        or cls.count_tokens is not BaseOpenAIChatCompletionClient.count_tokens
        or cls.remaining_tokens is not BaseOpenAIChatCompletionClient.remaining_tokens
    ):
        return None
    try:
        if client._add_name_prefixes:
            return None
        model = client._create_args["model"]
        family = client._model_info["family"]
        include_name = bool(client._include_name_in_message)
        if get_transformer("openai", model, family) is not getattr(_message_transform, "__BASE_TRANSFORMER_MAP"):
            return None
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    try:
        encoding = tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        encoding = "cl100k_base"  # what autogen-ext falls back to
    if encoding not in ("o200k_base", "cl100k_base"):
        return None
    return encoding, include_name, lambda: _model_info.get_token_limit(model)


def _tool_dicts(tools: Sequence[Any]) -> list[Any]:
    return [getattr(t, "schema", t) for t in tools]


# --- the contexts --------------------------------------------------------------------------

if HAVE_AUTOGEN:

    class UnboundedChatCompletionContextConfig(BaseModel):
        initial_messages: List[LLMMessage] | None = None

    class BufferedChatCompletionContextConfig(BaseModel):
        buffer_size: int
        initial_messages: List[LLMMessage] | None = None

    class HeadAndTailChatCompletionContextConfig(BaseModel):
        head_size: int
        tail_size: int
        initial_messages: List[LLMMessage] | None = None

    class TokenLimitedChatCompletionContextConfig(BaseModel):
        model_client: ComponentModel
        token_limit: int | None = None
        tool_schema: List[ToolSchema] | None = None
        initial_messages: List[LLMMessage] | None = None

    class _Compat:
        """What the four contexts add to autogen's: the peer's saved configs load into ours."""

        @classmethod
        def load_component(cls, model: Any, expected: Any = None) -> Any:  # type: ignore[override]
            """Loads a component; a config saved from autogen-core's class of the same name
            loads into ours."""
            loaded = ComponentModel(**model) if isinstance(model, dict) else model.model_copy()
            if loaded.provider.startswith(_PEER_PROVIDER):
                name = loaded.provider[len(_PEER_PROVIDER) :]
                if name.endswith("ChatCompletionContext") and name in __all__:
                    loaded.provider = _PROVIDER + name
            return super().load_component(loaded, expected)  # type: ignore[misc]

    _Base: Any = ChatCompletionContext

    def _component(config: str) -> Any:
        """autogen's ``Component[<config class>]`` base."""
        return Component[globals()[config]]

else:

    class _Compat:  # type: ignore[no-redef]
        """Nothing to add without autogen."""

    class _NotAComponent:
        """Stands in for autogen's ``Component[Config]`` base."""

    def _component(config: str) -> Any:
        return _NotAComponent

    class _Base:  # type: ignore[no-redef]
        """autogen's ``ChatCompletionContext`` without autogen: messages are autogen dicts."""

        component_type = "chat_completion_context"

        def __init__(self, initial_messages: List[Any] | None = None) -> None:
            self._messages: List[Any] = []
            if initial_messages is not None:
                self._messages.extend(initial_messages)
            self._initial_messages = initial_messages

        async def add_message(self, message: Any) -> None:
            self._messages.append(message)

        async def clear(self) -> None:
            self._messages = []

        async def save_state(self) -> Mapping[str, Any]:
            return {"messages": [dict(m) for m in self._messages]}

        async def load_state(self, state: Mapping[str, Any]) -> None:
            self._messages = [dict(m) for m in state.get("messages", [])]

        def _config(self) -> dict[str, Any]:
            raise NotImplementedError

        def dump_component(self) -> dict[str, Any]:
            name = type(self).__name__
            return {
                "provider": _PROVIDER + name,
                "component_type": self.component_type,
                "version": 1,
                "component_version": 1,
                "config": {k: v for k, v in self._config().items() if v is not None},
            }

        @classmethod
        def load_component(cls, model: Mapping[str, Any]) -> Any:
            provider = str(model.get("provider", ""))
            name = provider.rsplit(".", 1)[-1]
            if name != cls.__name__:
                raise TypeError(f"expected a {cls.__name__} config, found provider {provider!r}")
            return cls(**dict(model.get("config", {})))


class UnboundedChatCompletionContext(_Compat, _Base, _component("UnboundedChatCompletionContextConfig")):  # type: ignore[misc]
    """An unbounded chat completion context that keeps a view of the all the messages."""

    if HAVE_AUTOGEN:
        component_config_schema = UnboundedChatCompletionContextConfig
    component_provider_override = _PROVIDER + "UnboundedChatCompletionContext"

    async def get_messages(self) -> List[Any]:
        """All the messages (the context's own list, as autogen returns it)."""
        return self._messages

    def _to_config(self) -> Any:
        return UnboundedChatCompletionContextConfig(initial_messages=self._initial_messages)

    def _config(self) -> dict[str, Any]:
        return {"initial_messages": self._initial_messages}

    @classmethod
    def _from_config(cls, config: Any) -> Any:
        return cls(initial_messages=config.initial_messages)


class BufferedChatCompletionContext(_Compat, _Base, _component("BufferedChatCompletionContextConfig")):  # type: ignore[misc]
    """A buffered chat completion context that keeps a view of the last n messages,
    where n is the buffer size. The buffer size is set at initialization.

    Args:
        buffer_size (int): The size of the buffer.
        initial_messages (List[LLMMessage] | None): The initial messages.
    """

    if HAVE_AUTOGEN:
        component_config_schema = BufferedChatCompletionContextConfig
    component_provider_override = _PROVIDER + "BufferedChatCompletionContext"

    def __init__(self, buffer_size: int, initial_messages: List[Any] | None = None) -> None:
        super().__init__(initial_messages)
        self._context = _native.AutogenContext({"type": "autogen_buffered", "buffer_size": buffer_size})
        self._buffer_size = buffer_size
        self._mirror = _Mirror(_skeleton)

    async def get_messages(self) -> List[Any]:
        """Get at most `buffer_size` recent messages (less a results message first)."""
        return self._mirror.view(self._messages, self._context)

    def _to_config(self) -> Any:
        return BufferedChatCompletionContextConfig(buffer_size=self._buffer_size, initial_messages=self._initial_messages)

    def _config(self) -> dict[str, Any]:
        return {"buffer_size": self._buffer_size, "initial_messages": self._initial_messages}

    @classmethod
    def _from_config(cls, config: Any) -> Any:
        return cls(buffer_size=config.buffer_size, initial_messages=config.initial_messages)


class HeadAndTailChatCompletionContext(_Compat, _Base, _component("HeadAndTailChatCompletionContextConfig")):  # type: ignore[misc]
    """A chat completion context that keeps a view of the first n and last m messages,
    where n is the head size and m is the tail size. The head and tail sizes
    are set at initialization.

    Args:
        head_size (int): The size of the head.
        tail_size (int): The size of the tail.
        initial_messages (List[LLMMessage] | None): The initial messages.
    """

    if HAVE_AUTOGEN:
        component_config_schema = HeadAndTailChatCompletionContextConfig
    component_provider_override = _PROVIDER + "HeadAndTailChatCompletionContext"

    def __init__(self, head_size: int, tail_size: int, initial_messages: List[Any] | None = None) -> None:
        super().__init__(initial_messages)
        self._context = _native.AutogenContext(
            {"type": "autogen_head_and_tail", "head_size": head_size, "tail_size": tail_size}
        )
        self._head_size = head_size
        self._tail_size = tail_size
        self._mirror = _Mirror(_skeleton)

    async def get_messages(self) -> List[Any]:
        """Get at most `head_size` oldest and `tail_size` recent messages, with a
        "Skipped N messages." user message between them."""
        return self._mirror.view(self._messages, self._context)

    def _to_config(self) -> Any:
        return HeadAndTailChatCompletionContextConfig(
            head_size=self._head_size, tail_size=self._tail_size, initial_messages=self._initial_messages
        )

    def _config(self) -> dict[str, Any]:
        return {"head_size": self._head_size, "tail_size": self._tail_size, "initial_messages": self._initial_messages}

    @classmethod
    def _from_config(cls, config: Any) -> Any:
        return cls(head_size=config.head_size, tail_size=config.tail_size, initial_messages=config.initial_messages)


class TokenLimitedChatCompletionContext(_Compat, _Base, _component("TokenLimitedChatCompletionContextConfig")):  # type: ignore[misc]
    """(Experimental) A token based chat completion context maintains a view of the context up to a token limit.

    Args:
        model_client (ChatCompletionClient): The model client to use for token counting.
            The model client must implement the `count_tokens` and `remaining_tokens` methods.
        token_limit (int | None): The maximum number of tokens to keep in the context
            using the `count_tokens` method. If None, the context will be limited by the model
            client using the `remaining_tokens` method.
        tool_schema (List[ToolSchema] | None): A list of tool schema to use in the context.
        initial_messages (List[LLMMessage] | None): A list of initial messages to include in the context.
    """

    if HAVE_AUTOGEN:
        component_config_schema = TokenLimitedChatCompletionContextConfig
    component_provider_override = _PROVIDER + "TokenLimitedChatCompletionContext"

    def __init__(
        self,
        model_client: Any,
        *,
        token_limit: int | None = None,
        tool_schema: List[Any] | None = None,
        initial_messages: List[Any] | None = None,
    ) -> None:
        super().__init__(initial_messages)
        config: dict[str, Any] = {"type": "autogen_token_limited"}
        if token_limit is not None:
            config["token_limit"] = token_limit
        self._context = _native.AutogenContext(config)
        self._token_limit = token_limit
        self._model_client = model_client
        self._tool_schema = tool_schema or []
        self._counter = _openai_counter(model_client)
        self._limited: dict[int, Any] = {}
        self._mirror = _Mirror(_full if self._counter is not None else _skeleton)

    async def get_messages(self) -> List[Any]:
        """Get at most `token_limit` tokens in recent messages, removing from the middle. If the
        token limit is not provided, then return as many messages as the remaining token
        allowed by the model client."""
        messages = self._messages
        if self._counter is not None:
            encoding, include_name, model_limit = self._counter
            limit = self._token_limit if self._token_limit is not None else model_limit()
            context = self._limited.get(limit)
            if context is None:
                context = self._limited[limit] = _native.AutogenContext(
                    {"type": "autogen_token_limited", "token_limit": limit}
                )
            return self._mirror.view(
                messages,
                context,
                encoding=encoding,
                include_name=include_name,
                tools=_tool_dicts(self._tool_schema),
            )
        client, tools = self._model_client, self._tool_schema
        if self._token_limit is None:

            def over(kept: list[int]) -> bool:
                return client.remaining_tokens([messages[i] for i in kept], tools=tools) < 0

        else:
            limit = self._token_limit

            def over(kept: list[int]) -> bool:
                return client.count_tokens([messages[i] for i in kept], tools=tools) > limit

        return self._mirror.view(messages, self._context, over=over)

    def _to_config(self) -> Any:
        return TokenLimitedChatCompletionContextConfig(
            model_client=self._model_client.dump_component(),
            token_limit=self._token_limit,
            tool_schema=self._tool_schema,
            initial_messages=self._initial_messages,
        )

    def _config(self) -> dict[str, Any]:
        return {
            "model_client": self._model_client.dump_component(),
            "token_limit": self._token_limit,
            "tool_schema": self._tool_schema,
            "initial_messages": self._initial_messages,
        }

    @classmethod
    def _from_config(cls, config: Any) -> Any:
        return cls(
            model_client=ChatCompletionClient.load_component(config.model_client),
            token_limit=config.token_limit,
            tool_schema=config.tool_schema,
            initial_messages=config.initial_messages,
        )


def _encoding_for_model(model: str) -> str:
    """The encoding tiktoken picks for ``model`` (its model table, no vocabulary loaded), the
    engine's registry when tiktoken is not installed; cl100k_base for a model neither knows,
    as autogen-ext falls back."""
    try:
        import tiktoken.model

        return tiktoken.model.encoding_name_for_model(model)
    except ImportError:
        pass
    except KeyError:
        return "cl100k_base"
    from tightfit import count
    from tightfit.errors import UnknownModel

    try:
        name = count([], model).counter
    except UnknownModel:
        return "cl100k_base"
    return name if name in ("o200k_base", "cl100k_base") else "cl100k_base"


def count_tokens_openai(
    messages: Sequence[Any],
    model: str,
    *,
    add_name_prefixes: bool = False,
    tools: Sequence[Any] = [],
    model_family: str = "unknown",
    include_name_in_message: bool = True,
) -> int:
    """autogen-ext's ``count_tokens_openai`` (what ``OpenAIChatCompletionClient.count_tokens``
    returns), counted by the engine. Raises ``ValueError`` where autogen-ext does (special-token
    text, invalid names). ``add_name_prefixes`` and the message shapes of non-OpenAI families
    (``model_family`` claude, gemini, mistral) are not replicated: they raise
    ``NotImplementedError``."""
    if add_name_prefixes:
        raise NotImplementedError("add_name_prefixes=True: count with the client's own count_tokens")
    if model_family not in ("unknown", "") and not model_family.startswith(("gpt", "o1", "o3", "o4", "r1")):
        raise NotImplementedError(f"model_family={model_family!r}: count with the client's own count_tokens")
    encoding = _encoding_for_model(model)
    if encoding not in ("o200k_base", "cl100k_base"):
        raise NotImplementedError(f"encoding {encoding!r} of {model!r}: count with the client's own count_tokens")
    history = _native.AutogenHistory()
    history.extend([_full(m) for m in messages])
    return history.count(encoding=encoding, include_name=include_name_in_message, tools=_tool_dicts(tools))
