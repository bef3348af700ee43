"""Pipelines: the step classes, YAML, TOML, JSON, files and presets build the same engine steps."""

from __future__ import annotations

import inspect
import json

import pytest

import tightfit
from tightfit import _native
from conftest import extreme

YAML = """
steps:
  - type: drop_thinking
  - type: truncate_tool_results
    max_length: 1000
    keep: head_and_tail
  - type: keep_last
    count: 10
    measure: units
    when: {tokens_above: 100000}
"""

TOML = """
[[steps]]
type = "drop_thinking"

[[steps]]
type = "truncate_tool_results"
max_length = 1000
keep = "head_and_tail"

[[steps]]
type = "keep_last"
count = 10
measure = "units"
when = { tokens_above = 100000 }
"""

CLASSES = [
    tightfit.DropThinking(),
    tightfit.TruncateToolResults(max_length=1000, keep="head_and_tail"),
    tightfit.KeepLast(10, measure="units", when={"tokens_above": 100_000}),
]


def test_yaml_toml_json_and_files_equal_the_classes(tmp_path) -> None:
    from_classes = tightfit.Pipeline(CLASSES)
    as_json = json.dumps({"steps": [step.to_config() for step in CLASSES]})
    assert tightfit.Pipeline.from_yaml(YAML) == from_classes
    assert tightfit.Pipeline.from_toml(TOML) == from_classes
    assert tightfit.Pipeline.from_json(as_json) == from_classes
    (tmp_path / "p.yaml").write_text(YAML)
    (tmp_path / "p.toml").write_text(TOML)
    assert tightfit.Pipeline.from_file(tmp_path / "p.yaml") == from_classes
    assert tightfit.Pipeline.from_file(str(tmp_path / "p.toml")) == from_classes
    # a different setting is a different pipeline
    assert tightfit.Pipeline([tightfit.DropThinking(), tightfit.KeepLast(11)]) != from_classes
    assert from_classes.names == ["drop_thinking", "truncate_tool_results", "keep_last"]  # a guard reports its step
    assert len(from_classes) == 3


def test_aliases_and_llmling_shapes_load_as_the_same_steps() -> None:
    llmling = "compaction:\n  steps:\n    - type: keep_last_messages\n      max_messages: 10\n"
    assert tightfit.Pipeline.from_yaml(llmling) == tightfit.Pipeline([tightfit.KeepLast(10)])
    assert tightfit.Pipeline([{"type": "keep_last", "count": 4}]) == tightfit.Pipeline([tightfit.KeepLast(4)])


def test_yaml_and_classes_fit_to_the_same_messages() -> None:
    messages = extreme("concat/mini-swe-deepseek/250k")
    a = tightfit.fit(messages, budget=64_000, pipeline=tightfit.Pipeline.from_yaml(YAML + "  - type: middle_out\n"))
    b = tightfit.fit(messages, budget=64_000, pipeline=CLASSES + [tightfit.MiddleOut()])
    assert a.messages == b.messages
    assert a.plan.to_json() == b.plan.to_json()


def test_when_wraps_a_step_like_the_guard_keyword() -> None:
    wrapped = tightfit.When(tightfit.KeepLast(4), messages_above=20)
    assert wrapped.to_config() == {"type": "when", "step": {"type": "keep_last", "count": 4}, "messages_above": 20}
    assert tightfit.Pipeline([wrapped]) == tightfit.Pipeline([tightfit.KeepLast(4, when={"messages_above": 20})])


def test_presets() -> None:
    assert set(tightfit.Pipeline.presets()) >= {"middle-out", "minimal", "balanced", "summarizing", "swarms"}
    balanced = tightfit.Pipeline.preset("balanced")
    # llmling's steps, then middle_out while still over budget (so the preset fits or says why not)
    assert balanced.names == ["drop_thinking", "truncate_tool_results", "truncate_text", "keep_last", "middle_out"]
    messages = extreme("concat/tau-bench-airline/250k")
    assert tightfit.fit(messages, "gpt-4o", pipeline="balanced").plan.to_json() == tightfit.fit(messages, "gpt-4o", pipeline=balanced).plan.to_json()


STEP_CLASSES = {cls.type: cls for cls in vars(tightfit).values() if isinstance(cls, type) and issubclass(cls, tightfit.Step) and cls is not tightfit.Step}


def test_every_engine_step_has_a_class() -> None:
    assert sorted(STEP_CLASSES) == sorted(name for name, _aliases in _native.step_names())


@pytest.mark.parametrize("name, keys", [(name, keys) for name, _aliases, keys in _native.step_schema()])
def test_every_key_the_engine_reads_is_a_keyword_of_its_class(name: str, keys: list[str]) -> None:
    # the engine exports each step's keys (what its builder asks for); a key added there and
    # not to the Python class is named here
    cls = STEP_CLASSES.get(name)
    assert cls is not None, f"the engine step {name!r} has no class in tightfit.steps"
    assert cls.__name__ in tightfit.steps.__all__ and cls.__name__ in tightfit.__all__, f"{cls.__name__} is not exported"
    keywords = set(inspect.signature(cls).parameters) - {"when"}
    missing = [key for key in keys if key not in keywords]
    assert not missing, f"{cls.__name__} lacks the engine's keys {missing}"


@pytest.mark.parametrize("name", sorted(STEP_CLASSES))
def test_every_keyword_is_a_key_the_engine_knows(name: str) -> None:
    cls = STEP_CLASSES[name]
    for param in inspect.signature(cls).parameters:
        if name == "when" and param == "step":
            continue
        config = {"type": name, param: None}
        if name == "when":
            config["step"] = {"type": "drop_thinking"}
        _native.check_step(config)  # an unknown key raises ConfigError


def test_steps_are_records_with_a_readable_repr() -> None:
    step = tightfit.TruncateText(max_tokens=200, roles=("user", "assistant"))
    assert step.to_config() == {"type": "truncate_text", "max_tokens": 200, "roles": ["user", "assistant"]}
    assert repr(step) == "TruncateText(max_tokens=200, roles=['user', 'assistant'])"
    assert step == tightfit.TruncateText(max_tokens=200, roles=["user", "assistant"])
    assert step.to_config() is not step.to_config()


def test_a_pipeline_is_reused_across_calls_and_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    pipeline = tightfit.Pipeline([tightfit.KeepLast(2, measure="messages")])
    histories = [[{"role": "user", "content": f"q{i}-{j}"} for j in range(5)] for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda h: tightfit.fit(h, "gpt-4o", pipeline=pipeline), histories))
    for history, result in zip(histories, results, strict=True):
        assert result.messages == history[-2:] or result.messages[-1] is history[-1]
