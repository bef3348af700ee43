"""tightfit as LangChain v1 agent middleware: every model call of a ``create_agent`` agent
receives its history fitted by a :class:`tightfit.Session`::

    from langchain.agents import create_agent
    from tightfit.integrations.langchain import TightfitMiddleware

    agent = create_agent(model, tools, middleware=[TightfitMiddleware(model="gpt-4o", budget=100_000)])

The middleware wraps the model call (``wrap_model_call``) rather than running ``before_model``:
a ``before_model`` hook can only change what the model sees by rewriting the agent's state
(``RemoveMessage(REMOVE_ALL_MESSAGES)`` and the fitted list), which would drop the history from
the state and its checkpointer for good and hand the session its own output on the next turn.
Wrapping the call changes only what the model receives; the state keeps every message, and the
session sees the whole history each turn, as it is meant to: its requests extend each other
until a compaction (the provider's prompt cache keeps the prefix), a tool call is never sent
without its results. The system prompt and the tools are counted in the budget.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
except ImportError as error:  # pragma: no cover - exercised only without langchain
    raise ImportError(
        "tightfit.integrations.langchain needs LangChain v1: pip install 'langchain>=1'"
    ) from error

import tightfit
from tightfit.integrations._langchain_messages import fit_messages
from tightfit.integrations._session import new_session

__all__ = ["TightfitMiddleware"]


class TightfitMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Agent middleware that fits the history each model call receives, through one
    :class:`tightfit.Session` (``self.session``).

    ``model`` is the model whose window and tokenizer count (a tightfit model name, such as
    ``"gpt-4o"`` or ``"claude-sonnet-4-5"``); ``budget`` the tokens to fit in (by default the
    window less the reply); ``policy`` the session's policy (``"cache"`` by default, a preset
    name, a :class:`tightfit.Pipeline` or a list of steps); ``store`` where its decisions are
    kept (a path, ``"redis://..."``, a :class:`tightfit.MemoryStore`); any other keyword
    (``high_water``, ``low_water``, ``summarizer``, ...) goes to :class:`tightfit.Session`.
    Bad arguments raise here: ``TypeError`` or :class:`tightfit.ConfigError` naming them.
    """

    def __init__(
        self,
        model: str,
        *,
        budget: int | None = None,
        policy: Any = "cache",
        store: Any = None,
        **session_options: Any,
    ) -> None:
        super().__init__()
        self.session: tightfit.Session = new_session(
            "TightfitMiddleware", model, budget=budget, policy=policy, store=store, options=session_options
        )

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Calls the model with the request's messages fitted."""
        return handler(self._fitted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        """:meth:`wrap_model_call` for async agents; the fit runs in a worker thread."""
        return await handler(await asyncio.to_thread(self._fitted, request))

    def _fitted(self, request: ModelRequest) -> ModelRequest:
        messages, system = fit_messages(
            self.session, request.messages, system=request.system_message, tools=request.tools
        )
        return request.override(messages=messages, system_message=system)
