//! `tightfit.validate`: the rules a provider would reject a history for, message by message.

use pyo3::prelude::*;
use tightfit::format::Format;

use crate::args;
use crate::errors::{guard, Failure};
use crate::input::{format_arg, RawInput};
use crate::report::Violation;

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
    // plain messages are read in the format of the provider they are checked for
    let raw = RawInput::read_history_or_body(&args::messages(messages)?, None, format)?.preferring(provider);
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
