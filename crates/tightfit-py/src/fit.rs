//! `tightfit.Fitter` (and so `tightfit.fit`, a new fitter's): the engine's `Fitter` with the
//! GIL released, its messages handed back as the caller's own dicts wherever the engine left a
//! message unchanged.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;
use tightfit::fit::{Fitter, Services};
use tightfit::format::{self, Format};
use tightfit::inspect::{Inspection, Page, Section};
use tightfit::steps::ConfigError;
use tightfit::tokens::ChatCounter;
use tightfit::{Plan, Report};

use crate::args;
use crate::convert::{to_python, to_value};
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
    /// The caller's messages (or request body), as given, and the `system=` given beside
    /// them: the page (`to_html`) reads them again, and refuses them if they changed since.
    input: (Py<PyAny>, Option<Py<PyAny>>),
    /// The counter the fit counted with: the page's rows are its counts.
    counter: ChatCounter,
}

impl FitResult {
    /// The result of a run on `messages`: the output is built from the plan, the caller's own
    /// object for every message it sends unchanged, a new dict for every other.
    pub(crate) fn new(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        report: Report,
        plan: Plan,
        counter: ChatCounter,
    ) -> PyResult<FitResult> {
        let out = output(py, messages, &plan)?;
        let input = (messages.clone().unbind(), None);
        FitResult::assemble(py, out, (report, plan, counter), input, None, None)
    }

    /// The result of a run on a request body, or on messages with `system=` (`shape`): `body`
    /// is the fitted body as the format's writer wrote it (fields in the order they came); its
    /// list of messages is made of the caller's own objects (`list`, read as the last of the
    /// conversation's `input_len` messages) wherever a message went unchanged.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn for_request(
        py: Python<'_>,
        (given, given_system): (&Bound<'_, PyAny>, Option<&Bound<'_, PyAny>>),
        list: Option<&Bound<'_, PyAny>>,
        shape: Shape,
        (format, input_len): (Format, usize),
        mut body: Value,
        (report, plan, counter): (Report, Plan, ChatCounter),
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
        let input = (given.clone().unbind(), given_system.map(|s| s.clone().unbind()));
        FitResult::assemble(py, out, (report, plan, counter), input, body, system)
    }

    fn assemble(
        py: Python<'_>,
        messages: Bound<'_, PyList>,
        (report, plan, counter): (Report, Plan, ChatCounter),
        input: (Py<PyAny>, Option<Py<PyAny>>),
        body: Option<Py<PyAny>>,
        system: Option<Py<PyAny>>,
    ) -> PyResult<FitResult> {
        Ok(FitResult {
            messages: messages.unbind(),
            report: Py::new(py, PyReport::from(report))?,
            plan: Py::new(py, PyPlan::from(plan))?,
            body,
            system,
            input,
            counter,
        })
    }

    /// The page of this fit: the caller's messages read again (they must be the ones fitted)
    /// and laid out with the plan and the report.
    fn page(&self, py: Python<'_>, title: &str) -> PyResult<Page> {
        let plan = self.plan.get().plan();
        let report = self.report.get().report();
        let (given, system) = (self.input.0.bind(py), self.input.1.as_ref().map(|s| s.bind(py)));
        let (raw, _) = RawInput::read_any(given, None, Some(plan.format.as_str()), system)?;
        let counter = &self.counter;
        let page = py.detach(|| {
            guard(|| {
                let conversation = raw.parse()?;
                let inspection =
                    Inspection::new(&conversation.messages, plan, report, counter).map_err(|e| {
                        Failure::Config(ConfigError::new("messages", format!("changed since the fit: {e}")))
                    })?;
                Ok::<_, Failure>(Page::new(title).with(Section::fitted(title, &inspection)))
            })
        })?;
        Ok(page)
    }
}

/// The output of `plan` as a list: the caller's own object (from `messages`) for every message
/// sent as it came, a new dict for every message a step changed or wrote.
fn output<'py>(py: Python<'py>, messages: &Bound<'py, PyAny>, plan: &Plan) -> PyResult<Bound<'py, PyList>> {
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
    Ok(out)
}

#[pymethods]
impl FitResult {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!("FitResult({} messages; {})", self.messages.bind(py).len(), self.report.get().summary())
    }

    /// The page of what this fit did, as one self-contained HTML document (no network: inline
    /// style and a little script): the history before and after side by side, a row per unit
    /// with its tokens as bars, what happened to it and which step did it, the budget, filters
    /// by role and by action; a row opens to show its messages. Reads the messages given to
    /// the fit again: a `ConfigError` if they changed since.
    #[pyo3(signature = (title = "tightfit fit"))]
    fn to_html(&self, py: Python<'_>, title: &str) -> PyResult<String> {
        Ok(self.page(py, title)?.to_document())
    }

    /// The page as a notebook cell shows it (Jupyter): `to_html`'s page as one element, its
    /// style scoped to it.
    fn _repr_html_(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.page(py, "tightfit fit")?.to_fragment())
    }
}

/// Applies a saved plan (`result.plan`, its `to_json()` text, or its `to_dict()`) to the
/// messages it was made for: the list `fit` returned, without fitting (the caller's own dict
/// for every message sent as it came, a new dict for every other). A `ConfigError` (key
/// `plan`) when the plan was made for other messages (it says whether their number or their
/// content differs) or is not a plan.
///
/// Costs: one walk of the messages to JSON and one parse and fingerprint of them (GIL
/// released); nothing is counted.
#[pyfunction]
pub(crate) fn replay<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
    messages: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let parsed;
    let bound;
    let plan: &Plan = if let Ok(given) = plan.cast::<PyPlan>() {
        bound = given.clone();
        bound.get().plan()
    } else {
        parsed = plan_arg(plan)?;
        &parsed
    };
    let messages = &args::messages(messages)?;
    let raw = RawInput::read(messages, None, Some(plan.format.as_str()))?;
    py.detach(|| {
        guard(|| {
            let conversation = raw.parse()?;
            plan.replay(&conversation.messages)
                .map(|_| ())
                .map_err(|e| Failure::Config(ConfigError::new("plan", e.to_string())))
        })
    })?;
    output(py, messages, plan)
}

/// A plan given as JSON text or a dict.
fn plan_arg(plan: &Bound<'_, PyAny>) -> Result<Plan, Failure> {
    let not_a_plan =
        |e: serde_json::Error| Failure::Config(ConfigError::new("plan", format!("not a plan: {e}")));
    if let Ok(text) = plan.cast::<PyString>() {
        let text = text.to_str().map_err(|e| Failure::Type(format!("plan: {e}")))?;
        return serde_json::from_str(text).map_err(not_a_plan);
    }
    if plan.is_instance_of::<PyDict>() {
        let value =
            to_value(plan).map_err(|e| Failure::Format { path: e.path("plan"), reason: e.reason.clone() })?;
        return serde_json::from_value(value).map_err(not_a_plan);
    }
    let found = plan.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(Failure::Type(format!("plan: expected a tightfit.Plan, its JSON text or its dict, found {found}")))
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
        let (report, plan, written, counter) = py.detach(|| {
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
                Ok::<_, Failure>((fitted.report, fitted.plan, written, target.counter.clone()))
            })
        })?;
        match written {
            Some((body, format, input_len)) => {
                let list = match shape {
                    Shape::Body => messages.get_item(format::list_key(format)).ok(),
                    _ => Some(messages.clone()),
                };
                FitResult::for_request(
                    py,
                    (messages, system),
                    list.as_ref(),
                    shape,
                    (format, input_len),
                    body,
                    (report, plan, counter),
                )
            }
            None => FitResult::new(py, messages, report, plan, counter),
        }
    }
}
