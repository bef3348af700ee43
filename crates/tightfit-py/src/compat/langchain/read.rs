//! Reading LangChain message objects into the engine's [`LangchainMessage`]: only what the
//! counter needs, on first use, and without copying what is only measured (a string by its
//! length, tool calls measured in place).

use std::borrow::Cow;
use std::cell::OnceCell;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use serde_json::Value;
use tightfit::compat::langchain::{LangchainContent, LangchainMessage, Source};
use tightfit::compat::python::text::{node_repr_len, ReprNode, Shape};

use crate::convert::to_value;
use crate::errors::Failure;

/// LangChain's message classes, in the order the adapter passes them.
pub(super) struct Classes<'py> {
    pub(super) ai: Bound<'py, PyAny>,
    pub(super) human: Bound<'py, PyAny>,
    pub(super) system: Bound<'py, PyAny>,
    pub(super) tool: Bound<'py, PyAny>,
    pub(super) function: Bound<'py, PyAny>,
    pub(super) chat: Bound<'py, PyAny>,
}

impl<'py> Classes<'py> {
    pub(super) fn read(classes: &Bound<'py, PyTuple>) -> PyResult<Classes<'py>> {
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
pub(super) struct Needs {
    /// The content (a string by its length unless `text`).
    pub(super) content: bool,
    /// A string content's text.
    pub(super) text: bool,
    /// The length of the tool calls' repr.
    pub(super) tool_calls: bool,
    /// The tool calls themselves, as JSON.
    pub(super) full_calls: bool,
    /// An AI message's provider and reported usage.
    pub(super) usage: bool,
}

pub(super) fn json_at(value: &Bound<'_, PyAny>, path: impl FnOnce() -> String) -> PyResult<Value> {
    to_value(value).map_err(|e| Failure::Format { path: e.path(&path()), reason: e.reason.clone() }.into())
}

/// Which LangChain class a message is (the first match in `_get_message_openai_role`'s order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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
pub(super) fn kind_of(m: &Bound<'_, PyAny>, c: &Classes<'_>) -> PyResult<Kind> {
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
pub(super) fn openai_role(m: &Bound<'_, PyAny>, kind: Kind) -> PyResult<String> {
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
pub(super) fn read_content(i: usize, m: &Bound<'_, PyAny>, text: bool) -> PyResult<LangchainContent> {
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
pub(super) fn read_message(
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
pub(super) struct PyNode<'py>(Bound<'py, PyAny>);

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
pub(super) fn type_spec<'py>(
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

/// The caller's messages, each read into a [`LangchainMessage`] the first time the engine
/// asks for it: a trim reads only what its search passes.
pub(super) struct PySource<'py> {
    pub(super) objects: Bound<'py, PyList>,
    pub(super) cells: Vec<OnceCell<LangchainMessage>>,
    pub(super) classes: Classes<'py>,
    pub(super) needs: Needs,
    pub(super) type_classes: Vec<(String, Bound<'py, PyAny>)>,
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
