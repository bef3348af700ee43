"""tightfit as a LiteLLM callback: requests through the LiteLLM proxy, ``litellm.acompletion``
and a LiteLLM ``Router`` are fitted by a :class:`tightfit.Session` before they reach the
provider::

    import litellm
    from tightfit.integrations.litellm import TightfitHook

    litellm.callbacks = [TightfitHook(budget=100_000)]     # every acompletion from here on

In the proxy's ``config.yaml``, ``litellm_settings: {callbacks: my_hooks.tightfit_hook}`` with
``tightfit_hook = TightfitHook()`` in ``my_hooks.py`` beside it.

Which hook does what (LiteLLM 1.76): the proxy calls ``async_pre_call_hook`` with the request
before routing it; ``litellm.acompletion`` (and so the Router and the proxy after routing)
calls ``async_pre_call_deployment_hook`` of every entry of ``litellm.callbacks``; a request the
proxy hook fitted carries ``metadata["tightfit"]`` (its token counts) and is not fitted again.
The synchronous ``litellm.completion`` calls no hook that can change the messages (its prompt
management hooks run only for a request naming a ``prompt_id``): there, pass
``messages=hook.fit(messages, model=...)``.

One session per model: by default the request's model, without a provider prefix
(``openai/gpt-4o`` is counted as ``gpt-4o``), so a model tightfit does not know raises
:class:`tightfit.UnknownModel` naming it; ``model=`` counts every request as that model.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Mapping, Sequence

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as error:  # pragma: no cover - exercised only without litellm
    raise ImportError("tightfit.integrations.litellm needs LiteLLM: pip install litellm") from error

import tightfit
from tightfit.integrations._session import new_session

__all__ = ["TightfitHook"]

#: the call types whose requests carry chat messages
_CHAT_CALLS = frozenset({"completion", "acompletion"})


class TightfitHook(CustomLogger):
    """A LiteLLM ``CustomLogger`` that fits each chat request's ``messages`` (with its
    ``tools``) through a :class:`tightfit.Session` per model (:meth:`session_for`).

    ``model``: the tightfit model to count every request as (by default each request's own);
    ``budget``, ``policy``, ``store`` and any other keyword are :class:`tightfit.Session`'s.
    Bad arguments raise here (``TypeError`` or :class:`tightfit.ConfigError` naming them) when
    ``model`` is given, else at the first request of a model.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        budget: int | None = None,
        policy: Any = "cache",
        store: Any = None,
        **session_options: Any,
    ) -> None:
        super().__init__()
        if model is not None and (not isinstance(model, str) or not model):
            raise TypeError(f"TightfitHook: model: expected a model name such as 'gpt-4o' or None, found {model!r}")
        self.model = model
        self._settings = {"budget": budget, "policy": policy, "store": store, "options": session_options}
        self._sessions: dict[str, tightfit.Session] = {}
        self._lock = threading.Lock()
        if model is not None:
            self.session_for(model)

    def session_for(self, model: str) -> tightfit.Session:
        """The session requests for ``model`` (a LiteLLM model name) are fitted with."""
        name = self.model or model.rsplit("/", 1)[-1]
        with self._lock:
            session = self._sessions.get(name)
            if session is None:
                session = new_session("TightfitHook", name, **self._settings)  # type: ignore[arg-type]
                self._sessions[name] = session
            return session

    def fit(self, messages: Sequence[Any], *, model: str, tools: Sequence[Mapping[str, Any]] | None = None) -> list[Any]:
        """``messages`` (OpenAI Chat Completions messages, as LiteLLM takes them) fitted for
        ``model``: for the synchronous ``litellm.completion``, which calls no hook that could."""
        return self.session_for(model).fit(messages, tools=tools, format="openai").messages

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any]:
        """The proxy's hook, before routing: ``data`` with its messages fitted and
        ``metadata["tightfit"]`` saying what the fit did."""
        if call_type not in _CHAT_CALLS or not data.get("messages"):
            return data
        return await asyncio.to_thread(self._fitted, data, True)

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """``litellm.acompletion``'s hook (also the Router's and the proxy's after routing):
        the request with its messages fitted, or ``None`` to leave it as it is (not a chat
        request, or already fitted by :meth:`async_pre_call_hook`)."""
        kind = getattr(call_type, "value", call_type)
        if kind not in _CHAT_CALLS or not kwargs.get("messages") or _fitted_by_proxy(kwargs):
            return None
        return await asyncio.to_thread(self._fitted, kwargs, False)

    def _fitted(self, request: dict[str, Any], mark: bool) -> dict[str, Any]:
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise TypeError(f"TightfitHook: the request has no model name (model={model!r})")
        result = self.session_for(model).fit(request["messages"], tools=request.get("tools"), format="openai")
        fitted = dict(request)
        fitted["messages"] = result.messages
        if mark:
            key = "litellm_metadata" if isinstance(request.get("litellm_metadata"), dict) else "metadata"
            metadata = dict(request.get(key) or {})
            metadata["tightfit"] = {
                "original_tokens": result.report.original_token_count,
                "compressed_tokens": result.report.compressed_token_count,
            }
            fitted[key] = metadata
        return fitted


def _fitted_by_proxy(request: Mapping[str, Any]) -> bool:
    """Whether the proxy's hook fitted ``request`` already."""
    for key in ("metadata", "litellm_metadata"):
        metadata = request.get(key)
        if isinstance(metadata, Mapping) and "tightfit" in metadata:
            return True
    return False
