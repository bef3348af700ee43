//! autogen-core's message model (`LLMMessage`), as the autogen steps and counter see it.
//!
//! autogen-core keeps four kinds of message, and its contexts count and cut in those: a
//! `SystemMessage`, a `UserMessage` (text, or a list of text and images), an
//! `AssistantMessage` (text, or a list of `FunctionCall`s with an optional thought) and one
//! `FunctionExecutionResultMessage` holding *all* the results of one step. The last one is
//! why the OpenAI message model does not do here: a context of `buffer_size=3` counts a step's
//! results as one message however many calls it answered, and autogen-ext's counter frames
//! it once.
//!
//! Two ways in:
//! - [`AutogenMessage::from_value`] reads the "autogen dict" the Python adapter writes (and
//!   the conformance corpus uses): an OpenAI-shaped dict per message, with `name` for the
//!   source, `thought` beside assistant content, and `{"role": "tool", "results": [...]}` for
//!   a results message. Images are `image_url` parts with a `data:` URI, or
//!   `{"type": "image", "width": w, "height": h}` when the caller already knows the size.
//! - [`AutogenMessage::group`] reads engine messages (OpenAI shape), one autogen message per
//!   message except that a run of consecutive tool messages is one results message.

use serde_json::Value;

use crate::calls::CallView;
use crate::message::{ImageSource, Message, Part, Role};
use crate::tokens::image::{dimensions_from_base64, dimensions_from_data_uri};

/// The size of an engine image, when its data is at hand.
fn image_size(source: &ImageSource) -> Option<(u32, u32)> {
    let size = match source {
        ImageSource::Url(url) => dimensions_from_data_uri(url),
        ImageSource::Base64 { data, .. } => dimensions_from_base64(data),
        ImageSource::Other(_) => None,
    };
    size.map(|d| (d.width, d.height))
}

/// One function call of an assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutogenCall {
    /// The call id a result answers.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments, as the JSON text the model wrote.
    pub arguments: String,
}

/// One result of a results message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutogenResult {
    /// The call it answers.
    pub call_id: String,
    /// The function's name.
    pub name: String,
    /// The output.
    pub content: String,
}

/// One part of a user message's list content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutogenPart {
    /// Text.
    Text(String),
    /// An image of this many pixels (`None`: its size could not be read).
    Image(Option<(u32, u32)>),
}

/// An autogen-core `LLMMessage`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutogenMessage {
    /// `SystemMessage(content)`.
    System {
        /// The instructions.
        content: String,
    },
    /// `UserMessage(content, source)` with string content.
    UserText {
        /// The sender (autogen's `source`, OpenAI's `name`).
        source: String,
        /// The text.
        content: String,
    },
    /// `UserMessage(content, source)` with list content.
    UserParts {
        /// The sender.
        source: String,
        /// Text and images, in order.
        parts: Vec<AutogenPart>,
    },
    /// `AssistantMessage(content: str, source, thought)`.
    AssistantText {
        /// The sender.
        source: String,
        /// The text.
        content: String,
        /// The model's reasoning, if it gave one (not sent with text).
        thought: Option<String>,
    },
    /// `AssistantMessage(content: [FunctionCall], source, thought)`.
    Calls {
        /// The sender.
        source: String,
        /// The calls, in order (may be empty).
        calls: Vec<AutogenCall>,
        /// The model's reasoning, sent as the message's content.
        thought: Option<String>,
    },
    /// `FunctionExecutionResultMessage(content: [FunctionExecutionResult])`.
    Results {
        /// The results, in order (may be empty).
        results: Vec<AutogenResult>,
    },
}

/// A message that is not an autogen dict, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct AutogenFormatError {
    /// Where: `messages[3].content[1]`.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

fn bad(path: impl Into<String>, reason: impl Into<String>) -> AutogenFormatError {
    AutogenFormatError { path: path.into(), reason: reason.into() }
}

fn string_at(
    map: &serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<String, AutogenFormatError> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(format!("{path}.{key}"), "expected a string")),
        None => Err(bad(path, format!("missing `{key}`"))),
    }
}

fn optional_string(
    map: &serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, AutogenFormatError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{path}.{key}"), "expected a string or null")),
    }
}

fn list_at<'v>(
    map: &'v serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'v Vec<Value>, AutogenFormatError> {
    match map.get(key) {
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(bad(format!("{path}.{key}"), "expected a list")),
        None => Err(bad(path, format!("missing `{key}`"))),
    }
}

fn object<'v>(
    value: &'v Value,
    path: &str,
) -> Result<&'v serde_json::Map<String, Value>, AutogenFormatError> {
    value.as_object().ok_or_else(|| bad(path, "expected an object"))
}

fn user_part(value: &Value, path: &str) -> Result<AutogenPart, AutogenFormatError> {
    if let Value::String(text) = value {
        return Ok(AutogenPart::Text(text.clone()));
    }
    let map = object(value, path)?;
    match map.get("type").and_then(Value::as_str) {
        Some("text") => Ok(AutogenPart::Text(string_at(map, "text", path)?)),
        Some("image_url") => {
            let url = map
                .get("image_url")
                .and_then(|u| u.get("url").or(Some(u)))
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("{path}.image_url"), "expected {\"url\": \"data:...\"}"))?;
            Ok(AutogenPart::Image(dimensions_from_data_uri(url).map(|d| (d.width, d.height))))
        }
        Some("image") => {
            let size = |key: &str| {
                map.get(key)
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(format!("{path}.{key}"), "expected a size in pixels"))
            };
            Ok(AutogenPart::Image(Some((size("width")?, size("height")?))))
        }
        _ => Err(bad(path, "expected a string, a text part or an image part")),
    }
}

impl AutogenMessage {
    /// Reads one autogen dict; `path` names it in errors (`messages[3]`).
    pub fn from_value(value: &Value, path: &str) -> Result<AutogenMessage, AutogenFormatError> {
        let map = object(value, path)?;
        let role = string_at(map, "role", path)?;
        let source = || optional_string(map, "name", path).map(Option::unwrap_or_default);
        match role.as_str() {
            "system" => Ok(AutogenMessage::System { content: string_at(map, "content", path)? }),
            "user" => match map.get("content") {
                Some(Value::String(text)) => {
                    Ok(AutogenMessage::UserText { source: source()?, content: text.clone() })
                }
                Some(Value::Array(items)) => {
                    let parts = items
                        .iter()
                        .enumerate()
                        .map(|(i, p)| user_part(p, &format!("{path}.content[{i}]")))
                        .collect::<Result<_, _>>()?;
                    Ok(AutogenMessage::UserParts { source: source()?, parts })
                }
                _ => Err(bad(format!("{path}.content"), "expected a string or a list")),
            },
            "assistant" => {
                let thought = optional_string(map, "thought", path)?;
                match map.get("tool_calls") {
                    Some(Value::Array(calls)) => {
                        let calls = calls
                            .iter()
                            .enumerate()
                            .map(|(i, call)| {
                                let at = format!("{path}.tool_calls[{i}]");
                                let call = object(call, &at)?;
                                let function = object(
                                    call.get("function").ok_or_else(|| bad(&at, "missing `function`"))?,
                                    &format!("{at}.function"),
                                )?;
                                Ok(AutogenCall {
                                    id: string_at(call, "id", &at)?,
                                    name: string_at(function, "name", &format!("{at}.function"))?,
                                    arguments: string_at(function, "arguments", &format!("{at}.function"))?,
                                })
                            })
                            .collect::<Result<_, AutogenFormatError>>()?;
                        // the wire shape puts the thought in `content`; `thought` wins if both
                        let thought = thought.or(optional_string(map, "content", path)?);
                        Ok(AutogenMessage::Calls { source: source()?, calls, thought })
                    }
                    Some(Value::Null) | None => Ok(AutogenMessage::AssistantText {
                        source: source()?,
                        content: string_at(map, "content", path)?,
                        thought,
                    }),
                    Some(_) => Err(bad(format!("{path}.tool_calls"), "expected a list")),
                }
            }
            "tool" => {
                let results = list_at(map, "results", path)?
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let at = format!("{path}.results[{i}]");
                        let r = object(r, &at)?;
                        Ok(AutogenResult {
                            call_id: string_at(r, "tool_call_id", &at)?,
                            name: optional_string(r, "name", &at)?.unwrap_or_default(),
                            content: string_at(r, "content", &at)?,
                        })
                    })
                    .collect::<Result<_, AutogenFormatError>>()?;
                Ok(AutogenMessage::Results { results })
            }
            other => Err(bad(
                format!("{path}.role"),
                format!("unknown role {other:?} (expected system, user, assistant or tool)"),
            )),
        }
    }

    /// Groups engine messages (OpenAI shape) into autogen messages: one each, except that a
    /// run of consecutive tool messages is one results message, and a message without a
    /// `name` has its role as its source. Returns the messages and, for
    /// each, the range of engine messages it covers. Cost: O(messages).
    pub fn group(messages: &[Message]) -> Vec<(AutogenMessage, std::ops::Range<usize>)> {
        let mut out: Vec<(AutogenMessage, std::ops::Range<usize>)> = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            // autogen requires a source; a message without a name gets its role's
            let source = || m.name.clone().unwrap_or_else(|| m.role_name().to_string());
            let message = match m.role {
                Role::System | Role::Developer => AutogenMessage::System { content: m.text_content() },
                Role::Tool | Role::Function => {
                    let result = AutogenResult {
                        call_id: m.tool_call_id.clone().unwrap_or_default(),
                        name: m.name.clone().unwrap_or_default(),
                        content: m.text_content(),
                    };
                    if let Some((AutogenMessage::Results { results }, range)) = out.last_mut() {
                        if range.end == i {
                            results.push(result);
                            range.end = i + 1;
                            continue;
                        }
                    }
                    AutogenMessage::Results { results: vec![result] }
                }
                Role::Assistant if m.tool_calls().next().is_some() => AutogenMessage::Calls {
                    source: source(),
                    calls: m
                        .tool_calls()
                        .map(|c| AutogenCall {
                            id: c.id.clone().unwrap_or_default(),
                            name: c.name.clone(),
                            arguments: c.arguments.to_json_string(),
                        })
                        .collect(),
                    thought: Some(m.text_content()).filter(|t| !t.is_empty()),
                },
                Role::Assistant => AutogenMessage::AssistantText {
                    source: source(),
                    content: m.text_content(),
                    thought: None,
                },
                _ if m.parts.iter().any(|p| matches!(p, Part::Image(_))) => AutogenMessage::UserParts {
                    source: source(),
                    parts: m
                        .parts
                        .iter()
                        .filter_map(|p| match p {
                            Part::Text(t) => Some(AutogenPart::Text(t.text.clone())),
                            Part::Image(image) => Some(AutogenPart::Image(image_size(&image.source))),
                            _ => None,
                        })
                        .collect(),
                },
                _ => AutogenMessage::UserText { source: source(), content: m.text_content() },
            };
            out.push((message, i..i + 1));
        }
        out
    }

    /// Whether this is a results message (autogen drops one at the start of a window).
    pub fn is_results(&self) -> bool {
        matches!(self, AutogenMessage::Results { .. })
    }

    /// Whether this is an assistant message whose content is a list of calls (autogen's
    /// head-and-tail drops one at the end of the head; an empty list counts).
    pub fn is_calls(&self) -> bool {
        matches!(self, AutogenMessage::Calls { .. })
    }

    /// The ids of the calls it makes.
    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        let calls: &[AutogenCall] = match self {
            AutogenMessage::Calls { calls, .. } => calls,
            _ => &[],
        };
        calls.iter().map(|c| c.id.as_str())
    }

    /// The ids of the calls it answers.
    pub fn answered_ids(&self) -> impl Iterator<Item = &str> {
        let results: &[AutogenResult] = match self {
            AutogenMessage::Results { results } => results,
            _ => &[],
        };
        results.iter().map(|r| r.call_id.as_str())
    }
}

impl CallView for AutogenMessage {
    fn call_ids(&self) -> impl Iterator<Item = &str> {
        AutogenMessage::call_ids(self)
    }

    fn answered_ids(&self) -> impl Iterator<Item = &str> {
        AutogenMessage::answered_ids(self)
    }

    /// A `FunctionExecutionResultMessage`: every result of one step.
    fn is_result(&self) -> bool {
        self.is_results()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::test_support::openai;
    use serde_json::json;

    #[test]
    fn reads_every_kind() {
        let read = |v: Value| AutogenMessage::from_value(&v, "messages[0]").unwrap();
        assert_eq!(
            read(json!({"role": "system", "content": "s"})),
            AutogenMessage::System { content: "s".into() }
        );
        assert_eq!(
            read(json!({"role": "user", "name": "u", "content": ["a", {"type": "text", "text": "b"},
                {"type": "image", "width": 3, "height": 2}]})),
            AutogenMessage::UserParts {
                source: "u".into(),
                parts: vec![
                    AutogenPart::Text("a".into()),
                    AutogenPart::Text("b".into()),
                    AutogenPart::Image(Some((3, 2)))
                ]
            }
        );
        let calls = read(json!({"role": "assistant", "name": "a", "content": "hm", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}));
        assert!(calls.is_calls());
        assert_eq!(calls.call_ids().collect::<Vec<_>>(), vec!["c1"]);
        let AutogenMessage::Calls { thought, .. } = calls else { unreachable!() };
        assert_eq!(thought.as_deref(), Some("hm"));
        let results = read(json!({"role": "tool", "results": [
            {"tool_call_id": "c1", "name": "f", "content": "r", "is_error": false}]}));
        assert!(results.is_results());
        assert_eq!(results.answered_ids().collect::<Vec<_>>(), vec!["c1"]);
        assert_eq!(
            read(json!({"role": "assistant", "name": "a", "content": "x", "thought": "t"})),
            AutogenMessage::AssistantText {
                source: "a".into(),
                content: "x".into(),
                thought: Some("t".into())
            }
        );
    }

    #[test]
    fn bad_shapes_name_the_place() {
        let err =
            AutogenMessage::from_value(&json!({"role": "user", "content": [7]}), "messages[4]").unwrap_err();
        assert_eq!(err.path, "messages[4].content[0]");
        let err = AutogenMessage::from_value(&json!({"role": "robot"}), "messages[1]").unwrap_err();
        assert_eq!(err.path, "messages[1].role");
        let err = AutogenMessage::from_value(&json!({"role": "tool"}), "messages[2]").unwrap_err();
        assert!(err.reason.contains("results"), "{err}");
    }

    #[test]
    fn groups_consecutive_tool_messages_into_one_results_message() {
        let input = openai(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "A"},
                {"role": "tool", "tool_call_id": "b", "content": "B"},
                {"role": "assistant", "content": "done"}]"#,
        );
        let grouped = AutogenMessage::group(&input);
        let ranges: Vec<_> = grouped.iter().map(|(_, r)| r.clone()).collect();
        assert_eq!(ranges, vec![0..1, 1..2, 2..4, 4..5]);
        assert_eq!(grouped[2].0.answered_ids().collect::<Vec<_>>(), vec!["a", "b"]);
    }
}
