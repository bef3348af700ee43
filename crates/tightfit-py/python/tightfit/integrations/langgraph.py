"""tightfit as LangGraph's ``pre_model_hook``: a ``create_react_agent`` agent's model receives
its history fitted by a :class:`tightfit.Session`, and the graph's state keeps every message::

    from langgraph.prebuilt import create_react_agent
    from tightfit.integrations.langgraph import pre_model_hook

    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook("gpt-4o", budget=100_000))

The hook returns ``{"llm_input_messages": fitted}``, which LangGraph sends to the model in place
of ``messages`` without changing the state, so the session sees the whole history each turn:
its requests extend each other until a compaction, and a tool call is never sent without its
results. The agent's ``prompt`` is added by LangGraph after the hook and is not counted: leave
room for it in ``budget``, or put the system prompt in the messages as a ``SystemMessage``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

try:
    from langchain_core.messages import BaseMessage
except ImportError as error:  # pragma: no cover - exercised only without langchain-core
    raise ImportError("tightfit.integrations.langgraph needs LangGraph: pip install langgraph") from error

from tightfit.integrations._langchain_messages import fit_messages
from tightfit.integrations._session import new_session

__all__ = ["pre_model_hook"]


def pre_model_hook(
    model: str,
    *,
    budget: int | None = None,
    policy: Any = "cache",
    store: Any = None,
    **session_options: Any,
) -> Callable[[Any], dict[str, list[BaseMessage]]]:
    """A ``pre_model_hook`` for ``create_react_agent`` that fits the state's ``messages``
    through one :class:`tightfit.Session` (the hook's ``.session``). The arguments are
    :class:`~tightfit.integrations.langchain.TightfitMiddleware`'s; bad ones raise here."""
    session = new_session("pre_model_hook", model, budget=budget, policy=policy, store=store, options=session_options)

    def hook(state: Any) -> dict[str, list[BaseMessage]]:
        messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
        if messages is None:
            raise TypeError("pre_model_hook: the graph state has no 'messages'")
        fitted, _ = fit_messages(session, messages)
        return {"llm_input_messages": fitted}

    hook.session = session  # type: ignore[attr-defined]
    return hook

