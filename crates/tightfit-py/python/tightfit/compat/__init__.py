"""Drop-in replacements for other libraries' context handling.

Import the module of the library you use, e.g. ``from tightfit.compat import ag2``; each module
keeps that library's names and signatures. Nothing is imported here, so importing one adapter
never imports another (or its library).
"""
