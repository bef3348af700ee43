"""Drop-in adapters: the APIs of other context-handling libraries, backed by tightfit's engine.

Import the module of the library you use (``tightfit.compat.autogen_core``, ...); each is
independent and imports its library only if it is installed.
"""
