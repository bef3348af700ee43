"""What every integration does the same way: the :class:`tightfit.Session` it fits with, made
from its arguments, and a fit of the framework's messages (turned into dicts) that says which
framework message each fitted dict comes from, so the framework gets its own objects back for
everything the fit left alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import tightfit


def new_session(
    owner: str,
    model: Any,
    *,
    budget: Any,
    policy: Any,
    store: Any,
    options: Mapping[str, Any],
) -> tightfit.Session:
    """The session ``owner`` (the integration's class, for error messages) fits with. The
    session checks its own arguments (``tightfit.ConfigError`` / ``TypeError`` naming them);
    the model is checked here: an integration counts for its model's window and tokenizer, so it
    takes no bare budget (which ``tightfit.Session`` would count with ``o200k_base``)."""
    if not isinstance(model, str) or not model:
        raise TypeError(f"{owner}: model: expected a model name such as 'gpt-4o', found {model!r}")
    return tightfit.Session(model, budget=budget, policy=policy, store=store, **options)


@dataclass(frozen=True)
class Run:
    """Consecutive fitted dicts that come from one framework message (``owner``), or one dict a
    step wrote (a summary, a placeholder: ``owner`` is ``None``)."""

    owner: int | None
    #: the fitted dicts, in order
    messages: list[dict[str, Any]]
    #: whether the run is the owner's dicts, all of them and each unchanged (the same objects)
    untouched: bool


def fit_runs(
    session: tightfit.Session,
    dicts: list[dict[str, Any]],
    owners: Sequence[int],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    format: str = "openai",
) -> tuple[list[Run], tightfit.FitResult]:
    """Fits ``dicts`` (each made from framework message ``owners[i]``, owners in order) through
    ``session`` and returns the fitted history as runs (:class:`Run`), with the result. Cost:
    the session's fit, plus one pass over its plan."""
    result = session.fit(dicts, tools=tools, format=format)
    sizes: dict[int, int] = {}
    for owner in owners:
        sizes[owner] = sizes.get(owner, 0) + 1
    runs: list[Run] = []
    current: int | None = None
    members: list[dict[str, Any]] = []
    same = True

    def close() -> None:
        if members:
            untouched = current is not None and same and len(members) == sizes[current]
            runs.append(Run(current, list(members), untouched))

    for entry, message in zip(result.plan.output, result.messages):
        source = entry.get("input")
        owner = owners[source] if source is not None else None
        if owner is None or owner != current:
            close()
            current, members, same = owner, [], True
        members.append(message)
        same = same and source is not None and message is dicts[source]
    close()
    return runs, result
