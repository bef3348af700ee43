"""Runs langchain-core's own tests against tightfit.compat.langchain: before the test module
imports `trim_messages` and `count_tokens_approximately` from langchain-core, those names are
swapped for ours, wherever langchain-core exports them."""

from __future__ import annotations

import langchain_core.messages
import langchain_core.messages.utils

from tightfit.compat import langchain as ours

for module in (langchain_core.messages.utils, langchain_core.messages):
    for name in ("trim_messages", "count_tokens_approximately"):
        if hasattr(module, name):
            setattr(module, name, getattr(ours, name))


def pytest_report_header() -> str:
    return "langchain-core's trim_messages and count_tokens_approximately are tightfit.compat.langchain's"


def pytest_collection_modifyitems(items: list) -> None:
    """Fails the run if a test module still holds langchain-core's own functions."""
    for item in items:
        module = getattr(item, "module", None)
        for name in ("trim_messages", "count_tokens_approximately"):
            if module is not None and hasattr(module, name):
                assert getattr(module, name) is getattr(ours, name), f"{module.__name__}.{name} was not swapped"
