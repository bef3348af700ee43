"""``FitResult.to_html()`` / ``_repr_html_`` (the inspect page) and ``tightfit.replay``."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

import tightfit
from conftest import DATA, records


def data2(name: str) -> list[dict[str, Any]]:
    path = DATA.parent / "data2" / name
    if not path.is_file():
        pytest.fail(f"missing {path}: the shared corpus must sit beside the repository")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def longest(runs: Any, n: int) -> list[list[dict[str, Any]]]:
    """The messages of the ``n`` longest conversations (by their JSON) of a corpus file."""
    return [r["messages"] for r in sorted(runs, key=lambda r: -len(json.dumps(r)))[:n]]


#: A handful of real transcripts, the longest of their files: (what, messages, model, budget, format).
TRANSCRIPTS = [
    *[(f"swe-agent {i}", m, "gpt-4o", 6_000, None) for i, m in enumerate(longest(records("agent_swe_agent_demos.jsonl"), 3))],
    *[(f"tau-bench {i}", m, "gpt-4o", 4_000, None) for i, m in enumerate(longest(records("agent_tau_bench_airline_gpt4o.jsonl"), 2))],
    *[
        (f"tau2 claude {i}", m, "claude-sonnet-4-5", 4_000, "anthropic")
        for i, m in enumerate(longest(data2("agent_tau2_airline_claude45_thinking_anthropic.jsonl"), 2))
    ],
    *[(f"openhands {i}", m, "gpt-4o", 8_000, None) for i, m in enumerate(longest(data2("agent_openhands.jsonl"), 2))],
]


@pytest.mark.parametrize(("what", "messages", "model", "budget", "format"), TRANSCRIPTS, ids=[t[0] for t in TRANSCRIPTS])
def test_a_replayed_plan_gives_the_fits_messages(what: str, messages: list[dict[str, Any]], model: str, budget: int, format: str | None) -> None:
    result = tightfit.fit(messages, model, budget=budget, format=format)
    assert result.report.was_compressed, what
    expected = json.dumps(result.messages)
    # the plan as an object, as its JSON text (a checkpoint), and as a dict
    for plan in (result.plan, result.plan.to_json(), json.loads(result.plan.to_json())):
        replayed = tightfit.replay(plan, messages)
        assert json.dumps(replayed) == expected, what
        # what was sent as it came is the caller's own dict, as in the fit
        assert all(a is b for a, b in zip(replayed, result.messages) if any(a is m for m in messages))
    assert sum(1 for m in tightfit.replay(result.plan, messages) if any(m is c for c in messages)) > 0


def test_a_plan_for_other_messages_is_refused_naming_what_differs() -> None:
    messages = records("agent_swe_agent_demos.jsonl")[0]["messages"]
    plan = tightfit.fit(messages, "gpt-4o", budget=4_000).plan
    with pytest.raises(tightfit.ConfigError, match=r"a history of \d+ messages; this one has \d+") as info:
        tightfit.replay(plan, messages[:-1])
    assert info.value.key == "plan"
    edited = copy.deepcopy(messages)
    edited[1]["content"] = "something else"
    with pytest.raises(tightfit.ConfigError, match="the same number of messages .* but their content differs"):
        tightfit.replay(plan, edited)
    with pytest.raises(tightfit.ConfigError, match="not a plan"):
        tightfit.replay('{"units": []}', messages)
    with pytest.raises(TypeError, match="plan: expected a tightfit.Plan"):
        tightfit.replay(42, messages)


def rows(html: str) -> dict[str, int]:
    """The page's rows, by their action."""
    found: dict[str, int] = {}
    for action in re.findall(r'<details class="tf-row [^"]*" data-action="([a-z]+)"', html):
        found[action] = found.get(action, 0) + 1
    return found


def test_to_html_draws_a_row_per_unit_with_what_the_plan_says() -> None:
    messages = records("agent_swe_agent_demos.jsonl")[1]["messages"]
    result = tightfit.fit(messages, "gpt-4o", budget=3_000)
    expected: dict[str, int] = {}
    for unit in result.plan.units:
        expected[unit["action"]] = expected.get(unit["action"], 0) + 1
    written = sum(1 for entry in result.plan.output if "input" not in entry)
    if written:
        expected["inserted"] = written
    html = result.to_html()
    assert html.startswith("<!DOCTYPE html>")
    assert rows(html) == expected
    assert "budget 3,000" in html
    # the notebook view: the same rows in one element, its style scoped to it, no document
    fragment = result._repr_html_()
    assert fragment.startswith('<div class="tf-inspect">') and "<html" not in fragment
    assert rows(fragment) == expected


def test_the_page_escapes_the_messages_and_refuses_changed_ones() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "</script><img src=x onerror=alert(1)>"},
        {"role": "assistant", "content": "No."},
        {"role": "user", "content": "again"},
    ]
    result = tightfit.fit(messages, "gpt-4o")
    html = result.to_html(title="<b>t</b>")
    assert html.count("<script") == 1 and "<img" not in html and "<b>t" not in html
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    messages[1]["content"] = "changed"
    with pytest.raises(tightfit.ConfigError, match="changed since the fit: .*content differs"):
        result.to_html()


def test_a_session_result_draws_its_page() -> None:
    messages = records("agent_tau_bench_airline_gpt4o.jsonl")[0]["messages"]
    session = tightfit.Session("gpt-4o", budget=2_000)
    result = session.fit(messages)
    assert sum(rows(result.to_html()).values()) >= len(result.plan.units)
    assert json.dumps(tightfit.replay(result.plan, messages)) == json.dumps(result.messages)
