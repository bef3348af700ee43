"""What the framework integrations' tests share: a real agent history, the README's examples,
and the checks every request a fake model receives must pass."""

from __future__ import annotations

import re
from typing import Any, Sequence

import tightfit
from conftest import records, repo_root

#: a real DeepSeek-reasoner agent run (SWE task, 157 messages, 25,899 gpt-4o tokens): every
#: assistant step has thinking and a tool call, every tool result answers one
TRANSCRIPT = "mini-swe-agent/deepseek_reasoner_dev/marshmallow-code__marshmallow-1359"

#: the budget the README's examples fit to
README_BUDGET = 20_000


def transcript() -> list[dict[str, Any]]:
    """The agent history, up to its last tool result (so the model answers next): OpenAI dicts."""
    messages = next(r for r in records("agent_mini_swe_deepseek_reasoner.jsonl") if r["id"] == TRANSCRIPT)["messages"]
    last_tool = max(i for i, m in enumerate(messages) if m["role"] == "tool")
    return [dict(m) for m in messages[: last_tool + 1]]


def readme_example(title: str) -> str:
    """The Python block under the heading ``title`` of the package README's Integrations
    section: the test runs it, so the example cannot rot."""
    text = (repo_root() / "crates" / "tightfit-py" / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Integrations", 1)[1]
    part = section.split(f"\n### {title}\n", 1)[1].split("\n### ", 1)[0]
    match = re.search(r"```python\n(.*?)```", part, re.S)
    assert match, f"no python block under ### {title}"
    return match.group(1)


def check_request(
    messages: Sequence[Any],
    *,
    model: str,
    budget: int,
    tools: Sequence[dict[str, Any]] | None = None,
    format: str = "openai",
) -> None:
    """A request as the provider receives it (OpenAI Chat Completions dicts, or Responses
    items with ``format="responses"``) is within the budget by tightfit's count and breaks no
    rule: no tool result without its call, no call without its results."""
    total = tightfit.count(list(messages), model, tools=tools, format=format).total
    assert total <= budget, f"{total} tokens sent, budget {budget}"
    assert tightfit.validate(list(messages), provider=format) == []


def extends(later: Sequence[Any], earlier: Sequence[Any]) -> bool:
    """Whether request ``later`` starts with the whole of request ``earlier`` (what a prompt
    cache serves)."""
    return len(later) >= len(earlier) and list(later[: len(earlier)]) == list(earlier)


def tool_output(n: int) -> str:
    """A long tool output (~600 tokens) that differs per call."""
    return f"run {n}\n" + "\n".join(f"line {i}: checked file_{n}_{i}.py, 0 errors" for i in range(60))
