"""tightfit.integrations is import-light: ``import tightfit`` imports no framework, and each
integration module imports its own framework only."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "litellm")


def imported_frameworks(statement: str) -> list[str]:
    """The frameworks in ``sys.modules`` after running ``statement`` in a fresh interpreter."""
    code = f"import sys\n{statement}\nprint(__import__('json').dumps([m for m in {FRAMEWORKS!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_importing_tightfit_imports_no_framework() -> None:
    assert imported_frameworks("import tightfit, tightfit.integrations") == []


@pytest.mark.parametrize(
    ("module", "frameworks"),
    [
        ("langchain", ["langchain", "langchain_core", "langgraph"]),  # LangChain v1 agents are LangGraph graphs
        ("langgraph", ["langchain_core"]),
        ("pydantic_ai", ["pydantic_ai"]),
        ("openai_agents", ["agents"]),
        ("litellm", ["litellm"]),
    ],
)
def test_each_integration_imports_its_own_framework_only(module: str, frameworks: list[str]) -> None:
    assert imported_frameworks(f"import tightfit.integrations.{module}") == frameworks
