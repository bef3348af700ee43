"""tightfit.compat.swarms against swarms' documented behaviour (its documentation page, the
seed of this project): the dataclasses and their defaults, disabled transforms, middle-out
removal that keeps system and recent messages, the token and message limits, the model table
(from tightfit's registry), and the helper functions. The real swarms package is not
installed here (see the README)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

import tightfit
from conftest import LARGEST, extreme
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
    assert len(result.messages) <= 10 + 1, "the system message is kept besides"
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
