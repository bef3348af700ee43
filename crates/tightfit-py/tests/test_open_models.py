"""Open models from Python: exact counts for Llama 3 (its vocabulary read from the installed
``llama-models`` package), Qwen, DeepSeek and Mistral tekken; ``tokenizer=`` on count, fit,
Fitter and Session; ``calibrate(usage=...)``; and estimates that say why they are estimates."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tightfit
from conftest import SHARED, repo_root

FIXTURE = repo_root() / "crates" / "tightfit" / "tests" / "fixtures" / "open_counts.json"
SKIPPED_KEYS = {"role", "id", "tool_call_id", "type"}
# Llama 3's chat framing around one user message: `<|start_header_id|>user<|end_header_id|>\n\n…<|eot_id|>`
LLAMA_USER = 4 + 1


def llama3_file() -> Path:
    """Meta's Llama 3 `tokenizer.model` in the installed llama-models package (a test
    requirement: requirements-test.txt)."""
    spec = importlib.util.find_spec("llama_models")
    assert spec is not None and spec.submodule_search_locations, "llama-models is a test requirement"
    return Path(list(spec.submodule_search_locations)[0]) / "llama3" / "tokenizer.model"


def fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def strings(value: Any, key: str | None = None) -> list[str]:
    """Every counted string under `value`, as the fixture's generator walks it."""
    if isinstance(value, str):
        return [value] if value and key not in SKIPPED_KEYS else []
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in SKIPPED_KEYS for s in strings(v, k)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def llama_text_counts(texts: list[str], **kwargs: Any) -> list[int]:
    """Tokens of each text as Llama 3 counts it: one user message each, less the framing."""
    messages = [{"role": "user", "content": t} for t in texts]
    count = tightfit.count(messages, "llama-3.3-70b-instruct", format="openai", **kwargs)
    assert count.counter == "llama3" and count.exact, count.estimate
    return [n - LLAMA_USER for n in count.per_message]


def test_llama3_equals_the_reference_on_every_string_of_the_corpus() -> None:
    # the installed llama-models package is found without being named
    fixture_data = fixture()
    compared = 0
    for expected in fixture_data["files"]:
        path = SHARED / expected["file"]
        with path.open(encoding="utf-8") as f:
            texts = [s for line in f if line.strip() for s in strings(json.loads(line)["messages"])]
        assert len(texts) == expected["strings"], expected["file"]
        assert sum(llama_text_counts(texts)) == expected["llama3"], expected["file"]
        compared += len(texts)
    assert compared > 100_000


def test_llama3_equals_the_reference_on_crafted_strings() -> None:
    # special-token text (`<|eot_id|>`) is one token, as HuggingFace counts it in a message
    crafted = [c for c in fixture()["crafted"] if c["text"]]
    counts = llama_text_counts([c["text"] for c in crafted])
    for case, count in zip(crafted, counts):
        assert count == case["llama3"], case["text"][:60]


def test_llama3_from_an_explicit_tokenizer_file() -> None:
    text = "Hello, world! This is a test."
    expected = [c["llama3"] for c in fixture()["crafted"] if c["text"] == text]
    count = tightfit.count(
        [{"role": "user", "content": text}], "gpt-4o", tokenizer=llama3_file(), format="openai"
    )
    assert count.counter == "llama3" and count.exact
    assert count.per_message == [LLAMA_USER + expected[0]]
    # the model still gives the window; the file's family gives the framing (Llama's)
    assert (count.model, count.priming) == ("openai/gpt-4o", 30)


def test_without_the_llama_vocabulary_the_count_is_an_estimate_that_says_so(tmp_path: Path) -> None:
    script = (
        "import tightfit; c = tightfit.count([{'role': 'user', 'content': 'hi'}], 'llama-3.1-8b-instruct');"
        "print(c.exact); print(c.estimate)"
    )
    env = dict(os.environ, TIGHTFIT_LLAMA3_TOKENIZER=str(tmp_path / "missing.model"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    exact, estimate = out.splitlines()[:2]
    assert exact == "False"
    assert estimate.startswith("Llama 3 tokenizer not found; pass --tokenizer (Python: tokenizer=)"), estimate


@pytest.mark.parametrize(
    ("model", "counter"),
    [("qwen3-32b", "qwen2"), ("deepseek-chat", "deepseek_v3"), ("mistral-small-2506", "tekken")],
)
def test_open_models_count_exactly(model: str, counter: str) -> None:
    count = tightfit.count([{"role": "user", "content": "中文 and English 12345"}], model, format="openai")
    assert (count.counter, count.exact, count.estimate) == (counter, True, None)


def test_claude_stays_an_estimate_and_calibration_brings_it_to_the_provider_s_count() -> None:
    messages = [{"role": "user", "content": "Summarize the attached report in three lines."}]
    count = tightfit.count(messages, "claude-sonnet-4-5")
    assert not count.exact and "Claude's tokenizer is not public" in count.estimate
    usage = {"input_tokens": 20, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 0, "output_tokens": 9}
    factor = tightfit.calibrate(messages, "claude-sonnet-4-5", usage=usage)
    assert factor == pytest.approx(24 / count.total)
    calibrated = tightfit.count(messages, "claude-sonnet-4-5", calibration=factor)
    # messages are scaled (rounded up), the reply priming is not
    assert abs(calibrated.total - 24) <= len(messages) + count.priming
    assert not calibrated.exact
    # OpenAI's usage shape and a bare int work too
    assert tightfit.calibrate(messages, "gpt-4o", usage={"prompt_tokens": 30}) == pytest.approx(
        30 / tightfit.count(messages, "gpt-4o").total
    )
    assert tightfit.calibrate(messages, "gpt-4o", usage=30) == tightfit.calibrate(messages, "gpt-4o", usage={"prompt_tokens": 30})


def test_calibrated_exact_counts_say_they_are_calibrated() -> None:
    count = tightfit.count([{"role": "user", "content": "hi"}], "qwen3-32b", calibration=1.5)
    assert not count.exact and count.estimate.startswith("calibrated from usage")


def test_bad_calibration_and_usage_are_errors_naming_the_argument() -> None:
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(tightfit.ConfigError, match="calibration"):
        tightfit.count(messages, "gpt-4o", calibration=0.0)
    with pytest.raises(tightfit.ConfigError, match="usage"):
        tightfit.calibrate(messages, "gpt-4o", usage={"completion_tokens": 3})
    with pytest.raises(tightfit.ConfigError, match="usage"):
        tightfit.calibrate(messages, "gpt-4o", usage=0)


def test_any_huggingface_tokenizer_json_counts_through_the_hf_backend(tmp_path: Path) -> None:
    word_level = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"hello": 0, "world": 1, "[UNK]": 2}, "unk_token": "[UNK]"},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(word_level))
    count = tightfit.count([{"role": "user", "content": "hello world again"}], "gpt-4o", tokenizer=str(path))
    assert count.counter.startswith("hf:") and count.exact
    # OpenAI framing: 3 per message + the role ("user" is one unknown word), the three words
    assert count.per_message == [3 + 1 + 3]


def test_a_tokenizer_file_that_cannot_be_read_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(tightfit.ConfigError, match="tokenizer"):
        tightfit.count([{"role": "user", "content": "hi"}], "gpt-4o", tokenizer=tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("YQ== 0\n")
    with pytest.raises(tightfit.ConfigError, match="tokenizer"):
        tightfit.count([{"role": "user", "content": "hi"}], "gpt-4o", tokenizer=bad)


def test_fit_fitter_and_session_take_a_tokenizer_and_a_calibration() -> None:
    messages = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "word " * 200} for i in range(20)
    ]
    tokenizer = llama3_file()
    plain = tightfit.fit(messages, "gpt-4o", budget=2_000, tokenizer=tokenizer)
    assert plain.report.counter == "llama3"
    assert plain.report.compressed_token_count <= 2_000
    fitter = tightfit.Fitter()
    assert fitter.fit(messages, "gpt-4o", budget=2_000, tokenizer=tokenizer).report.counter == "llama3"
    session = tightfit.Session("gpt-4o", budget=2_000, tokenizer=tokenizer)
    assert session.fit(messages).report.counter == "llama3"
    # a calibration of 2 halves what fits
    halved = tightfit.fit(messages, "llama-3.3-70b-instruct", budget=2_000, calibration=2.0)
    assert len(halved.messages) < len(plain.messages)
