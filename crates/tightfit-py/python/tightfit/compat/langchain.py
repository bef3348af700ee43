"""LangChain's ``trim_messages`` and ``count_tokens_approximately``, answered by tightfit.

Change the import and nothing else::

    # from langchain_core.messages import trim_messages
    from tightfit.compat.langchain import trim_messages

Same signatures, same defaults, same results as langchain-core 1.7.2, on LangChain message
objects (or anything ``convert_to_messages`` reads), and usable as a Runnable when called
without messages. The selection runs in the Rust engine (its ``langchain_trim`` step):
``"approximate"``, ``count_tokens_approximately`` (LangChain's or ours, also as a
``functools.partial`` with its settings), ``len`` and our :func:`count_tokens` (exact tokens
of a model, the fast replacement for a tiktoken function) are counted there; any other
counter is called on the lists LangChain would call it on (a function of one message once
per message).

One deliberate difference: where LangChain's cut separates a tool call from its results, the
orphaned results (or the call's message) are dropped too, since providers reject such a
history; see the package README.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Iterable, Literal, Sequence

from tightfit import _native

try:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
    from langchain_core.messages import utils as _peer
    from langchain_core.messages.utils import convert_to_messages
except ImportError as error:  # pragma: no cover - exercised only without langchain-core
    raise ImportError(
        "tightfit.compat.langchain needs langchain-core: pip install langchain-core"
    ) from error

try:
    from langchain_text_splitters import TextSplitter as _TextSplitter
except ImportError:
    _TextSplitter = None

__all__ = ["trim_messages", "count_tokens_approximately", "count_tokens"]

# the order the native module reads them in
_CLASSES = (AIMessage, HumanMessage, SystemMessage, ToolMessage, FunctionMessage, ChatMessage)

# count_tokens_approximately's settings the engine counts with inside a trim
_TRIM_SETTINGS = ("chars_per_token", "extra_tokens_per_message", "count_name", "tokens_per_image")


def count_tokens_approximately(
    messages: Iterable[Any],
    *,
    chars_per_token: float = 4.0,
    extra_tokens_per_message: float = 3.0,
    count_name: bool = True,
    tokens_per_image: int = 85,
    use_usage_metadata_scaling: bool = False,
    tools: list[Any] | None = None,
) -> int:
    """Approximate the total number of tokens in messages, as langchain-core does: characters
    of the content, role, name, an AI message's tool calls and a tool message's call id,
    divided by ``chars_per_token``; plus ``extra_tokens_per_message`` per message and
    ``tokens_per_image`` per image; plus the JSON of ``tools``. Counted by the engine."""
    converted = convert_to_messages(messages)
    settings = {
        "chars_per_token": chars_per_token,
        "extra_tokens_per_message": extra_tokens_per_message,
        "count_name": count_name,
        "tokens_per_image": tokens_per_image,
        "use_usage_metadata_scaling": use_usage_metadata_scaling,
    }
    tool_dicts = [_tool_dict(tool) for tool in tools] if tools else None
    return _native.langchain_count_approximately(
        converted, classes=_CLASSES, settings=settings, tools=tool_dicts
    )


def count_tokens(messages: Iterable[Any], *, model: str = "gpt-4o") -> int:
    """The exact tokens of ``messages`` for ``model``, as the provider bills them: each
    message with its framing (the model's tokenizer; tool calls with their arguments as
    ``json.dumps(args, ensure_ascii=False)``), plus the reply priming. A ``token_counter`` for
    :func:`trim_messages` (also LangChain's own) in place of a tiktoken function; pass another
    model with ``functools.partial(count_tokens, model=...)``. ``trim_messages`` counts it in
    the engine, tokenizing only the messages it keeps. An unknown model raises
    :class:`tightfit.UnknownModel`."""
    return _native.langchain_count_model(convert_to_messages(messages), classes=_CLASSES, model=model)


def _tool_dict(tool: Any) -> Any:
    """A tool as the dict whose JSON LangChain counts (its name, description, parameters)."""
    if isinstance(tool, dict):
        return tool
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        parameters = dict(schema)
    else:
        parameters = dict(_peer.get_model_json_schema(schema))
    parameters.pop("title", None)
    parameters.pop("description", None)
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


# the functions that are count_tokens_approximately with its defaults
_APPROXIMATE = (
    _peer.count_tokens_approximately,
    _peer._approximate_token_counter,
    count_tokens_approximately,
)


def _approximate_settings(counter: Any) -> dict[str, Any] | None:
    """The settings, if ``counter`` is ``count_tokens_approximately`` (LangChain's or ours)
    or a ``functools.partial`` of it with settings the engine counts with; else ``None``."""
    if any(counter is f for f in _APPROXIMATE):
        return {}
    if (
        isinstance(counter, functools.partial)
        and any(counter.func is f for f in _APPROXIMATE[::2])
        and not counter.args
        and all(key in _TRIM_SETTINGS for key in counter.keywords)
        and all(isinstance(v, (int, float)) for v in counter.keywords.values())
        and counter.keywords.get("chars_per_token", 4.0) != 0
    ):
        return dict(counter.keywords)
    return None


def _model(counter: Any) -> str | None:
    """The model, if ``counter`` is :func:`count_tokens` (or a partial of it naming one)."""
    if counter is count_tokens:
        return "gpt-4o"
    if (
        isinstance(counter, functools.partial)
        and counter.func is count_tokens
        and not counter.args
        and set(counter.keywords) <= {"model"}
        and isinstance(counter.keywords.get("model", "gpt-4o"), str)
    ):
        return counter.keywords.get("model", "gpt-4o")
    return None


def _counter(token_counter: Any) -> tuple[str, Any, dict[str, Any] | None]:
    """How to count: (kind, Python callable or None, approximate settings or None), chosen
    as LangChain chooses (a shortcut name, a model, a function of a list or of one message)."""
    if isinstance(token_counter, str):
        if token_counter != "approximate":
            msg = (
                f"Invalid token_counter shortcut '{token_counter}'. "
                f"Available shortcuts: 'approximate'."
            )
            raise ValueError(msg)
        return "approximate", None, {}
    if token_counter is len:
        return "len", None, None
    settings = _approximate_settings(token_counter)
    if settings is not None:
        return "approximate", None, settings
    model = _model(token_counter)
    if model is not None:
        return "model", None, {"model": model}
    if hasattr(token_counter, "get_num_tokens_from_messages"):
        return "list", token_counter.get_num_tokens_from_messages, None
    if callable(token_counter):
        first = next(iter(inspect.signature(token_counter).parameters.values()))
        if first.annotation is BaseMessage:
            return "message", token_counter, None
        return "list", token_counter, None
    msg = (
        f"'token_counter' expected to be a model that implements "
        f"'get_num_tokens_from_messages()' or a function. Received object of type "
        f"{type(token_counter)}."
    )
    raise ValueError(msg)


def _splitter(text_splitter: Any) -> Any:
    """The caller's splitter as a function; ``None`` for LangChain's default (lines), which
    the engine splits itself."""
    if _TextSplitter is not None and isinstance(text_splitter, _TextSplitter):
        return text_splitter.split_text
    if text_splitter and text_splitter is not _peer._default_text_splitter:
        return text_splitter
    return None


def _runnable_support(func: Callable[..., Any]) -> Callable[..., Any]:
    """Called without messages, return a Runnable of the other arguments (as LangChain does)."""

    @functools.wraps(func)
    def wrapped(messages: Any = None, *args: Any, **kwargs: Any) -> Any:
        from langchain_core.runnables.base import RunnableLambda

        if messages is not None:
            return func(messages, *args, **kwargs)
        return RunnableLambda(functools.partial(func, **kwargs), name=func.__name__)

    return wrapped


@_runnable_support
def trim_messages(
    messages: Iterable[Any] | Any,
    *,
    max_tokens: int,
    token_counter: Callable[[list[BaseMessage]], int]
    | Callable[[BaseMessage], int]
    | Any
    | Literal["approximate"],
    strategy: Literal["first", "last"] = "last",
    allow_partial: bool = False,
    end_on: str | type[BaseMessage] | Sequence[str | type[BaseMessage]] | None = None,
    start_on: str | type[BaseMessage] | Sequence[str | type[BaseMessage]] | None = None,
    include_system: bool = False,
    text_splitter: Callable[[str], list[str]] | Any | None = None,
) -> list[BaseMessage]:
    """Trim messages to be below a token count, exactly as langchain-core's
    ``trim_messages`` does (see its documentation for every argument).

    Unchanged messages are the caller's own objects; a message cut by ``allow_partial`` is
    a deep copy with the new content. The one difference: a tool result whose call was cut
    away, or a call whose results were, is dropped as well (a provider would reject it).
    """
    return _trim(
        messages,
        max_tokens=max_tokens,
        token_counter=token_counter,
        strategy=strategy,
        allow_partial=allow_partial,
        end_on=end_on,
        start_on=start_on,
        include_system=include_system,
        text_splitter=text_splitter,
        keep_tool_pairs=True,
    )


def _trim(
    messages: Any,
    *,
    max_tokens: int,
    token_counter: Any,
    strategy: str = "last",
    allow_partial: bool = False,
    end_on: Any = None,
    start_on: Any = None,
    include_system: bool = False,
    text_splitter: Any = None,
    keep_tool_pairs: bool = True,
) -> list[BaseMessage]:
    """``trim_messages``; with ``keep_tool_pairs=False`` LangChain's cut exactly, even where
    it separates tool calls from their results (for tests against the peer)."""
    if start_on and strategy == "first":
        msg = "start_on parameter is only valid with strategy='last'"
        raise ValueError(msg)
    if include_system and strategy == "first":
        msg = "include_system parameter is only valid with strategy='last'"
        raise ValueError(msg)
    converted = convert_to_messages(messages)
    kind, counter, settings = _counter(token_counter)
    model = settings.pop("model") if kind == "model" and settings else None
    return _native.langchain_trim(
        converted,
        max_tokens=max_tokens,
        counter_kind=kind,
        counter=counter,
        approximate_settings=settings,
        model=model,
        classes=_CLASSES,
        strategy=strategy,
        allow_partial=allow_partial,
        include_system=include_system,
        start_on=start_on,
        end_on=end_on,
        splitter=_splitter(text_splitter) if allow_partial else None,
        keep_tool_pairs=keep_tool_pairs,
    )
