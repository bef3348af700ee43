//! `tightfit.count`: tokens per message and in total, counted the way the model's provider
//! bills them, with the GIL released while the engine counts.

use std::path::PathBuf;

use crate::args;
use crate::counter::counter;
use crate::errors::{guard, Failure};
use crate::input::{model_format, RawInput};
use crate::target::required_model;
use pyo3::prelude::*;

/// A conversation's tokens.
#[pyclass(frozen, module = "tightfit", name = "Count")]
pub(crate) struct PyCount {
    /// Every token of the request: messages, tool schemas, reply priming.
    #[pyo3(get)]
    total: usize,
    /// Tokens of each message, framing included, in order.
    #[pyo3(get)]
    per_message: Vec<usize>,
    /// Tokens of the tool schemas.
    #[pyo3(get)]
    tools: usize,
    /// Tokens the provider adds to prime the reply.
    #[pyo3(get)]
    priming: usize,
    /// The model counted for, as `provider/id`.
    #[pyo3(get)]
    model: String,
    /// Its context window.
    #[pyo3(get)]
    context_window: u64,
    /// The tokenizer that counted (`o200k_base`, `qwen2`, `o200k_base*1.25`).
    #[pyo3(get)]
    counter: String,
    /// Whether the count is the model's own tokenizer's (and not calibrated).
    #[pyo3(get)]
    exact: bool,
    /// Why the count is an estimate (Claude's tokenizer is not public, Llama's vocabulary was
    /// not found, a calibration), or `None` when exact.
    #[pyo3(get)]
    estimate: Option<String>,
}

#[pymethods]
impl PyCount {
    fn __int__(&self) -> usize {
        self.total
    }
    fn __repr__(&self) -> String {
        format!(
            "Count(total={}, messages={}, tools={}, priming={}, model={:?}, counter={:?}, exact={})",
            self.total,
            self.per_message.len(),
            self.tools,
            self.priming,
            self.model,
            self.counter,
            if self.exact { "True" } else { "False" }
        )
    }
}

/// Counts `messages` (and `tools`) for `model` (with the `tokenizer` file when given, scaled by
/// `calibration`). Costs one tokenizer pass over the text.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (messages, model = None, *, system = None, tools = None, format = None, tokenizer = None, calibration = None))]
pub(crate) fn count(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    model: Option<&Bound<'_, PyAny>>,
    system: Option<&Bound<'_, PyAny>>,
    tools: Option<&Bound<'_, PyAny>>,
    format: Option<&str>,
    tokenizer: Option<PathBuf>,
    calibration: Option<f64>,
) -> PyResult<PyCount> {
    let raw = RawInput::read_any(&args::messages(messages)?, tools, format, system)?.0;
    let model = required_model(model, Some(&raw))?;
    let raw = raw.preferring(Some(model_format(model)));
    let counted = py.detach(|| {
        guard(|| {
            let conversation = raw.parse()?;
            let counter = counter(Some(model), tokenizer.as_deref(), calibration)?;
            let count = counter.count(&conversation.messages, conversation.tools.as_deref());
            let estimate = counter.estimate_reason();
            Ok::<_, Failure>(PyCount {
                total: count.total,
                per_message: count.per_message,
                tools: count.tools,
                priming: count.priming,
                model: model.qualified_id(),
                context_window: model.context_window,
                counter: counter.text_counter().name().to_string(),
                exact: estimate.is_none(),
                estimate,
            })
        })
    })?;
    Ok(counted)
}
