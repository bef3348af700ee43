//! `tightfit.validate`: the rules a provider would reject a history for, message by message.

use pyo3::prelude::*;
use tightfit::format::Format;

use crate::errors::{guard, Failure};
use crate::input::{format_arg, RawInput};

/// One rule a history breaks, and where.
#[pyclass(frozen, eq, module = "tightfit", name = "Violation")]
#[derive(PartialEq, Eq)]
pub(crate) struct Violation {
    /// The index of the message.
    #[pyo3(get)]
    index: usize,
    /// The rule, snake_case (`orphan_tool_result`, `unanswered_tool_call`, ...).
    #[pyo3(get)]
    rule: &'static str,
    /// What is wrong, for a person.
    #[pyo3(get)]
    reason: String,
}

impl From<tightfit::Violation> for Violation {
    fn from(v: tightfit::Violation) -> Violation {
        Violation { index: v.index, rule: v.rule.as_str(), reason: v.reason }
    }
}

#[pymethods]
impl Violation {
    fn __str__(&self) -> String {
        format!("messages[{}]: {}", self.index, self.reason)
    }
    fn __repr__(&self) -> String {
        format!("Violation(index={}, rule={:?}, reason={:?})", self.index, self.rule, self.reason)
    }
}

/// Every violation of `provider`'s rules (the messages' own format when `None`), in message
/// order; empty when the provider would accept the history. One pass over the messages.
#[pyfunction]
#[pyo3(signature = (messages, provider = None, *, format = None))]
pub(crate) fn validate(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    provider: Option<&str>,
    format: Option<&str>,
) -> PyResult<Vec<Violation>> {
    let provider: Option<Format> = format_arg(provider, "provider")?;
    let raw = RawInput::read(messages, None, format)?;
    let violations = py.detach(|| {
        guard(|| {
            let conversation = raw.parse()?;
            let provider = provider.unwrap_or(conversation.format);
            let found = tightfit::validate(&conversation.messages, provider);
            Ok::<_, Failure>(found.into_iter().map(Violation::from).collect::<Vec<_>>())
        })
    })?;
    Ok(violations)
}
