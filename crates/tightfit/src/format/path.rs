//! Where in a document a value sits, for error messages like
//! `messages[12].tool_calls[0].function.arguments: expected a string`.
//!
//! A [`Path`] is a borrowed linked list that lives on the stack while a reader descends, so
//! building one costs nothing; it is only turned into a string when an error is reported.

use std::fmt;

use serde_json::{Map, Value};

use super::FormatError;

/// A location in a JSON document.
#[derive(Clone, Copy)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
}

#[derive(Clone, Copy)]
enum Segment<'a> {
    Root(&'a str),
    Key(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    /// The root of a document; `name` is how it is written (`messages`, or empty).
    pub(crate) fn root(name: &'a str) -> Path<'a> {
        Path { parent: None, segment: Segment::Root(name) }
    }

    /// The member `key` of the object here.
    pub(crate) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path { parent: Some(self), segment: Segment::Key(key) }
    }

    /// The element `index` of the array here.
    pub(crate) fn index(&'a self, index: usize) -> Path<'a> {
        Path { parent: Some(self), segment: Segment::Index(index) }
    }

    /// An error at this location.
    pub(crate) fn error(&self, reason: impl Into<String>) -> FormatError {
        FormatError::Shape { path: self.to_string(), reason: reason.into() }
    }

    /// The error for a value of the wrong JSON type.
    pub(crate) fn expected(&self, what: &str, found: &Value) -> FormatError {
        self.error(format!("expected {what}, found {}", kind_of(found)))
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // a member of an unnamed root is written bare: `messages[3]`, not `$.messages[3]`
        let bare_member = matches!(
            (self.parent.map(|p| p.segment), self.segment),
            (Some(Segment::Root("")), Segment::Key(_))
        );
        if let (Some(parent), false) = (self.parent, bare_member) {
            parent.fmt(f)?;
        }
        match self.segment {
            Segment::Root(name) => f.write_str(if name.is_empty() { "$" } else { name }),
            Segment::Key(key) if bare_member => f.write_str(key),
            Segment::Key(key) => write!(f, ".{key}"),
            Segment::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// The JSON type of a value, as an error message names it.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn string(value: Value, path: &Path) -> Result<String, FormatError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(path.expected("a string", &other)),
    }
}

pub(crate) fn object(value: Value, path: &Path) -> Result<Map<String, Value>, FormatError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(path.expected("an object", &other)),
    }
}

pub(crate) fn array(value: Value, path: &Path) -> Result<Vec<Value>, FormatError> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(path.expected("an array", &other)),
    }
}

/// Removes `key` from `map` keeping the order of the rest (O(len), objects here are small).
pub(crate) fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.shift_remove(key)
}

/// Removes `key` unless its value is null. An explicit null is not interpreted: it stays in
/// `map`, where it was, and is written back with the other extra fields.
pub(crate) fn take_non_null(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    if map.get(key)?.is_null() {
        return None;
    }
    take(map, key)
}

/// An optional string member: absent or null is `None` (a null stays in `map`).
pub(crate) fn take_optional_string(
    map: &mut Map<String, Value>,
    key: &str,
    at: &Path,
) -> Result<Option<String>, FormatError> {
    take_non_null(map, key).map(|value| string(value, &at.key(key))).transpose()
}
