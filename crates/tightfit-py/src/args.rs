//! The arguments every entry point shares, read with errors that name them.
//!
//! Left to pyo3, `budget=-1` is an `OverflowError`, `budget=True` a budget of one token and
//! `model=None` a `TypeError` about `PyString`. Here: a wrong type is a `TypeError` and a value
//! out of range a `tightfit.ConfigError` (a `ValueError`), each naming the argument.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};
use tightfit::steps::ConfigError;

use crate::errors::Failure;

/// The most tokens an argument may name: no model has a window of four billion tokens.
const MOST_TOKENS: u64 = u32::MAX as u64;

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an unknown type".into())
}

/// The model name: a `str`.
pub(crate) fn model(model: &Bound<'_, PyAny>) -> Result<String, Failure> {
    match model.cast::<PyString>() {
        Ok(name) => Ok(name.to_string()),
        Err(_) => Err(Failure::Type(format!(
            "model: expected a model name (str, for example \"gpt-4o\"), found {}",
            type_name(model)
        ))),
    }
}

/// A number of tokens named `key` (`budget`, `reserve_output`): an `int` (not a `bool`) from
/// `least` to four billion; `None` when not given.
pub(crate) fn tokens(
    value: Option<&Bound<'_, PyAny>>,
    key: &str,
    least: u64,
) -> Result<Option<u64>, Failure> {
    let Some(value) = value.filter(|v| !v.is_none()) else { return Ok(None) };
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(Failure::Type(format!(
            "{key}: expected an integer number of tokens, found {}",
            type_name(value)
        )));
    }
    let out_of_range = || {
        Failure::Config(ConfigError::new(
            key,
            format!("must be between {least} and {MOST_TOKENS} tokens, found {value}"),
        ))
    };
    match value.extract::<i128>() {
        Ok(n) if n >= i128::from(least) && n <= i128::from(MOST_TOKENS) => Ok(Some(n as u64)),
        _ => Err(out_of_range()),
    }
}

/// The messages as a list or tuple: another iterable (a generator, a deque) is read into a
/// list first, so that the result can hand back the caller's own dicts by index. A dict, a
/// string or a non-iterable is passed on as it is, for the reader to refuse by name.
pub(crate) fn messages<'py>(messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if messages.is_instance_of::<PyList>()
        || messages.is_instance_of::<PyTuple>()
        || messages.is_instance_of::<PyDict>()
        || messages.is_instance_of::<PyString>()
        || messages.is_instance_of::<PyBytes>()
    {
        return Ok(messages.clone());
    }
    match messages.try_iter() {
        Ok(items) => {
            let items = items.collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(messages.py(), items)?.into_any())
        }
        Err(_) => Ok(messages.clone()),
    }
}
