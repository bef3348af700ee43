"""tightfit for the OpenAI Agents SDK: every model call of a run receives its input items fitted
by a :class:`tightfit.Session`::

    from agents import Agent, RunConfig, Runner, SQLiteSession
    from tightfit.integrations.openai_agents import TightfitInputFilter

    config = RunConfig(call_model_input_filter=TightfitInputFilter("gpt-4o", budget=100_000))
    await Runner.run(agent, "Fix the test.", session=SQLiteSession("user-1"), run_config=config)

This is the SDK's documented hook for changing what one model call receives
(``RunConfig.call_model_input_filter``), rather than a ``Session`` wrapper whose ``get_items``
returns fitted items: a session is read once, when a run starts, while a run's own tool calls
grow its input from one model call to the next (an agent that calls thirty tools in one run
outgrows the window inside the run), and the filter sees every one of those calls. It changes
only what the model receives: the session, any session, keeps every item, and the SDK's
bookkeeping of which items were sent works because the items the fit keeps are the SDK's own
objects.

Items are read in tightfit's ``responses`` format (messages, reasoning items, function calls
and their outputs, anything else kept as it came); a call is never sent without its output,
nor a reasoning item without the call it precedes. The agent's instructions and its function
tools are counted in the budget.
"""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from agents import FunctionTool
    from agents.run_config import CallModelData, ModelInputData
except ImportError as error:  # pragma: no cover - exercised only without openai-agents
    raise ImportError(
        "tightfit.integrations.openai_agents needs the OpenAI Agents SDK: pip install openai-agents"
    ) from error

import tightfit
from tightfit.integrations._session import new_session

__all__ = ["TightfitInputFilter"]


class TightfitInputFilter:
    """A ``call_model_input_filter`` (``RunConfig(call_model_input_filter=...)``) that fits each
    model call's input through one :class:`tightfit.Session` (``self.session``).

    ``model`` is the model whose window and tokenizer count (a tightfit model name, such as
    ``"gpt-4o"``); ``budget``, ``policy``, ``store`` and any other keyword are
    :class:`tightfit.Session`'s. Bad arguments raise here (``TypeError`` or
    :class:`tightfit.ConfigError` naming them). The fit runs in a worker thread.
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
        self.session: tightfit.Session = new_session(
            "TightfitInputFilter", model, budget=budget, policy=policy, store=store, options=session_options
        )

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The model input of ``data``, fitted."""
        return await asyncio.to_thread(self.fit, data)

    def fit(self, data: CallModelData[Any]) -> ModelInputData:
        """:meth:`__call__` in the caller's thread."""
        if not isinstance(data, CallModelData):
            raise TypeError(f"TightfitInputFilter: expected the SDK's CallModelData, found {type(data).__name__}")
        instructions = data.model_data.instructions
        head = [{"role": "system", "content": instructions}] if instructions else []
        result = self.session.fit(head + list(data.model_data.input), tools=_tools(data.agent), format="responses")
        sources = [entry.get("input") for entry in result.plan.output]
        items = [item for item, source in zip(result.messages, sources) if not (head and source == 0)]
        return ModelInputData(input=items, instructions=instructions)


def _tools(agent: Any) -> list[dict[str, Any]] | None:
    """The agent's function tools as the Responses API's tool schemas, to count (hosted tools
    have no schema of ours to count)."""
    tools = [
        {"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.params_json_schema}
        for tool in getattr(agent, "tools", None) or []
        if isinstance(tool, FunctionTool)
    ]
    return tools or None
