"""The exceptions tightfit raises.

Every one is a :class:`Error`; those a caller would catch as a bad argument are also
:class:`ValueError`. The messages are the engine's own, naming the message index and field, the
configuration key, or what could not fit.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "Error",
    "ConfigError",
    "FormatError",
    "CannotFit",
    "InvalidHistory",
    "UnknownModel",
    "StepFailed",
    "StoreError",
]


class Error(Exception):
    """The base of every error tightfit raises."""


class ConfigError(Error, ValueError):
    """A pipeline, step or argument is misconfigured.

    ``key`` names where (``steps[2].max_length``, ``format``); ``reason`` says what is wrong.
    """

    def __init__(self, message: str, *, key: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.reason = reason


class FormatError(Error, ValueError):
    """A message or tool schema does not have the shape of its format, or holds data that is
    not JSON.

    ``path`` names the place (``messages[3].tool_calls[0].function.arguments``), ``index`` the
    message (``3``; ``None`` when the error is not inside a message), ``reason`` what is wrong.
    """

    def __init__(self, message: str, *, path: str = "", index: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.index = index
        self.reason = reason


class CannotFit(Error):
    """What must be kept does not fit the budget.

    ``what`` says what could not fit (``the system prompt (1204 tokens), the newest user turn
    (3900 tokens)``), ``needed`` the tokens it needs, ``budget`` the budget, ``over`` by how much,
    ``must_keep`` the tokens no step may remove (the system prompt, the newest user turn, tool
    schemas and priming): under the budget, a pipeline that removes more would fit.
    """

    def __init__(
        self, message: str, *, what: str = "", needed: int = 0, budget: int = 0, over: int = 0, must_keep: int = 0
    ) -> None:
        super().__init__(message)
        self.what = what
        self.needed = needed
        self.budget = budget
        self.over = over
        self.must_keep = must_keep


class InvalidHistory(Error, ValueError):
    """The history breaks the provider's rules in a way the repair pass does not fix.

    ``violations`` lists every :class:`tightfit.Violation` (index, rule, reason).
    """

    def __init__(self, message: str, *, provider: str = "", violations: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.provider = provider
        self.violations = list(violations)


class UnknownModel(Error, ValueError):
    """No model of the registry answers to ``name``; ``suggestions`` holds up to three close
    names. A ``ValueError``, as for any bad argument value: tightfit never falls back to a
    guessed window."""

    def __init__(self, message: str, *, name: str = "", suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.suggestions = list(suggestions)


class StepFailed(Error):
    """A step could not run (``summarize`` without a summarizer, say)."""

    def __init__(self, message: str, *, step: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.step = step
        self.reason = reason


class StoreError(Error):
    """A store (a session's, or one a fit offloads into) could not be used, or holds what this
    build cannot read.

    ``kind`` says what sort of failure: ``"open"`` (the file cannot be opened or made: a missing
    directory, no permission), ``"corrupt"`` (not a tightfit store: garbage, another program's
    database, a checkpoint that does not parse; the file is left as it is), ``"version"``
    (written by a newer tightfit), ``"locked"`` (another writer held it too long),
    ``"read_only"``, ``"not_found"`` (no offloaded content under the handle recalled),
    ``"unavailable"`` (a Redis or PostgreSQL server did not answer: worth a retry), or
    ``"other"``. ``store`` names the store (``sqlite:/path/sessions.db``, ``memory``,
    ``redis://host:6379/0``, never with its password), ``reason`` says what went wrong.
    """

    def __init__(self, message: str, *, kind: str = "other", store: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.store = store
        self.reason = reason
