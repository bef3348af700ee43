"""tightfit.compat.swarms against swarms: the dataclasses and their defaults, disabled
transforms, middle-out removal, the token and message limits, the model table (from
tightfit's registry), and the helper functions, on small hand-made histories. The expected
outputs marked "swarms 16.0.3" were recorded from the real package, on histories where its
token counts and ours lead to the same choice; the comparison with the package itself, on the
shared corpus, is test_conformance_swarms.py."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

import tightfit
from conftest import LARGEST, extreme, records
from tightfit.compat import swarms


def long_chat(turns: int = 40, words: int = 120) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i}: " + "lorem ipsum dolor " * words})
        messages.append({"role": "assistant", "content": f"answer {i}: " + "sit amet consectetur " * words})
    messages.append({"role": "user", "content": "What's the weather?"})
    return messages


def test_dataclasses_have_swarms_fields_and_defaults() -> None:
    config = swarms.TransformConfig()
    assert dataclasses.asdict(config) == {
        "enabled": False,
        "method": "middle-out",
        "max_tokens": None,
        "max_messages": None,
        "model_name": "gpt-4",
        "preserve_system_messages": True,
        "preserve_recent_messages": 2,
    }
    assert [f.name for f in dataclasses.fields(swarms.TransformResult)] == [
        "messages",
        "original_token_count",
        "compressed_token_count",
        "original_message_count",
        "compressed_message_count",
        "compression_ratio",
        "was_compressed",
    ]


def test_disabled_transforms_change_nothing_but_count() -> None:
    messages = long_chat()
    result = swarms.MessageTransforms(swarms.TransformConfig()).transform_messages(messages)
    assert result.messages == messages and not result.was_compressed
    assert result.original_token_count == result.compressed_token_count == tightfit.count(messages, "gpt-4").total
    assert result.compression_ratio == 1.0
    empty = swarms.MessageTransforms(swarms.TransformConfig(enabled=True)).transform_messages([])
    assert (empty.messages, empty.original_token_count, empty.was_compressed) == ([], 0, False)


def test_middle_out_keeps_system_start_of_the_end_and_fits() -> None:
    messages = long_chat()
    pristine = copy.deepcopy(messages)
    transforms = swarms.MessageTransforms(swarms.TransformConfig(enabled=True, model_name="gpt-4", preserve_recent_messages=3))
    result = transforms.transform_messages(messages)
    assert messages == pristine
    assert result.was_compressed
    assert result.original_token_count > 8192 >= result.compressed_token_count
    assert result.compressed_token_count == tightfit.count(result.messages, "gpt-4").total
    assert result.messages[0] is messages[0], "the system message stays, as the caller's dict"
    assert result.messages[-3:] == messages[-3:], "the recent messages stay"
    assert result.compressed_message_count == len(result.messages) < result.original_message_count
    assert result.compression_ratio == pytest.approx(result.compressed_token_count / result.original_token_count)
    # the middle went: the kept messages are the start and the end, in order
    kept = [messages.index(m) for m in result.messages]
    assert kept == sorted(kept)


def test_the_model_window_comes_from_the_registry() -> None:
    messages = long_chat()  # about 20k tokens
    total = tightfit.count(messages, "gpt-4o").total
    assert 8192 < total < 128_000
    # swarms' own table gives gpt-4o 8,192 (it matches "gpt-4"); tightfit knows its 128k window
    result = swarms.apply_transforms_to_messages(messages, model_name="gpt-4o")
    assert not result.was_compressed and result.messages == messages
    assert swarms.apply_transforms_to_messages(messages, model_name="gpt-4").was_compressed
    with pytest.raises(tightfit.UnknownModel):
        swarms.apply_transforms_to_messages(messages, model_name="no-such-model-xyz")


def test_max_tokens_and_max_messages_override_the_model() -> None:
    messages = long_chat()
    config = swarms.TransformConfig(enabled=True, model_name="gpt-4o", max_tokens=3000)
    result = swarms.MessageTransforms(config).transform_messages(messages)
    assert result.compressed_token_count <= 3000 < result.original_token_count
    config = swarms.TransformConfig(enabled=True, model_name="gpt-4o", max_messages=10)
    result = swarms.MessageTransforms(config).transform_messages(messages)
    assert len(result.messages) == 10, "the system message counts, as in swarms"
    assert result.messages[0] is messages[0] and result.messages[-1] is messages[-1]
    config = swarms.TransformConfig(enabled=True, model_name="gpt-4o", max_messages=10, preserve_system_messages=False)
    assert len(swarms.MessageTransforms(config).transform_messages(messages).messages) <= 10


def test_target_model_wins_over_the_config() -> None:
    messages = long_chat()
    transforms = swarms.create_default_transforms(enabled=True, model_name="gpt-4")
    assert transforms.config == swarms.TransformConfig(enabled=True, model_name="gpt-4")
    assert transforms.transform_messages(messages).was_compressed
    assert not transforms.transform_messages(messages, target_model="gpt-4o").was_compressed
    custom = swarms.TransformConfig(enabled=True, model_name="claude-3-5-sonnet", max_tokens=5000)
    result = swarms.apply_transforms_to_messages(messages, custom, model_name="claude-3-5-sonnet")
    assert result.compressed_token_count <= 5000


def test_tool_calls_keep_their_results_on_a_real_agent_history() -> None:
    messages = extreme(LARGEST)
    result = swarms.apply_transforms_to_messages(messages, model_name="gpt-4o")
    assert result.compressed_token_count <= 128_000 < result.original_token_count
    assert tightfit.validate(result.messages) == []


# Regressions from the comparison with the real swarms 16.0.3 (outputs recorded from it).


def chat(turns: int, words: int = 100, system: bool = True) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant."}] if system else []
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i}: " + "lorem " * words})
        messages.append({"role": "assistant", "content": f"answer {i}: " + "ipsum " * words})
    return messages


def kept(messages: list[dict[str, Any]], **config: Any) -> list[int]:
    """The input positions of the messages swarms' transforms keep under ``config``."""
    transforms = swarms.MessageTransforms(swarms.TransformConfig(enabled=True, model_name="gpt-4o", **config))
    out = transforms.transform_messages(messages).messages
    return [next(i for i, m in enumerate(messages) if m is x) for x in out]


@pytest.mark.parametrize(
    ("config", "swarms_kept"),
    [
        # system, then of the 7 free places 3 from the start, 2 + 2 recent from the end
        ({"max_messages": 9}, [0, 1, 2, 3, 16, 17, 18, 19, 20]),
        ({"max_messages": 3}, [0, 19, 20]),
        ({"max_messages": 2}, [0, 19]),
        # more recent messages than places: swarms keeps the oldest of them
        ({"max_messages": 3, "preserve_recent_messages": 5}, [0, 16, 17]),
        ({"max_messages": 0}, list(range(21))),
        ({"max_tokens": 0}, list(range(21))),
    ],
)
def test_max_messages_keeps_what_swarms_keeps(config: dict[str, Any], swarms_kept: list[int]) -> None:
    assert kept(chat(10), **config) == swarms_kept  # swarms 16.0.3


def test_max_messages_where_the_engine_has_no_middle_pick() -> None:
    messages = chat(10)
    # an odd number of free places: swarms 16.0.3 keeps [0, 1, 2, 3, 10, 16, ..., 20], the
    # message in the middle (10) of the part it drops; tightfit one more from the start
    assert kept(messages, max_messages=10) == [0, 1, 2, 3, 4, 16, 17, 18, 19, 20]
    # no place besides the system message: swarms 16.0.3 keeps [0]; a step keeps one message
    assert kept(messages, max_messages=1) == [0, 20]
    # with preserve_system_messages=False the system message takes a place of the head
    assert kept(messages, max_messages=6, preserve_system_messages=False) == [0, 1, 17, 18, 19, 20]


def test_a_long_history_over_the_limit_is_halved_first() -> None:
    messages = chat(40)  # 81 messages
    assert tightfit.count(messages, "gpt-4o").total > 8300
    # over the limit by a little, swarms 16.0.3 still keeps half of the messages: the system
    # message, the first 17, the last 17 + 5 recent (the first choice already fits)
    swarms_kept = list(range(18)) + list(range(59, 81))
    assert kept(messages, max_tokens=8300, preserve_recent_messages=5) == swarms_kept
    # 50 messages or fewer are not halved
    assert len(kept(chat(24), max_tokens=4500)) > 49 // 2


@pytest.mark.parametrize("recent", [2, 6])
def test_middle_out_removes_from_the_middle_of_the_whole_history(recent: int) -> None:
    # swarms 16.0.3: the removal ignores preserve_recent_messages and starts at the middle
    assert kept(chat(12), max_tokens=2100, preserve_recent_messages=recent) == list(range(10)) + list(range(15, 25))
    # without a system message the first message stays (swarms never removes either end)
    assert kept(chat(12, system=False), max_tokens=1250) == list(range(6)) + list(range(19, 24))


def test_the_last_two_over_the_limit_are_cut_not_returned_over() -> None:
    messages = chat(6, words=400)
    result = swarms.MessageTransforms(
        swarms.TransformConfig(enabled=True, model_name="gpt-4o", max_tokens=500)
    ).transform_messages(messages)
    assert result.compressed_token_count <= 500 < result.original_token_count
    assert result.messages[0] is messages[0]
    with pytest.raises(tightfit.CannotFit):
        swarms.MessageTransforms(swarms.TransformConfig(enabled=True, model_name="gpt-4o", max_tokens=5)).transform_messages(
            messages
        )


def test_disabled_transforms_return_the_callers_list_and_never_fail() -> None:
    messages = chat(3)
    result = swarms.MessageTransforms(swarms.TransformConfig()).transform_messages(messages, "no-such-model-xyz")
    assert result.messages is messages and not result.was_compressed
    assert result.original_token_count == tightfit.count(messages, "gpt-4").total


def test_handle_transforms_formats_the_transformed_conversation() -> None:
    class Memory:
        def return_messages_as_dictionary(self) -> list[dict[str, Any]]:
            return [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]

    transforms = swarms.create_default_transforms(enabled=True, model_name="gpt-4o")
    assert swarms.handle_transforms(transforms, Memory(), "gpt-4o") == "system: be brief\n\nuser: hi"
    assert "handle_transforms" in swarms.__all__


def test_max_messages_keeps_tool_calls_with_their_results() -> None:
    messages = [r for r in records("agent_tau_bench_airline_gpt4o.jsonl") if len(r["messages"]) > 30][0]["messages"]
    for limit in range(2, 25):
        for recent in (0, 1, 2, 3):
            result = swarms.MessageTransforms(
                swarms.TransformConfig(
                    enabled=True, model_name="gpt-4o", max_messages=limit, preserve_recent_messages=recent
                )
            ).transform_messages(messages)
            assert len(result.messages) <= limit
            assert tightfit.validate(result.messages) == [], (limit, recent)
