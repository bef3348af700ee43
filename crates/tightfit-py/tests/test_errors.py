"""Bad input gets the engine's clear error, as the right exception type, never a crash."""

from __future__ import annotations

import datetime
import math

import pytest

import tightfit
from tightfit import _native

HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]


def test_the_hierarchy() -> None:
    for cls in (tightfit.ConfigError, tightfit.FormatError, tightfit.InvalidHistory, tightfit.UnknownModel):
        assert issubclass(cls, tightfit.Error) and issubclass(cls, ValueError)
    for cls in (tightfit.CannotFit, tightfit.StepFailed):
        assert issubclass(cls, tightfit.Error) and not issubclass(cls, ValueError)


def test_cannot_fit_says_what_and_by_how_much() -> None:
    with pytest.raises(tightfit.CannotFit) as info:
        tightfit.fit(HI, "gpt-4o", budget=10)
    e = info.value
    assert (e.needed, e.budget, e.over) == (16, 10, 6)
    assert "the system prompt (7 tokens)" in e.what and "the newest user turn (6 tokens)" in e.what
    assert str(e) == f"{e.what} need 16 tokens, 6 over the budget of 10"


def test_unknown_model_suggests_names() -> None:
    with pytest.raises(tightfit.UnknownModel) as info:
        tightfit.count(HI, model="gpt-4oo")
    assert info.value.name == "gpt-4oo"
    assert info.value.suggestions[0] == "gpt-4o"
    assert str(info.value).startswith('unknown model "gpt-4oo" (did you mean gpt-4o')
    with pytest.raises(ValueError):
        tightfit.fit(HI, model="no-such-model")


def test_format_errors_name_the_message_and_field() -> None:
    bad = HI + [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": None}}]}]
    with pytest.raises(tightfit.FormatError) as info:
        tightfit.fit(bad, "gpt-4o")
    assert info.value.index == 2
    assert info.value.path == "messages[2].tool_calls[0].function.arguments"
    assert str(info.value).startswith("messages[2].tool_calls[0].function.arguments: expected a string")

    with pytest.raises(tightfit.FormatError, match=r"^messages\[1\]: expected an object"):
        tightfit.count([HI[0], "not a message"], "gpt-4o")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (datetime.date(2025, 1, 1), "found date"),
        (math.nan, "not a finite number"),
        ({1: "x"}, "a key that is not a string (int)"),
        (complex(1, 2), "found complex"),
        ({"a", "b"}, "found set"),
    ],
)
def test_data_that_is_not_json_is_named_where_it_sits(value: object, reason: str) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi", "extra": value}]}]
    with pytest.raises(tightfit.FormatError) as info:
        tightfit.fit(messages, "gpt-4o")
    assert info.value.index == 0
    assert info.value.path == "messages[0].content[0].extra"
    assert reason in str(info.value)


def test_nesting_is_bounded() -> None:
    deep: object = "bottom"
    for _ in range(200):
        deep = [deep]
    with pytest.raises(tightfit.FormatError, match="nested deeper than 128 levels"):
        tightfit.count([{"role": "user", "content": "x", "extra": deep}])


def test_tool_schema_errors_name_the_tool() -> None:
    good = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    with pytest.raises(tightfit.FormatError) as info:
        tightfit.count(HI, "gpt-4o", tools=[good, {"type": "function", "function": {"name": 5}}])
    assert str(info.value) == "tools[1].function.name: expected a string, found a number"
    assert info.value.index is None
    with pytest.raises(tightfit.FormatError) as info:
        tightfit.count(HI, tools=[good, {"type": "function", "function": {"name": b"f"}}])
    assert info.value.path == "tools[1].function.name" and "found bytes" in info.value.reason


def test_wrong_python_types_are_type_errors() -> None:
    with pytest.raises(TypeError, match="messages: expected a list of message dicts, found str"):
        tightfit.fit("hello")
    # one message is not a history
    with pytest.raises(TypeError, match="found one message"):
        tightfit.fit(HI[0], "gpt-4o")
    with pytest.raises(TypeError, match=r"steps\[1\]: expected a step"):
        tightfit.Pipeline([tightfit.KeepLast(3), 42])


def test_config_errors_name_the_key() -> None:
    with pytest.raises(tightfit.ConfigError) as info:
        tightfit.KeepLast(count=-1)
    assert info.value.key == "count"
    assert str(info.value) == "count: expected a whole number of at least 0, found -1"

    with pytest.raises(tightfit.ConfigError) as info:
        tightfit.Pipeline([tightfit.DropThinking(), {"type": "keep_last", "cont": 3}])
    assert info.value.key == "steps[1].cont"
    assert 'did you mean "count"?' in str(info.value)

    with pytest.raises(tightfit.ConfigError, match='steps\\[0\\].type: unknown step "keep_lats"; did you mean "keep_last"'):
        tightfit.Pipeline.from_yaml("steps:\n  - type: keep_lats\n")

    with pytest.raises(tightfit.ConfigError, match="unknown preset"):
        tightfit.fit(HI, pipeline="no-such-preset")

    with pytest.raises(tightfit.ConfigError) as info:
        tightfit.fit(HI, format="cohere")
    assert info.value.key == "format"

    with pytest.raises(tightfit.ConfigError) as info:
        tightfit.validate(HI, provider="cohere")
    assert info.value.key == "provider"

    with pytest.raises(tightfit.ConfigError) as info:
        tightfit.KeepLast(3, when={"tokens_abov": 5})
    assert info.value.key == "when.tokens_abov"


def test_a_failing_step_is_step_failed() -> None:
    # middle_out run with no budget at all (the steps alone, as the AG2 adapter runs them)
    with pytest.raises(tightfit.StepFailed) as info:
        _native.apply_steps(HI * 15, tightfit.Pipeline([tightfit.MiddleOut()]))
    assert info.value.step == "middle_out"
    assert "no token budget" in info.value.reason


def test_invalid_history_lists_the_violations() -> None:
    # a role no provider knows is not something the repair pass can fix
    messages = [{"role": "user", "content": "hi"}, {"role": "narrator", "content": "meanwhile"}]
    with pytest.raises(tightfit.InvalidHistory) as info:
        tightfit.fit(messages, "gpt-4o")
    e = info.value
    assert e.provider == "openai"
    assert [(v.index, v.rule) for v in e.violations] == [(1, "unsupported_role")]
    assert str(e).startswith("the fitted history is not valid for openai: messages[1]:")


def test_every_format_is_read_by_its_shape_never_counted_as_nothing() -> None:
    # Gemini contents entries are read as such (once counted as 13 tokens for 2,000 words);
    # told to read Chat Completions, the error names the format
    gemini = [{"role": "user", "parts": [{"text": "word " * 2_000}]}]
    assert tightfit.count(gemini, "gemini-2.5-pro").total > 2_000
    history = gemini + [{"role": "model", "parts": [{"text": "ok"}]}, {"role": "user", "parts": [{"text": "and?"}]}]
    fitted = tightfit.fit(history, "gemini-2.5-pro", budget=500)
    assert 0 < fitted.report.compressed_token_count <= 500
    assert fitted.messages[-1] is history[-1]
    with pytest.raises(tightfit.FormatError, match="Gemini") as info:
        tightfit.count(gemini, "gpt-4o", format="openai")
    assert info.value.index == 0
    responses = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    ]
    # Responses API items are read as such (the unanswered call gets an aborted output); told
    # to read Chat Completions, the error names them
    fitted = tightfit.fit(responses, "gpt-4o").messages
    assert [m.get("type") for m in fitted] == [None, "function_call", "function_call_output"]
    with pytest.raises(tightfit.FormatError, match="Responses API") as info:
        tightfit.fit(responses, "gpt-4o", format="openai")
    assert info.value.index == 1
    assert tightfit.Session("gpt-4o", budget=10_000).fit(gemini).messages == gemini


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"budget": -1}, tightfit.ConfigError, "budget"),
        ({"budget": 0}, tightfit.ConfigError, "budget"),
        ({"budget": 2**64}, tightfit.ConfigError, "budget"),
        ({"budget": True}, TypeError, "budget"),
        ({"budget": "8000"}, TypeError, "budget"),
        ({"budget": 1.5}, TypeError, "budget"),
        ({"reserve_output": -5}, tightfit.ConfigError, "reserve_output"),
        ({"model": None}, tightfit.ConfigError, "model"),
        ({"model": 4}, TypeError, "model"),
    ],
)
def test_bad_arguments_are_our_errors_naming_the_argument(kwargs: dict[str, object], error: type, named: str) -> None:
    messages = [{"role": "user", "content": "hi"}]
    calls = [
        lambda: tightfit.fit(messages, **{"model": "gpt-4o", **kwargs}),
        lambda: tightfit.Session(**{"model": "gpt-4o", **kwargs}).fit(messages),
    ]
    if set(kwargs) == {"model"}:
        calls.append(lambda: tightfit.count(messages, kwargs["model"]))  # type: ignore[arg-type]
    for call in calls:
        with pytest.raises(error, match=rf"^{named}: ") as info:
            call()
        assert not isinstance(info.value, OverflowError)


def test_any_iterable_of_messages_is_read_and_the_dicts_come_back() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    result = tightfit.fit((m for m in messages), "gpt-4o")
    assert result.messages == messages and result.messages[1] is messages[1]
    assert tightfit.count(iter(messages), "gpt-4o").total == tightfit.count(messages, "gpt-4o").total
    assert tightfit.validate(m for m in messages) == []
    assert tightfit.Session("gpt-4o").fit(m for m in messages).messages[0] is messages[0]
    with pytest.raises(TypeError, match="messages"):
        tightfit.fit({"role": "user", "content": "hi"}, "gpt-4o")  # type: ignore[arg-type]


def test_plain_messages_are_read_in_the_format_of_the_model() -> None:
    plain = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}, {"role": "user", "content": "More"}]
    assert tightfit.fit(plain, "claude-sonnet-4-5").plan.format == "anthropic"
    assert tightfit.fit(plain, "gpt-4o").plan.format == "openai"
    assert tightfit.Session("claude-sonnet-4-5").fit(plain).plan.format == "anthropic"
    key = tightfit.Session("claude-sonnet-4-5").fit(plain).report.session.key
    assert tightfit.Session.key_of(plain, model="claude-sonnet-4-5") == key != tightfit.Session.key_of(plain)
    calls = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
    ]
    assert tightfit.fit(calls, "claude-sonnet-4-5").plan.format == "openai", "a shape that decides wins"


def test_a_budget_past_the_model_window_is_refused_unless_allowed() -> None:
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(tightfit.ConfigError, match=r"^budget: 500000 tokens is more than openai/gpt-4o's input limit"):
        tightfit.fit(messages, "gpt-4o", budget=500_000)
    with pytest.raises(tightfit.ConfigError, match="^budget: "):
        tightfit.Session("gpt-4o", budget=500_000)
    assert tightfit.fit(messages, "gpt-4o", budget=500_000, allow_over_window=True).report.budget == 500_000
    assert tightfit.Session("gpt-4o", budget=500_000, allow_over_window=True).budget == 500_000
    assert tightfit.fit(messages, "gpt-4o", budget=128_000).report.budget == 128_000, "the limit itself is fine"


def test_cannot_fit_says_how_little_must_be_kept() -> None:
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(30):
        messages.append({"role": "user", "content": f"question {i} " + "word " * 100})
        messages.append({"role": "assistant", "content": f"answer {i} " + "word " * 100})
    messages.append({"role": "user", "content": "the last question"})
    with pytest.raises(tightfit.CannotFit) as info:
        tightfit.fit(messages, "gpt-4o", budget=500, pipeline=[tightfit.KeepLast(10)])
    error = info.value
    assert error.must_keep < error.budget < error.needed
    assert f"only {error.must_keep} tokens of it must be kept" in str(error)
