//! Engine errors as Python exceptions, at the boundary only.
//!
//! The exception classes live in Python (`tightfit/errors.py`) so that they can inherit from
//! both `tightfit.Error` and `ValueError`; this module raises them with the engine's message
//! and its fields as attributes. A Rust panic never reaches Python: [`guard`] turns it into
//! `tightfit.Error` ("internal error ...").

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tightfit::fit::FitError;
use tightfit::format::FormatError;
use tightfit::models::ModelError;
use tightfit::session::{SessionError, StoreError, StoreErrorKind};
use tightfit::steps::ConfigError;

use crate::report::Violation;

/// Why a call failed, before it is raised in Python (built without the GIL).
pub(crate) enum Failure {
    /// A message or tool schema has the wrong shape, or holds data that is not JSON.
    Format { path: String, reason: String },
    /// The model name does not resolve.
    Model(ModelError),
    /// A pipeline or argument value is wrong; the key names it.
    Config(ConfigError),
    /// The history cannot be fitted, or the result would break the provider's rules.
    Fit(FitError),
    /// A session's store failed, or holds what this build cannot read.
    Store(StoreError),
    /// Another engine error, raised as `tightfit.Error` with the engine's message.
    Other(String),
    /// A wrong Python type where the API needs another.
    Type(String),
    /// A bug: the engine panicked.
    Internal(String),
}

impl From<FormatError> for Failure {
    fn from(e: FormatError) -> Failure {
        match e {
            FormatError::Shape { path, reason } => Failure::Format { path, reason },
            other => Failure::Format { path: String::new(), reason: other.to_string() },
        }
    }
}

impl From<ModelError> for Failure {
    fn from(e: ModelError) -> Failure {
        Failure::Model(e)
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Failure {
        Failure::Config(e)
    }
}

impl From<FitError> for Failure {
    fn from(e: FitError) -> Failure {
        match e {
            // the offload store failed: a store error, as a session's is
            FitError::Store(e) => Failure::Store(e),
            e => Failure::Fit(e),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Store(e)
    }
}

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Failure {
        match e {
            SessionError::Fit(e) => Failure::Fit(e),
            SessionError::Store(e) => Failure::Store(e),
            other => Failure::Other(other.to_string()),
        }
    }
}

/// A store error's kind as `tightfit.StoreError.kind` says it.
fn store_kind(kind: StoreErrorKind) -> &'static str {
    match kind {
        StoreErrorKind::Open => "open",
        StoreErrorKind::ReadOnly => "read_only",
        StoreErrorKind::Locked => "locked",
        StoreErrorKind::Corrupt => "corrupt",
        StoreErrorKind::Version => "version",
        StoreErrorKind::NotFound => "not_found",
        StoreErrorKind::Unavailable => "unavailable",
        _ => "other",
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> PyErr {
        Python::attach(|py| failure.into_pyerr(py))
    }
}

/// The index of the message a path starts in: `messages[12].content` → 12.
fn message_index(path: &str) -> Option<usize> {
    let rest = path.strip_prefix("messages[")?;
    rest[..rest.find(']')?].parse().ok()
}

/// Runs `f`, turning a panic into [`Failure::Internal`].
pub(crate) fn guard<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(Failure::Internal(what))
    })
}

/// Raises `tightfit.errors.<class>(message, **attrs)`.
fn raise(py: Python<'_>, class: &str, message: String, attrs: Bound<'_, PyDict>) -> PyErr {
    let made = py
        .import("tightfit.errors")
        .and_then(|module| module.getattr(class))
        .and_then(|cls| cls.call((message,), Some(&attrs)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

impl Failure {
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let attrs = PyDict::new(py);
        let result: PyResult<PyErr> = (|| {
            Ok(match self {
                Failure::Format { path, reason } => {
                    let message = if path.is_empty() { reason.clone() } else { format!("{path}: {reason}") };
                    attrs.set_item("index", message_index(&path))?;
                    attrs.set_item("path", path)?;
                    attrs.set_item("reason", reason)?;
                    raise(py, "FormatError", message, attrs)
                }
                Failure::Model(e) => {
                    let message = e.to_string();
                    match e {
                        ModelError::Unknown { name, suggestions } => {
                            attrs.set_item("name", name)?;
                            attrs.set_item("suggestions", suggestions)?;
                            raise(py, "UnknownModel", message, attrs)
                        }
                        _ => raise(py, "Error", message, attrs),
                    }
                }
                Failure::Config(e) => {
                    let message = e.to_string();
                    attrs.set_item("key", e.key)?;
                    attrs.set_item("reason", e.reason)?;
                    raise(py, "ConfigError", message, attrs)
                }
                Failure::Fit(e) => {
                    let message = e.to_string();
                    match e {
                        FitError::CannotFit { what, needed, budget, over, must_keep } => {
                            attrs.set_item("what", what)?;
                            attrs.set_item("needed", needed)?;
                            attrs.set_item("budget", budget)?;
                            attrs.set_item("over", over)?;
                            attrs.set_item("must_keep", must_keep)?;
                            raise(py, "CannotFit", message, attrs)
                        }
                        FitError::Invalid { provider, violations, .. } => {
                            let list = PyList::empty(py);
                            for v in violations {
                                list.append(Violation::from(v))?;
                            }
                            attrs.set_item("provider", provider)?;
                            attrs.set_item("violations", list)?;
                            raise(py, "InvalidHistory", message, attrs)
                        }
                        FitError::Step(step) => {
                            attrs.set_item("step", step.step)?;
                            attrs.set_item("reason", step.reason)?;
                            raise(py, "StepFailed", message, attrs)
                        }
                        _ => raise(py, "Error", message, attrs),
                    }
                }
                Failure::Store(e) => {
                    let message = e.to_string();
                    attrs.set_item("kind", store_kind(e.kind))?;
                    attrs.set_item("store", e.store)?;
                    attrs.set_item("reason", e.reason)?;
                    raise(py, "StoreError", message, attrs)
                }
                Failure::Other(message) => raise(py, "Error", message, attrs),
                Failure::Type(message) => PyTypeError::new_err(message),
                Failure::Internal(what) => raise(
                    py,
                    "Error",
                    format!("internal error in tightfit (please report it): {what}"),
                    attrs,
                ),
            })
        })();
        result.unwrap_or_else(|e| e)
    }
}
