//! The native half of `tightfit.compat.langchain`: LangChain message objects read into the
//! engine's [`LangchainMessage`], the engine's `langchain_trim` run on them, and the kept
//! messages handed back as the caller's own objects (a cut message as a deep copy with its new
//! content, as LangChain makes it).
//!
//! Counters: `approximate`, `len` and a model's tokens (`count_tokens`) are counted by the
//! engine; a Python counter (a function on a message list, a function on one message, a chat
//! model's `get_num_tokens_from_messages`) is called from here on the lists the engine asks
//! about, a per-message function once per message. The choice of counter is made by the
//! Python adapter (it needs `inspect` and LangChain's own functions to recognise them).
//!
//! A trim holds the GIL: the engine reads each message from its Python object when its search
//! first needs it ([`read`]), so a trim of a long history reads only what it keeps. The whole-list
//! counts (`count_tokens_approximately`, `count_tokens`) read first, then count without it.

mod counters;
mod read;

use std::cell::OnceCell;
use std::collections::HashMap;

use pyo3::exceptions::{PyTypeError, PyValueError, PyZeroDivisionError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;
use tightfit::compat::langchain::{
    Kept, LangchainMessage, LangchainTrim, ModelCount, PartialContent, Strategy,
};

use crate::errors::{guard, Failure};
use counters::{approximate, cut_content, deep_copy, model_counter, Counter, PyCounter, Splitter};
use read::{json_at, read_message, type_spec, Classes, Needs, PySource};

/// Trims LangChain `messages` (already `BaseMessage` objects) as `trim_messages` does.
///
/// `counter_kind` is `approximate` (with `approximate` settings), `len`, `list` (`counter`
/// called on lists) or `message` (`counter` called on one message); `classes` are LangChain's
/// `AIMessage`, `HumanMessage`, `SystemMessage`, `ToolMessage`, `FunctionMessage`,
/// `ChatMessage`; `splitter` is a function or `None` for lines.
#[pyfunction]
#[pyo3(signature = (messages, *, max_tokens, counter_kind, classes, counter = None, approximate_settings = None, model = None, strategy = "last", allow_partial = false, include_system = false, start_on = None, end_on = None, splitter = None, keep_tool_pairs = true))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn langchain_trim<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    max_tokens: f64,
    counter_kind: &str,
    classes: &Bound<'py, PyTuple>,
    counter: Option<Bound<'py, PyAny>>,
    approximate_settings: Option<&Bound<'py, PyDict>>,
    model: Option<&str>,
    strategy: &str,
    allow_partial: bool,
    include_system: bool,
    start_on: Option<&Bound<'py, PyAny>>,
    end_on: Option<&Bound<'py, PyAny>>,
    splitter: Option<Bound<'py, PyAny>>,
    keep_tool_pairs: bool,
) -> PyResult<Bound<'py, PyList>> {
    let classes = Classes::read(classes)?;
    let mut type_classes = Vec::new();
    let step = LangchainTrim {
        max_tokens: Some(max_tokens),
        strategy: Strategy::from_name(strategy).map_err(Failure::Config)?,
        allow_partial,
        include_system,
        start_on: type_spec(start_on, "start", &mut type_classes)?,
        end_on: type_spec(end_on, "end", &mut type_classes)?,
        counter: Default::default(),
        keep_tool_pairs,
    };
    let mut counter = match (counter_kind, counter) {
        ("approximate", _) => Counter::Approximate(approximate(approximate_settings)?),
        ("len", _) => Counter::Len,
        ("model", _) => Counter::Model(ModelCount::new(model_counter(model.unwrap_or("gpt-4o"))?)),
        ("list", Some(f)) => {
            Counter::Python { counter: PyCounter::List(f), objects: messages.clone(), copies: HashMap::new() }
        }
        ("message", Some(f)) => Counter::Python {
            counter: PyCounter::PerMessage(f, HashMap::new()),
            objects: messages.clone(),
            copies: HashMap::new(),
        },
        (other, _) => {
            return Err(PyValueError::new_err(format!(
                "unknown counter kind {other:?} (or no counter given)"
            )))
        }
    };
    let model_count = matches!(counter, Counter::Model(_));
    let needs = Needs {
        content: matches!(counter, Counter::Approximate(_)) || model_count,
        text: model_count,
        tool_calls: matches!(counter, Counter::Approximate(_)),
        full_calls: model_count,
        usage: matches!(&counter, Counter::Approximate(a) if a.use_usage_metadata_scaling),
    };
    let source = PySource {
        objects: messages.clone(),
        cells: (0..messages.len()).map(|_| OnceCell::new()).collect(),
        classes,
        needs,
        type_classes,
    };
    let mut splitter = match splitter {
        Some(f) if !f.is_none() => Splitter::Python(f),
        _ => Splitter::Lines,
    };
    // the GIL stays held: messages are read from their Python objects as the search needs them
    let kept: Vec<Kept> = guard_py(|| step.trim(&source, max_tokens, &mut counter, &mut splitter))?;
    let out = PyList::empty(py);
    for k in kept {
        let original = messages.get_item(k.index)?;
        match &k.partial {
            None => out.append(original)?,
            Some(cut) => {
                let copy = deep_copy(&original)?;
                let content = match cut {
                    PartialContent::Text(s) => PyString::new(py, s).into_any(),
                    PartialContent::Blocks { .. } => cut_content(&copy, cut)?,
                };
                copy.setattr(intern!(py, "content"), content)?;
                out.append(copy)?;
            }
        }
    }
    Ok(out)
}

/// Runs `f`, turning an engine panic into `tightfit.Error` (a Python exception raised by a
/// counter passes through as it is).
fn guard_py<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    let mut inner = None;
    let outcome = guard(|| {
        inner = Some(f());
        Ok(())
    });
    match (outcome, inner) {
        (Ok(()), Some(result)) => result,
        (Err(failure), _) => Err(failure.into()),
        (Ok(()), None) => Err(Failure::Internal("the trim did not run".into()).into()),
    }
}

/// `count_tokens_approximately(messages, **settings, tools=...)` on LangChain messages;
/// `tools` are dicts (the adapter turns tool objects into LangChain's dicts first).
#[pyfunction]
#[pyo3(signature = (messages, *, classes, settings = None, tools = None))]
pub(crate) fn langchain_count_approximately<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    classes: &Bound<'py, PyTuple>,
    settings: Option<&Bound<'py, PyDict>>,
    tools: Option<&Bound<'py, PyAny>>,
) -> PyResult<i64> {
    let classes = Classes::read(classes)?;
    let a = approximate(settings)?;
    let needs = Needs {
        content: true,
        text: false,
        tool_calls: true,
        full_calls: false,
        usage: a.use_usage_metadata_scaling,
    };
    let lc: Vec<LangchainMessage> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| read_message(i, &m, &classes, needs, &[]))
        .collect::<PyResult<_>>()?;
    let tools: Vec<Value> = match tools {
        Some(t) if !t.is_none() => match json_at(t, || "tools".into())? {
            Value::Array(items) => items,
            _ => return Err(PyTypeError::new_err("tools: expected a list of tool schemas")),
        },
        _ => Vec::new(),
    };
    if a.chars_per_token == 0.0 && !(lc.is_empty() && tools.is_empty()) {
        // LangChain divides by it
        return Err(PyZeroDivisionError::new_err("float division by zero"));
    }
    Ok(py.detach(|| guard(|| Ok(a.count(&lc, &tools))))?)
}

/// `count_tokens(messages, model=...)`: the request tokens of LangChain messages for `model`,
/// as tightfit counts them (each message with its framing, plus the reply priming).
#[pyfunction]
#[pyo3(signature = (messages, *, classes, model = "gpt-4o"))]
pub(crate) fn langchain_count_model<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyList>,
    classes: &Bound<'py, PyTuple>,
    model: &str,
) -> PyResult<usize> {
    let classes = Classes::read(classes)?;
    let counter = ModelCount::new(model_counter(model)?);
    let needs = Needs { content: true, text: true, tool_calls: false, full_calls: true, usage: false };
    let lc: Vec<LangchainMessage> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| read_message(i, &m, &classes, needs, &[]))
        .collect::<PyResult<_>>()?;
    Ok(py.detach(|| guard(|| Ok(counter.count_messages(&lc))))?)
}
