//! The engine side of `tightfit.compat.autogen_core`: a history of autogen messages kept in
//! Rust, and the engine's autogen contexts run over it.
//!
//! An autogen context is asked for its messages after every turn, so the history lives here
//! and grows by one message per `add_message` instead of being copied out of Python on every
//! `get_messages` (which alone would cost more than autogen's own list slicing). Token counts
//! of autogen-ext's OpenAI counter are worked out once per message and kept. A view comes back
//! as ranges of the caller's list and placeholder texts, so the adapter returns the caller's
//! own message objects.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use serde_json::Value;
use tightfit::compat::autogen::{
    token_limited as autogen_token_limited, token_limited_with as autogen_token_limited_with, AutogenContext,
    AutogenMessage, AutogenOpenAiCounter, AutogenPolicy, AutogenView, InputBreakage, ViewPart,
    AUTOGEN_REPLY_PRIMING,
};
use tightfit::config::Params;
use tightfit::steps::{ConfigError, Step};
use tightfit::tokens::OpenAiEncoding;

use crate::convert::to_value;
use crate::errors::{guard, Failure};

fn encoding(name: &str) -> Result<OpenAiEncoding, Failure> {
    match name {
        "o200k_base" => Ok(OpenAiEncoding::O200kBase),
        "cl100k_base" => Ok(OpenAiEncoding::Cl100kBase),
        other => Err(Failure::Config(ConfigError::new(
            "encoding",
            format!("unknown encoding {other:?} (expected o200k_base or cl100k_base)"),
        ))),
    }
}

/// An autogen context's settings, read and checked by the engine's configuration reader
/// (`{"type": "autogen_buffered", "buffer_size": 3}`; the step's errors are autogen's
/// `ValueError` messages).
#[pyclass(frozen, module = "tightfit", name = "AutogenContext")]
pub(crate) struct PyAutogenContext {
    inner: AutogenContext,
}

#[pymethods]
impl PyAutogenContext {
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<PyAutogenContext> {
        let value = to_value(config).map_err(|e| Failure::Config(ConfigError::new(e.path(""), e.reason)))?;
        let Value::Object(mut map) = value else {
            return Err(Failure::Type("AutogenContext(config): expected a dict".into()).into());
        };
        let name = match map.remove("type") {
            Some(Value::String(name)) => name,
            _ => {
                return Err(
                    Failure::Config(ConfigError::new("type", "missing: the context's step name")).into()
                )
            }
        };
        let mut params = Params::new(map);
        let inner = AutogenContext::from_params_named(&name, &mut params)
            .and_then(|step| params.finish().map(|()| step))
            .and_then(|step| step.check().map(|()| step))
            .map_err(Failure::Config)?;
        Ok(PyAutogenContext { inner })
    }

    /// The step's name (`autogen_buffered`).
    #[getter]
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn __repr__(&self) -> String {
        format!("AutogenContext({:?})", self.inner.policy)
    }
}

/// The messages of one context, in autogen's model, with autogen-ext's token count of each
/// (worked out on first need, for one counter at a time).
#[pyclass(module = "tightfit", name = "AutogenHistory")]
pub(crate) struct PyAutogenHistory {
    messages: Vec<AutogenMessage>,
    /// Counts of `messages[..tokens.len()]` under `counter`.
    tokens: Vec<usize>,
    counter: Option<AutogenOpenAiCounter>,
    /// What the input already breaks, for `messages[..breakage.0]` (worked out once per
    /// length, so asking again costs only the window).
    breakage: Option<(usize, InputBreakage)>,
}

impl PyAutogenHistory {
    fn read(&self, message: &Bound<'_, PyAny>, index: usize) -> Result<AutogenMessage, Failure> {
        let path = format!("messages[{index}]");
        let value = to_value(message)
            .map_err(|e| Failure::Format { path: e.path(&path), reason: e.reason.clone() })?;
        AutogenMessage::from_value(&value, &path)
            .map_err(|e| Failure::Format { path: e.path, reason: e.reason })
    }

    fn breakage(&mut self) -> InputBreakage {
        match self.breakage {
            Some((len, b)) if len == self.messages.len() => b,
            _ => {
                let b = InputBreakage::of(&self.messages);
                self.breakage = Some((self.messages.len(), b));
                b
            }
        }
    }

    /// Counts the messages not counted yet under `counter` (all of them if the counter
    /// changed), without the GIL. Stops at the first message autogen-ext would refuse.
    fn count_new(&mut self, py: Python<'_>, counter: AutogenOpenAiCounter) -> PyResult<()> {
        if self.counter != Some(counter) {
            self.tokens.clear();
            self.counter = Some(counter);
        }
        let (messages, tokens) = (&self.messages, &mut self.tokens);
        py.detach(|| {
            for m in &messages[tokens.len()..] {
                tokens.push(counter.message(m)?);
            }
            Ok::<_, tightfit::compat::autogen::AutogenCountError>(())
        })
        .map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

/// A view as Python data: `(start, end)` tuples of the caller's list and placeholder strings.
fn view_to_python<'py>(py: Python<'py>, view: &AutogenView) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for part in &view.parts {
        match part {
            ViewPart::Keep(r) => list.append(PyTuple::new(py, [r.start, r.end])?)?,
            ViewPart::Placeholder(text) => list.append(PyString::new(py, text))?,
        }
    }
    Ok(list)
}

fn tools_value(tools: Option<&Bound<'_, PyAny>>) -> Result<Vec<Value>, Failure> {
    match tools {
        None => Ok(Vec::new()),
        Some(t) if t.is_none() => Ok(Vec::new()),
        Some(t) => match to_value(t)
            .map_err(|e| Failure::Format { path: e.path("tools"), reason: e.reason.clone() })?
        {
            Value::Array(items) => Ok(items),
            _ => Err(Failure::Type("tools: expected a list of tool schemas".into())),
        },
    }
}

#[pymethods]
impl PyAutogenHistory {
    #[new]
    fn new() -> PyAutogenHistory {
        PyAutogenHistory { messages: Vec::new(), tokens: Vec::new(), counter: None, breakage: None }
    }

    /// Adds one message (an autogen dict).
    fn append(&mut self, message: &Bound<'_, PyAny>) -> PyResult<()> {
        let m = self.read(message, self.messages.len())?;
        self.messages.push(m);
        Ok(())
    }

    /// Adds several messages.
    fn extend(&mut self, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        for message in messages.try_iter()? {
            self.append(&message?)?;
        }
        Ok(())
    }

    /// Forgets every message.
    fn clear(&mut self) {
        self.messages.clear();
        self.tokens.clear();
        self.breakage = None;
    }

    fn __len__(&self) -> usize {
        self.messages.len()
    }

    /// What `context` returns for these messages: a list of `(start, end)` ranges of the
    /// messages and placeholder texts, in order.
    ///
    /// A token-limited context counts with `over(kept_indices) -> bool` when given (a model
    /// client's own counter: called once per removal, as autogen does), else with autogen-ext's
    /// OpenAI counter for `encoding` (each message counted once, then O(1) per removal), with
    /// `tools` counted beside the messages.
    #[pyo3(signature = (context, *, encoding = "o200k_base", include_name = true, tools = None, over = None))]
    fn view<'py>(
        &mut self,
        py: Python<'py>,
        context: &PyAutogenContext,
        encoding: &str,
        include_name: bool,
        tools: Option<&Bound<'py, PyAny>>,
        over: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let breakage = self.breakage();
        let view = match (&context.inner.policy, over) {
            (AutogenPolicy::TokenLimited { .. }, Some(over)) => {
                autogen_token_limited_with(&self.messages, breakage, |kept| {
                    over.call1((kept.to_vec(),))?.is_truthy()
                })?
            }
            (AutogenPolicy::TokenLimited { token_limit, .. }, None) => {
                let limit = token_limit.ok_or_else(|| {
                    Failure::Config(ConfigError::new(
                        "token_limit",
                        "needed to count with the built-in counter",
                    ))
                })?;
                let counter = AutogenOpenAiCounter { encoding: self::encoding(encoding)?, include_name };
                let tools = tools_value(tools)?;
                let fixed = counter.tools(&tools).map_err(|e| PyValueError::new_err(e.to_string()))?;
                self.count_new(py, counter)?;
                let (messages, tokens) = (&self.messages, &self.tokens);
                py.detach(|| {
                    guard(|| {
                        Ok(autogen_token_limited(
                            messages,
                            breakage,
                            tokens,
                            AUTOGEN_REPLY_PRIMING + fixed,
                            limit,
                        ))
                    })
                })?
            }
            _ => {
                let messages = &self.messages;
                py.detach(|| guard(|| context.inner.view(messages, breakage, None).map_err(Failure::Type)))?
            }
        };
        view_to_python(py, &view)
    }

    /// autogen-ext's `count_tokens(messages, tools=tools)` for a client whose model uses
    /// `encoding`; raises `ValueError` where autogen-ext would.
    #[pyo3(signature = (*, encoding = "o200k_base", include_name = true, tools = None))]
    fn count(
        &mut self,
        py: Python<'_>,
        encoding: &str,
        include_name: bool,
        tools: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let counter = AutogenOpenAiCounter { encoding: self::encoding(encoding)?, include_name };
        let tools = tools_value(tools)?;
        let fixed = counter.tools(&tools).map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.count_new(py, counter)?;
        Ok(AUTOGEN_REPLY_PRIMING + fixed + self.tokens.iter().sum::<usize>())
    }
}
