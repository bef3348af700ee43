//! A Python callable as the engine's summarizer: `tightfit.fit(..., summarizer=fn)`,
//! `tightfit.Session(..., summarizer=fn)`.
//!
//! The callable is called as `fn(messages, max_tokens=N)` with the messages to summarize as
//! dicts in the conversation's wire format, and returns the summary's body (a `str`; the
//! header naming the messages is tightfit's). An async callable's coroutine is run to its end
//! in the engine's thread (with `asyncio.run`: call `afit` or outside a running event loop).
//! What it raises, or returns that is not a string, makes the step fall back to the extractive
//! summarizer; the summary says so. The GIL is taken for the call only.

use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::Value;
use tightfit::format::messages_to_value;
use tightfit::message::Message;
use tightfit::summary::{Summarizer, SummaryError, SummaryRequest};

use crate::convert::to_python;

/// A Python callable that writes summaries.
pub(crate) struct PySummarizer {
    callable: Py<PyAny>,
    name: String,
    identity: u64,
}

impl std::fmt::Debug for PySummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PySummarizer({})", self.name)
    }
}

impl PySummarizer {
    /// `callable` as a summarizer, or a `TypeError` naming the argument when it is not callable.
    pub(crate) fn new(callable: &Bound<'_, PyAny>, argument: &str) -> PyResult<PySummarizer> {
        let name = callable_name(callable, argument, "(messages, *, max_tokens) -> str")?;
        // the object's id tells two callables of one name apart in the step's cache
        let identity = callable.as_ptr() as usize as u64;
        Ok(PySummarizer { callable: callable.clone().unbind(), name, identity })
    }

    fn call(&self, py: Python<'_>, request: &SummaryRequest<'_>) -> PyResult<String> {
        let owned: Vec<Message> = request.messages.iter().map(|m| (*m).clone()).collect();
        let messages: Value = messages_to_value(&owned, request.format);
        let messages = to_python(py, &messages)?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("max_tokens", request.max_tokens)?;
        let mut result = self.callable.bind(py).call((messages,), Some(&kwargs))?;
        let inspect = py.import("inspect")?;
        if inspect.call_method1("iscoroutine", (&result,))?.is_truthy()? {
            result = py.import("asyncio")?.call_method1("run", (result,))?;
        }
        match result.cast::<PyString>() {
            Ok(text) => Ok(text.to_str()?.to_string()),
            Err(_) => {
                let found = result.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                Err(pyo3::exceptions::PyTypeError::new_err(format!("returned {found}, not a str")))
            }
        }
    }
}

/// The name of `callable` (its `__qualname__`), or a `TypeError` saying `argument` expects a
/// callable of `shape` when it is not one.
pub(crate) fn callable_name(callable: &Bound<'_, PyAny>, argument: &str, shape: &str) -> PyResult<String> {
    if !callable.is_callable() {
        let found = callable.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{argument}: expected a callable {shape}, found {found}"
        )));
    }
    Ok(callable
        .getattr("__qualname__")
        .or_else(|_| callable.getattr("__name__"))
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "python".to_string()))
}

impl Summarizer for PySummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn identity(&self) -> u64 {
        self.identity
    }

    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        Python::attach(|py| {
            self.call(py, request)
                .map_err(|e| SummaryError { summarizer: self.name.clone(), reason: e.to_string() })
        })
    }
}
