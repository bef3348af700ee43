//! `tightfit.Fitter` (and so `tightfit.fit`, a new fitter's): the engine's `Fitter` with the
//! GIL released, its messages handed back as the caller's own dicts wherever the engine left a
//! message unchanged.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use serde_json::Value;
use tightfit::fit::{Fitter, Services};
use tightfit::format::{self, Format};
use tightfit::{Plan, Report};

use crate::args;
use crate::convert::to_python;
use crate::errors::{guard, Failure};
use crate::input::{model_format, RawInput, Shape};
use crate::pipeline::PyPipeline;
use crate::report::{PyPlan, PyReport};
use crate::scorer::PyScorer;
use crate::store::store_arg;
use crate::summarizer::PySummarizer;
use crate::target::{model_of, target, Limits};

/// A fitted history: the messages to send, the report and the plan.
#[pyclass(frozen, module = "tightfit", name = "FitResult")]
pub(crate) struct FitResult {
    /// The messages: the caller's own dict for every message sent as it came, a new dict for
    /// every message a step changed or wrote.
    #[pyo3(get)]
    messages: Py<PyList>,
    /// What was done, in numbers and lines.
    #[pyo3(get)]
    report: Py<PyReport>,
    /// What happened to every input unit; `to_json()` for a checkpoint.
    #[pyo3(get)]
    plan: Py<PyPlan>,
    /// For a request body given: the fitted body, every other field as it came (a new dict,
    /// its list of messages `messages`); `None` for a list of messages.
    #[pyo3(get)]
    body: Option<Py<PyAny>>,
    /// For Anthropic input given with `system=` or as a body: the system prompt to send (as
    /// the input had it unless a step changed it); `None` otherwise or when there is none.
    #[pyo3(get)]
    system: Option<Py<PyAny>>,
}

impl FitResult {
    /// The result of a run on `messages`: the output is built from the plan, the caller's own
    /// object for every message it sends unchanged, a new dict for every other.
    pub(crate) fn new(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        report: Report,
        plan: Plan,
    ) -> PyResult<FitResult> {
        let out = PyList::empty(py);
        for entry in &plan.output {
            match (&entry.message, entry.input) {
                (Some(message), _) => out.append(to_python(py, message)?)?,
                (None, Some(i)) => out.append(messages.get_item(i)?)?,
                (None, None) => {
                    return Err(Failure::Internal("a plan entry with neither input nor message".into()).into())
                }
            }
        }
        FitResult::assemble(py, out, report, plan, None, None)
    }

    /// The result of a run on a request body, or on messages with `system=` (`shape`): `body`
    /// is the fitted body as the format's writer wrote it (fields in the order they came); its
    /// list of messages is made of the caller's own objects (`list`, read as the last of the
    /// conversation's `input_len` messages) wherever a message went unchanged.
    pub(crate) fn for_request(
        py: Python<'_>,
        list: Option<&Bound<'_, PyAny>>,
        shape: Shape,
        (format, input_len): (Format, usize),
        mut body: Value,
        report: Report,
        plan: Plan,
    ) -> PyResult<FitResult> {
        let key = format::list_key(format);
        let out = PyList::empty(py);
        let caller_len = list
            .filter(|l| l.is_instance_of::<PyList>() || l.is_instance_of::<PyTuple>())
            .and_then(|l| l.len().ok());
        match body.get_mut(key).map(Value::take) {
            Some(Value::Array(items)) => {
                // the writer moves only leading messages into the envelope (`system`,
                // `instructions`): the list's items are the plan's last entries, in order
                let head = input_len.saturating_sub(caller_len.unwrap_or(0));
                let tail = &plan.output[plan.output.len().saturating_sub(items.len())..];
                for (item, entry) in items.iter().zip(tail) {
                    match (&entry.message, entry.input, list) {
                        (None, Some(i), Some(list)) if i >= head && caller_len.is_some() => {
                            out.append(list.get_item(i - head)?)?
                        }
                        _ => out.append(to_python(py, item)?)?,
                    }
                }
            }
            // a Responses `input` written back as the string it came as: the body keeps the
            // string, the list is the one user message it stands for
            Some(other) => {
                out.append(to_python(py, &serde_json::json!({"role": "user", "content": other}))?)?;
                body[key] = other;
            }
            None => {}
        }
        let system = match body.get("system") {
            Some(system) if format == Format::Anthropic => Some(to_python(py, system)?.unbind()),
            _ => None,
        };
        let body = match shape {
            Shape::Body => {
                let dict = to_python(py, &body)?;
                if body.get(key).is_some_and(Value::is_null) {
                    dict.set_item(key, &out)?;
                }
                Some(dict.unbind())
            }
            Shape::Messages | Shape::System => None,
        };
        FitResult::assemble(py, out, report, plan, body, system)
    }

    fn assemble(
        py: Python<'_>,
        messages: Bound<'_, PyList>,
        report: Report,
        plan: Plan,
        body: Option<Py<PyAny>>,
        system: Option<Py<PyAny>>,
    ) -> PyResult<FitResult> {
        Ok(FitResult {
            messages: messages.unbind(),
            report: Py::new(py, PyReport::from(report))?,
            plan: Py::new(py, PyPlan::from(plan))?,
            body,
            system,
        })
    }
}

#[pymethods]
impl FitResult {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!("FitResult({} messages; {})", self.messages.bind(py).len(), self.report.get().summary())
    }
}

/// A fitter that remembers the token counts of the messages it has fitted (by content hash),
/// for an agent loop: refitting a history that grew by a message tokenizes that message only.
/// Safe to share between threads (one fit at a time uses the memory; another waits with the
/// GIL released). Memory: about 40 bytes per distinct message; a fit for another model's
/// counter starts it again.
#[pyclass(frozen, module = "tightfit", name = "Fitter")]
pub(crate) struct PyFitter {
    inner: Mutex<Fitter>,
}

#[pymethods]
impl PyFitter {
    #[new]
    fn new() -> PyFitter {
        PyFitter { inner: Mutex::new(Fitter::new()) }
    }

    /// Fits `messages` to `model`'s window (or `budget`) with `pipeline` (the default ladder
    /// when `None`), with the counts this fitter remembers; `tightfit.fit` is a new fitter's.
    ///
    /// Costs, in order: a walk of the Python data to JSON (GIL held), then parse, count, fit,
    /// validate and the JSON of the changed messages (GIL released: other Python threads
    /// run), then one dict built per changed message (GIL held). Unchanged messages are not
    /// copied back.
    ///
    /// With `store` (a file path or a `MemoryStore`), what the steps remove or cut is
    /// offloaded into it: the output names a handle for each (`tightfit.recall`).
    #[pyo3(signature = (messages, model = None, *, system = None, budget = None, pipeline = None, tools = None, reserve_output = None, format = None, allow_over_window = false, store = None, summarizer = None, scorer = None, tokenizer = None, calibration = None))]
    #[allow(clippy::too_many_arguments)]
    fn fit(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        model: Option<&Bound<'_, PyAny>>,
        system: Option<&Bound<'_, PyAny>>,
        budget: Option<&Bound<'_, PyAny>>,
        pipeline: Option<&Bound<'_, PyPipeline>>,
        tools: Option<&Bound<'_, PyAny>>,
        reserve_output: Option<&Bound<'_, PyAny>>,
        format: Option<&str>,
        allow_over_window: bool,
        store: Option<&Bound<'_, PyAny>>,
        summarizer: Option<&Bound<'_, PyAny>>,
        scorer: Option<&Bound<'_, PyAny>>,
        tokenizer: Option<std::path::PathBuf>,
        calibration: Option<f64>,
    ) -> PyResult<FitResult> {
        let scorer = scorer.filter(|s| !s.is_none()).map(|s| PyScorer::new(s, "scorer")).transpose()?;
        let summarizer =
            summarizer.filter(|s| !s.is_none()).map(|s| PySummarizer::new(s, "summarizer")).transpose()?;
        let store = match store.filter(|s| !s.is_none()) {
            Some(store) => Some(store_arg(py, Some(store))?),
            None => None,
        };
        let messages = &args::messages(messages)?;
        let (raw, shape) = RawInput::read_any(messages, tools, format, system)?;
        let model = model_of(model, Some(&raw))?;
        let limits = Limits {
            budget: args::tokens(budget, "budget", 1)?,
            reserve_output: args::tokens(reserve_output, "reserve_output", 0)?,
            allow_over_window,
            tokenizer: tokenizer.as_deref(),
            calibration,
        };
        let target = target(model, &limits)?;
        let raw = raw.preferring(model.map(model_format));
        let pipeline = pipeline.map(|p| p.get().inner.clone());
        let fitter = &self.inner;
        let request = !matches!(shape, Shape::Messages);
        let (report, plan, written) = py.detach(|| {
            guard(|| {
                let conversation = raw.parse()?;
                // the lock is taken with the GIL released, so a thread waiting for it never
                // holds what the holder needs; a panic mid-fit leaves counts that may be half
                // written: start again
                let mut fitter = fitter.lock().unwrap_or_else(|poisoned| {
                    let mut fitter = poisoned.into_inner();
                    *fitter = Fitter::new();
                    fitter
                });
                let mut services = match &store {
                    Some(store) => Services::default().with_offload(store.as_ref()),
                    None => Services::default(),
                };
                if let Some(summarizer) = &summarizer {
                    services = services.with_summarizer(summarizer);
                }
                if let Some(scorer) = &scorer {
                    services = services.with_scorer(scorer);
                }
                let fitted =
                    fitter.fit_with(&conversation, &target, pipeline.as_deref(), services).map_err(|e| {
                        // the scorer's own error says more than "no scores"
                        match (e, scorer.as_ref().and_then(|s| s.failure.lock().ok()?.take())) {
                            (tightfit::FitError::Step(step), Some(python)) => {
                                tightfit::FitError::Step(tightfit::steps::StepError::new(
                                    &step.step,
                                    format!("{}: the scorer raised {python}", step.reason),
                                ))
                            }
                            (e, _) => e,
                        }
                    })?;
                // a request given whole comes back whole, written by its format's writer
                let written = request.then(|| {
                    let body = format::request_to_value(&fitted.messages, &conversation);
                    (body, conversation.format, conversation.messages.len())
                });
                Ok::<_, Failure>((fitted.report, fitted.plan, written))
            })
        })?;
        match written {
            Some((body, format, input_len)) => {
                let list = match shape {
                    Shape::Body => messages.get_item(format::list_key(format)).ok(),
                    _ => Some(messages.clone()),
                };
                FitResult::for_request(py, list.as_ref(), shape, (format, input_len), body, report, plan)
            }
            None => FitResult::new(py, messages, report, plan),
        }
    }
}
