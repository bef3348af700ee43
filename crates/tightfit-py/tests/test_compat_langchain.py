"""tightfit.compat.langchain against the real langchain-core, on the real transcripts of
../shared/data and on the cases that would catch a wrong adapter: the caller's own objects
come back, the counter is called as LangChain calls it (a per-message one once per message),
Runnable use, type specs by class, errors, and the one deliberate difference."""

from __future__ import annotations

import functools
import random
import inspect
import json
from typing import Any

import pytest

from conftest import records
from langchain_support import cl100k_counter

import tightfit
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.messages import utils as peer
from tightfit.compat import langchain as ours
from tightfit.compat.langchain import count_tokens_approximately, trim_messages

KEYWORDS = ["max_tokens", "token_counter", "strategy", "allow_partial", "end_on", "start_on", "include_system", "text_splitter"]


def lc(record_messages: list[dict[str, Any]]) -> list[BaseMessage]:
    return convert_to_messages(record_messages)


def histories() -> list[list[BaseMessage]]:
    """A spread of real histories: agent runs with tool calls, chats, one long run."""
    picked = list(records("agent_tau_bench_airline_gpt4o.jsonl")[:6])
    picked += list(records("agent_mini_swe_deepseek.jsonl")[:3])
    picked += list(records("chat_hh_rlhf_harmless_test.jsonl")[:4])
    picked += list(records("chat_aider_sessions.jsonl")[3:6])
    return [lc(r["messages"]) for r in picked]


def test_same_signatures_as_langchain() -> None:
    assert list(inspect.signature(trim_messages).parameters) == ["messages", *KEYWORDS]
    for name in ("trim_messages", "count_tokens_approximately"):
        theirs = inspect.signature(getattr(peer, name)).parameters
        mine = inspect.signature(getattr(ours, name)).parameters
        assert list(mine) == list(theirs), name
        assert [p.default for p in mine.values()] == [p.default for p in theirs.values()], name
        assert [p.kind for p in mine.values()] == [p.kind for p in theirs.values()], name


PARAMS = [
    {"strategy": "last"},
    {"strategy": "last", "include_system": True, "start_on": "human"},
    {"strategy": "last", "allow_partial": True, "end_on": ["human", "tool"]},
    {"strategy": "last", "allow_partial": True, "include_system": True},
    {"strategy": "first"},
    {"strategy": "first", "allow_partial": True, "end_on": "ai"},
]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: json.dumps(p))
@pytest.mark.parametrize("counter", ["approximate", "len", "cl100k"])
def test_langchain_cut_on_real_histories(params: dict[str, Any], counter: str) -> None:
    """Without the tool-pair repair the result is LangChain's, object for object; with it,
    LangChain's less only messages of a tool step it cut through."""
    token_counter: Any = {"approximate": "approximate", "len": len, "cl100k": cl100k_counter()}[counter]
    # the tiktoken counter is slow in LangChain's hands: fewer histories for it
    for history in histories()[:: 3 if counter == "cl100k" else 1]:
        total = len(history) if counter == "len" else peer.count_tokens_approximately(history)
        for fraction in (0.05, 0.3, 0.7, 1.2):
            kw = dict(params, token_counter=token_counter, max_tokens=int(total * fraction))
            theirs = peer.trim_messages(history, **kw)
            exact = ours._trim(history, keep_tool_pairs=False, **kw)
            assert exact == theirs, kw
            mine = trim_messages(history, **kw)
            rest = iter(theirs)
            assert all(any(m is t or m == t for t in rest) for m in mine)
            dicts = peer.convert_to_openai_messages(mine)
            assert tightfit.validate(dicts, "openai") == [] or tightfit.validate(
                peer.convert_to_openai_messages(history), "openai"
            ) != []


def test_unchanged_messages_are_the_callers_own_and_nothing_is_mutated() -> None:
    history = lc(records("agent_tau_bench_airline_gpt4o.jsonl")[0]["messages"])
    copies = [m.model_copy(deep=True) for m in history]
    out = trim_messages(history, max_tokens=2000, token_counter="approximate", allow_partial=True)
    assert history == copies
    kept = [m for m in out if any(m is h for h in history)]
    assert len(kept) >= len(out) - 1
    cut = [m for m in out if not any(m is h for h in history)]
    for m in cut:  # the cut message is a copy with less content
        original = next(h for h in history if h.id == m.id and type(h) is type(m))
        assert len(str(m.content)) < len(str(original.content))


def test_called_without_messages_it_is_a_runnable() -> None:
    history = lc(records("agent_tau_bench_airline_gpt4o.jsonl")[1]["messages"])
    trimmer = trim_messages(max_tokens=6, token_counter=len, strategy="last")
    assert trimmer.invoke(history) == trim_messages(history, max_tokens=6, token_counter=len)
    assert (trimmer | (lambda ms: len(ms))).invoke(history) <= 6


def test_a_per_message_counter_is_called_once_per_message() -> None:
    calls: list[BaseMessage] = []

    def per_message(message: BaseMessage) -> int:
        calls.append(message)
        return len(str(message.content)) // 4 + 3

    per_message.__annotations__["message"] = BaseMessage
    history = lc(records("agent_mini_swe_deepseek.jsonl")[0]["messages"])
    expected = peer.trim_messages(history, max_tokens=3000, token_counter=per_message)
    peer_calls = len(calls)
    calls.clear()
    assert ours._trim(history, max_tokens=3000, token_counter=per_message, keep_tool_pairs=False) == expected
    assert len(calls) == len(history) < peer_calls


def test_a_list_counter_sees_the_lists_langchain_gives_it() -> None:
    seen: dict[str, list[list[str]]] = {"peer": [], "ours": []}

    def recorder(into: str) -> Any:
        def count(messages: list[BaseMessage]) -> int:
            seen[into].append([str(m.content) for m in messages])
            return sum(len(str(m.content)) for m in messages) + 3  # not additive: + priming

        return count

    history = [
        SystemMessage("rules"),
        HumanMessage("one\ntwo\nthree"),
        AIMessage([{"type": "text", "text": "a\nb"}, {"type": "text", "text": "c\nd\ne"}]),
        HumanMessage("four\nfive"),
    ]
    for kw in (
        {"strategy": "last", "allow_partial": True, "include_system": True},
        {"strategy": "first", "allow_partial": True},
    ):
        for budget in (8, 14, 19, 25):
            seen["peer"].clear()
            seen["ours"].clear()
            theirs = peer.trim_messages(history, max_tokens=budget, token_counter=recorder("peer"), **kw)
            mine = trim_messages(history, max_tokens=budget, token_counter=recorder("ours"), **kw)
            assert mine == theirs
            assert seen["ours"] == seen["peer"], (kw, budget)


def test_a_chat_model_counts_through_get_num_tokens_from_messages() -> None:
    class Model:
        def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
            return 5 * len(messages)

    history = lc(records("chat_hh_rlhf_harmless_test.jsonl")[0]["messages"])
    assert trim_messages(history, max_tokens=10, token_counter=Model()) == history[-2:]


def test_count_tokens_approximately_partial_counts_like_the_peer() -> None:
    history = lc(records("agent_tau_bench_airline_gpt4o.jsonl")[2]["messages"])
    for settings in ({"chars_per_token": 2.5}, {"extra_tokens_per_message": 0.7, "count_name": False}):
        for strategy in ("first", "last"):
            kw = {"max_tokens": 1500, "strategy": strategy, "allow_partial": True}
            counter = functools.partial(peer.count_tokens_approximately, **settings)
            assert ours._counter(counter)[0] == "approximate"
            assert ours._trim(history, token_counter=counter, keep_tool_pairs=False, **kw) == peer.trim_messages(
                history, token_counter=counter, **kw
            )
    # settings that make the count go down with more messages: searched as LangChain searches
    odd = functools.partial(peer.count_tokens_approximately, extra_tokens_per_message=-40)
    for budget in (-100, 0, 300):
        assert ours._trim(history, max_tokens=budget, token_counter=odd, keep_tool_pairs=False) == peer.trim_messages(
            history, max_tokens=budget, token_counter=odd
        )


def test_type_specs_by_name_and_by_class() -> None:
    history = [
        SystemMessage("s"),
        HumanMessage("h1"),
        AIMessageChunk(content="chunk"),
        HumanMessage("h2"),
        AIMessage("a"),
    ]
    for spec in ("ai", AIMessage, [HumanMessage, "system"], ["AIMessageChunk"], SystemMessage):
        for kw in ({"end_on": spec}, {"start_on": spec}, {"end_on": spec, "strategy": "first"}):
            theirs = peer.trim_messages(history, max_tokens=4, token_counter=len, **kw)
            assert trim_messages(history, max_tokens=4, token_counter=len, **kw) == theirs, (spec, kw)


def test_text_splitters() -> None:
    history = [HumanMessage("This is a funky text.")]
    for splitter in (list, lambda t: t.split(" ")):
        for strategy in ("first", "last"):
            kw = {"max_tokens": 8, "token_counter": lambda ms: sum(len(m.content) for m in ms), "strategy": strategy, "allow_partial": True, "text_splitter": splitter}
            assert trim_messages(history, **kw) == peer.trim_messages(history, **kw)


def test_dicts_and_tuples_are_read_as_langchain_reads_them() -> None:
    history = [("system", "be brief"), {"role": "user", "content": "hi"}, ("ai", "hello"), "a bare string is human"]
    kw = {"max_tokens": 25, "token_counter": "approximate", "include_system": True}
    assert trim_messages(history, **kw) == peer.trim_messages(history, **kw)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"token_counter": "exact"}, "Invalid token_counter shortcut 'exact'"),
        ({"token_counter": 42}, "'token_counter' expected to be a model"),
        ({"token_counter": len, "strategy": "middle"}, "Unrecognized strategy='middle'"),
        ({"token_counter": len, "strategy": "first", "include_system": True}, "include_system parameter"),
        ({"token_counter": len, "strategy": "first", "start_on": "human"}, "start_on parameter"),
    ],
)
def test_errors_are_langchains(kw: dict[str, Any], match: str) -> None:
    history = [HumanMessage("hi")]
    with pytest.raises(ValueError, match=match):
        peer.trim_messages(history, max_tokens=5, **kw)
    with pytest.raises(ValueError, match=match):
        trim_messages(history, max_tokens=5, **kw)


def test_a_counter_that_raises_raises_through() -> None:
    def broken(messages: list[BaseMessage]) -> int:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        trim_messages([HumanMessage("hi")], max_tokens=5, token_counter=broken)


def test_the_tool_pair_difference() -> None:
    """LangChain keeps a tool result whose call it cut away; we drop it (README, LangChain)."""
    history = [
        HumanMessage("weather?"),
        AIMessage("", tool_calls=[{"name": "w", "args": {}, "id": "c1", "type": "tool_call"}]),
        ToolMessage("sunny", tool_call_id="c1"),
        AIMessage("It is sunny."),
    ]
    assert peer.trim_messages(history, max_tokens=2, token_counter=len) == history[2:]
    assert trim_messages(history, max_tokens=2, token_counter=len) == history[3:]
    # and a call whose result was cut away, with strategy "first"
    assert peer.trim_messages(history, max_tokens=2, token_counter=len, strategy="first") == history[:2]
    assert trim_messages(history, max_tokens=2, token_counter=len, strategy="first") == history[:1]


def test_count_tokens_approximately_matches_the_peer_on_real_histories() -> None:
    for history in histories():
        for kw in ({}, {"chars_per_token": 3.3, "extra_tokens_per_message": 2.5, "count_name": False}):
            assert count_tokens_approximately(history, **kw) == peer.count_tokens_approximately(history, **kw)
    tools = [{"name": "lookup", "description": "Finds é", "parameters": {"type": "object", "properties": {}}}]
    history = histories()[0]
    assert count_tokens_approximately(history, tools=tools) == peer.count_tokens_approximately(history, tools=tools)
    with pytest.raises(ZeroDivisionError):
        peer.count_tokens_approximately(history, chars_per_token=0)
    with pytest.raises(ZeroDivisionError):
        count_tokens_approximately(history, chars_per_token=0)


def test_the_step_in_a_pipeline() -> None:
    messages = records("agent_tau_bench_airline_gpt4o.jsonl")[0]["messages"]
    pipeline = tightfit.Pipeline([tightfit.LangchainTrim(2000, counter="approximate", include_system=True)])
    fitted = tightfit.fit(messages, pipeline=pipeline, budget=100_000)
    theirs = peer.convert_to_openai_messages(
        trim_messages(lc(messages), max_tokens=2000, token_counter="approximate", include_system=True)
    )
    assert len(fitted.messages) == len(theirs)
    assert fitted.messages[0] is messages[0]


def test_count_tokens_is_tightfits_exact_count_and_trims_in_the_engine() -> None:
    messages = records("agent_tau_bench_airline_gpt4o.jsonl")[3]["messages"]
    history = lc(messages)
    openai = peer.convert_to_openai_messages(history)
    assert ours.count_tokens(history) == tightfit.count(openai, model="gpt-4o").total
    assert ours.count_tokens(history, model="gpt-4") == tightfit.count(openai, model="gpt-4").total
    gpt4 = functools.partial(ours.count_tokens, model="gpt-4")
    assert ours._counter(gpt4) == ("model", None, {"model": "gpt-4"})
    assert ours._counter(ours.count_tokens)[0] == "model"
    for counter in (ours.count_tokens, gpt4):
        for kw in ({"strategy": "last", "include_system": True}, {"strategy": "first", "allow_partial": True}):
            for budget in (300, 1500, 100_000):
                theirs = peer.trim_messages(history, max_tokens=budget, token_counter=counter, **kw)
                mine = ours._trim(history, max_tokens=budget, token_counter=counter, keep_tool_pairs=False, **kw)
                assert mine == theirs, (kw, budget)
    with pytest.raises(tightfit.UnknownModel):
        ours.count_tokens(history, model="no-such-model")
    with pytest.raises(tightfit.UnknownModel):
        trim_messages(history, max_tokens=10, token_counter=functools.partial(ours.count_tokens, model="no-such-model"))


# --- random histories: every argument, every kind of counter, against the real peer ---------

_WORDS = ["alpha", "beta\n", "gamma delta", "é", "日本", "\n", "x'y", 'q"r', "tab\t"]


def _text(r: random.Random) -> str:
    return "".join(r.choice(_WORDS) for _ in range(r.randint(0, 8)))


def _content(r: random.Random) -> Any:
    if r.random() >= 0.25:
        return _text(r)
    blocks: list[Any] = []
    for _ in range(r.randint(0, 4)):
        k = r.random()
        if k < 0.6:
            blocks.append({"type": "text", "text": _text(r)})
        elif k < 0.8:
            blocks.append({"type": "image_url", "image_url": {"url": "data:x"}})
        elif k < 0.9:
            blocks.append(_text(r))
        else:
            blocks.append({"type": "other", "v": [1, 2.5, None, True, "é"]})
    return blocks


def _history(r: random.Random) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage(_content(r))] if r.random() < 0.5 else []
    n, call_id = r.randint(0, 12), 0
    while len(messages) < n:
        k = r.random()
        if k < 0.35:
            messages.append(HumanMessage(_content(r), name=r.choice([None, "bob"])))
        elif k < 0.6:
            messages.append(AIMessage(_content(r)))
        elif k < 0.8:
            calls = []
            for _ in range(r.randint(1, 2)):
                call_id += 1
                calls.append({"name": "f", "args": {"q": _text(r), "n": r.randint(0, 99)}, "id": f"c{call_id}", "type": "tool_call"})
            messages.append(AIMessage(_content(r) if r.random() < 0.3 else "", tool_calls=calls))
            messages.extend(ToolMessage(_content(r), tool_call_id=c["id"]) for c in calls if r.random() < 0.9)
        elif k < 0.9:
            messages.append(SystemMessage(_content(r)))
        else:
            messages.append(AIMessageChunk(content=_text(r)))
    return messages


def _per_message(message: BaseMessage) -> int:
    return len(str(message.content)) // 3 + 2


_per_message.__annotations__["message"] = BaseMessage


def _not_additive(messages: list[BaseMessage]) -> int:
    return sum(len(str(m.content)) for m in messages) // 4 + 3 * len(messages) + 1


_SPECS: list[Any] = [None, "human", "ai", ["human", "tool"], AIMessage, [SystemMessage, "ai"], "tool"]
_COUNTERS: list[Any] = [
    "approximate",
    len,
    peer.count_tokens_approximately,
    functools.partial(peer.count_tokens_approximately, chars_per_token=2.5, extra_tokens_per_message=1.5),
    functools.partial(peer.count_tokens_approximately, extra_tokens_per_message=-3),
    _per_message,
    _not_additive,
    ours.count_tokens,
]


@pytest.mark.parametrize("seed", range(0, 600, 50))
def test_random_histories_against_langchain(seed: int) -> None:
    for seed in range(seed, seed + 50):
        r = random.Random(seed)
        history = _history(r)
        copies = [m.model_copy(deep=True) for m in history]
        kw: dict[str, Any] = {
            "max_tokens": r.randint(-2, 120),
            "token_counter": r.choice(_COUNTERS),
            "strategy": r.choice(["first", "last"]),
            "allow_partial": r.random() < 0.5,
            "end_on": r.choice(_SPECS),
            "text_splitter": r.choice([None, list, lambda t: t.split(" ")]),
        }
        if kw["strategy"] == "last":
            kw["start_on"] = r.choice(_SPECS)
            kw["include_system"] = r.random() < 0.5
        if kw["token_counter"] is len:
            kw["max_tokens"] //= 10
        theirs = peer.trim_messages(history, **kw)
        assert ours._trim(history, keep_tool_pairs=False, **kw) == theirs, (seed, kw)
        mine = trim_messages(history, **kw)
        rest = iter(theirs)
        assert all(any(m is t or (m == t and not any(m is h for h in history)) for t in rest) for m in mine), seed
        assert history == copies, seed
