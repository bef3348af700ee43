"""tightfit for pydantic-ai: every model request of an agent receives its message history
fitted by a :class:`tightfit.Session`::

    from pydantic_ai import Agent
    from tightfit.integrations.pydantic_ai import TightfitCapability

    agent = Agent("openai:gpt-4o", capabilities=[TightfitCapability("gpt-4o", budget=100_000)])

``TightfitCapability`` fits in the capability's ``before_model_request`` hook, which changes
only what one request sends: the run's history keeps every message, and the session sees the
whole history each request, as it is meant to (its requests extend each other until a
compaction). ``TightfitHistoryProcessor`` is the same fit as a history processor, a callable
taking and returning ``ModelMessage`` lists, for ``ProcessHistory(...)`` (pydantic-ai 2) or
``history_processors=[...]`` (pydantic-ai 1); pydantic-ai keeps what a history processor returns
as the run's history, so what a compaction removed leaves the run.

What each part is read as, and what comes back, is in
:mod:`tightfit.integrations._pydantic_ai_messages`.
"""

from __future__ import annotations

import asyncio
import operator
import threading
from collections import OrderedDict
from typing import Any

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage
except ImportError as error:  # pragma: no cover - exercised only without pydantic-ai
    raise ImportError(
        "tightfit.integrations.pydantic_ai needs pydantic-ai: pip install pydantic-ai-slim"
    ) from error

import tightfit
from tightfit.integrations._pydantic_ai_messages import fit_model_messages
from tightfit.integrations._session import new_session

__all__ = ["TightfitCapability", "TightfitHistoryProcessor"]


class TightfitHistoryProcessor:
    """A pydantic-ai history processor (``ProcessHistory(...)``, or pydantic-ai 1's
    ``history_processors=[...]``) that fits the history through one :class:`tightfit.Session`
    (``self.session``).

    ``model`` is the model whose window and tokenizer count (a tightfit model name, such as
    ``"gpt-4o"``); ``budget``, ``policy``, ``store`` and any other keyword are
    :class:`tightfit.Session`'s. Bad arguments raise here (``TypeError`` or
    :class:`tightfit.ConfigError` naming them); a history that is not a list of
    ``ModelRequest`` / ``ModelResponse`` raises ``TypeError`` naming the index.

    pydantic-ai keeps what a processor returns as the run's history, so the next call brings
    back this call's output with the new messages after it. Given its own output, a session
    sends it on as it comes until the high-water mark, but its next compaction would then work
    from the last summary instead of the messages themselves (and offload nothing new); the
    whole history keeps its decisions replayable too. So the processor remembers, for the latest :data:`REMEMBERED` outputs, the history each was fitted from, and
    fits that history plus the new messages when a call starts with one of those outputs (the
    same objects). Memory: those histories, shared with the caller (no copies).
    """

    #: how many recent outputs (of as many conversations) the processor recognises
    REMEMBERED = 64

    def __init__(
        self,
        model: str,
        *,
        budget: int | None = None,
        policy: Any = "cache",
        store: Any = None,
        **session_options: Any,
    ) -> None:
        self.session: tightfit.Session = new_session(
            "TightfitHistoryProcessor", model, budget=budget, policy=policy, store=store, options=session_options
        )
        # id of an output's last message -> (the output, the history it was fitted from)
        self._sources: OrderedDict[int, tuple[list[ModelMessage], list[ModelMessage]]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send: ``messages`` fitted (the input list is not changed)."""
        history = self._whole(list(messages))
        fitted = fit_model_messages(self.session, history)
        if fitted:
            with self._lock:
                self._sources[id(fitted[-1])] = (fitted, history)
                self._sources.move_to_end(id(fitted[-1]))
                while len(self._sources) > self.REMEMBERED:
                    self._sources.popitem(last=False)
        return fitted

    def _whole(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """``messages`` with an output of this processor at its start replaced by the history
        that output was fitted from."""
        with self._lock:
            for fitted, history in reversed(self._sources.values()):
                n = len(fitted)
                if len(messages) >= n and messages[n - 1] is fitted[-1] and all(map(operator.is_, messages, fitted)):
                    return history + messages[n:]
        return messages


class TightfitCapability(AbstractCapability[Any]):
    """A pydantic-ai capability (``Agent(capabilities=[...])``) that fits the history each model
    request sends, leaving the run's history whole. Arguments as for
    :class:`TightfitHistoryProcessor`; the session is ``self.session``. The fit runs in a worker
    thread."""

    def __init__(
        self,
        model: str,
        *,
        budget: int | None = None,
        policy: Any = "cache",
        store: Any = None,
        **session_options: Any,
    ) -> None:
        self.processor = TightfitHistoryProcessor(model, budget=budget, policy=policy, store=store, **session_options)

    @property
    def session(self) -> tightfit.Session:
        """The session the requests are fitted through."""
        return self.processor.session

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        """Sends this request the history fitted; ``ctx.messages`` (the run's) is not changed."""
        request_context.messages = await asyncio.to_thread(self.processor, list(request_context.messages))
        return request_context

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not built from agent specs: it holds a session."""
        return None
