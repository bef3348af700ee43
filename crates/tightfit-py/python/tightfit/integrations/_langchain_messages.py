"""LangChain message objects fitted by a :class:`tightfit.Session`, for the LangChain and
LangGraph integrations.

Each message is read as the OpenAI dicts langchain-core's own ``convert_to_openai_messages``
makes of it (the conversion tightfit's LangChain counter is held to; an AI message carrying
Anthropic ``tool_result`` blocks becomes several dicts). Back: a message the fit left alone is
the caller's own object; one whose text it cut is a copy with the new content (its id, tool
calls and metadata kept); one whose other fields it changed, or that a step wrote (a summary,
the line saying what a compaction removed), is made by langchain-core's
``convert_to_messages``. Cost per turn: one conversion of every message (LangChain's, in
Python) and the session's fit.
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.messages import (
    BaseMessage,
    SystemMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

import tightfit
from tightfit.integrations._session import Run, fit_runs


def fit_messages(
    session: tightfit.Session,
    messages: Sequence[BaseMessage],
    *,
    system: SystemMessage | None = None,
    tools: Sequence[Any] | None = None,
) -> tuple[list[BaseMessage], SystemMessage | None]:
    """``messages`` fitted through ``session``, counted with ``system`` (a system message the
    framework sends before them) and ``tools`` (LangChain tools or tool dicts); returns the
    messages and the system message to send (the caller's own unless the fit changed it)."""
    framework: list[BaseMessage] = ([system] if system is not None else []) + list(messages)
    dicts: list[dict[str, Any]] = []
    owners: list[int] = []
    for index, message in enumerate(framework):
        for converted in convert_to_openai_messages([message]):
            dicts.append(converted)
            owners.append(index)
    runs, _ = fit_runs(session, dicts, owners, tools=openai_tools(tools))
    read_as: dict[int, list[dict[str, Any]]] = {}
    for converted, owner in zip(dicts, owners):
        read_as.setdefault(owner, []).append(converted)
    fitted: list[BaseMessage] = []
    sent_system = None
    for run in runs:
        for message in _messages_of(run, framework, read_as):
            if system is not None and run.owner == 0:
                sent_system = message
            else:
                fitted.append(message)
    return fitted, sent_system


def openai_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """The tools as OpenAI tool schemas, to count (a dict is taken as it is: a provider's
    built-in tool has no schema to convert)."""
    if not tools:
        return None
    return [tool if isinstance(tool, dict) else convert_to_openai_tool(tool) for tool in tools]


def _messages_of(
    run: Run, framework: list[BaseMessage], read_as: dict[int, list[dict[str, Any]]]
) -> list[BaseMessage]:
    """The LangChain messages to send for one run of the fit (``read_as``: the dicts each
    framework message was read as)."""
    if run.owner is None:
        return convert_to_messages(run.messages)
    original = framework[run.owner]
    if run.untouched:
        return [original]
    own = read_as[run.owner]
    if len(own) == 1 and len(run.messages) == 1 and _only_content_differs(own[0], run.messages[0]):
        content = run.messages[0].get("content")
        return [original.model_copy(update={"content": "" if content is None else content})]
    rebuilt = convert_to_messages(run.messages)
    if len(rebuilt) == 1:
        rebuilt[0].id = original.id
    return rebuilt


def _only_content_differs(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether ``after`` is ``before`` with another content and nothing else changed."""
    keys = (set(before) | set(after)) - {"content"}
    return all(before.get(key) == after.get(key) for key in keys)
