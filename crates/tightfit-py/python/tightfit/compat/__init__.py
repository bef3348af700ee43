"""Drop-in adapters: the APIs of other context-handling libraries, answered by tightfit's engine.

Import the module for the library you use (``tightfit.compat.langchain``, ...); each needs that
library installed, and none is imported here.
"""
