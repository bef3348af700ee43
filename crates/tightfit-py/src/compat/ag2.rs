//! The engine's AG2 steps for `tightfit.compat.ag2`, reading the caller's list lazily.
//!
//! AG2's limiters look at a window at the end of a history, so converting the whole list
//! (about 10 ms for 5,000 agent messages) would cost more than AG2 itself. These classes hand
//! the engine's selections ([`Ag2HistoryLimiter::select`], [`Ag2TokenLimiter::select`]) an
//! accessor over the Python list: a message is read when the engine asks for it, and the
//! messages it keeps unchanged go back as the caller's own dicts. The GIL stays held (the
//! reads are Python calls); the token work between them is the engine's.

use std::borrow::Cow;
use std::sync::{Mutex, TryLockError};

use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;
use tightfit::compat::ag2::select::Shape;
use tightfit::compat::ag2::{string_tokens, text_tokens, Ag2Error, Ag2HistoryLimiter, Ag2TokenLimiter};
use tightfit::compat::python::TiktokenMemo;
use tightfit::config::{FromParams, Params};
use tightfit::fit::{Fitter, RunOptions};
use tightfit::format::{messages_to_value, parse_messages, Format, FormatError};
use tightfit::message::Message;
use tightfit::steps::Step;
use tightfit::tokens::{ChatCounter, OpenAiEncoding};

use crate::convert::{to_python, to_value};
use crate::errors::Failure;
use crate::input::RawInput;
use crate::pipeline::PyPipeline;

/// The caller's messages as a list to index (a tuple is copied into one: references only).
fn items<'py>(messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    if let Ok(list) = messages.cast::<PyList>() {
        return Ok(list.clone());
    }
    if let Ok(tuple) = messages.cast::<PyTuple>() {
        return PyList::new(messages.py(), tuple.iter());
    }
    let found = messages.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(Failure::Type(format!("messages: expected a list of message dicts, found {found}")).into())
}

/// A step's configuration map (what a step class's `to_config()` gives), read by the engine.
fn params(config: &Bound<'_, PyAny>) -> Result<Params, Failure> {
    let value = to_value(config)
        .map_err(|e| Failure::Config(tightfit::steps::ConfigError::new(e.path(""), e.reason)))?;
    match value {
        Value::Object(mut map) => {
            map.remove("type");
            Ok(Params::new(map))
        }
        _ => Err(Failure::Type("expected a configuration dict".into())),
    }
}

fn built<S: FromParams + Step>(config: &Bound<'_, PyAny>) -> Result<S, Failure> {
    let mut p = params(config)?;
    let step = S::from_params(&mut p)?;
    p.finish()?;
    step.check()?;
    Ok(step)
}

/// Message `index` of the caller's list, parsed as OpenAI: one message converted.
fn read_message(item: &Bound<'_, PyAny>, index: usize) -> Result<Message, Failure> {
    let at = format!("messages[{index}]");
    let value =
        to_value(item).map_err(|e| Failure::Format { path: e.path(&at), reason: e.reason.clone() })?;
    let parsed = parse_messages(Value::Array(vec![value]), Format::OpenAi).map_err(|e| match e {
        FormatError::Shape { path, reason } => {
            let path = path.strip_prefix("messages[0]").map_or(path.clone(), |rest| format!("{at}{rest}"));
            Failure::Format { path, reason }
        }
        other => Failure::from(other),
    })?;
    parsed.into_iter().next().ok_or_else(|| Failure::Internal("one message parsed as none".into()))
}

/// A string field of a message dict, if it is a string.
fn string_field(dict: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<String>> {
    Ok(match dict.get_item(key)? {
        Some(v) => v.cast::<PyString>().ok().map(|s| s.to_string_lossy().into_owned()),
        None => None,
    })
}

/// What the selection reads of message `index`, straight from its dict (role, name, call
/// ids, answered ids; as [`Shape::of`] reads a parsed message): a few lookups instead of converting its content.
fn shape_of(item: &Bound<'_, PyAny>, index: usize) -> PyResult<Shape> {
    let Ok(dict) = item.cast::<PyDict>() else {
        let found = item.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(Failure::Format {
            path: format!("messages[{index}]"),
            reason: format!("expected a dict, found {found}"),
        }
        .into());
    };
    // the name is read apart, only when names are excluded
    let role = string_field(dict, "role")?.unwrap_or_default();
    let mut shape = Shape::default();
    if let Some(id) = string_field(dict, "tool_call_id")? {
        shape.answers.push(id);
    }
    if let Some(calls) = dict.get_item("tool_calls")? {
        if let Ok(calls) = calls.cast::<PyList>() {
            for call in calls.iter() {
                if let Ok(call) = call.cast::<PyDict>() {
                    shape.calls.extend(string_field(call, "id")?);
                }
            }
        }
    }
    // Anthropic-style result blocks carried in an OpenAI list content
    if let Some(content) = dict.get_item("content")? {
        if let Ok(content) = content.cast::<PyList>() {
            for block in content.iter() {
                if let Ok(block) = block.cast::<PyDict>() {
                    if string_field(block, "type")?.as_deref() == Some("tool_result") {
                        shape.answers.extend(string_field(block, "tool_use_id")?);
                        shape.is_result = true;
                    }
                }
            }
        }
    }
    shape.is_result |= role == "tool";
    shape.role = role;
    Ok(shape)
}

/// The name of message `index`, borrowed from its dict, given to `test`.
fn name_test(item: &Bound<'_, PyAny>, test: impl Fn(Option<&str>) -> bool) -> PyResult<bool> {
    let Ok(dict) = item.cast::<PyDict>() else { return Ok(test(None)) };
    Ok(match dict.get_item("name")? {
        Some(name) => match name.cast::<PyString>() {
            Ok(s) => test(Some(s.to_str()?)),
            Err(_) => test(None),
        },
        None => test(None),
    })
}

/// AG2's `MessageHistoryLimiter`, built once from its configuration.
#[pyclass(frozen, module = "tightfit._native", name = "Ag2HistoryLimiter")]
pub(crate) struct PyAg2HistoryLimiter {
    inner: Ag2HistoryLimiter,
}

#[pymethods]
impl PyAg2HistoryLimiter {
    /// From an `ag2_history_limiter` configuration map; `ConfigError` names a bad key.
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<PyAg2HistoryLimiter> {
        Ok(PyAg2HistoryLimiter { inner: built(config)? })
    }

    /// The kept messages, the caller's own dicts, in order. Reads the window (and every
    /// message's name when names are excluded), nothing else.
    fn apply<'py>(&self, py: Python<'py>, messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let items = items(messages)?;
        let mut read = |i: usize| shape_of(&items.get_item(i)?, i);
        let mut excluded = |i: usize| name_test(&items.get_item(i)?, |name| self.inner.excludes(name));
        let kept = self.inner.select(items.len(), &mut read, &mut excluded)?;
        let out = PyList::empty(py);
        for i in kept {
            out.append(items.get_item(i)?)?;
        }
        Ok(out)
    }
}

/// Why reading a message for the token limiter failed: the caller's data, or AG2's rule.
enum TokenFailure {
    Py(PyErr),
    Peer(Ag2Error),
}

impl From<Ag2Error> for TokenFailure {
    fn from(e: Ag2Error) -> TokenFailure {
        TokenFailure::Peer(e)
    }
}

/// AG2's exceptions for its failures: `ValueError` (as `tightfit.FormatError`) for text
/// tiktoken refuses, `KeyError` for a model tiktoken does not know, `TypeError` / `KeyError`
/// for content items AG2 cannot index.
fn peer_error(e: Ag2Error) -> PyErr {
    let message = e.to_string();
    match e {
        Ag2Error::SpecialToken { index, .. } => Failure::Format {
            path: format!("messages[{index}].content"),
            reason: message.split_once(": ").map_or(message.clone(), |(_, r)| r.to_string()),
        }
        .into(),
        Ag2Error::Model(tightfit::compat::python::tiktoken::EncodingError::UnknownModel(_)) => {
            PyKeyError::new_err(message)
        }
        Ag2Error::Model(_) => Failure::Config(tightfit::steps::ConfigError::new("model", message)).into(),
        Ag2Error::ContentItem { key_error: true, .. } => PyKeyError::new_err(message),
        _ => PyTypeError::new_err(message),
    }
}

fn token_error(e: TokenFailure) -> PyErr {
    match e {
        TokenFailure::Py(e) => e,
        TokenFailure::Peer(e) => peer_error(e),
    }
}

/// AG2's `MessageTokenLimiter`, built once from its configuration, with what it has counted
/// so far: AG2 runs it on every turn over the whole history, so from the second turn on only
/// new texts are tokenized.
#[pyclass(frozen, module = "tightfit._native", name = "Ag2TokenLimiter")]
pub(crate) struct PyAg2TokenLimiter {
    inner: Ag2TokenLimiter,
    memo: Mutex<TiktokenMemo>,
}

impl PyAg2TokenLimiter {
    /// `work` with the limiter's memo, or with a fresh one while another thread uses it:
    /// waiting for it could deadlock on the GIL, and a fresh memo only costs speed.
    fn with_memo<R>(&self, work: impl FnOnce(&mut TiktokenMemo) -> R) -> R {
        match self.memo.try_lock() {
            Ok(mut memo) => work(&mut memo),
            Err(TryLockError::Poisoned(poisoned)) => {
                // a panic mid-run may have left a half-written entry: start again
                let mut memo = poisoned.into_inner();
                *memo = TiktokenMemo::new();
                work(&mut memo)
            }
            Err(TryLockError::WouldBlock) => work(&mut TiktokenMemo::new()),
        }
    }
}

#[pymethods]
impl PyAg2TokenLimiter {
    /// From an `ag2_token_limiter` configuration map; `ConfigError` names a bad key.
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<PyAg2TokenLimiter> {
        Ok(PyAg2TokenLimiter { inner: built(config)?, memo: Mutex::new(TiktokenMemo::new()) })
    }

    /// What AG2 prints when built with these settings (limits capped to its context size).
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    /// The kept messages in order: the caller's dicts where unchanged, new dicts where cut.
    /// Reads messages from the newest back to the cut (all of them with `min_tokens`).
    fn apply<'py>(&self, py: Python<'py>, messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let items = items(messages)?;
        let mut read = |i: usize| -> Result<Cow<'static, Message>, TokenFailure> {
            let item = items.get_item(i).map_err(TokenFailure::Py)?;
            read_message(&item, i).map(Cow::Owned).map_err(|f| TokenFailure::Py(f.into()))
        };
        let kept =
            self.with_memo(|memo| self.inner.select(items.len(), &mut read, memo)).map_err(token_error)?;
        let out = PyList::empty(py);
        for k in kept {
            match k.changed {
                Some(message) => {
                    let value = messages_to_value(std::slice::from_ref(&message), Format::OpenAi);
                    let Value::Array(mut values) = value else { unreachable!("an array of messages") };
                    out.append(to_python(py, &values.remove(0))?)?;
                }
                None => out.append(items.get_item(k.index)?)?,
            }
        }
        Ok(out)
    }

    /// The text tokens AG2 counts in `messages` (its `get_logs` and `min_tokens`): content
    /// strings and the text of content items, cl100k_base, remembered for the next call.
    /// A content string is borrowed from Python as it is (no copy: `get_logs` runs on every
    /// turn over the whole history), other messages are converted; the counting runs with
    /// the GIL released.
    fn text_tokens(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<usize> {
        let items = items(messages)?;
        let mut held = Vec::new();
        let mut contents = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let content = item.cast::<PyDict>().ok().map(|d| d.get_item("content")).transpose()?.flatten();
            match content.map(|c| c.cast_into::<PyString>()) {
                Some(Ok(s)) => {
                    contents.push(Content::String(held.len()));
                    held.push(s);
                }
                _ => contents.push(Content::Message(read_message(&item, i)?)),
            }
        }
        let strings: Vec<&str> = held.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
        py.detach(|| {
            self.with_memo(|memo| {
                contents.iter().enumerate().try_fold(0, |total, (i, content)| {
                    Ok::<_, Ag2Error>(
                        total
                            + match content {
                                Content::String(k) => string_tokens(strings[*k], i, memo)?,
                                Content::Message(m) => text_tokens(m, i, memo)?,
                            },
                    )
                })
            })
        })
        .map_err(peer_error)
    }
}

/// A message's content for [`PyAg2TokenLimiter::text_tokens`]: a string (the index of the
/// Python string, borrowed as it is), or the message converted.
enum Content {
    String(usize),
    Message(Message),
}

/// Runs `pipeline`'s steps over OpenAI `messages` as they are: no budget, no repair of a
/// broken input, no validation (a peer's transform passes its input's faults through), and no
/// token counts (so only for steps that do not count). Returns the messages (the caller's
/// dicts where unchanged) and how many messages a step changed.
#[pyfunction]
pub(crate) fn apply_steps<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    pipeline: &Bound<'py, PyPipeline>,
) -> PyResult<(Bound<'py, PyList>, usize)> {
    let raw = RawInput::read(messages, None, Some("openai"))?;
    let pipeline = pipeline.get().inner.clone();
    let plan = py.detach(|| -> Result<_, Failure> {
        let conversation = raw.parse()?;
        // the steps alone: no budget, no repair, no validation, no token counts
        let options = RunOptions::steps_only().with_provider(Format::OpenAi);
        let counter = ChatCounter::openai(OpenAiEncoding::O200kBase);
        Fitter::new()
            .run(&conversation, &counter, Some(&pipeline), &options)
            .map(|fitted| fitted.plan)
            .map_err(Failure::Fit)
    })?;
    let out = PyList::empty(py);
    let mut changed = 0;
    for entry in &plan.output {
        match (&entry.message, entry.input) {
            (Some(message), _) => {
                changed += 1;
                out.append(to_python(py, message)?)?;
            }
            (None, Some(i)) => out.append(messages.get_item(i)?)?,
            (None, None) => {
                return Err(Failure::Internal("a plan entry with neither input nor message".into()).into())
            }
        }
    }
    Ok((out, changed))
}
