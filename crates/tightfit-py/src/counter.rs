//! The counter a call counts with: the model's own (`ChatCounter::for_family`), or one from a
//! tokenizer file the caller names (`tokenizer=`), scaled by a calibration (`calibration=`),
//! and `tightfit.calibrate`, which works a calibration out from a provider's `usage`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};
use serde_json::Value;
use tightfit::models::ModelInfo;
use tightfit::steps::ConfigError;
use tightfit::tokens::{ChatCounter, Framing, HfTokenizer};

use crate::args;
use crate::convert::to_value;
use crate::errors::{guard, Failure};
use crate::input::{model_format, RawInput};
use crate::target::required_model;

/// Counters of tokenizer files, by path: reading one costs 0.1–1 s, an agent loop passes the
/// same path every turn.
static FILE_COUNTERS: LazyLock<Mutex<HashMap<PathBuf, ChatCounter>>> = LazyLock::new(Default::default);

/// The counter for `model`: the tokenizer file's when given (exact BPE with the family's chat
/// framing for Llama 3, Qwen and DeepSeek files; any other `tokenizer.json` through the
/// HuggingFace backend with OpenAI framing), else the model's own (`o200k_base` for a bare
/// budget, `model` `None`); scaled by `calibration`.
pub(crate) fn counter(
    model: Option<&ModelInfo>,
    tokenizer: Option<&Path>,
    calibration: Option<f64>,
) -> Result<ChatCounter, Failure> {
    let counter = match (tokenizer, model) {
        (Some(path), _) => file_counter(path)?,
        (None, Some(model)) => ChatCounter::for_family(model.tokenizer),
        (None, None) => tightfit::fit::Target::bare_budget(0).counter,
    };
    match calibration {
        Some(factor) => counter.scaled_by(factor).map_err(|e| config("calibration", e.to_string())),
        None => Ok(counter),
    }
}

fn file_counter(path: &Path) -> Result<ChatCounter, Failure> {
    if let Some(counter) = FILE_COUNTERS.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
        return Ok(counter.clone());
    }
    let counter =
        match tightfit::tokens::recognize_file(path).map_err(|e| config("tokenizer", e.to_string()))? {
            Some(open) => ChatCounter::for_open(open),
            None => {
                let hf = HfTokenizer::from_file(path).map_err(|e| config("tokenizer", e.to_string()))?;
                ChatCounter::new(Arc::new(hf), Framing::OpenAi)
            }
        };
    FILE_COUNTERS.lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_path_buf(), counter.clone());
    Ok(counter)
}

fn config(key: &str, reason: String) -> Failure {
    Failure::Config(ConfigError::new(key, reason))
}

/// The input tokens a provider billed, from its `usage`: an `int`, or OpenAI's
/// (`prompt_tokens`) or Anthropic's (`input_tokens` plus `cache_read_input_tokens` and
/// `cache_creation_input_tokens`) usage, as a dict or the SDK's object.
fn reported_input(usage: &Bound<'_, PyAny>) -> Result<usize, Failure> {
    if usage.is_instance_of::<PyInt>() && !usage.is_instance_of::<PyBool>() {
        return usage.extract::<usize>().map_err(|_| {
            config("usage", format!("expected a non-negative number of tokens, found {usage}"))
        });
    }
    let value = to_value(usage).map_err(|e| Failure::Type(format!("usage: {}", e.reason)))?;
    let n = |key: &str| value.get(key).and_then(Value::as_u64).map(|n| n as usize);
    match (n("prompt_tokens"), n("input_tokens")) {
        (Some(prompt), _) => Ok(prompt),
        (None, Some(input)) => Ok(input
            + n("cache_read_input_tokens").unwrap_or(0)
            + n("cache_creation_input_tokens").unwrap_or(0)),
        (None, None) => Err(config(
            "usage",
            "expected OpenAI's `prompt_tokens` or Anthropic's `input_tokens` (or an int)".into(),
        )),
    }
}

/// The calibration of `model`'s counter from one request: `messages` (and `tools`) as sent,
/// and the `usage` the provider returned for it. Returns `reported / counted`, to pass as
/// `calibration=`. As `ChatCounter::calibrated` in Rust.
#[pyfunction]
#[pyo3(signature = (messages, model = None, *, usage, tools = None, format = None, tokenizer = None))]
pub(crate) fn calibrate(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    model: Option<&Bound<'_, PyAny>>,
    usage: &Bound<'_, PyAny>,
    tools: Option<&Bound<'_, PyAny>>,
    format: Option<&str>,
    tokenizer: Option<PathBuf>,
) -> PyResult<f64> {
    let reported = reported_input(usage)?;
    let raw = RawInput::read_history_or_body(&args::messages(messages)?, tools, format)?;
    let model = required_model(model, Some(&raw))?;
    let raw = raw.preferring(Some(model_format(model)));
    let factor = py.detach(|| {
        guard(|| {
            let conversation = raw.parse()?;
            let counter = counter(Some(model), tokenizer.as_deref(), None)?;
            let estimated = counter.count(&conversation.messages, conversation.tools.as_deref()).total;
            if estimated == 0 || reported == 0 {
                return Err(config(
                    "usage",
                    format!("need non-zero counts, got counted={estimated} reported={reported}"),
                ));
            }
            Ok(reported as f64 / estimated as f64)
        })
    })?;
    Ok(factor)
}

/// Tells the engine where an importable `llama_models` package keeps Llama 3's vocabulary
/// (the package calls this when it is imported; the file is read only when a Llama model is
/// counted, and only if its digest is Llama 3's).
#[pyfunction]
pub(crate) fn set_llama3_search_path(path: PathBuf) {
    tightfit::tokens::set_llama3_search_path(path);
}
