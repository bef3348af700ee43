//! `tightfit.Session` and `tightfit.MemoryStore`: the engine's session, fitting the turns of an
//! agent loop so that each request extends the one before until a compaction. The skin reads
//! the arguments, opens the store and releases the GIL around every call; the decisions are
//! the engine's (`tightfit::session`).

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyString;
use tightfit::format::Format;
use tightfit::models::Registry;
use tightfit::pricing::Pricing;
use tightfit::session::{Policy, Session, Settings};
use tightfit::steps::ConfigError;
use tightfit::Conversation;

use crate::args;
use crate::errors::{guard, Failure};
use crate::fit::FitResult;
use crate::input::{format_arg, model_format, parse_tools, tools_value, RawInput};
use crate::memo::ReadMemo;
use crate::pipeline::PyPipeline;
use crate::store::store_arg_shared;
use crate::summarizer::PySummarizer;
use crate::target::{model_of, target, Limits};

/// The policy the caller named: a preset's name or a `Pipeline`.
fn policy_arg(policy: Option<&Bound<'_, PyAny>>) -> PyResult<Policy> {
    let Some(policy) = policy.filter(|p| !p.is_none()) else { return Ok(Policy::cache()) };
    let policy = if let Ok(name) = policy.cast::<PyString>() {
        Policy::by_name(name.to_str()?).map_err(|e| ConfigError::new("policy", e.reason))
    } else if let Ok(pipeline) = policy.cast::<PyPipeline>() {
        pipeline.get().policy().map_err(|e| e.within("policy"))
    } else {
        let found = policy.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(Failure::Type(format!(
            "policy: expected a preset name or a tightfit.Pipeline, found {found}"
        ))
        .into());
    };
    policy.map_err(|e| Failure::Config(e).into())
}

/// Fits the turns of agent loops so that each request extends the previous one until a
/// compaction (a provider's prompt cache keeps serving the prefix); one session serves many
/// conversations and threads. See the engine's `tightfit::session` for how it decides.
#[pyclass(frozen, module = "tightfit", name = "Session")]
pub(crate) struct PySession {
    pub(crate) inner: Session,
    model: Option<String>,
    store: String,
    /// The messages of the latest call (see `memo.rs`).
    memo: Mutex<ReadMemo>,
    /// The format plain messages are read in: the model's (OpenAI's for a bare budget).
    preferred: Format,
}

#[pymethods]
impl PySession {
    /// A session fitting to `model`'s window (or `budget`), compacting with `policy` (a preset
    /// name, `cache` when `None`, or a `Pipeline`) between the marks, its checkpoints in
    /// `store` (a file path, a `MemoryStore`, or a store of its own when `None`).
    #[new]
    #[pyo3(signature = (model = None, *, budget = None, policy = None, store = None, high_water = None, low_water = None, max_conversations = None, reserve_output = None, cache_breakpoints = false, weigh_cache_misses = true, allow_over_window = false, offload = true, summarize = true, summarizer = None, tokenizer = None, calibration = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model: Option<&Bound<'_, PyAny>>,
        budget: Option<&Bound<'_, PyAny>>,
        policy: Option<&Bound<'_, PyAny>>,
        store: Option<&Bound<'_, PyAny>>,
        high_water: Option<f64>,
        low_water: Option<f64>,
        max_conversations: Option<usize>,
        reserve_output: Option<&Bound<'_, PyAny>>,
        cache_breakpoints: bool,
        weigh_cache_misses: bool,
        allow_over_window: bool,
        offload: bool,
        summarize: bool,
        summarizer: Option<&Bound<'_, PyAny>>,
        tokenizer: Option<std::path::PathBuf>,
        calibration: Option<f64>,
    ) -> PyResult<PySession> {
        let summarizer =
            summarizer.filter(|s| !s.is_none()).map(|s| PySummarizer::new(s, "summarizer")).transpose()?;
        let info = model_of(model, None)?;
        let target = target(
            info,
            &Limits {
                budget: args::tokens(budget, "budget", 1)?,
                reserve_output: args::tokens(reserve_output, "reserve_output", 0)?,
                allow_over_window,
                tokenizer: tokenizer.as_deref(),
                calibration,
            },
        )?;
        let policy = policy_arg(policy)?;
        let mut settings = Settings::default();
        if let Some(high) = high_water {
            settings.high_water = high;
        }
        if let Some(low) = low_water {
            settings.low_water = low;
        }
        if let Some(max) = max_conversations {
            settings.max_conversations = max;
        }
        settings.cache_breakpoints = cache_breakpoints;
        settings.weigh_cache_misses = weigh_cache_misses;
        settings.offload = offload;
        settings.summarize = summarize;
        settings.check().map_err(Failure::Config)?;
        let (store, shared) = store_arg_shared(py, store)?;
        // other processes may write a file or a server: replay their compactions too
        settings.shared_store = shared;
        let described = store.describe();
        let mut inner =
            Session::new(target, policy, store).with_settings(settings).map_err(Failure::Config)?;
        if let Some(pricing) = info.and_then(Pricing::of) {
            inner = inner.with_pricing(pricing);
        }
        if let (Some(summarizer), true) = (summarizer, summarize) {
            inner = inner.with_summarizer(Arc::new(summarizer));
        }
        Ok(PySession {
            inner,
            model: model.filter(|m| !m.is_none()).map(args::model).transpose()?,
            store: described,
            memo: Mutex::default(),
            preferred: info.map_or(Format::OpenAi, model_format),
        })
    }

    /// Fits `messages`, the whole history of this turn, as conversation `key` (by default a
    /// hash of the messages up to the first user message: the system prompt and the task).
    /// Same costs and result as `Fitter.fit`; `report.session` says what the session did.
    #[pyo3(signature = (messages, *, tools = None, key = None, format = None))]
    fn fit(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        key: Option<String>,
        format: Option<&str>,
    ) -> PyResult<FitResult> {
        let session = &self.inner;
        let format = format_arg(format, "format")?;
        let messages = &args::messages(messages)?;
        // the messages of the previous call, taken back where the caller's dicts hash alike,
        // taken in a statement of its own: the lock is not held while Python data is read
        let mut taken = std::mem::take(&mut *self.memo.lock().unwrap_or_else(|p| p.into_inner()));
        let memo = taken.read(messages, format, self.preferred)?;
        let (report, plan) = match memo {
            Some(read) => {
                let tools = tools_value(tools)?;
                // calls on one session take turns inside the engine, with the GIL released
                py.detach(|| {
                    guard(|| {
                        let format = read.format();
                        let (messages, recall) = read.parse()?;
                        let tools = parse_tools(tools, format)?;
                        let conversation = Conversation { format, messages, tools, request: None };
                        let fitted = session.fit_keyed(key.as_deref(), &conversation)?;
                        let done = (fitted.report, fitted.plan);
                        *self.memo.lock().unwrap_or_else(|p| p.into_inner()) =
                            ReadMemo::remember(conversation.messages, recall);
                        Ok::<_, Failure>(done)
                    })
                })?
            }
            // not JSON data, or read before in another format: read in full (and say what
            // is wrong, if anything)
            None => {
                let raw = RawInput::read(messages, tools, format.map(|f| f.as_str()))?
                    .preferring(Some(self.preferred));
                py.detach(|| {
                    guard(|| {
                        let conversation = raw.parse()?;
                        let fitted = session.fit_keyed(key.as_deref(), &conversation)?;
                        Ok::<_, Failure>((fitted.report, fitted.plan))
                    })
                })?
            }
        };
        FitResult::new(py, messages, report, plan, session.target().counter.clone())
    }

    /// The key `fit` gives `messages` when it is given none, for a session of `model` (plain
    /// messages are read in its format: OpenAI's when `None`).
    #[staticmethod]
    #[pyo3(signature = (messages, *, format = None, model = None))]
    fn key_of(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        format: Option<&str>,
        model: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let preferred = match model {
            Some(model) => {
                Some(model_format(Registry::embedded().lookup(&args::model(model)?).map_err(Failure::from)?))
            }
            None => None,
        };
        let raw = RawInput::read(&args::messages(messages)?, None, format)?.preferring(preferred);
        Ok(py.detach(|| guard(|| Ok(Session::key_of(&raw.parse()?))))?)
    }

    /// The messages this session's compactions offloaded under `handle`, from its store (see
    /// `tightfit.recall`).
    #[pyo3(signature = (handle, *, offset = 0, limit = None))]
    fn recall(&self, py: Python<'_>, handle: &str, offset: usize, limit: Option<usize>) -> PyResult<String> {
        let session = &self.inner;
        Ok(py.detach(|| guard(|| Ok(session.recall(handle)?.page(offset, limit).content)))?)
    }

    /// Forgets conversation `key`, in memory and in the store: its next turn starts afresh.
    fn forget(&self, py: Python<'_>, key: &str) -> PyResult<()> {
        let session = &self.inner;
        Ok(py.detach(|| guard(|| session.forget(key).map_err(Failure::from)))?)
    }

    /// The model name it was made with; `None` for a bare budget.
    #[getter]
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The budget it fits to.
    #[getter]
    fn budget(&self) -> usize {
        self.inner.target().budget
    }

    /// The policy's name (`cache`, a preset's name, or `custom`).
    #[getter]
    fn policy(&self) -> &str {
        self.inner.policy().name()
    }

    /// The share of the budget whose crossing compacts.
    #[getter]
    fn high_water(&self) -> f64 {
        self.inner.settings().high_water
    }

    /// The share of the budget a compaction cuts down to.
    #[getter]
    fn low_water(&self) -> f64 {
        self.inner.settings().low_water
    }

    /// The most conversations held in memory (the others are read back from the store).
    #[getter]
    fn max_conversations(&self) -> usize {
        self.inner.settings().max_conversations
    }

    /// Whether Anthropic requests get prompt-cache breakpoints from the session.
    #[getter]
    fn cache_breakpoints(&self) -> bool {
        self.inner.settings().cache_breakpoints
    }

    /// Whether, between the high-water mark and the budget, a compaction waits until it pays
    /// for its cache misses (by the model's prices and its provider's caching rule).
    #[getter]
    fn weigh_cache_misses(&self) -> bool {
        self.inner.settings().weigh_cache_misses
    }

    /// The store, as the engine describes it (`memory`, `sqlite:sessions.db`).
    #[getter]
    fn store(&self) -> &str {
        &self.store
    }

    fn __repr__(&self) -> String {
        format!(
            "Session(model={:?}, budget={}, policy={:?}, store={:?}, marks {}..{})",
            self.model,
            self.budget(),
            self.policy(),
            self.store,
            self.low_water(),
            self.high_water()
        )
    }
}
