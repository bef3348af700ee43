//! The native half of `tightfit.compat.langchain`: LangChain message objects read into the
//! engine's [`LangchainMessage`], the engine's `langchain_trim` run on them, and the kept
//! messages handed back as the caller's own objects (a cut message as a deep copy with its new
//! content, as LangChain makes it).
//!
//! Counters: `approximate` and `len` are counted by the engine with the GIL released; a Python
//! counter (a function on a message list, a function on one message, a chat model's
//! `get_num_tokens_from_messages`) is called from here on the lists the engine asks about, a
//! per-message function once per message. The choice of counter is made by the Python adapter
//! (it needs `inspect` and LangChain's own functions to recognise them).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;

use pyo3::exceptions::{PyTypeError, PyValueError, PyZeroDivisionError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use serde_json::Value;
use tightfit::models::Registry;
use tightfit::steps::{
    Item, Kept, LangchainTrim, Lines, ListCounter, MessageCount, ModelCount, PartialContent, Source,
    Strategy, TextSplitter,
};
use tightfit::tokens::python_text::{node_repr_len, ReprNode, Shape};
use tightfit::tokens::{Approximate, ChatCounter, LangchainContent, LangchainMessage};

use crate::convert::to_value;
use crate::errors::{guard, Failure};

/// LangChain's message classes, in the order the adapter passes them.
struct Classes<'py> {
    ai: Bound<'py, PyAny>,
    human: Bound<'py, PyAny>,
    system: Bound<'py, PyAny>,
    tool: Bound<'py, PyAny>,
    function: Bound<'py, PyAny>,
    chat: Bound<'py, PyAny>,
}

impl<'py> Classes<'py> {
    fn read(classes: &Bound<'py, PyTuple>) -> PyResult<Classes<'py>> {
        let get = |i: usize| classes.get_item(i);
        Ok(Classes {
            ai: get(0)?,
            human: get(1)?,
            system: get(2)?,
            tool: get(3)?,
            function: get(4)?,
            chat: get(5)?,
        })
    }
}

/// What of each message to read: everything costs a walk of its content.
#[derive(Clone, Copy)]
struct Needs {
    /// The content (a string by its length unless `text`).
    content: bool,
    /// A string content's text.
    text: bool,
    /// The length of the tool calls' repr.
    tool_calls: bool,
    /// The tool calls themselves, as JSON.
    full_calls: bool,
    /// An AI message's provider and reported usage.
    usage: bool,
}

/// The settings of `count_tokens_approximately`, from the adapter's keyword arguments.
fn approximate(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Approximate> {
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

fn json_at(value: &Bound<'_, PyAny>, path: impl FnOnce() -> String) -> PyResult<Value> {
    to_value(value).map_err(|e| Failure::Format { path: e.path(&path()), reason: e.reason.clone() }.into())
}

/// Which LangChain class a message is (the first match in `_get_message_openai_role`'s order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ai,
    Human,
    Tool,
    System,
    Function,
    Chat,
    Other,
}

/// The message's [`Kind`]: its exact class first (a pointer comparison), then `isinstance`
/// for subclasses such as chunks (LangChain's classes have an ABC metaclass, which makes each
/// `isinstance` cost a cache lookup).
fn kind_of(m: &Bound<'_, PyAny>, c: &Classes<'_>) -> PyResult<Kind> {
    let order = [
        (&c.ai, Kind::Ai),
        (&c.human, Kind::Human),
        (&c.tool, Kind::Tool),
        (&c.system, Kind::System),
        (&c.function, Kind::Function),
        (&c.chat, Kind::Chat),
    ];
    let class = m.get_type();
    if let Some((_, kind)) = order.iter().find(|(cls, _)| class.is(*cls)) {
        return Ok(*kind);
    }
    for (cls, kind) in order {
        if m.is_instance(cls)? {
            return Ok(kind);
        }
    }
    Ok(Kind::Other)
}

/// `_get_message_openai_role`.
fn openai_role(m: &Bound<'_, PyAny>, kind: Kind) -> PyResult<String> {
    let py = m.py();
    Ok(match kind {
        Kind::Ai => "assistant".into(),
        Kind::Human => "user".into(),
        Kind::Tool => "tool".into(),
        Kind::System => {
            let extra = m.getattr(intern!(py, "additional_kwargs"))?;
            let role = extra.call_method1(intern!(py, "get"), ("__openai_role__", "system"))?;
            match role.cast::<PyString>() {
                Ok(s) => s.to_string(),
                Err(_) => {
                    let found = role.get_type().name()?;
                    return Err(PyTypeError::new_err(format!(
                        "Expected '__openai_role__' to be a str, got {found}"
                    )));
                }
            }
        }
        Kind::Function => "function".into(),
        Kind::Chat => m.getattr(intern!(py, "role"))?.extract()?,
        Kind::Other => {
            let class = m.get_type();
            return Err(PyValueError::new_err(format!("Unknown BaseMessage type {}.", class.repr()?)));
        }
    })
}

/// The content of message `m` (`i`): a string by its length only unless `text` is asked for.
fn read_content(i: usize, m: &Bound<'_, PyAny>, text: bool) -> PyResult<LangchainContent> {
    let content = m.getattr(intern!(m.py(), "content"))?;
    Ok(if let Ok(s) = content.cast::<PyString>() {
        if text {
            LangchainContent::Text(s.to_str()?.to_string())
        } else {
            LangchainContent::Chars(s.len()?)
        }
    } else if let Ok(list) = content.cast::<PyList>() {
        let mut blocks = Vec::with_capacity(list.len());
        for (j, block) in list.iter().enumerate() {
            blocks.push(json_at(&block, || format!("messages[{i}].content[{j}]"))?);
        }
        LangchainContent::Blocks(blocks)
    } else {
        LangchainContent::Other(content.repr()?.to_string())
    })
}

/// Reads message `i` (a LangChain `BaseMessage`).
fn read_message(
    i: usize,
    m: &Bound<'_, PyAny>,
    c: &Classes<'_>,
    needs: Needs,
    type_classes: &[(String, Bound<'_, PyAny>)],
) -> PyResult<LangchainMessage> {
    let py = m.py();
    let type_: String = m.getattr(intern!(py, "type"))?.extract()?;
    let mut types = vec![type_];
    for (name, class) in type_classes {
        if m.is_instance(class)? {
            types.push(name.clone());
        }
    }
    let kind = kind_of(m, c)?;
    let (is_ai, is_tool) = (kind == Kind::Ai, kind == Kind::Tool);
    let content = if needs.content { read_content(i, m, needs.text)? } else { LangchainContent::Chars(0) };
    let name: Option<String> = m.getattr(intern!(py, "name"))?.extract()?;
    let mut message = LangchainMessage {
        types,
        role: if needs.content { openai_role(m, kind)? } else { String::new() },
        content,
        name,
        is_ai,
        is_system: kind == Kind::System,
        tool_calls: Vec::new(),
        call_ids: Vec::new(),
        tool_calls_repr_len: None,
        tool_call_id: None,
        model_provider: None,
        total_tokens: None,
    };
    if is_tool {
        message.tool_call_id = Some(m.getattr(intern!(py, "tool_call_id"))?.extract()?);
    }
    if is_ai {
        let calls = m.getattr(intern!(py, "tool_calls"))?;
        // the ids, for keeping calls with their results; for counting, Python's own repr
        for call in calls.try_iter()? {
            let id = call?.get_item(intern!(py, "id"))?;
            message.call_ids.push(if id.is_none() { None } else { Some(id.extract()?) });
        }
        if needs.tool_calls && !message.call_ids.is_empty() {
            message.tool_calls_repr_len = Some(node_repr_len(&PyNode(calls.clone()))?);
        }
        if needs.full_calls {
            if let Value::Array(calls) = json_at(&calls, || format!("messages[{i}].tool_calls"))? {
                message.tool_calls = calls;
            }
        }
    }
    if is_ai && needs.usage {
        let meta = m.getattr(intern!(py, "response_metadata"))?;
        let provider = meta.call_method1(intern!(py, "get"), ("model_provider",))?;
        if !provider.is_none() {
            message.model_provider = Some(json_at(&provider, || format!("messages[{i}].response_metadata"))?);
        }
        let usage = m.getattr(intern!(py, "usage_metadata"))?;
        if !usage.is_none() {
            if let Some(total) =
                usage.get_item("total_tokens").ok().filter(|t| t.is_exact_instance_of::<pyo3::types::PyInt>())
            {
                message.total_tokens = Some(total.extract()?);
            }
        }
    }
    Ok(message)
}

/// A Python object as the engine's `repr()` measure sees it: walked in place, ASCII strings
/// read from Python's own UTF-8, nothing copied; other strings and anything but the builtin
/// JSON-like types are measured by their own `repr()` (exact whatever the Unicode version).
struct PyNode<'py>(Bound<'py, PyAny>);

impl<'py> ReprNode for PyNode<'py> {
    type Error = PyErr;

    fn shape(&self) -> PyResult<Shape<'_, PyNode<'py>>> {
        let o = &self.0;
        if let Ok(s) = o.cast_exact::<PyString>() {
            // ASCII is measured here; other text by Python, whose Unicode tables decide
            // which characters its repr escapes
            if let Ok(text) = s.to_str() {
                if text.is_ascii() {
                    return Ok(Shape::Str(text));
                }
            }
        } else if o.is_none() {
            return Ok(Shape::None);
        } else if let Ok(b) = o.cast_exact::<PyBool>() {
            return Ok(Shape::Bool(b.is_true()));
        } else if let Ok(i) = o.cast_exact::<PyInt>() {
            if let Ok(i) = i.extract::<i64>() {
                return Ok(Shape::Int(i));
            }
        } else if let Ok(f) = o.cast_exact::<PyFloat>() {
            return Ok(Shape::Float(f.value()));
        } else if let Ok(list) = o.cast_exact::<PyList>() {
            return Ok(Shape::List(list.iter().map(PyNode).collect()));
        } else if let Ok(tuple) = o.cast_exact::<PyTuple>() {
            return Ok(Shape::Tuple(tuple.iter().map(PyNode).collect()));
        } else if let Ok(dict) = o.cast_exact::<PyDict>() {
            return Ok(Shape::Dict(dict.iter().map(|(k, v)| (PyNode(k), PyNode(v))).collect()));
        }
        Ok(Shape::Opaque(o.repr()?.len()?))
    }
}

/// `start_on` / `end_on`: type names, and classes as synthetic names the messages that are
/// instances of them answer to.
fn type_spec<'py>(
    spec: Option<&Bound<'py, PyAny>>,
    which: &str,
    classes: &mut Vec<(String, Bound<'py, PyAny>)>,
) -> PyResult<Option<Vec<String>>> {
    let Some(spec) = spec.filter(|s| !s.is_none()) else { return Ok(None) };
    if !spec.is_truthy()? {
        return Ok(None);
    }
    let items: Vec<Bound<'py, PyAny>> =
        if spec.is_instance_of::<PyString>() || spec.is_instance_of::<PyType>() {
            vec![spec.clone()]
        } else {
            spec.try_iter()?.collect::<PyResult<_>>()?
        };
    let mut names = Vec::new();
    for item in items {
        if let Ok(s) = item.cast::<PyString>() {
            names.push(s.to_string());
        } else if item.is_instance_of::<PyType>() {
            let name = format!("\u{0}{which}:{}", classes.len());
            classes.push((name.clone(), item));
            names.push(name);
        }
    }
    Ok(Some(names))
}

/// A Python counter.
enum PyCounter<'py> {
    /// A function on a list of messages (or a model's `get_num_tokens_from_messages`).
    List(Bound<'py, PyAny>),
    /// A function on one message, summed; each message counted once.
    PerMessage(Bound<'py, PyAny>, HashMap<usize, f64>),
}

/// The counters the trim may use, all failing with a Python exception.
enum Counter<'py> {
    Approximate(Approximate),
    Len,
    Model(ModelCount),
    Python { counter: PyCounter<'py>, objects: Bound<'py, PyList>, copies: HashMap<usize, Bound<'py, PyAny>> },
}

/// The caller's messages, each read into a [`LangchainMessage`] the first time the engine
/// asks for it: a trim reads only what its search passes.
struct PySource<'py> {
    objects: Bound<'py, PyList>,
    cells: Vec<OnceCell<LangchainMessage>>,
    classes: Classes<'py>,
    needs: Needs,
    type_classes: Vec<(String, Bound<'py, PyAny>)>,
}

impl Source<PyErr> for PySource<'_> {
    fn len(&self) -> usize {
        self.cells.len()
    }

    fn message(&self, i: usize) -> PyResult<&LangchainMessage> {
        let cell = &self.cells[i];
        if let Some(m) = cell.get() {
            return Ok(m);
        }
        let m = read_message(i, &self.objects.get_item(i)?, &self.classes, self.needs, &self.type_classes)?;
        Ok(cell.get_or_init(|| m))
    }

    fn content(&self, i: usize) -> PyResult<Cow<'_, LangchainContent>> {
        match &self.message(i)?.content {
            LangchainContent::Chars(_) => Ok(Cow::Owned(read_content(i, &self.objects.get_item(i)?, true)?)),
            other => Ok(Cow::Borrowed(other)),
        }
    }
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

fn deep_copy<'py>(m: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(m.py());
    kwargs.set_item("deep", true)?;
    m.call_method(intern!(m.py(), "model_copy"), (), Some(&kwargs))
}

/// The content `cut` describes, from `original`'s content (blocks are the original's objects;
/// the output deep-copies them).
fn cut_content<'py>(original: &Bound<'py, PyAny>, cut: &PartialContent) -> PyResult<Bound<'py, PyAny>> {
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

fn number(value: Bound<'_, PyAny>) -> PyResult<f64> {
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
enum Splitter<'py> {
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
    Ok(py.detach(|| a.count(&lc, &tools)))
}

/// The exact counter of `model` (from the registry; an unknown name raises `UnknownModel`).
fn model_counter(model: &str) -> PyResult<ChatCounter> {
    let info = Registry::embedded().lookup(model).map_err(Failure::Model)?;
    Ok(ChatCounter::for_family(info.tokenizer))
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
    Ok(py.detach(|| counter.count_messages(&lc)))
}
