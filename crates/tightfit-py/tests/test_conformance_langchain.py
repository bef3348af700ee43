"""Every case of the langchain-core conformance corpus through tightfit.compat.langchain, under
the three rules of ../shared/conformance/README.md:

1. where LangChain's output was valid, ours is equal as JSON;
2. where LangChain's cut broke a tool call from its results (new flags orphan_tool_result,
   unanswered_tool_calls, starts_with_tool, reordered), ours is valid, in order, within the
   same limit, and LangChain's output less only the broken tool steps;
3. where LangChain raised, we raise the same exception type.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from conftest import BROKEN
from langchain_support import cases, cl100k_counter, to_langchain, to_openai

import tightfit
from tightfit.compat.langchain import count_tokens_approximately, trim_messages

TRIM = cases("langchain_core_trim_messages.jsonl")
COUNT = cases("langchain_core_count_tokens_approximately.jsonl")


@pytest.fixture(scope="session")
def counters() -> dict[str, Any]:
    """The counters the cases name, built as a user builds them."""
    return {"approximate": "approximate", "len": len, "tiktoken_cl100k": cl100k_counter()}


def run(case: dict[str, Any], counters: dict[str, Any]) -> list[dict[str, Any]]:
    params = dict(case["params"])
    params["token_counter"] = counters[params["token_counter"]]
    messages = [to_langchain(m) for m in case["input"]]
    return [to_openai(m) for m in trim_messages(messages, **params)]


def counted(messages: list[dict[str, Any]], name: str, counters: dict[str, Any]) -> int:
    lc = [to_langchain(m) for m in messages]
    if name == "approximate":
        return count_tokens_approximately(lc)
    if name == "len":
        return len(lc)
    return counters[name](lc)


def is_subsequence(ours: list[Any], theirs: list[Any]) -> bool:
    rest = iter(theirs)
    return all(any(m == t for t in rest) for m in ours)


@pytest.mark.parametrize("case", TRIM, ids=[c["case_id"] for c in TRIM])
def test_trim_messages(case: dict[str, Any], counters: dict[str, Any]) -> None:
    expected = case["output"]
    if isinstance(expected, dict):
        kind = expected["error"].split(":", 1)[0]
        with pytest.raises(Exception) as raised:
            run(case, counters)
        assert type(raised.value).__name__ == kind, raised.value
        return
    ours = run(case, counters)
    if not BROKEN & set(case["meta"]["new_flags"]):
        assert ours == expected
        return
    # rule 2: valid, in order, within the same limit, LangChain's output less the broken steps
    assert tightfit.validate(ours, "openai") == []
    assert not ours or ours[0]["role"] != "tool"
    name = case["params"]["token_counter"]
    limit = max(case["params"]["max_tokens"], counted(expected, name, counters))
    assert counted(ours, name, counters) <= limit
    # LangChain's output is in input order: ours, a part of it, is too
    assert is_subsequence(ours, expected)
    assert len(ours) < len(expected)


@pytest.mark.parametrize("case", COUNT, ids=[c["case_id"] for c in COUNT])
def test_count_tokens_approximately(case: dict[str, Any]) -> None:
    messages = [to_langchain(m) for m in case["input"]]
    assert count_tokens_approximately(messages, **case["params"]) == case["output"]


def test_every_case_is_run() -> None:
    assert len(TRIM) == 884
    assert len(COUNT) == 235
    counter = functools.reduce(lambda n, c: n + isinstance(c["output"], dict), TRIM, 0)
    assert counter == 36
