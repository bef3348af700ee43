"""One class per engine step, for :class:`tightfit.Pipeline`.

Each class is a thin record: its keyword arguments are the step's configuration keys (the same
names a YAML pipeline uses), ``None`` meaning the engine's documented default. On construction
the record is turned into its configuration map and checked by the engine, so a bad value
raises :class:`tightfit.ConfigError` naming the key, with the engine's message. Every step
takes ``when=``, a guard such as ``{"tokens_above": 100_000}`` (keys ``tokens_above``,
``messages_above``, ``window_fraction_above``, ``over_budget``; several must all hold).

Each class's docstring ends with its keys' defaults (``Defaults: ``count=10``, ...``), the
engine's own (a test holds them to it); the package README's table of steps gives each key's
unit and meaning.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Mapping, Sequence, TypedDict

from tightfit import _native

__all__ = [
    "Compact",
    "Condition",
    "Step",
    "DropThinking",
    "DropBinary",
    "DropRetryPrompts",
    "DropToolCalls",
    "DropEmpty",
    "ClearToolResults",
    "Dedupe",
    "TruncateToolResults",
    "TruncateText",
    "KeepLast",
    "KeepFirst",
    "HeadAndTail",
    "TokenBudget",
    "LangchainTrim",
    "MiddleOut",
    "TaskTruncation",
    "ContentName",
    "Summarize",
    "CompressText",
    "When",
    "AutogenBuffered",
    "AutogenHeadAndTail",
    "AutogenTokenLimited",
    "Ag2HistoryLimiter",
    "Ag2TokenLimiter",
]

Measure = Literal["messages", "pairs", "units"]
KeepPart = Literal["head", "tail", "head_and_tail"]


class Condition(TypedDict, total=False):
    """A guard: the step runs only when every key given holds."""

    tokens_above: int
    messages_above: int
    window_fraction_above: float
    over_budget: bool


class Step:
    """A step's configuration, checked by the engine when it is made."""

    type: ClassVar[str]
    __slots__ = ("_config",)

    def __init__(self, *, when: Condition | Mapping[str, Any] | None = None, **params: Any) -> None:
        config: dict[str, Any] = {"type": self.type}
        config.update((key, value) for key, value in params.items() if value is not None)
        if when is not None:
            config["when"] = dict(when)
        _native.check_step(config)
        self._config = config

    def to_config(self) -> dict[str, Any]:
        """The step's configuration map, as a YAML pipeline would hold it."""
        return dict(self._config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Step) and self._config == other._config

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self._config.items() if key != "type")
        return f"{type(self).__name__}({args})"


class DropThinking(Step):
    """Remove thinking and reasoning from earlier turns (kept where a provider requires it).

    Defaults: ``keep_current_turn=True``, ``redacted=True``.
    """

    type = "drop_thinking"

    def __init__(
        self,
        *,
        keep_current_turn: bool | None = None,
        redacted: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(keep_current_turn=keep_current_turn, redacted=redacted, when=when)


class DropBinary(Step):
    """Remove images, audio and files; ``placeholder=True`` leaves a line naming each.

    Defaults: ``placeholder=False``, ``keep_system=True``, ``keep_newest_user_turn=True``.
    """

    type = "drop_binary"

    def __init__(
        self,
        *,
        placeholder: bool | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            placeholder=placeholder,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class DropRetryPrompts(Step):
    """Remove failed tool calls a later step retried, and retry prompts the conversation moved past.

    Defaults:
    ``pattern='(?i)(\\\\A\\\\s*validation feedback:|fix the errors and try again\\\\.?\\\\s*\\\\z)'``,
    ``error_pattern='(?i)\\\\A\\\\s*(error|traceback|exception)\\\\b'``, ``drop_rejected_replies=True``,
    ``keep_system=True``, ``keep_newest_user_turn=True``.
    """

    type = "drop_retry_prompts"

    def __init__(
        self,
        *,
        pattern: str | None = None,
        error_pattern: str | None = None,
        drop_rejected_replies: bool | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            pattern=pattern,
            error_pattern=error_pattern,
            drop_rejected_replies=drop_rejected_replies,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class DropToolCalls(Step):
    """Remove the calls of named tools together with their results.

    Defaults: ``exclude_tools=[]``, ``include_only=None``, ``keep_current_turn=True``,
    ``keep_system=True``, ``keep_newest_user_turn=True``.
    """

    type = "drop_tool_calls"

    def __init__(
        self,
        *,
        exclude_tools: str | Sequence[str] | None = None,
        include_only: str | Sequence[str] | None = None,
        keep_current_turn: bool | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            exclude_tools=_list(exclude_tools),
            include_only=_list(include_only),
            keep_current_turn=keep_current_turn,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class DropEmpty(Step):
    """Remove messages that say nothing.

    Defaults: ``keep_system=False``, ``keep_newest_user_turn=True``.
    """

    type = "drop_empty"

    def __init__(
        self,
        *,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(keep_system=keep_system, keep_newest_user_turn=keep_newest_user_turn, when=when)


class ClearToolResults(Step):
    """Replace old tool results by a placeholder, keeping the calls (all but the last ``keep``).

    With ``until_fits=True`` (the default ladder's setting) results are cleared oldest first
    only until the history fits the call's budget.

    Defaults: ``keep=3``, ``keep_units=None``, ``exclude_tools=[]``,
    ``placeholder='[tool result cleared to save context]'``, ``min_tokens=0``,
    ``clear_inputs=False``, ``until_fits=False``.
    """

    type = "clear_tool_results"

    def __init__(
        self,
        *,
        keep: int | None = None,
        keep_units: int | None = None,
        exclude_tools: str | Sequence[str] | None = None,
        placeholder: str | None = None,
        min_tokens: int | None = None,
        clear_inputs: bool | None = None,
        until_fits: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            keep=keep,
            keep_units=keep_units,
            exclude_tools=_list(exclude_tools),
            placeholder=placeholder,
            min_tokens=min_tokens,
            clear_inputs=clear_inputs,
            until_fits=until_fits,
            when=when,
        )


class Dedupe(Step):
    """Replace a repeated tool output, image or file by a reference to its first occurrence.

    Defaults: ``min_tokens=32``,
    ``placeholder='[identical to the result of tool call {id} above]'``,
    ``media_placeholder='[{kind} identical to the one in {at} above]'``, ``keep_system=True``,
    ``keep_newest_user_turn=True``.
    """

    type = "dedupe"

    def __init__(
        self,
        *,
        min_tokens: int | None = None,
        placeholder: str | None = None,
        media_placeholder: str | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            min_tokens=min_tokens,
            placeholder=placeholder,
            media_placeholder=media_placeholder,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class TruncateToolResults(Step):
    """Cut long tool outputs to ``max_length`` characters or ``max_tokens`` tokens.

    With ``until_fits=True`` (the default ladder's setting) results are cut oldest first only
    until the history fits the call's budget.

    Defaults: ``max_length=2000``, ``max_tokens=None``, ``keep='head'``,
    ``marker='\\n... [truncated]'``, ``keep_last=0``, ``exclude_tools=[]``, ``until_fits=False``.
    """

    type = "truncate_tool_results"

    def __init__(
        self,
        *,
        max_length: int | None = None,
        max_tokens: int | None = None,
        keep: KeepPart | None = None,
        marker: str | None = None,
        keep_last: int | None = None,
        exclude_tools: str | Sequence[str] | None = None,
        until_fits: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_length=max_length,
            max_tokens=max_tokens,
            keep=keep,
            marker=marker,
            keep_last=keep_last,
            exclude_tools=_list(exclude_tools),
            until_fits=until_fits,
            when=when,
        )


class TruncateText(Step):
    """Cap the text of each message (of ``roles``) at ``max_length`` characters or ``max_tokens`` tokens.

    Defaults: ``max_length=5000``, ``max_tokens=None``, ``roles=['assistant']``, ``keep='head'``,
    ``marker='\\n... [truncated]'``, ``filter_dict=None``, ``exclude_filter=True``,
    ``keep_system=True``, ``keep_newest_user_turn=True``.
    """

    type = "truncate_text"

    def __init__(
        self,
        *,
        max_length: int | None = None,
        max_tokens: int | None = None,
        roles: str | Sequence[str] | None = None,
        keep: KeepPart | None = None,
        marker: str | None = None,
        filter_dict: Mapping[str, Any] | None = None,
        exclude_filter: bool | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_length=max_length,
            max_tokens=max_tokens,
            roles=_list(roles),
            keep=keep,
            marker=marker,
            filter_dict=_dict(filter_dict),
            exclude_filter=exclude_filter,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class KeepLast(Step):
    """Keep the last ``count`` messages, pairs or units (whole units: calls keep their results).

    Defaults: ``count=10``, ``count_pairs=None``, ``measure='pairs'``, ``keep_system=True``,
    ``keep_newest_user_turn=True``, ``keep_first_message=False``.
    """

    type = "keep_last"

    def __init__(
        self,
        count: int | None = None,
        *,
        measure: Measure | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        keep_first_message: bool | None = None,
        count_pairs: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        """``count_pairs`` is llmling's spelling: ``True`` is ``measure="pairs"``, ``False``
        ``measure="messages"``."""
        super().__init__(
            count=count,
            measure=measure,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            keep_first_message=keep_first_message,
            count_pairs=count_pairs,
            when=when,
        )


class KeepFirst(Step):
    """Keep the first ``count`` messages, pairs or units.

    Defaults: ``count=2``, ``measure='messages'``, ``keep_system=True``,
    ``keep_newest_user_turn=True``.
    """

    type = "keep_first"

    def __init__(
        self,
        count: int | None = None,
        *,
        measure: Measure | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            count=count,
            measure=measure,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class HeadAndTail(Step):
    """Keep the first ``head`` and the last ``tail`` messages, pairs or units; optionally say how many were skipped.

    Defaults: ``head=2``, ``tail=5``, ``measure='messages'``, ``placeholder=None``,
    ``keep_system=True``, ``keep_newest_user_turn=True``.
    """

    type = "head_and_tail"

    def __init__(
        self,
        head: int | None = None,
        tail: int | None = None,
        *,
        measure: Measure | None = None,
        placeholder: str | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            head=head,
            tail=tail,
            measure=measure,
            placeholder=placeholder,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class TokenBudget(Step):
    """Keep the newest units that fit ``max_tokens`` (the call's budget when ``None``).

    Defaults: ``max_tokens=None``, ``min_tokens=None``, ``allow_partial=False``,
    ``keep_system=True``, ``keep_newest_user_turn=True``.
    """

    type = "token_budget"

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        min_tokens: int | None = None,
        allow_partial: bool | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_tokens=max_tokens,
            min_tokens=min_tokens,
            allow_partial=allow_partial,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class LangchainTrim(Step):
    """LangChain's ``trim_messages`` as a pipeline step (what ``tightfit.compat.langchain``
    runs): ``strategy`` ``"last"`` or ``"first"``, ``counter`` ``"model"`` (the model's
    tokens), ``"approximate"`` or ``"len"``; ``keep_tool_pairs=False`` keeps LangChain's cut
    even where it separates a tool call from its results.

    Defaults: ``max_tokens=None``, ``strategy='last'``, ``allow_partial=False``,
    ``include_system=False``, ``start_on=None``, ``end_on=None``, ``counter='model'``,
    ``keep_tool_pairs=True``.
    """

    type = "langchain_trim"

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        strategy: Literal["first", "last"] | None = None,
        allow_partial: bool | None = None,
        include_system: bool | None = None,
        start_on: str | Sequence[str] | None = None,
        end_on: str | Sequence[str] | None = None,
        counter: Literal["model", "approximate", "len"] | None = None,
        keep_tool_pairs: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_tokens=max_tokens,
            strategy=strategy,
            allow_partial=allow_partial,
            include_system=include_system,
            start_on=start_on,
            end_on=end_on,
            counter=counter,
            keep_tool_pairs=keep_tool_pairs,
            when=when,
        )


class Compact(Step):
    """A session's cut: keep a fixed head and the newest units from a grid point, with a trace between.

    Defaults: ``max_tokens=None``, ``head_share=0.7``, ``grid=2``, ``trace=True``,
    ``keep_system=True``, ``keep_newest_user_turn=True``.
    """

    type = "compact"

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        head_share: float | None = None,
        grid: int | None = None,
        trace: bool | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_tokens=max_tokens,
            head_share=head_share,
            grid=grid,
            trace=trace,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class MiddleOut(Step):
    """Keep the system prompt, the start and the newest; remove (or shorten) from the middle until it fits.

    Defaults: ``max_tokens=None``, ``keep_first=1``, ``keep_recent=2``, ``shorten=True``,
    ``shorten_protected=False``, ``min_text_tokens=64``, ``placeholder=None``, ``keep_system=True``,
    ``keep_newest_user_turn=True``.
    """

    type = "middle_out"

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        keep_first: int | None = None,
        keep_recent: int | None = None,
        shorten: bool | None = None,
        shorten_protected: bool | None = None,
        min_text_tokens: int | None = None,
        placeholder: str | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_tokens=max_tokens,
            keep_first=keep_first,
            keep_recent=keep_recent,
            shorten=shorten,
            shorten_protected=shorten_protected,
            min_text_tokens=min_text_tokens,
            placeholder=placeholder,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class TaskTruncation(Step):
    """Keep the task's first user message and its newest assistant steps, respecting task boundaries.

    Defaults: ``preserve_recent_pairs=4``, ``scope='current_task'``, ``keep_system=True``,
    ``keep_newest_user_turn=True``.
    """

    type = "task_truncation"

    def __init__(
        self,
        *,
        preserve_recent_pairs: int | None = None,
        scope: Literal["current_task", "all"] | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            preserve_recent_pairs=preserve_recent_pairs,
            scope=scope,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class ContentName(Step):
    """Write each message's sender ``name`` into its text, at the start or the end.

    Defaults: ``position='start'``, ``format_string='{name}:\\n'``, ``deduplicate=True``,
    ``filter_dict=None``, ``exclude_filter=True``, ``tool_results=False``.
    """

    type = "content_name"

    def __init__(
        self,
        *,
        position: Literal["start", "end"] | None = None,
        format_string: str | None = None,
        deduplicate: bool | None = None,
        filter_dict: Mapping[str, Any] | None = None,
        exclude_filter: bool | None = None,
        tool_results: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            position=position,
            format_string=format_string,
            deduplicate=deduplicate,
            filter_dict=_dict(filter_dict),
            exclude_filter=exclude_filter,
            tool_results=tool_results,
            when=when,
        )


class Summarize(Step):
    """Past ``threshold`` messages (15), replace the units before the newest ``keep_recent``
    messages (5) by one summary of at most ``max_tokens`` tokens (1,000): the built-in
    extractive summarizer's structured hand-off (the user's requests verbatim, a ledger of exact
    facts, commands with their outcome, progress, the last state). ``model`` and
    ``summary_prompt`` are llmling's keys, for a summarizer that calls a model.

    Defaults: ``model='openai:gpt-4o-mini'``, ``threshold=15``, ``keep_recent=5``,
    ``max_tokens=1000``, ``summary_prompt=None``.
    """

    type = "summarize"

    def __init__(
        self,
        *,
        model: str | None = None,
        threshold: int | None = None,
        keep_recent: int | None = None,
        summary_prompt: str | None = None,
        max_tokens: int | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            model=model,
            threshold=threshold,
            keep_recent=keep_recent,
            summary_prompt=summary_prompt,
            max_tokens=max_tokens,
            when=when,
        )


class CompressText(Step):
    """Shorten texts longer than ``min_chars`` characters (500) by dropping their least
    informative words, LLMLingua-style, until ``rate`` of the droppable words (0.5) are left or
    the text fits ``target_tokens``. Numbers, identifiers, paths, URLs, the ledger's facts,
    negations, code spans and lines that look like code or data (``keep_code_lines``) and
    ``keep_words`` are kept verbatim; ``roles`` (user, assistant, tool) says whose texts, ``tool``
    meaning tool results. Deterministic; the built-in scorer needs no model.

    Defaults: ``rate=0.5``, ``target_tokens=None``, ``min_chars=500``,
    ``roles=['user', 'assistant', 'tool']``, ``keep_code_lines=True``, ``keep_words=[]``,
    ``filter_dict=None``, ``exclude_filter=True``, ``keep_system=True``,
    ``keep_newest_user_turn=True``.
    """

    type = "compress_text"

    def __init__(
        self,
        *,
        rate: float | None = None,
        target_tokens: int | None = None,
        min_chars: int | None = None,
        roles: str | Sequence[str] | None = None,
        keep_code_lines: bool | None = None,
        keep_words: str | Sequence[str] | None = None,
        filter_dict: Mapping[str, Any] | None = None,
        exclude_filter: bool | None = None,
        keep_system: bool | None = None,
        keep_newest_user_turn: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            rate=rate,
            target_tokens=target_tokens,
            min_chars=min_chars,
            roles=_list(roles),
            keep_code_lines=keep_code_lines,
            keep_words=_list(keep_words),
            filter_dict=_dict(filter_dict),
            exclude_filter=exclude_filter,
            keep_system=keep_system,
            keep_newest_user_turn=keep_newest_user_turn,
            when=when,
        )


class When(Step):
    """Run ``step`` only when every condition given holds (messages above 20 when none is).

    Defaults: ``tokens_above=None``, ``messages_above=None``, ``window_fraction_above=None``,
    ``over_budget=None``, ``threshold=None``, ``step=None``.
    """

    type = "when"

    def __init__(
        self,
        step: Step | Mapping[str, Any],
        *,
        tokens_above: int | None = None,
        messages_above: int | None = None,
        window_fraction_above: float | None = None,
        over_budget: bool | None = None,
        threshold: int | None = None,
    ) -> None:
        """``threshold`` is llmling's ``WhenMessageCountExceeds``: ``messages_above``."""
        inner = step.to_config() if isinstance(step, Step) else dict(step)
        super().__init__(
            step=inner,
            tokens_above=tokens_above,
            messages_above=messages_above,
            window_fraction_above=window_fraction_above,
            over_budget=over_budget,
            threshold=threshold,
        )


class AutogenBuffered(Step):
    """autogen-core's ``BufferedChatCompletionContext``: the last ``buffer_size`` autogen messages
    (a run of tool results is one), less results left first; tool steps it cuts are dropped.

    Defaults: ``buffer_size=10``.
    """

    type = "autogen_buffered"

    def __init__(self, buffer_size: int | None = None, *, when: Condition | Mapping[str, Any] | None = None) -> None:
        super().__init__(buffer_size=buffer_size, when=when)


class AutogenHeadAndTail(Step):
    """autogen-core's ``HeadAndTailChatCompletionContext``, with its "Skipped N messages." placeholder.

    Defaults: ``head_size=2``, ``tail_size=5``.
    """

    type = "autogen_head_and_tail"

    def __init__(
        self,
        head_size: int | None = None,
        tail_size: int | None = None,
        *,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(head_size=head_size, tail_size=tail_size, when=when)


class AutogenTokenLimited(Step):
    """autogen-core's ``TokenLimitedChatCompletionContext`` with autogen-ext's OpenAI counter:
    removes the middle message until ``token_limit`` (the call's budget when ``None``) holds.

    Defaults: ``token_limit=None``, ``encoding='o200k_base'``.
    """

    type = "autogen_token_limited"

    def __init__(
        self,
        token_limit: int | None = None,
        *,
        encoding: Literal["o200k_base", "cl100k_base"] | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(token_limit=token_limit, encoding=encoding, when=when)


class Ag2HistoryLimiter(Step):
    """AG2's ``MessageHistoryLimiter``, result for result (its split tool steps kept whole).

    Defaults: ``max_messages=None``, ``keep_first_message=False``, ``exclude_names=[]``.
    """

    type = "ag2_history_limiter"

    def __init__(
        self,
        max_messages: int | None = None,
        *,
        keep_first_message: bool | None = None,
        exclude_names: Sequence[str] | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_messages=max_messages,
            keep_first_message=keep_first_message,
            exclude_names=_list(exclude_names),
            when=when,
        )


class Ag2TokenLimiter(Step):
    """AG2's ``MessageTokenLimiter``, token for token (cl100k text counts, cuts in ``model``'s encoding).

    Defaults: ``max_tokens_per_message=None``, ``max_tokens=None``, ``min_tokens=None``,
    ``model='gpt-3.5-turbo-0613'``, ``filter_dict=None``, ``exclude_filter=True``.
    """

    type = "ag2_token_limiter"

    def __init__(
        self,
        *,
        max_tokens_per_message: int | None = None,
        max_tokens: int | None = None,
        min_tokens: int | None = None,
        model: str | None = None,
        filter_dict: Mapping[str, Any] | None = None,
        exclude_filter: bool | None = None,
        when: Condition | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            max_tokens_per_message=max_tokens_per_message,
            max_tokens=max_tokens,
            min_tokens=min_tokens,
            model=model,
            filter_dict=_dict(filter_dict),
            exclude_filter=exclude_filter,
            when=when,
        )


def _list(value: str | Sequence[str] | None) -> list[str] | str | None:
    """A sequence of names as a list (the engine reads lists), a single name as it is."""
    if value is None or isinstance(value, str):
        return value
    return list(value)


def _dict(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else dict(value)
