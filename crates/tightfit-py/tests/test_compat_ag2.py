"""tightfit.compat.ag2 beyond the conformance corpus: signatures, log texts, content names,
errors, object identity, and use inside AG2's TransformMessages capability.

The tests that compare with AG2 itself need ``ag2==0.14.0`` (imported as ``autogen``) and
Python tiktoken's vocabularies; CI installs the first, and these tests fill a tiktoken cache
from the shared tool when the second is missing.
"""

from __future__ import annotations

import contextlib
import copy
import io
import inspect
import subprocess
import sys
from typing import Any

import pytest

import tightfit
from conftest import conformance_cases
from tightfit.compat import ag2

CALLS = [
    {"id": "a", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
    {"id": "b", "type": "function", "function": {"name": "lookup", "arguments": '{"q": 1}'}},
]


def chat() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "name": "alice", "content": "Look up the weather in Paris and in Rome, please."},
        {"role": "assistant", "name": "bot", "content": None, "tool_calls": copy.deepcopy(CALLS)},
        {"role": "tool", "tool_call_id": "a", "name": "lookup", "content": "Paris: 21 degrees, sunny, light wind."},
        {"role": "tool", "tool_call_id": "b", "name": "lookup", "content": "Rome: 27 degrees, clear skies all day."},
        {"role": "assistant", "name": "bot", "content": "Paris is 21 degrees and sunny; Rome is 27 and clear."},
        {"role": "user", "name": "alice", "content": "Thanks! And tomorrow?"},
    ]


# --- without AG2 -------------------------------------------------------------------------------


def test_history_limiter_keeps_the_window_and_whole_steps() -> None:
    messages = chat()
    pristine = copy.deepcopy(messages)
    out = ag2.MessageHistoryLimiter(max_messages=3).apply_transform(messages)
    # AG2 would start with Rome's result, whose call it cut: ours starts after it
    assert out == messages[5:]
    assert all(a is b for a, b in zip(out, messages[5:])), "the caller's own dicts"
    assert messages == pristine
    out = ag2.MessageHistoryLimiter(max_messages=3, keep_first_message=True).apply_transform(messages)
    assert out == [messages[0], messages[5], messages[6]]
    assert tightfit.validate(out) == []
    assert ag2.MessageHistoryLimiter().apply_transform(messages) == messages


def test_history_limiter_excludes_names_and_logs_as_ag2() -> None:
    limiter = ag2.MessageHistoryLimiter(exclude_names=["alice"])
    messages = chat()
    out = limiter.apply_transform(messages)
    assert [m.get("name") for m in out] == [None, "bot", "lookup", "lookup", "bot"]
    assert limiter.get_logs(messages, out) == (
        "Removed 2 messages. Number of messages reduced from 7 to 5.",
        True,
    )
    assert limiter.get_logs(messages, messages) == ("No messages were removed.", False)


def test_history_limiter_rejects_zero_as_ag2() -> None:
    with pytest.raises(ValueError, match="max_messages"):
        ag2.MessageHistoryLimiter(max_messages=0)


def test_token_limiter_cuts_and_counts_as_ag2() -> None:
    messages = chat()
    pristine = copy.deepcopy(messages)
    limiter = ag2.MessageTokenLimiter(max_tokens_per_message=5, max_tokens=40)
    out = limiter.apply_transform(messages)
    assert messages == pristine
    assert out[-1]["content"] == "Thanks! And tomorrow?"
    assert out[-1] is messages[-1], "an unchanged message is the caller's dict"
    assert out[-2]["content"] == "Paris is 21 degrees"
    assert out[-2] is not messages[-2]
    count = ag2.MessageTokenLimiter()._native.text_tokens
    before, after = count(messages), count(out)
    assert limiter.get_logs(messages, out) == (
        f"Truncated {before - after} tokens. Number of tokens reduced from {before} to {after}",
        True,
    )
    assert limiter.get_logs(messages, messages) == ("No tokens were truncated.", False)


def test_token_limiter_prints_ags_cap_warning(capsys: pytest.CaptureFixture[str]) -> None:
    ag2.MessageTokenLimiter(max_tokens=5000)
    assert capsys.readouterr().out == (
        "Max token was set to 5000, but gpt-3.5-turbo-0613 can only accept 4096 tokens. Capping it to 4096.\n"
    )


def test_token_limiter_raises_as_ag2() -> None:
    special = [{"role": "user", "content": "say <|endoftext|> now"}]
    with pytest.raises(ValueError, match="endoftext"):
        ag2.MessageTokenLimiter(max_tokens_per_message=10).apply_transform(special)
    with pytest.raises(KeyError, match="claude"):
        ag2.MessageTokenLimiter(max_tokens=10, model="claude-3-5-sonnet").apply_transform(chat())
    with pytest.raises(ValueError, match="min_tokens"):
        ag2.MessageTokenLimiter(max_tokens=10, min_tokens=20)
    with pytest.raises(ValueError):
        ag2.MessageTokenLimiter(max_tokens=-1)


def test_content_name_writes_names_and_logs_as_ag2() -> None:
    transform = ag2.TextMessageContentName(position="start", format_string="'{name}' said:\n")
    messages = chat()
    out = transform.apply_transform(messages)
    assert out[1]["content"] == "'alice' said:\nLook up the weather in Paris and in Rome, please."
    assert out[3]["content"].startswith("'lookup' said:\n"), "tool results are named, as in AG2"
    assert out[2] is messages[2], "no text: left alone"
    assert out[0] is messages[0], "no name: left alone"
    assert transform.get_logs(messages, out) == ("5 message(s) changed to incorporate name.", True)
    again = transform.apply_transform(out)
    assert again == out, "deduplicate: a name is written once"
    assert transform.get_logs(out, again) == ("No messages changed to incorporate name.", False)
    end = ag2.TextMessageContentName(position="end", format_string=" ({name})", filter_dict={"role": ["tool"]})
    out = end.apply_transform(messages)
    assert out[1]["content"].endswith("please. (alice)")
    assert out[3] is messages[3], "the filter spares tool results"
    assert ag2.TextMessageContentName().apply_transform([]) == []


def test_content_name_rejects_bad_arguments_as_ag2() -> None:
    with pytest.raises(AssertionError):
        ag2.TextMessageContentName(position="middle")
    with pytest.raises(AssertionError):
        ag2.TextMessageContentName(format_string="no placeholder")
    with pytest.raises(tightfit.ConfigError):
        ag2.TextMessageContentName(format_string="no placeholder")


def test_compressor_is_built_with_our_scorer_by_default() -> None:
    # the rest of its tests are in test_compress.py
    from tightfit.compat.ag2 import TextMessageCompressor, TightfitCompressor

    compressor = TextMessageCompressor()
    assert isinstance(compressor._text_compressor, TightfitCompressor)
    assert compressor.apply_transform(chat())[0]["content"] == "are terse."


def test_the_compat_package_imports_nothing_else() -> None:
    code = "import sys, tightfit.compat; assert 'tightfit.compat.ag2' not in sys.modules; assert 'autogen' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- against AG2 itself --------------------------------------------------------------------------




@pytest.mark.parametrize("name", ["MessageHistoryLimiter", "MessageTokenLimiter", "TextMessageContentName", "TextMessageCompressor"])
def test_signatures_are_ags(peer: Any, name: str) -> None:
    theirs = inspect.signature(getattr(peer, name))
    ours = inspect.signature(getattr(ag2, name))
    assert list(ours.parameters) == list(theirs.parameters)
    for key, param in theirs.parameters.items():
        assert ours.parameters[key].default == param.default, key


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"position": "end", "format_string": " — {name}"},
        {"deduplicate": False},
        {"filter_dict": {"role": ["user"]}},
        {"filter_dict": {"name": ["bot"]}, "exclude_filter": False},
    ],
)
def test_content_name_equals_ags_on_text_messages(peer: Any, kwargs: dict[str, Any]) -> None:
    messages = chat()
    named = ag2.TextMessageContentName(**kwargs)
    theirs_transform = peer.TextMessageContentName(**kwargs)
    theirs = theirs_transform.apply_transform(messages)
    ours = named.apply_transform(messages)
    assert ours == theirs
    assert named.get_logs(messages, ours) == theirs_transform.get_logs(messages, theirs)
    assert ag2.TextMessageContentName(**kwargs).apply_transform(ours) == peer.TextMessageContentName(**kwargs).apply_transform(theirs)


def test_logs_equal_ags(peer: Any) -> None:
    messages = chat()
    for ours, theirs in [
        (ag2.MessageHistoryLimiter(max_messages=4), peer.MessageHistoryLimiter(max_messages=4)),
        (ag2.MessageTokenLimiter(max_tokens_per_message=4), peer.MessageTokenLimiter(max_tokens_per_message=4)),
    ]:
        out = ours.apply_transform(messages)
        assert ours.get_logs(messages, out) == theirs.get_logs(messages, out)
        assert ours.get_logs(messages, messages) == theirs.get_logs(messages, messages)


def test_token_logs_equal_ags_on_every_corpus_history(peer: Any) -> None:
    # get_logs counts every message of both lists (content strings borrowed from Python,
    # other contents converted): on every input of the corpus (list contents, legacy shapes,
    # special tokens) its answer, or its exception, is AG2's; one limiter per setting, as an
    # agent keeps it, so later cases are answered from what earlier ones counted
    ours_by_params: dict[str, Any] = {}
    compared = 0
    with contextlib.redirect_stdout(io.StringIO()):
        for case in conformance_cases("ag2_message_token_limiter.jsonl"):
            if isinstance(case["output"], dict):
                continue
            key = repr(sorted(case["params"].items()))
            ours = ours_by_params.setdefault(key, ag2.MessageTokenLimiter(**case["params"]))
            theirs = peer.MessageTokenLimiter(**case["params"])
            pre, post = case["input"], ours.apply_transform(case["input"])
            try:
                expected = theirs.get_logs(pre, post)
            except Exception as e:  # noqa: BLE001 - ours must raise the same kind
                with pytest.raises(type(e)):
                    ours.get_logs(pre, post)
            else:
                assert ours.get_logs(pre, post) == expected, case["case_id"]
            compared += 1
    assert compared > 500


def test_works_inside_transform_messages(peer: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from autogen import ConversableAgent
    from autogen.agentchat.contrib.capabilities.transform_messages import TransformMessages

    capability = TransformMessages(
        transforms=[
            ag2.MessageHistoryLimiter(max_messages=4),
            ag2.MessageTokenLimiter(max_tokens_per_message=6),
            ag2.TextMessageContentName(),
        ]
    )
    agent = ConversableAgent("agent", llm_config=False)
    capability.add_to_agent(agent)
    messages = chat()
    out = agent.process_all_messages_before_reply(messages)
    # the system message is set aside by the capability and put back first; the window of 4
    # opens on a tool result (AG2 leaves that slot empty) and then on Rome's result, whose
    # call is gone: both go
    assert out[0] == messages[0]
    assert [m["role"] for m in out] == ["system", "assistant", "user"]
    assert out[1]["content"] == "bot:\nParis is 21 degrees and"
    assert out[2]["content"] == "alice:\nThanks! And tomorrow?"
    printed = capsys.readouterr().out
    assert "Removed 4 messages" in printed and "Truncated" in printed and "changed to incorporate name" in printed
