"""Text compression: the ``CompressText`` step, tightfit's AG2 text compressor, and
``tightfit.compat.ag2.TextMessageCompressor`` against AG2's own (ag2 0.14, with a fake
``text_compressor`` where AG2 would need LLMLingua)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from typing import Any

import pytest

import tightfit
from conftest import records
from tightfit.compat import ag2

PROSE = (
    "The committee met on a rainy morning to discuss the future of the old harbour. Several members "
    "argued that the warehouses should be restored and turned into a museum, while others believed the "
    "land would be better used for affordable housing near the water. After a long and sometimes heated "
    "debate, the chair proposed a compromise: the northern warehouses would become a small museum about "
    "the fishing fleet, and the southern plots would be offered to a cooperative that builds modest homes. "
    "Most of the members agreed with the proposal, although two of them asked for a more detailed study of "
    "the costs before the final vote, which was postponed until the spring meeting of the council."
)

FACTS = (
    "The test in tests/test_wcs.py fails with ValueError: day is out of range for month after 128 ms; "
    "see https://example.com/issues/12907 and the helper call_00_abc for the details of the problem. "
    "Run `pytest -k empty_arrays` again once the fix is in, and do not touch the other modules at all."
)

STRIP = ".:!?"


def is_prose(word: str) -> bool:
    """The engine's prose word: letters (an inner apostrophe or hyphen) once sentence punctuation
    and emphasis are set aside."""
    core = word.lstrip("*¿¡").rstrip("*.,;:!?…")
    return bool(re.fullmatch(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", core))


def assert_words_of(original: str, compressed: str) -> None:
    """The compressed text's words are the original's, in order (a sentence end may be moved
    onto the word before), and every word that is not prose is still there."""
    source = iter(original.split())
    for word in compressed.split():
        assert any(w.rstrip(STRIP) == word.rstrip(STRIP) for w in source), f"{word!r} not in order"
    kept = compressed.split()
    for word in original.split():
        if not is_prose(word):
            assert any(k.rstrip(STRIP) == word.rstrip(STRIP) for k in kept), f"{word!r} lost"


# --- the step ------------------------------------------------------------------------------------


def test_the_step_class_and_its_errors() -> None:
    step = tightfit.CompressText(rate=0.3, min_chars=100, roles=["user", "tool"], keep_words=["harbour"])
    assert step.to_config() == {
        "type": "compress_text",
        "rate": 0.3,
        "min_chars": 100,
        "roles": ["user", "tool"],
        "keep_words": ["harbour"],
    }
    assert tightfit.Pipeline([step]) == tightfit.Pipeline.from_yaml(
        "steps:\n  - type: text_message_compressor\n    rate: 0.3\n    min_chars: 100\n"
        "    roles: [user, tool]\n    force_tokens: [harbour]\n"
    )
    for kwargs, key in [
        ({"rate": 0}, "rate"),
        ({"rate": 1.5}, "rate"),
        ({"rate": 0.5, "target_tokens": 100}, "target_tokens"),
        ({"target_tokens": 0}, "target_tokens"),
        ({"min_chars": -1}, "min_chars"),
        ({"roles": ["user", "robot"]}, "roles[1]"),
        ({"roles": []}, "roles"),
    ]:
        with pytest.raises(tightfit.ConfigError) as e:
            tightfit.CompressText(**kwargs)
        assert e.value.key == key, kwargs


def test_fit_compresses_long_texts_keeps_the_newest_turn_and_reports_it() -> None:
    messages = [
        {"role": "system", "content": PROSE},
        {"role": "user", "content": PROSE + " " + FACTS},
        {"role": "assistant", "content": PROSE},
        {"role": "user", "content": PROSE},
    ]
    pristine = copy.deepcopy(messages)
    result = tightfit.fit(messages, model="gpt-4o", pipeline=[tightfit.CompressText()])
    out = result.messages
    assert messages == pristine
    assert out[0] == messages[0] and out[3] == messages[3], "system and the newest user turn stay"
    for i in (1, 2):
        assert len(out[i]["content"]) < 0.8 * len(messages[i]["content"])
        assert_words_of(messages[i]["content"], out[i]["content"])
    assert "ValueError: day is out of range for month" in out[1]["content"]
    assert "`pytest -k empty_arrays`" in out[1]["content"] and "not touch" in out[1]["content"]
    details = [d for unit in result.plan.to_dict()["units"] for d in unit["details"]]
    assert any(re.search(r"compress_text: compressed \d+ -> \d+ words \(rate 0\.5\)", d) for d in details), details
    assert result.report.compressed_token_count < result.report.original_token_count
    again = tightfit.fit(messages, model="gpt-4o", pipeline=[tightfit.CompressText()])
    assert again.messages == out, "deterministic"


def test_short_texts_are_left_as_they_are() -> None:
    messages = [{"role": "user", "content": "A short question about the harbour?"}, {"role": "assistant", "content": "Yes."}]
    result = tightfit.fit(messages, model="gpt-4o", pipeline=[tightfit.CompressText()])
    assert result.messages == messages
    assert not result.plan.changes_anything()


def test_a_token_target() -> None:
    messages = [{"role": "assistant", "content": PROSE}, {"role": "user", "content": "ok"}]
    before = tightfit.count([messages[0]], model="gpt-4o").per_message[0]
    result = tightfit.fit(messages, model="gpt-4o", pipeline=[tightfit.CompressText(target_tokens=60, min_chars=0)])
    after = tightfit.count([result.messages[0]], model="gpt-4o").per_message[0]
    assert after < before
    assert tightfit.count([{"role": "assistant", "content": result.messages[0]["content"]}], model="gpt-4o").total - (
        tightfit.count([{"role": "assistant", "content": ""}], model="gpt-4o").total
    ) <= 60


@pytest.mark.parametrize("corpus", ["chat_aider_sessions.jsonl", "agent_mini_swe_deepseek.jsonl"])
def test_real_transcripts_keep_every_word_that_is_not_prose(corpus: str) -> None:
    compressed = 0
    step = tightfit.CompressText(keep_system=False, keep_newest_user_turn=False)
    for record in records(corpus)[:12]:
        messages = record["messages"]
        result = tightfit.fit(messages, model="gpt-4o", pipeline=[step])
        assert tightfit.validate(result.messages) == tightfit.validate(messages)
        for before, after in zip(messages, result.messages):
            if before.get("content") != after.get("content") and isinstance(before.get("content"), str):
                assert_words_of(before["content"], after["content"])
                compressed += 1
    assert compressed > 10


# --- tightfit's text compressor ---------------------------------------------------------------------


def test_the_compressor_answers_as_llmlingua() -> None:
    compressor = ag2.TightfitCompressor()
    answer = compressor.compress_text(PROSE)
    assert set(answer) >= {"compressed_prompt", "origin_tokens", "compressed_tokens", "ratio", "rate"}
    assert answer["compressed_tokens"] < answer["origin_tokens"]
    assert answer["ratio"] == f"{answer['origin_tokens'] / answer['compressed_tokens']:.1f}x"
    assert answer["rate"].endswith("%")
    assert answer["compressed_words"] < answer["origin_words"] == len(PROSE.split())
    assert_words_of(PROSE, answer["compressed_prompt"])
    assert compressor.compress_text(PROSE) == answer, "deterministic"
    # a lower rate keeps fewer words; a token target wins over the rate, as in LLMLingua
    assert compressor.compress_text(PROSE, rate=0.3)["compressed_words"] < answer["compressed_words"]
    target = compressor.compress_text(PROSE, rate=0.9, target_token=40)
    assert target["compressed_tokens"] <= 40
    assert compressor.compress_text(PROSE, target_token=-1) == answer, "-1: no target"
    # force_tokens are kept; LLMLingua-2's switches are accepted
    forced = compressor.compress_text(PROSE, rate=0.2, force_tokens=["the"], force_reserve_digit=True)
    the = lambda text: [w.rstrip(STRIP + ",") for w in text.split()].count("the")  # noqa: E731
    assert the(forced["compressed_prompt"]) == the(PROSE)
    # every text is compressed, however short, unless min_chars says otherwise
    assert compressor.compress_text("Tell me about the weather in Paris today.")["compressed_words"] < 8
    assert ag2.TightfitCompressor(min_chars=500).compress_text("Tell me about the weather.")["compressed_words"] == 5
    assert compressor.compress_text("")["compressed_prompt"] == ""


def test_the_compressor_names_a_bad_setting() -> None:
    with pytest.raises(tightfit.ConfigError) as e:
        ag2.TightfitCompressor().compress_text(PROSE, ratio=0.5)
    assert e.value.key == "ratio" and "rate" in str(e.value)
    with pytest.raises(tightfit.ConfigError) as e:
        ag2.TightfitCompressor(rate=2)
    assert e.value.key == "rate"
    with pytest.raises(tightfit.ConfigError) as e:
        ag2.TextMessageCompressor(compression_params={"rate": -1})
    assert e.value.key == "rate"


# --- TextMessageCompressor without AG2 ---------------------------------------------------------------


def chat() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a helpful assistant that answers questions about the weather in Europe."},
        {
            "role": "user",
            "name": "alice",
            "content": [
                {"type": "text", "text": "What is the weather like in Paris and in Rome today, and should I take an umbrella?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/sky.png"}},
                {"type": "text", "text": ""},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "Paris: 21 degrees, sunny, a light wind from the west. Rome: 27 degrees and clear."},
        {"role": "assistant", "name": "bot", "content": "Paris is sunny and Rome is clear: you will not need an umbrella."},
        {"role": "user", "name": "alice", "content": ""},
    ]


class Halving:
    """A fake text compressor: keeps every other word, and counts its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def compress_text(self, text: str, **params: Any) -> dict[str, Any]:
        self.calls.append(text)
        words = text.split()
        kept = words[:: params.get("step", 2)]
        return {"compressed_prompt": " ".join(kept), "origin_tokens": len(words), "compressed_tokens": len(kept)}


class Cache:
    """An AG2 cache: get and set."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value


def test_compresses_every_text_with_our_scorer_by_default() -> None:
    messages = chat()
    pristine = copy.deepcopy(messages)
    compressor = ag2.TextMessageCompressor()
    out = compressor.apply_transform(messages)
    assert messages == pristine, "the input is never mutated"
    assert len(out) == len(messages)
    assert len(out[0]["content"]) < len(messages[0]["content"]), "system messages too, as AG2"
    assert len(out[1]["content"][0]["text"]) < len(messages[1]["content"][0]["text"])
    assert out[1]["content"][1] is messages[1]["content"][1], "other items are the caller's"
    assert out[1]["name"] == "alice"
    assert out[2] is messages[2] and out[5] is messages[5], "no text: the caller's own dicts"
    assert "21 degrees" in out[3]["content"] and "27 degrees" in out[3]["content"]
    assert "not" in out[4]["content"].split()
    answers = [
        ag2.TightfitCompressor().compress_text(text)
        for text in [messages[0]["content"], messages[1]["content"][0]["text"], messages[3]["content"], messages[4]["content"]]
    ]
    saved = sum(a["origin_tokens"] - a["compressed_tokens"] for a in answers)
    assert saved > 0
    assert compressor.get_logs(messages, out) == (f"{saved} tokens saved with text compression.", True)
    assert ag2.TextMessageCompressor().apply_transform([]) == []


def test_the_protocol_the_filter_and_min_tokens() -> None:
    messages = chat()
    fake = Halving()
    out = ag2.TextMessageCompressor(text_compressor=fake, compression_params={"step": 3}).apply_transform(messages)
    assert out[4]["content"] == " ".join(messages[4]["content"].split()[::3])
    # AG2's filter: a matching message is spared (or, without exclude, the only one done)
    spared = ag2.TextMessageCompressor(text_compressor=Halving(), filter_dict={"role": ["system", "tool"]})
    out = spared.apply_transform(messages)
    assert out[0] is messages[0] and out[3] is messages[3] and out[4] is not messages[4]
    only = ag2.TextMessageCompressor(text_compressor=Halving(), filter_dict={"name": "bot"}, exclude_filter=False)
    out = only.apply_transform(messages)
    assert [m is o for m, o in zip(messages, out)] == [True, True, True, True, False, True]
    # below min_tokens (the whole history's text tokens) nothing is done, and nothing saved
    lazy = ag2.TextMessageCompressor(text_compressor=Halving(), min_tokens=10_000)
    assert lazy.apply_transform(messages) == messages
    assert lazy.get_logs(messages, messages) == ("No tokens saved with text compression.", False)
    busy = ag2.TextMessageCompressor(text_compressor=Halving(), min_tokens=20)
    assert busy.apply_transform(messages) != messages
    for bad in (0, -1):
        with pytest.raises(ValueError, match="min_tokens must be greater than 0 or None"):
            ag2.TextMessageCompressor(text_compressor=Halving(), min_tokens=bad)


def test_caches_by_content() -> None:
    messages = chat()
    fake = Halving()
    compressor = ag2.TextMessageCompressor(text_compressor=fake)
    first = compressor.apply_transform(messages)
    calls = len(fake.calls)
    assert calls == 5  # system, two user items (one empty), the result, the answer
    second = compressor.apply_transform(messages)
    assert second == first and len(fake.calls) == calls, "answered from its memory"
    assert compressor.get_logs(messages, second) == compressor.get_logs(messages, first)
    # a cache given is read and written with AG2's keys and values
    cache = Cache()
    ag2.TextMessageCompressor(text_compressor=Halving(), cache=cache).apply_transform(messages)
    key = f"{messages[4]['content']}None"
    words = messages[4]["content"].split()
    assert cache.data[key] == (" ".join(words[::2]), len(words) - len(words[::2]))
    cached = first[4]["content"]
    out = ag2.TextMessageCompressor(text_compressor=Halving(), cache=cache).apply_transform(messages)
    assert out[4]["content"] == cached
    out[1]["content"][0]["text"] = "changed"
    assert cache.data[f"{messages[1]['content']}None"][0][0]["text"] != "changed", "the cache is not shared"


# --- against AG2 itself --------------------------------------------------------------------------------




def memory() -> Any:
    from autogen.cache.in_memory_cache import InMemoryCache

    return InMemoryCache()


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"compression_params": {"step": 3}},
        {"filter_dict": {"role": ["system", "tool"]}},
        {"filter_dict": {"name": "bot"}, "exclude_filter": False},
        {"filter_dict": {"name": ["alice", "bot"]}, "exclude_filter": True},
        {"min_tokens": 20},
        {"min_tokens": 10_000},
    ],
)
def test_equals_ags_with_the_same_compressor(peer: Any, kwargs: dict[str, Any]) -> None:
    messages = chat()
    theirs = peer.TextMessageCompressor(text_compressor=Halving(), cache=memory(), **kwargs)
    ours = ag2.TextMessageCompressor(text_compressor=Halving(), cache=memory(), **kwargs)
    their_out = theirs.apply_transform(copy.deepcopy(messages))  # AG2 writes into its input
    our_out = ours.apply_transform(messages)
    assert our_out == their_out
    assert ours.get_logs(messages, our_out) == theirs.get_logs(messages, their_out)
    # a second turn, answered from the caches
    assert ours.apply_transform(messages) == theirs.apply_transform(copy.deepcopy(messages))


def test_equals_ags_with_our_compressor_and_on_real_transcripts(peer: Any) -> None:
    for record in records("agent_mini_swe_deepseek.jsonl")[:3] + records("chat_aider_sessions.jsonl")[:3]:
        messages = record["messages"]
        theirs = peer.TextMessageCompressor(text_compressor=ag2.TightfitCompressor(), cache=memory())
        ours = ag2.TextMessageCompressor(cache=memory())
        their_out = theirs.apply_transform(copy.deepcopy(messages))
        our_out = ours.apply_transform(messages)
        assert our_out == their_out, record["id"]
        assert ours.get_logs(messages, our_out) == theirs.get_logs(messages, their_out)
        assert ours.get_logs(messages, our_out)[1]


def test_reads_a_cache_ag2_filled(peer: Any) -> None:
    class Refusing:
        def compress_text(self, text: str, **params: Any) -> dict[str, Any]:
            raise AssertionError("answered from the cache")

    messages = chat()
    cache = memory()
    theirs = peer.TextMessageCompressor(text_compressor=Halving(), cache=cache, min_tokens=5)
    their_out = theirs.apply_transform(copy.deepcopy(messages))
    ours = ag2.TextMessageCompressor(text_compressor=Refusing(), cache=cache, min_tokens=5)
    assert ours.apply_transform(messages) == their_out
    assert ours.get_logs([], []) == theirs.get_logs([], [])


def test_works_inside_transform_messages(peer: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from autogen import ConversableAgent
    from autogen.agentchat.contrib.capabilities.transform_messages import TransformMessages

    capability = TransformMessages(transforms=[ag2.MessageHistoryLimiter(max_messages=3), ag2.TextMessageCompressor()])
    agent = ConversableAgent("agent", llm_config=False)
    capability.add_to_agent(agent)
    messages = chat()
    messages[5]["content"] = PROSE
    out = agent.process_all_messages_before_reply(messages)
    assert out[0] == messages[0], "the capability sets the system message aside"
    assert len(out[-1]["content"]) < len(PROSE)
    assert_words_of(PROSE, out[-1]["content"])
    assert "tokens saved with text compression." in capsys.readouterr().out


def test_the_package_needs_no_llmlingua() -> None:
    code = "import sys; from tightfit.compat.ag2 import TextMessageCompressor as T; T(); assert 'llmlingua' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert json.loads(json.dumps(ag2.TightfitCompressor().compress_text(PROSE)))


def test_a_python_scorer_ranks_the_words_a_fit_drops() -> None:
    fruits = ["apple", "berry", "cherry", "damson", "elder", "fig", "grape"]
    text = " ".join(f"{fruits[i % 7]} filler" for i in range(200)) + "."
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and now?"}]
    calls: list[int] = []

    def keep_fillers(words: list[str]) -> list[float]:
        calls.append(len(words))
        return [1.0 if w.startswith("filler") else 0.0 for w in words]

    pipeline = [tightfit.CompressText(rate=0.5, min_chars=100)]
    result = tightfit.fit(messages, "gpt-4o", pipeline=pipeline, scorer=keep_fillers)
    compressed = result.messages[0]["content"]
    assert calls, "the scorer was called"
    kept_fruits = sum(compressed.count(f) for f in fruits)
    assert compressed.count("filler") > 2 * kept_fruits, compressed[:200]
    default = tightfit.fit(messages, "gpt-4o", pipeline=pipeline).messages[0]["content"]
    assert default != compressed

    def broken(words: list[str]) -> list[float]:
        raise ValueError("no model loaded")

    with pytest.raises(tightfit.StepFailed, match="no model loaded") as info:
        tightfit.fit(messages, "gpt-4o", pipeline=pipeline, scorer=broken)
    assert info.value.step == "compress_text"
    with pytest.raises(TypeError, match="scorer: expected a callable"):
        tightfit.fit(messages, "gpt-4o", pipeline=pipeline, scorer=3)  # type: ignore[arg-type]
