//! The counters and the text splitter of a trim, as the engine calls them: the engine's own
//! (`approximate`, `len`, a model's tokens) and the caller's Python functions, called on the
//! LangChain objects LangChain would pass them.

use std::collections::HashMap;

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use tightfit::compat::langchain::{
    Approximate, Item, Lines, ListCounter, MessageCount, ModelCount, PartialContent, Source, TextSplitter,
};
use tightfit::models::Registry;
use tightfit::tokens::ChatCounter;

use crate::errors::Failure;

/// The settings of `count_tokens_approximately`, from the adapter's keyword arguments.
pub(super) fn approximate(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Approximate> {
    let mut a = Approximate::default();
    if let Some(s) = settings {
        if let Some(v) = s.get_item("chars_per_token")? {
            a.chars_per_token = v.extract()?;
        }
        if let Some(v) = s.get_item("extra_tokens_per_message")? {
            a.extra_tokens_per_message = v.extract()?;
        }
        if let Some(v) = s.get_item("count_name")? {
            a.count_name = v.is_truthy()?;
        }
        if let Some(v) = s.get_item("tokens_per_image")? {
            a.tokens_per_image = v.extract()?;
        }
        if let Some(v) = s.get_item("use_usage_metadata_scaling")? {
            a.use_usage_metadata_scaling = v.is_truthy()?;
        }
    }
    Ok(a)
}

/// A Python counter.
pub(super) enum PyCounter<'py> {
    /// A function on a list of messages (or a model's `get_num_tokens_from_messages`).
    List(Bound<'py, PyAny>),
    /// A function on one message, summed; each message counted once.
    PerMessage(Bound<'py, PyAny>, HashMap<usize, f64>),
}

/// The counters the trim may use, all failing with a Python exception.
pub(super) enum Counter<'py> {
    Approximate(Approximate),
    Len,
    Model(ModelCount),
    Python { counter: PyCounter<'py>, objects: Bound<'py, PyList>, copies: HashMap<usize, Bound<'py, PyAny>> },
}

impl<'py> Counter<'py> {
    /// The object for `item`: the caller's message, or a deep copy of it holding the cut
    /// content (one copy per message, its content set before each count, as LangChain does).
    fn object(&mut self, item: Item<'_>) -> PyResult<Bound<'py, PyAny>> {
        let Counter::Python { objects, copies, .. } = self else {
            unreachable!("only Python counters build objects")
        };
        match item {
            Item::Whole(i) => objects.get_item(i),
            Item::Partial(i, cut) => {
                let original = objects.get_item(i)?;
                let copy = match copies.get(&i) {
                    Some(copy) => copy.clone(),
                    None => {
                        let copy = deep_copy(&original)?;
                        copies.insert(i, copy.clone());
                        copy
                    }
                };
                copy.setattr(intern!(copy.py(), "content"), cut_content(&original, cut)?)?;
                Ok(copy)
            }
        }
    }
}

impl Counter<'_> {
    /// A per-message counter's count of one message; each whole message is counted once.
    fn per_message(&mut self, item: Item<'_>) -> PyResult<f64> {
        if let (Item::Whole(i), Counter::Python { counter: PyCounter::PerMessage(_, cache), .. }) =
            (item, &*self)
        {
            if let Some(n) = cache.get(&i) {
                return Ok(*n);
            }
        }
        let object = self.object(item)?;
        let Counter::Python { counter: PyCounter::PerMessage(f, cache), .. } = self else {
            unreachable!("only per-message counters count one message")
        };
        let n = number(f.call1((object,))?)?;
        if let Item::Whole(i) = item {
            cache.insert(i, n);
        }
        Ok(n)
    }
}

pub(super) fn deep_copy<'py>(m: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(m.py());
    kwargs.set_item("deep", true)?;
    m.call_method(intern!(m.py(), "model_copy"), (), Some(&kwargs))
}

/// The content `cut` describes, from `original`'s content (blocks are the original's objects;
/// the output deep-copies them).
pub(super) fn cut_content<'py>(
    original: &Bound<'py, PyAny>,
    cut: &PartialContent,
) -> PyResult<Bound<'py, PyAny>> {
    let py = original.py();
    match cut {
        PartialContent::Text(s) => Ok(PyString::new(py, s).into_any()),
        PartialContent::Blocks { start, end, reversed } => {
            let content = original.getattr(intern!(py, "content"))?;
            let list = PyList::empty(py);
            let range: Box<dyn Iterator<Item = usize>> =
                if *reversed { Box::new((*start..*end).rev()) } else { Box::new(*start..*end) };
            for j in range {
                list.append(content.get_item(j)?)?;
            }
            Ok(list.into_any())
        }
    }
}

pub(super) fn number(value: Bound<'_, PyAny>) -> PyResult<f64> {
    value.extract::<f64>().map_err(|_| {
        let found = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!("token_counter returned {found}, expected a number"))
    })
}

impl ListCounter<PyErr> for Counter<'_> {
    fn count(&mut self, source: &dyn Source<PyErr>, items: &[Item<'_>]) -> PyResult<f64> {
        match self {
            Counter::Approximate(a) => ListCounter::count(a, source, items),
            Counter::Len => Ok(items.len() as f64),
            Counter::Model(m) => m.count(source, items),
            Counter::Python { counter: PyCounter::List(f), objects, .. } => {
                let py = objects.py();
                let f = f.clone();
                let list = PyList::empty(py);
                for item in items {
                    list.append(self.object(*item)?)?;
                }
                number(f.call1((list,))?)
            }
            Counter::Python { counter: PyCounter::PerMessage(..), .. } => {
                let mut sum = 0.0;
                for item in items {
                    sum += self.per_message(*item)?;
                }
                Ok(sum)
            }
        }
    }

    fn longest_prefix_within(
        &mut self,
        source: &dyn Source<PyErr>,
        order: &[usize],
        max: f64,
    ) -> Option<PyResult<usize>> {
        match self {
            Counter::Approximate(a) => a.longest_prefix_within(source, order, max),
            Counter::Len => MessageCount.longest_prefix_within(source, order, max),
            Counter::Model(m) => m.longest_prefix_within(source, order, max),
            Counter::Python { .. } => None,
        }
    }
}

/// The text splitter: LangChain's lines, or the caller's function.
pub(super) enum Splitter<'py> {
    Lines,
    Python(Bound<'py, PyAny>),
}

impl TextSplitter<PyErr> for Splitter<'_> {
    fn split(&mut self, text: &str) -> PyResult<Vec<String>> {
        match self {
            Splitter::Lines => Lines.split(text),
            Splitter::Python(f) => {
                let pieces = f.call1((text,))?;
                let mut out = Vec::new();
                for piece in pieces.try_iter()? {
                    let piece = piece?;
                    match piece.cast::<PyString>() {
                        Ok(s) => out.push(s.to_str()?.to_string()),
                        Err(_) => {
                            let found = piece.get_type().name()?;
                            return Err(PyTypeError::new_err(format!(
                                "text_splitter returned a {found} piece; expected str"
                            )));
                        }
                    }
                }
                Ok(out)
            }
        }
    }
}

/// The exact counter of `model` (from the registry; an unknown name raises `UnknownModel`).
pub(super) fn model_counter(model: &str) -> PyResult<ChatCounter> {
    let info = Registry::embedded().lookup(model).map_err(Failure::Model)?;
    Ok(ChatCounter::for_family(info.tokenizer))
}
