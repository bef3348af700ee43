"""tightfit: fit LLM conversation histories into a model's context window.

Exact token counts for the target model, and histories that are within budget and valid for
the provider (a tool call never loses its result), with a report of what was done::

    import tightfit

    result = tightfit.fit(messages, model="gpt-4o", budget=32_000)
    result.messages   # unchanged messages are your own dict objects
    result.report.compressed_token_count
    result.to_html()  # a page that shows what was cut (a notebook shows it by itself)
    tightfit.replay(result.plan.to_json(), messages)  # the same messages again, not fitted

In an agent loop, fit every turn through one :class:`Session`: its requests extend each other
until a compaction, so the provider's prompt cache keeps serving the prefix::

    session = tightfit.Session("gpt-4o", budget=32_000, store="sessions.db")
    result = session.fit(messages)   # each turn, the whole history

The work is done by the Rust engine, with the GIL released; this package is a skin over it.
Messages are plain dicts in OpenAI Chat Completions or Anthropic Messages shape (detected, or
``format="openai"|"anthropic"``). Neither the list nor its dicts are ever mutated.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from typing import Any, Callable, Mapping, Sequence

from tightfit import _native
from tightfit._native import (
    Count,
    FitResult,
    MemoryStore,
    Pipeline,
    Plan,
    Report,
    SessionInfo,
    Violation,
    __version__,
    replay,
    validate,
)
from tightfit.errors import (
    CannotFit,
    ConfigError,
    Error,
    FormatError,
    InvalidHistory,
    StepFailed,
    StoreError,
    UnknownModel,
)
from tightfit.steps import (
    AutogenBuffered,
    AutogenHeadAndTail,
    AutogenTokenLimited,
    Ag2HistoryLimiter,
    Ag2TokenLimiter,
    ClearToolResults,
    Compact,
    CompressText,
    Condition,
    ContentName,
    Dedupe,
    DropBinary,
    DropEmpty,
    DropRetryPrompts,
    DropThinking,
    DropToolCalls,
    HeadAndTail,
    KeepFirst,
    KeepLast,
    LangchainTrim,
    MiddleOut,
    Step,
    Summarize,
    TaskTruncation,
    TokenBudget,
    TruncateText,
    TruncateToolResults,
    When,
)

__all__ = [
    "__version__",
    "count",
    "acount",
    "calibrate",
    "fit",
    "afit",
    "Fitter",
    "Session",
    "MemoryStore",
    "SessionInfo",
    "validate",
    "replay",
    "Count",
    "FitResult",
    "Report",
    "Plan",
    "Violation",
    "Pipeline",
    "Step",
    "Compact",
    "Condition",
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
    "Error",
    "ConfigError",
    "FormatError",
    "CannotFit",
    "InvalidHistory",
    "UnknownModel",
    "StepFailed",
    "StoreError",
    "recall",
    "recall_tool",
    "answer_recall",
]

Messages = Sequence[Mapping[str, Any]]
#: A summarizer: ``(messages, *, max_tokens) -> str``, or a coroutine function returning one.
Summarizer = Callable[..., Any]
#: A scorer for :class:`CompressText`: ``(words) -> list[float]``, higher is more informative.
Scorer = Callable[[list[str]], Sequence[float]]
PipelineLike = Pipeline | str | Sequence[Step | Mapping[str, Any]] | None


def _pipeline(pipeline: PipelineLike) -> Pipeline | None:
    """A pipeline from what the caller gave: a Pipeline, a preset name, or a list of steps."""
    if pipeline is None or isinstance(pipeline, Pipeline):
        return pipeline
    if isinstance(pipeline, str):
        return Pipeline.preset(pipeline)
    return Pipeline(pipeline)


def count(
    messages: Messages | Mapping[str, Any],
    model: str | None = None,
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    format: str | None = None,
    tokenizer: str | os.PathLike[str] | None = None,
    calibration: float | None = None,
) -> Count:
    """Tokens of ``messages`` (and ``tools``) for ``model``: ``.total``, ``.per_message``,
    ``.tools``, ``.priming``. Exact for OpenAI models, Qwen, DeepSeek, Mistral tekken models and
    Llama 3 (when its vocabulary is found: ``tokenizer=`` or an installed ``llama-models``); an
    estimate where no tokenizer is public (Claude). ``.counter`` says which tokenizer counted,
    ``.exact`` whether the count is exact and ``.estimate`` why not.

    ``messages`` is a list of messages (dicts in any of the four formats, SDK objects), a
    request body (``{"model", "messages" | "input" | "contents", "system", "tools", ...}``), or
    a list with Anthropic's ``system=`` beside it. There is no default model: ``model`` names
    it, or the request body's ``model`` does; neither is a :class:`ConfigError`.

    ``tokenizer`` is a tokenizer file to count with instead of the model's (Llama 3's
    ``tokenizer.model``, or any HuggingFace ``tokenizer.json``); ``calibration`` scales the
    count by a factor from :func:`calibrate`."""
    return _native.count(
        messages,
        model,
        system=system,
        tools=tools,
        format=format,
        tokenizer=tokenizer,
        calibration=calibration,
    )


def calibrate(
    messages: Messages,
    model: str | None = None,
    *,
    usage: Any,
    tools: Sequence[Mapping[str, Any]] | None = None,
    format: str | None = None,
    tokenizer: str | os.PathLike[str] | None = None,
) -> float:
    """The factor that corrects ``model``'s counts, from one request: ``messages`` (and
    ``tools``) as sent, and the ``usage`` the provider returned for it (OpenAI's
    ``prompt_tokens``, or Anthropic's ``input_tokens`` plus cache reads and writes; a dict, the
    SDK's object, or an int). Returns ``reported / counted``; pass it as ``calibration=`` to
    :func:`count`, :func:`fit`, :meth:`Fitter.fit` or :class:`Session` for the same conversation.
    For Claude, whose tokenizer is not public, this turns the estimate into the provider's own
    scale."""
    return _native.calibrate(messages, model, usage=usage, tools=tools, format=format, tokenizer=tokenizer)


def fit(
    messages: Messages | Mapping[str, Any],
    model: str | None = None,
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    budget: int | None = None,
    pipeline: PipelineLike = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reserve_output: int | None = None,
    format: str | None = None,
    allow_over_window: bool = False,
    store: str | os.PathLike[str] | MemoryStore | None = None,
    summarizer: Summarizer | None = None,
    scorer: Scorer | None = None,
    tokenizer: str | os.PathLike[str] | None = None,
    calibration: float | None = None,
) -> FitResult:
    """Fit ``messages`` into ``model``'s window, or into ``budget`` tokens.

    ``messages`` is a list of messages (dicts in any of the four formats, SDK objects, any
    iterable), a request body (``{"model", "messages" | "input" | "contents", "system",
    "tools", ...}``: ``result.body`` is the fitted body, every other field as it came), or a
    list with Anthropic's ``system=`` beside it (``result.system`` is the system prompt to send
    with ``result.messages``). There is no default model: ``model`` names it, or the request
    body's ``model``; with neither, ``budget`` alone is counted with OpenAI's ``o200k_base``
    (``report.counter`` says so), and with no budget either it is a :class:`ConfigError`.

    The budget defaults to the model's input limit minus ``reserve_output`` (the model's
    maximum output, at most 4,096, when ``None``). ``pipeline`` is a :class:`Pipeline`, a preset
    name or a list of steps; without one the default ladder runs, lossless steps first, each
    only while still over budget. Raises :class:`CannotFit` when even what must be kept (the
    system prompt, the newest user turn) is over the budget. A ``budget`` past the model's input
    limit is a :class:`ConfigError` unless ``allow_over_window=True`` (a model served with a
    larger window than the registry knows).

    With ``store`` (an SQLite file path or a :class:`MemoryStore`), nothing is lost: what the
    steps remove or cut is offloaded into it, and the fitted history keeps a placeholder (for
    removed messages) or a note (on a cut message) naming a handle; :func:`recall` gives the
    messages back as they came, and ``report.offloaded`` lists the handles.

    ``summarizer`` writes the summaries of a :class:`Summarize` step instead of the built-in
    extractive one: a callable ``(messages, *, max_tokens) -> str`` (or ``async``), given the
    messages as dicts; if it raises, the extractive summary stands in and says so.

    ``scorer`` ranks the words a :class:`CompressText` step drops instead of the built-in
    self-information: a callable ``(words: list[str]) -> list[float]``, one score per word,
    higher meaning more informative (a model's surprisal, LLMLingua's, ...).

    ``tokenizer`` (a tokenizer file) and ``calibration`` (from :func:`calibrate`) change how
    tokens are counted, as for :func:`count`; the model still gives the window.
    """
    return Fitter().fit(
        messages,
        model,
        system=system,
        budget=budget,
        pipeline=pipeline,
        tools=tools,
        reserve_output=reserve_output,
        format=format,
        allow_over_window=allow_over_window,
        store=store,
        summarizer=summarizer,
        scorer=scorer,
        tokenizer=tokenizer,
        calibration=calibration,
    )


class Fitter:
    """:func:`fit` that remembers the token counts of the messages it has fitted, for an agent
    loop: refitting a history that grew by one message tokenizes that message only (the others
    cost a hash). Same arguments and results as :func:`fit`; one fitter may serve several
    threads and models (a fit for another model's counter starts its memory again). Memory:
    about 40 bytes per distinct message."""

    def __init__(self) -> None:
        self._native = _native.Fitter()

    def fit(
        self,
        messages: Messages | Mapping[str, Any],
        model: str | None = None,
        *,
        system: str | Sequence[Mapping[str, Any]] | None = None,
        budget: int | None = None,
        pipeline: PipelineLike = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reserve_output: int | None = None,
        format: str | None = None,
        allow_over_window: bool = False,
        store: str | os.PathLike[str] | MemoryStore | None = None,
        summarizer: Summarizer | None = None,
        scorer: Scorer | None = None,
        tokenizer: str | os.PathLike[str] | None = None,
        calibration: float | None = None,
    ) -> FitResult:
        """:func:`fit`, with what this fitter remembers."""
        return self._native.fit(
            messages,
            model,
            system=system,
            budget=budget,
            pipeline=_pipeline(pipeline),
            tools=tools,
            reserve_output=reserve_output,
            format=format,
            allow_over_window=allow_over_window,
            store=store,
            summarizer=summarizer,
            scorer=scorer,
            tokenizer=tokenizer,
            calibration=calibration,
        )


async def acount(
    messages: Messages | Mapping[str, Any],
    model: str | None = None,
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    format: str | None = None,
    tokenizer: str | os.PathLike[str] | None = None,
    calibration: float | None = None,
) -> Count:
    """:func:`count` in a worker thread, so the event loop keeps running."""
    return await asyncio.to_thread(
        count,
        messages,
        model,
        system=system,
        tools=tools,
        format=format,
        tokenizer=tokenizer,
        calibration=calibration,
    )


async def afit(
    messages: Messages | Mapping[str, Any],
    model: str | None = None,
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    budget: int | None = None,
    pipeline: PipelineLike = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reserve_output: int | None = None,
    format: str | None = None,
    allow_over_window: bool = False,
    store: str | os.PathLike[str] | MemoryStore | None = None,
    summarizer: Summarizer | None = None,
    scorer: Scorer | None = None,
    tokenizer: str | os.PathLike[str] | None = None,
    calibration: float | None = None,
) -> FitResult:
    """:func:`fit` in a worker thread (the engine releases the GIL), so the event loop keeps
    running while a long history is fitted."""
    return await asyncio.to_thread(
        fit,
        messages,
        model,
        system=system,
        budget=budget,
        pipeline=pipeline,
        tools=tools,
        reserve_output=reserve_output,
        format=format,
        allow_over_window=allow_over_window,
        store=store,
        summarizer=summarizer,
        scorer=scorer,
        tokenizer=tokenizer,
        calibration=calibration,
    )


class Session:
    """Fits the turns of agent loops so that each request extends the one before, until a
    compaction: a provider's prompt cache keeps serving the prefix, turn after turn.

    A stateless :func:`fit` decides afresh on every call, so its cut moves every turn and the
    cache misses from the cut on. A session decides once per *epoch*: while the history, as the
    current decision leaves it, stays under ``high_water`` (a share of the budget; the whole
    budget unless given), the messages sent before are sent again byte for byte and the new
    ones follow; when it would cross the mark, ``policy`` compacts once, down to ``low_water``
    (the engine's default share unless given; :attr:`low_water` says it), and that decision
    holds until the next compaction. ``result.report.session`` says
    which happened (``key``, ``epoch``, ``compacted``, ``policy``).

    ``policy`` is a preset name (``"cache"``, the default: lossless steps, then one cut that
    keeps a fixed head and the newest turns; or any of :meth:`Pipeline.presets`), a
    :class:`Pipeline` or a list of steps. ``store`` keeps the decisions: a file path (an SQLite
    file shared by processes: a session opened on it in another process makes the same
    decisions), a :class:`MemoryStore` (shared by the sessions of this process given it), or
    ``None`` for a store of the session's own. Budget, ``model`` and ``reserve_output`` as for
    :func:`fit`. With ``cache_breakpoints=True``, Anthropic requests get ``cache_control`` marks
    on the last message, the end of the previous turn and the end of the compaction's head
    (unless the messages carry marks of their own); the plan records them. With
    ``high_water`` below 1, a turn past the mark waits for its compaction while the compaction
    would cost more in cache misses than it saves (the model's prices and its provider's caching
    rule); ``weigh_cache_misses=False`` compacts at the mark. What a compaction removes is
    offloaded into ``store`` and its trace names the handle (:func:`recall`, :func:`recall_tool`);
    ``offload=False`` leaves only the trace. Each compaction leaves a summary of what it removed
    (the extractive summarizer's, or ``summarizer``'s: a callable as for :func:`fit`);
    ``summarize=False`` a line saying how many messages went.

    ``tokenizer`` (a tokenizer file) and ``calibration`` (from :func:`calibrate`) change how
    tokens are counted, as for :func:`count`.

    Conversations are told apart by ``key`` (by default a hash of the messages up to the first
    user message: the system prompt and the task); messages are recognised by content, so a
    framework that rebuilds its dicts every turn is fine. One session serves many conversations
    and threads (calls take turns in the engine, with the GIL released).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        budget: int | None = None,
        policy: PipelineLike = "cache",
        store: str | os.PathLike[str] | MemoryStore | None = None,
        high_water: float | None = None,
        low_water: float | None = None,
        max_conversations: int | None = None,
        reserve_output: int | None = None,
        cache_breakpoints: bool = False,
        weigh_cache_misses: bool = True,
        allow_over_window: bool = False,
        offload: bool = True,
        summarize: bool = True,
        summarizer: Summarizer | None = None,
        tokenizer: str | os.PathLike[str] | None = None,
        calibration: float | None = None,
    ) -> None:
        self._native = _native.Session(
            model,
            budget=budget,
            policy=_pipeline(policy) if isinstance(policy, (list, tuple)) else policy,
            store=store,
            high_water=high_water,
            low_water=low_water,
            max_conversations=max_conversations,
            reserve_output=reserve_output,
            cache_breakpoints=cache_breakpoints,
            weigh_cache_misses=weigh_cache_misses,
            allow_over_window=allow_over_window,
            offload=offload,
            summarize=summarize,
            summarizer=summarizer,
            tokenizer=tokenizer,
            calibration=calibration,
        )

    def fit(
        self,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        key: str | None = None,
        format: str | None = None,
    ) -> FitResult:
        """Fits ``messages``, the whole history of this turn, as conversation ``key``. Same
        result as :func:`fit` (unchanged messages are your own dicts); raises
        :class:`CannotFit` as it does, and :class:`StoreError` when the store fails."""
        return self._native.fit(messages, tools=tools, key=key, format=format)

    async def afit(
        self,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        key: str | None = None,
        format: str | None = None,
    ) -> FitResult:
        """:meth:`fit` in a worker thread, so the event loop keeps running."""
        return await asyncio.to_thread(self._native.fit, messages, tools=tools, key=key, format=format)

    @staticmethod
    def key_of(messages: Messages, *, format: str | None = None, model: str | None = None) -> str:
        """The key :meth:`fit` gives ``messages`` when it is given none, for a session of ``model``
        (plain messages are read in that model's format; OpenAI's when ``None``)."""
        return _native.Session.key_of(messages, format=format, model=model)

    def recall(self, handle: str, *, offset: int = 0, limit: int | None = None) -> str:
        """The messages this session's compactions offloaded under ``handle`` (named in a
        trace), from its store: :func:`recall` on the session's store. ``tightfit.answer_recall(
        call, store=session)`` answers the model's recall calls from it."""
        return self._native.recall(handle, offset=offset, limit=limit)

    def forget(self, key: str) -> None:
        """Forgets conversation ``key``, in memory and in the store: its next turn starts afresh."""
        self._native.forget(key)

    @property
    def model(self) -> str:
        """The model name it was made with."""
        return self._native.model

    @property
    def budget(self) -> int:
        """The budget it fits to."""
        return self._native.budget

    @property
    def policy(self) -> str:
        """The policy's name: a preset's, or ``"custom"``."""
        return self._native.policy

    @property
    def high_water(self) -> float:
        """The share of the budget whose crossing compacts."""
        return self._native.high_water

    @property
    def low_water(self) -> float:
        """The share of the budget a compaction cuts down to."""
        return self._native.low_water

    @property
    def max_conversations(self) -> int:
        """The most conversations held in memory (the others are read back from the store)."""
        return self._native.max_conversations

    @property
    def cache_breakpoints(self) -> bool:
        """Whether Anthropic requests get prompt-cache breakpoints from the session."""
        return self._native.cache_breakpoints

    @property
    def weigh_cache_misses(self) -> bool:
        """Whether a turn past the high-water mark waits while compacting would cost more."""
        return self._native.weigh_cache_misses

    @property
    def store(self) -> str:
        """The store, as the engine describes it (``memory``, ``sqlite:/path/sessions.db``)."""
        return self._native.store

    def __repr__(self) -> str:
        return repr(self._native)


def recall(
    handle: str,
    *,
    store: str | os.PathLike[str] | MemoryStore | Session,
    offset: int = 0,
    limit: int | None = None,
) -> str:
    """The messages offloaded under ``handle`` (named in a placeholder of a fit given
    ``store``), as they came: a JSON array of ``{"index", "message"}`` (the index in the fitted
    input, the message in its wire format), ``limit`` characters from character ``offset``.
    Raises :class:`StoreError` for a handle the store does not hold, :class:`ConfigError` for
    text that is not a handle."""
    return _native.recall(handle, store=store, offset=offset, limit=limit)


def recall_tool(format: str = "openai") -> dict[str, Any]:
    """The schema of the ``tightfit_recall`` tool, to offer the model beside your own tools so
    it can read back what was offloaded: OpenAI's ``{"type": "function", "function": ...}`` or,
    with ``format="anthropic"``, Anthropic's ``{"name", "description", "input_schema"}``.
    Answer its calls with :func:`answer_recall`."""
    return _native.recall_tool(format)


def answer_recall(call: Any, *, store: str | os.PathLike[str] | MemoryStore | Session) -> dict[str, Any]:
    """Answers a model's call of the recall tool from ``store``: ``call`` is an OpenAI tool call
    (a dict or the SDK's object: ``{"id", "function": {"name", "arguments"}}``) or an Anthropic
    ``tool_use`` block (``{"type": "tool_use", "id", "name", "input"}``). Returns the message to
    append: an OpenAI ``{"role": "tool", ...}`` message, or an Anthropic ``tool_result`` block
    for your next user message. A bad handle is answered with an error the model can read."""
    if hasattr(call, "model_dump"):
        call = call.model_dump(mode="json", exclude_none=True)
    if not isinstance(call, Mapping):
        raise TypeError(f"call: expected a tool call dict or SDK object, found {type(call).__name__}")
    if call.get("type") == "tool_use" or "input" in call:
        content = _native.answer_recall_arguments(call.get("input") or {}, store=store)
        return {"type": "tool_result", "tool_use_id": call.get("id"), "content": content}
    function = call.get("function") or {}
    content = _native.answer_recall_arguments(function.get("arguments") or "{}", store=store)
    return {"role": "tool", "tool_call_id": call.get("id"), "content": content}


def _register_llama3_vocabulary() -> None:
    """Tells the engine where an importable ``llama_models`` package keeps Llama 3's vocabulary
    (``find_spec`` looks the package up without importing it); the engine reads the file only
    when a Llama 3 model is counted, and uses it only if it is Llama 3's."""
    try:
        spec = importlib.util.find_spec("llama_models")
    except (ImportError, ValueError):
        return
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(location, "llama3", "tokenizer.model")
        if os.path.isfile(path):
            _native.set_llama3_search_path(path)
            return


_register_llama3_vocabulary()
