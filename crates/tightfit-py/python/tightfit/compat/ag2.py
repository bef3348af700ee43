"""Drop-in replacements for AG2's message transforms (``autogen.agentchat.contrib.capabilities
.transforms``, ag2 0.14).

Change the import and keep the rest::

    # from autogen.agentchat.contrib.capabilities.transforms import MessageHistoryLimiter, MessageTokenLimiter
    from tightfit.compat.ag2 import MessageHistoryLimiter, MessageTokenLimiter

The classes take AG2's keyword arguments with AG2's defaults, give AG2's results and log texts,
and work with AG2's ``TransformMessages`` capability. The work is done by the engine's
``ag2_history_limiter``, ``ag2_token_limiter`` and ``content_name`` steps; these classes only
translate. Where AG2's result is a history a provider rejects (a tool result whose call was
cut, messages out of order), the result is the closest valid one instead; the package README
lists every such difference.

Messages a transform leaves unchanged come back as the caller's own dicts (AG2 deep-copies
them); changed messages are new dicts. The input list is never mutated.
"""

from __future__ import annotations

from typing import Any, Protocol

from tightfit import _native
from tightfit.errors import ConfigError

__all__ = [
    "MessageTransform",
    "MessageHistoryLimiter",
    "MessageTokenLimiter",
    "TextMessageCompressor",
    "TextMessageContentName",
]

Messages = list[dict[str, Any]]


class MessageTransform(Protocol):
    """AG2's contract for a message transform."""

    def apply_transform(self, messages: Messages) -> Messages: ...

    def get_logs(self, pre_transform_messages: Messages, post_transform_messages: Messages) -> tuple[str, bool]: ...


def _config(step: str, **params: Any) -> dict[str, Any]:
    """The engine step's configuration map: the keys that were given."""
    config: dict[str, Any] = {"type": step}
    config.update((key, value) for key, value in params.items() if value is not None)
    return config


class MessageHistoryLimiter:
    """Keeps the last ``max_messages`` messages (the first one too with
    ``keep_first_message``), after dropping those sent by ``exclude_names``.

    A tool call and its results stay together: where AG2's window would start on a result whose
    call it cut, that result goes too (the history holds fewer than ``max_messages``). AG2's
    reordering of the oldest kept message is not reproduced. Cost: the window, not the history.
    """

    def __init__(
        self,
        max_messages: int | None = None,
        keep_first_message: bool = False,
        exclude_names: list[str] | None = None,
    ) -> None:
        self._max_messages = max_messages
        self._keep_first_message = keep_first_message
        self._exclude_names = exclude_names
        self._native = _native.Ag2HistoryLimiter(
            _config(
                "ag2_history_limiter",
                max_messages=max_messages,
                keep_first_message=keep_first_message,
                exclude_names=list(exclude_names) if exclude_names else None,
            )
        )

    def apply_transform(self, messages: Messages) -> Messages:
        """The most recent messages, at most ``max_messages`` of them, in order."""
        return self._native.apply(messages)

    def get_logs(self, pre_transform_messages: Messages, post_transform_messages: Messages) -> tuple[str, bool]:
        """AG2's log line: how many messages went."""
        before, after = len(pre_transform_messages), len(post_transform_messages)
        if after < before:
            return (
                f"Removed {before - after} messages. Number of messages reduced from {before} to {after}.",
                True,
            )
        return "No messages were removed.", False


class MessageTokenLimiter:
    """Cuts each message to ``max_tokens_per_message`` text tokens and the history to
    ``max_tokens``, from the newest message back, exactly as AG2 does (its counts are
    cl100k_base text tokens, its cuts use ``model``'s encoding).

    AG2's quirks are its results and are kept: its limits are capped to its own context size
    for ``model`` (4,096 for its default ``gpt-3.5-turbo-0613``; the warning is printed as AG2
    prints it), ``max_tokens`` without ``max_tokens_per_message`` keeps only the newest message,
    text spelling a special token raises ``ValueError``, a model tiktoken does not know raises
    ``KeyError`` once a text must be cut. Tool results whose call was cut are dropped rather
    than left first. Cost: the messages from the newest back to the cut, counted in Rust; the
    limiter remembers each text's count and cut (by hash), so on the next turn only the new
    messages are tokenized.
    """

    def __init__(
        self,
        max_tokens_per_message: int | None = None,
        max_tokens: int | None = None,
        min_tokens: int | None = None,
        model: str = "gpt-3.5-turbo-0613",
        filter_dict: dict[str, Any] | None = None,
        exclude_filter: bool = True,
    ) -> None:
        self._model = model
        self._filter_dict = filter_dict
        self._exclude_filter = exclude_filter
        self._native = _native.Ag2TokenLimiter(
            _config(
                "ag2_token_limiter",
                max_tokens_per_message=max_tokens_per_message,
                max_tokens=max_tokens,
                min_tokens=min_tokens,
                model=model,
                filter_dict=dict(filter_dict) if filter_dict else None,
                exclude_filter=exclude_filter,
            )
        )
        for line in self._native.warnings():
            print(line)

    def apply_transform(self, messages: Messages) -> Messages:
        """The messages within the token limits, oldest first."""
        return self._native.apply(messages)

    def get_logs(self, pre_transform_messages: Messages, post_transform_messages: Messages) -> tuple[str, bool]:
        """AG2's log line: how many text tokens went."""
        before = self._native.text_tokens(pre_transform_messages)
        after = self._native.text_tokens(post_transform_messages)
        if after < before:
            return (
                f"Truncated {before - after} tokens. Number of tokens reduced from {before} to {after}",
                True,
            )
        return "No tokens were truncated.", False


class _Ag2AssertionError(ConfigError, AssertionError):
    """A bad argument AG2 rejects with ``assert``: a :class:`tightfit.ConfigError` that is also
    the ``AssertionError`` AG2's callers catch."""


class TextMessageContentName:
    """Writes each message's ``name`` into its text content, at the ``position`` ``start`` or
    ``end``, formatted by ``format_string`` (``{name}`` is replaced by the name).

    Every message with a name and non-empty text is named, tool results included, as in AG2.
    A list content gets the name in its first (or last) text item, where AG2 raises
    ``AttributeError`` or writes the list's ``repr``.
    """

    def __init__(
        self,
        position: str = "start",
        format_string: str = "{name}:\n",
        deduplicate: bool = True,
        filter_dict: dict[str, Any] | None = None,
        exclude_filter: bool = True,
    ) -> None:
        try:
            self._pipeline = _native.Pipeline(
                [
                    _config(
                        "content_name",
                        position=position,
                        format_string=format_string,
                        deduplicate=deduplicate,
                        filter_dict=dict(filter_dict) if filter_dict else None,
                        exclude_filter=exclude_filter,
                        tool_results=True,
                    )
                ]
            )
        except ConfigError as e:
            raise _Ag2AssertionError(str(e), key=e.key, reason=e.reason) from None
        self._position = position
        self._format_string = format_string
        self._deduplicate = deduplicate
        self._filter_dict = filter_dict
        self._exclude_filter = exclude_filter
        self._messages_changed = 0

    def apply_transform(self, messages: Messages) -> Messages:
        """The messages with their sender's name in their text."""
        if not messages:
            return messages
        out, self._messages_changed = _native.apply_steps(messages, self._pipeline)
        return out

    def get_logs(self, pre_transform_messages: Messages, post_transform_messages: Messages) -> tuple[str, bool]:
        """AG2's log line: how many messages the last ``apply_transform`` changed."""
        if self._messages_changed > 0:
            return f"{self._messages_changed} message(s) changed to incorporate name.", True
        return "No messages changed to incorporate name.", False


class TextMessageCompressor:
    """AG2's LLMLingua compression of message texts: not available yet.

    Importing it works, so code that imports every transform keeps working; constructing it
    raises ``NotImplementedError`` until tightfit's ``compress_text`` step lands.
    """

    def __init__(
        self,
        text_compressor: Any | None = None,
        min_tokens: int | None = None,
        compression_params: dict[str, Any] = {},  # noqa: B006 - AG2's default, never used
        cache: Any | None = None,
        filter_dict: dict[str, Any] | None = None,
        exclude_filter: bool = True,
    ) -> None:
        raise NotImplementedError(
            "tightfit.compat.ag2.TextMessageCompressor: text compression is not built yet "
            "(tightfit's compress_text step); use AG2's own TextMessageCompressor meanwhile, "
            "or MessageTokenLimiter to cut long texts"
        )

    def apply_transform(self, messages: Messages) -> Messages:  # pragma: no cover - never built
        raise NotImplementedError

    def get_logs(
        self, pre_transform_messages: Messages, post_transform_messages: Messages
    ) -> tuple[str, bool]:  # pragma: no cover - never built
        raise NotImplementedError
