"""tightfit inside today's agent frameworks, one module each; importing this package imports
none of them (a framework is imported when its module is):

- :mod:`tightfit.integrations.langchain`: ``TightfitMiddleware`` for LangChain v1's
  ``create_agent``;
- :mod:`tightfit.integrations.langgraph`: ``pre_model_hook`` for LangGraph's
  ``create_react_agent``;
- :mod:`tightfit.integrations.pydantic_ai`: ``TightfitCapability`` for pydantic-ai's
  ``capabilities`` (and ``TightfitHistoryProcessor``, a history processor);
- :mod:`tightfit.integrations.openai_agents`: ``TightfitInputFilter`` for the OpenAI Agents
  SDK's ``RunConfig(call_model_input_filter=...)``;
- :mod:`tightfit.integrations.litellm`: ``TightfitHook``, a LiteLLM ``CustomLogger`` for the
  proxy and ``litellm.acompletion``.

Each fits through a :class:`tightfit.Session`, so what the model receives extends the previous
request until a compaction (the provider's prompt cache keeps serving the prefix), tool calls
stay with their results, and the framework's own history is never changed: only what one model
call receives is fitted.
"""
