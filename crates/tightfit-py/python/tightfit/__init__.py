"""tightfit: fit LLM conversation histories into a model's context window.

Exact token counts for the target model, and histories that are within budget and valid for
the provider (a tool call never loses its result), with a report of what was done::

    import tightfit

    result = tightfit.fit(messages, model="gpt-4o", budget=32_000)
    result.messages   # unchanged messages are your own dict objects
    result.report.compressed_token_count

The work is done by the Rust engine, with the GIL released; this package is a skin over it.
Messages are plain dicts in OpenAI Chat Completions or Anthropic Messages shape (detected, or
``format="openai"|"anthropic"``). Neither the list nor its dicts are ever mutated.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Sequence

from tightfit import _native
from tightfit._native import Count, FitResult, Pipeline, Plan, Report, Violation, __version__, validate
from tightfit.errors import (
    CannotFit,
    ConfigError,
    Error,
    FormatError,
    InvalidHistory,
    StepFailed,
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
    "fit",
    "afit",
    "Fitter",
    "validate",
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
]

Messages = Sequence[Mapping[str, Any]]
PipelineLike = Pipeline | str | Sequence[Step | Mapping[str, Any]] | None


def _pipeline(pipeline: PipelineLike) -> Pipeline | None:
    """A pipeline from what the caller gave: a Pipeline, a preset name, or a list of steps."""
    if pipeline is None or isinstance(pipeline, Pipeline):
        return pipeline
    if isinstance(pipeline, str):
        return Pipeline.preset(pipeline)
    return Pipeline(pipeline)


def count(
    messages: Messages,
    model: str = "gpt-4o",
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    format: str | None = None,
) -> Count:
    """Tokens of ``messages`` (and ``tools``) for ``model``: ``.total``, ``.per_message``,
    ``.tools``, ``.priming``. Exact for OpenAI models; an estimate where no tokenizer is
    public (``.counter`` says which)."""
    return _native.count(messages, model, tools=tools, format=format)


def fit(
    messages: Messages,
    model: str = "gpt-4o",
    *,
    budget: int | None = None,
    pipeline: PipelineLike = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reserve_output: int | None = None,
    format: str | None = None,
) -> FitResult:
    """Fit ``messages`` into ``model``'s window, or into ``budget`` tokens.

    The budget defaults to the model's input limit minus ``reserve_output`` (the model's
    maximum output, at most 4,096, when ``None``). ``pipeline`` is a :class:`Pipeline`, a preset
    name or a list of steps; without one the default ladder runs, lossless steps first, each
    only while still over budget. Raises :class:`CannotFit` when even what must be kept (the
    system prompt, the newest user turn) is over the budget.
    """
    return Fitter().fit(
        messages, model, budget=budget, pipeline=pipeline, tools=tools, reserve_output=reserve_output, format=format
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
        messages: Messages,
        model: str = "gpt-4o",
        *,
        budget: int | None = None,
        pipeline: PipelineLike = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reserve_output: int | None = None,
        format: str | None = None,
    ) -> FitResult:
        """:func:`fit`, with what this fitter remembers."""
        return self._native.fit(
            messages,
            model,
            budget=budget,
            pipeline=_pipeline(pipeline),
            tools=tools,
            reserve_output=reserve_output,
            format=format,
        )


async def acount(
    messages: Messages,
    model: str = "gpt-4o",
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    format: str | None = None,
) -> Count:
    """:func:`count` in a worker thread, so the event loop keeps running."""
    return await asyncio.to_thread(count, messages, model, tools=tools, format=format)


async def afit(
    messages: Messages,
    model: str = "gpt-4o",
    *,
    budget: int | None = None,
    pipeline: PipelineLike = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reserve_output: int | None = None,
    format: str | None = None,
) -> FitResult:
    """:func:`fit` in a worker thread (the engine releases the GIL), so the event loop keeps
    running while a long history is fitted."""
    return await asyncio.to_thread(
        fit,
        messages,
        model,
        budget=budget,
        pipeline=pipeline,
        tools=tools,
        reserve_output=reserve_output,
        format=format,
    )
