//! What both formats share: a `content` value (null, a string, or a list of parts) and the
//! `tools` member of a request body. Each format supplies its own part reader and writer.

use serde_json::{Map, Value};

use super::path::{take_non_null, Path};
use super::FormatError;
use crate::message::{ContentForm, Part, TextPart, Tool};

/// Reads one element of a content list.
pub(super) type ReadPart = fn(Value, &Path) -> Result<Part, FormatError>;

/// Reads a `content` value; `expected` says what is allowed, for the error.
pub(super) fn read_content(
    value: Value,
    at: &Path,
    read_part: ReadPart,
    expected: &str,
) -> Result<(ContentForm, Vec<Part>), FormatError> {
    match value {
        Value::Null => Ok((ContentForm::Null, Vec::new())),
        Value::String(text) => Ok((ContentForm::Text, vec![Part::Text(TextPart::new(text))])),
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                parts.push(read_part(item, &at.index(i))?);
            }
            Ok((ContentForm::Parts, parts))
        }
        other => Err(at.expected(expected, &other)),
    }
}

/// Writes content parts in the shape `form` asks for, if it can (a string needs exactly one
/// plain text part); `None` means no `content` key.
pub(super) fn write_content(
    form: ContentForm,
    parts: &[&Part],
    write_part: fn(&Part) -> Value,
) -> Option<Value> {
    match (form, parts) {
        (ContentForm::Absent, []) => None,
        (ContentForm::Null, []) => Some(Value::Null),
        (ContentForm::Text, []) => Some(Value::String(String::new())),
        (ContentForm::Text | ContentForm::Null | ContentForm::Absent, [Part::Text(t)])
            if t.extra.is_empty() =>
        {
            Some(Value::String(t.text.clone()))
        }
        _ => Some(Value::Array(parts.iter().map(|p| write_part(p)).collect())),
    }
}

/// Takes the `tools` member of a request body: an array is read with `read_tools`; an
/// explicit null stays in `map`.
pub(super) fn take_tools(
    map: &mut Map<String, Value>,
    root: &Path,
    read_tools: fn(Vec<Value>, &Path) -> Result<Vec<Tool>, FormatError>,
) -> Result<Option<Vec<Tool>>, FormatError> {
    match take_non_null(map, "tools") {
        Some(Value::Array(items)) => Ok(Some(read_tools(items, &root.key("tools"))?)),
        None => Ok(None),
        Some(other) => Err(root.key("tools").expected("an array", &other)),
    }
}
