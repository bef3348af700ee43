"""Drop-in replacements for AG2's message transforms (``autogen.agentchat.contrib.capabilities
.transforms``, ag2 0.14).

Change the import and keep the rest::

    # from autogen.agentchat.contrib.capabilities.transforms import MessageHistoryLimiter, MessageTokenLimiter
    from tightfit.compat.ag2 import MessageHistoryLimiter, MessageTokenLimiter

The classes take AG2's keyword arguments with AG2's defaults, give AG2's results and log texts,
and work with AG2's ``TransformMessages`` capability. The work is done by the engine's
``ag2_history_limiter``, ``ag2_token_limiter``, ``content_name`` and ``compress_text`` steps;
these classes only translate. ``TextMessageCompressor`` compresses with tightfit's own scorer
unless given AG2's ``text_compressor`` (LLMLingua, or any object with ``compress_text``). Where
AG2's result is a history a provider rejects (a tool result whose call was cut, messages out of
order), the result is the closest valid one instead; the package README lists every such
difference.

Messages a transform leaves unchanged come back as the caller's own dicts (AG2 deep-copies
them); changed messages are new dicts. The input list is never mutated.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any, Protocol

from tightfit import _native
from tightfit.errors import ConfigError

__all__ = [
    "MessageTransform",
    "MessageHistoryLimiter",
    "MessageTokenLimiter",
    "TextMessageCompressor",
    "TextMessageContentName",
    "TextCompressor",
    "TightfitCompressor",
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


class TextCompressor(Protocol):
    """AG2's contract for a text compressor (``text_compressors.TextCompressor``): a dict with the
    compressed text under ``compressed_prompt``, and ``origin_tokens`` and ``compressed_tokens``
    for the savings a log reports."""

    def compress_text(self, text: str, **compression_params: Any) -> dict[str, Any]: ...


#: The settings of the engine's ``compress_text`` step that apply to one text, with LLMLingua's
#: names for two of them (``target_token``, ``force_tokens``).
_TEXT_KEYS = frozenset(
    {"rate", "target_tokens", "target_token", "min_chars", "keep_code_lines", "keep_words", "force_tokens"}
)

#: LLMLingua-2 switches a word scorer has no use for: accepted and ignored, so that AG2
#: ``compression_params`` written for LLMLingua work unchanged (digits are always kept).
_LLMLINGUA_IGNORED = frozenset(
    {"force_reserve_digit", "drop_consecutive", "use_context_level_filter", "use_token_level_filter"}
)


class TightfitCompressor:
    """tightfit's built-in scorer as an AG2 text compressor: what :class:`TextMessageCompressor`
    uses where AG2 builds LLMLingua, with no model to download and no network.

    ``compress_text(text, **compression_params)`` runs the engine's ``compress_text`` step on the
    text (the least informative prose words go; numbers, identifiers, paths, URLs, facts, code
    and negations stay verbatim) and answers as LLMLingua's ``compress_prompt`` does:
    ``compressed_prompt``, ``origin_tokens`` and ``compressed_tokens`` (cl100k_base, as LLMLingua
    and AG2 count), ``ratio`` (``"2.0x"``), ``rate`` (``"50.0%"``), and ``origin_words`` and
    ``compressed_words``. The settings, given to the constructor as defaults or per call, are
    the step's: ``rate`` (the share of droppable words kept, 0.5), ``target_tokens`` (alias
    ``target_token``, LLMLingua's, which wins over ``rate`` as there; ``-1`` is none),
    ``min_chars`` (0 here: every text is compressed, as LLMLingua does), ``keep_code_lines``,
    ``keep_words`` (alias ``force_tokens``). LLMLingua's ``force_reserve_digit``,
    ``drop_consecutive``, ``use_context_level_filter`` and ``use_token_level_filter`` are
    accepted and ignored; any other key raises :class:`tightfit.ConfigError` naming it.
    Deterministic.
    """

    def __init__(self, **defaults: Any) -> None:
        self._defaults = dict(defaults)
        self._configs: dict[str, dict[str, Any]] = {}
        self.config()

    def config(self, **compression_params: Any) -> dict[str, Any]:
        """The engine step's configuration for these settings over the defaults, checked:
        :class:`tightfit.ConfigError` names a bad key."""
        params = {**self._defaults, **compression_params}
        memo = repr(sorted(params.items(), key=lambda kv: kv[0]))
        config = self._configs.get(memo)
        if config is not None:
            return config
        config = {"type": "compress_text", "min_chars": 0}
        for key, value in params.items():
            if key in _LLMLINGUA_IGNORED:
                continue
            if key not in _TEXT_KEYS:
                known = ", ".join(sorted(_TEXT_KEYS | _LLMLINGUA_IGNORED))
                raise ConfigError(
                    f"{key}: not a setting of tightfit's text compressor (known: {known})",
                    key=key,
                    reason=f"not a setting of tightfit's text compressor (known: {known})",
                )
            config[key] = value
        target = config.pop("target_token", None)
        if target is not None:
            config["target_tokens"] = target
        if isinstance(config.get("target_tokens"), int) and config["target_tokens"] >= 0:
            config.pop("rate", None)  # LLMLingua: a token target wins over the rate
        _native.compress_texts([], config)
        if len(self._configs) < 64:
            self._configs[memo] = config
        return config

    def compress_text(self, text: str, **compression_params: Any) -> dict[str, Any]:
        """``text`` compressed, with LLMLingua's keys (see the class)."""
        [(compressed, words, kept, before, after)] = _native.compress_texts([text], self.config(**compression_params))
        return {
            "compressed_prompt": compressed,
            "origin_tokens": before,
            "compressed_tokens": after,
            "ratio": f"{before / max(after, 1):.1f}x",
            "rate": f"{after / max(before, 1) * 100:.1f}%",
            "origin_words": words,
            "compressed_words": kept,
        }


class _MemoryCache:
    """The cache a :class:`TextMessageCompressor` keeps when given none (AG2 then writes a disk
    cache into the working directory): AG2's keys and values, in memory, the oldest entries
    forgotten past ``capacity``."""

    def __init__(self, capacity: int = 4096) -> None:
        self._entries: OrderedDict[str, Any] = OrderedDict()
        self._capacity = capacity

    def __bool__(self) -> bool:
        return True

    def get(self, key: str, default: Any | None = None) -> Any | None:
        value = self._entries.get(key, default)
        if key in self._entries:
            self._entries.move_to_end(key)
        return value

    def set(self, key: str, value: Any) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


def _satisfies(value: Any, accepted: Any) -> bool:
    """AG2's ``_satisfies_criteria``: a missing value never matches; lists match by overlap."""
    if value is None:
        return False
    if isinstance(value, list):
        return bool(set(value) & set(accepted)) if isinstance(accepted, list) else accepted in value
    return value in accepted if isinstance(accepted, list) else bool(value == accepted)


def _should_transform(message: dict[str, Any], filter_dict: dict[str, Any] | None, exclude: bool) -> bool:
    """AG2's ``should_transform_message`` (its ``filter_config`` on one message)."""
    if not filter_dict:
        return True
    return all(_satisfies(message.get(key), values) != exclude for key, values in filter_dict.items())


def _text_empty(content: str | list[Any]) -> bool:
    """AG2's ``is_content_text_empty``."""
    if isinstance(content, str):
        return content == ""
    texts = [item if isinstance(item, str) else item.get("text", "") for item in content if isinstance(item, (str, dict))]
    return not any(texts)


class TextMessageCompressor:
    """Compresses the text of every message (content strings and the ``text`` of content
    items) with ``text_compressor``, as AG2 does, with tightfit's scorer
    (:class:`TightfitCompressor`) as the default instead of LLMLingua.

    AG2's behaviour, kept: nothing is compressed while the history's text tokens
    (cl100k_base, counted as AG2 counts) are below ``min_tokens``; ``filter_dict`` and
    ``exclude_filter`` select messages as in AG2; every other message with text is compressed,
    system messages and tool results included; ``compression_params`` go to each
    ``compress_text`` call; the savings are ``origin_tokens - compressed_tokens`` of the
    compressor's answers; ``cache`` (an AG2 ``AbstractCache``) is read and written with AG2's
    keys (the content and ``min_tokens``) and values (the new content and its savings), so a
    cache AG2 filled answers here too. Differences: the input is never mutated (AG2 writes the
    compressed text into the caller's dicts) and unchanged messages come back as the caller's
    own dicts; without a ``cache`` the compressor keeps one in memory (AG2 writes a disk cache
    into the working directory); a content item that is a bare string is left alone and not
    counted (AG2 compresses it, throws the result away and reports the savings); a call that
    compresses nothing reports no savings (AG2 repeats the previous call's).
    """

    def __init__(
        self,
        text_compressor: TextCompressor | None = None,
        min_tokens: int | None = None,
        compression_params: dict[str, Any] = {},  # noqa: B006 - AG2's default, never mutated
        cache: Any | None = None,
        filter_dict: dict[str, Any] | None = None,
        exclude_filter: bool = True,
    ) -> None:
        if text_compressor is None:
            text_compressor = TightfitCompressor()
            text_compressor.config(**compression_params)
        if min_tokens is not None and min_tokens <= 0:
            raise ConfigError(
                "min_tokens must be greater than 0 or None", key="min_tokens", reason="must be greater than 0 or None"
            )
        self._text_compressor = text_compressor
        self._min_tokens = min_tokens
        self._compression_args = compression_params
        self._filter_dict = filter_dict
        self._exclude_filter = exclude_filter
        self._cache = _MemoryCache() if cache is None else cache
        self._recent_tokens_savings = 0
        self._counter: Any = None

    def apply_transform(self, messages: Messages) -> Messages:
        """The messages with their texts compressed: new dicts where a text changed, the
        caller's own elsewhere."""
        self._recent_tokens_savings = 0
        if not messages or not self._min_tokens_reached(messages):
            return list(messages)
        total = 0
        out: Messages = []
        for message in messages:
            content = message.get("content")
            if (
                not isinstance(content, (str, list))
                or not _should_transform(message, self._filter_dict, self._exclude_filter)
                or _text_empty(content)
            ):
                out.append(message)
                continue
            key = f"{content}{self._min_tokens}"
            cached = self._cache.get(key) if self._cache else None
            if cached:
                new_content, savings = cached
                new_content = copy.deepcopy(new_content)
            else:
                new_content, savings = self._compress(content)
            if self._cache:
                self._cache.set(key, (copy.deepcopy(new_content), savings))
            total += savings
            out.append(message if new_content == content else {**message, "content": new_content})
        self._recent_tokens_savings = total
        return out

    def get_logs(self, pre_transform_messages: Messages, post_transform_messages: Messages) -> tuple[str, bool]:
        """AG2's log line: the tokens the last ``apply_transform`` saved."""
        if self._recent_tokens_savings > 0:
            return f"{self._recent_tokens_savings} tokens saved with text compression.", True
        return "No tokens saved with text compression.", False

    def _min_tokens_reached(self, messages: Messages) -> bool:
        if not self._min_tokens:
            return True
        if self._counter is None:
            self._counter = _native.Ag2TokenLimiter(_config("ag2_token_limiter"))
        return self._counter.text_tokens(messages) >= self._min_tokens

    def _compress(self, content: str | list[Any]) -> tuple[str | list[Any], int]:
        if isinstance(content, str):
            return self._compress_text(content)
        saved = 0
        items: list[Any] = []
        for item in content:
            if isinstance(item, dict) and "text" in item:
                text, savings = self._compress_text(item["text"])
                saved += savings
                items.append(item if text == item["text"] else {**item, "text": text})
            else:
                items.append(item)
        return items, saved

    def _compress_text(self, text: str) -> tuple[str, int]:
        answer = self._text_compressor.compress_text(text, **self._compression_args)
        savings = 0
        if "origin_tokens" in answer and "compressed_tokens" in answer:
            savings = answer["origin_tokens"] - answer["compressed_tokens"]
        return answer["compressed_prompt"], savings
