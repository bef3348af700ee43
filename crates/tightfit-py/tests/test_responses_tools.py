"""Tool schemas given beside Responses API items are read as the Responses API writes them and
counted (regression: they were read inside a Chat Completions request, which the Responses
reader refused, so any ``tools=`` with ``format="responses"`` raised ``FormatError``)."""

from __future__ import annotations

import tightfit

#: a function tool as the Responses API takes it (flat: no "function" wrapper)
TOOLS = [
    {
        "type": "function",
        "name": "bash",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
]
ITEMS = [{"role": "user", "content": "List the files."}]


def test_count_reads_responses_tools() -> None:
    bare = tightfit.count(ITEMS, "gpt-4o", format="responses")
    with_tools = tightfit.count(ITEMS, "gpt-4o", tools=TOOLS, format="responses")
    assert with_tools.tools > 0 and with_tools.total == bare.total + with_tools.tools


def test_fit_and_a_session_take_responses_tools() -> None:
    assert tightfit.fit(ITEMS, "gpt-4o", tools=TOOLS, format="responses").messages[0] is ITEMS[0]
    session = tightfit.Session("gpt-4o", budget=1_000)
    assert session.fit(ITEMS, tools=TOOLS, format="responses").messages[0] is ITEMS[0]
