"""Drop-in adapters: the APIs of other context-handling libraries, backed by tightfit's engine.

Import the module of the library you use (``from tightfit.compat import ag2``,
``tightfit.compat.autogen_core``, ``tightfit.compat.langchain``, ...); each keeps that library's names and signatures and
imports its library only if it is installed. Nothing is imported here, so importing one
adapter never imports another (or its library).
"""
