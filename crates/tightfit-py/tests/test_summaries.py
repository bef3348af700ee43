"""Summaries from Python: the built-in extractive summary keeps the user's words and the exact
facts; a Python callable (sync or async) can write them instead, and one that fails never
fails the fit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tightfit
from conftest import records

PIPELINE = [tightfit.Summarize(threshold=10, keep_recent=4, max_tokens=400)]


def run() -> list[dict[str, Any]]:
    return records("agent_mini_swe_deepseek.jsonl")[2]["messages"]


def summary_of(result: tightfit.FitResult) -> str:
    texts = [m["content"] for m in result.messages if isinstance(m.get("content"), str) and m["content"].startswith("[tightfit: summary of ")]
    assert len(texts) == 1, texts
    return texts[0]


def test_the_extractive_summary_keeps_the_facts_within_its_budget() -> None:
    messages = run()
    summary = summary_of(tightfit.fit(messages, "gpt-4o", pipeline=PIPELINE))
    assert "Commands:" in summary and "Facts:" in summary
    first_command = next(c["function"]["arguments"] for m in messages[2:] for c in m.get("tool_calls") or [])
    assert first_command[:40].replace('"', "") in summary.replace('"', "").replace("\\", "")
    assert tightfit.count([{"role": "user", "content": summary}], "gpt-4o").per_message[0] <= 400 + 8


def test_a_python_callable_writes_the_summary() -> None:
    seen: dict[str, Any] = {}

    def summarizer(messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        seen["count"], seen["max_tokens"] = len(messages), max_tokens
        return f"{len(messages)} messages about {messages[0]['role']}"

    result = tightfit.fit(run(), "gpt-4o", pipeline=PIPELINE, summarizer=summarizer)
    summary = summary_of(result)
    assert summary.endswith(f"\n{seen['count']} messages about assistant"), summary
    assert 0 < seen["max_tokens"] < 400

    async def later(messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        await asyncio.sleep(0)
        return "async summary"

    assert summary_of(tightfit.fit(run(), "gpt-4o", pipeline=PIPELINE, summarizer=later)).endswith("\nasync summary")


def test_a_failing_summarizer_falls_back_to_the_extractive_one() -> None:
    def broken(messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        raise RuntimeError("the endpoint is down")

    result = tightfit.fit(run(), "gpt-4o", pipeline=PIPELINE, summarizer=broken)
    summary = summary_of(result)
    assert "the endpoint is down; the extractive summary instead" in summary and "Commands:" in summary
    # and the report says so, on the step's entry and in its line
    notes = [note for step in result.report.steps for note in step.get("notes", [])]
    assert len(notes) == 1 and "the endpoint is down" in notes[0], notes
    assert notes[0].endswith("the extractive summary stands in")
    assert any(line.startswith("summarize: ") and notes[0] in line for line in result.report.lines())
    assert all("notes" not in step for step in tightfit.fit(run(), "gpt-4o", pipeline=PIPELINE).report.steps)
    not_text = summary_of(tightfit.fit(run(), "gpt-4o", pipeline=PIPELINE, summarizer=lambda m, max_tokens: 42))
    assert "returned int, not a str" in not_text
    with pytest.raises(TypeError, match="summarizer: expected a callable"):
        tightfit.fit(run(), "gpt-4o", pipeline=PIPELINE, summarizer="gpt-4o-mini")  # type: ignore[arg-type]


def test_a_session_summarizes_at_its_compactions_with_a_callable_or_not() -> None:
    messages = run()
    ends = [e for e in range(2, len(messages) + 1) if messages[e - 1]["role"] != "assistant"]
    calls: list[int] = []

    def summarizer(batch: list[dict[str, Any]], *, max_tokens: int) -> str:
        calls.append(len(batch))
        return "custom"

    for session, expect in [
        (tightfit.Session("gpt-4o", budget=4_000), "Commands:"),
        (tightfit.Session("gpt-4o", budget=4_000, summarizer=summarizer), "\ncustom"),
    ]:
        compacted = [session.fit(messages[:end]) for end in ends]
        summaries = [summary_of(r) for r in compacted if r.report.session.compacted]
        assert summaries and all(expect in s for s in summaries)
    assert calls, "the callable was called at the compactions"
    # a compaction whose summarizer fails says so in its report
    def broken(batch: list[dict[str, Any]], *, max_tokens: int) -> str:
        raise RuntimeError("no summaries today")

    session = tightfit.Session("gpt-4o", budget=4_000, summarizer=broken)
    compactions = [r for r in (session.fit(messages[:end]) for end in ends) if r.report.session.compacted]
    assert compactions and all(
        any("no summaries today" in note for step in r.report.steps for note in step.get("notes", []))
        for r in compactions
    )
    plain = tightfit.Session("gpt-4o", budget=4_000, summarize=False)
    texts = [m.get("content") for end in ends for m in plain.fit(messages[:end]).messages]
    assert not any(isinstance(t, str) and t.startswith("[tightfit: summary of ") for t in texts)


def test_a_session_lends_its_summarizer_to_the_summarize_steps_of_its_policy() -> None:
    messages = run()
    calls: list[int] = []

    def summarizer(batch: list[dict[str, Any]], *, max_tokens: int) -> str:
        calls.append(len(batch))
        return "by the callable"

    session = tightfit.Session("gpt-4o", budget=4_000, policy="summarizing", summarizer=summarizer)
    result = session.fit(messages)
    assert calls and summary_of(result).endswith("\nby the callable")
