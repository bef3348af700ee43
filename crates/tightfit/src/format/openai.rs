//! OpenAI Chat Completions: reading and writing messages, tools and request bodies (content
//! parts are read and written in `common`, beside Anthropic's blocks).
//!
//! Interpreted message fields: `role`, `content` (string, null, or parts: `text`,
//! `image_url`, `input_audio`, `file`, `refusal`), `name`, `tool_calls`, `tool_call_id`,
//! legacy `function_call`, and the reasoning fields OpenAI-compatible servers add
//! (`reasoning_content`, `reasoning`) as thinking parts. A field with a value we do not
//! interpret (`"name": null`, `"tool_calls": []`, an object-valued `reasoning`, a string
//! `function_call`) is kept as an extra field, so it comes back as it was.

use std::borrow::Borrow;

use serde_json::{Map, Value};

use super::common::{extend_missing, in_input_order, read_part, read_request_fields, write_part};
use super::content::{self, take_tools, write_content};
use super::foreign;
use super::path::{array, object, string, take, take_optional_string, Path};
use super::{Conversation, Format, FormatError, RequestFields};
use crate::message::{
    Arguments, CallStyle, ContentForm, Extra, Message, Part, Role, ThinkingOrigin, ThinkingPart, Tool,
    ToolCall, ToolStyle,
};

pub(super) fn read_document(value: Value) -> Result<Conversation, FormatError> {
    match value {
        Value::Array(items) => Ok(Conversation {
            format: Format::OpenAi,
            messages: read_messages(items, &Path::root("messages"))?,
            tools: None,
            request: None,
        }),
        Value::Object(mut map) => {
            let root = Path::root("");
            let key_order: Vec<String> = map.keys().cloned().collect();
            let Some(messages) = take(&mut map, "messages") else {
                return Err(foreign::missing_messages(&map, &root));
            };
            let messages = read_messages(array(messages, &root.key("messages"))?, &root.key("messages"))?;
            let tools = take_tools(&mut map, &root, read_tools)?;
            let request = RequestFields { key_order, ..read_request_fields(map, &root)? };
            Ok(Conversation { format: Format::OpenAi, messages, tools, request: Some(request) })
        }
        other => Err(Path::root("").expected("an array of messages or an object", &other)),
    }
}

pub(super) fn read_messages(items: Vec<Value>, at: &Path) -> Result<Vec<Message>, FormatError> {
    items.into_iter().enumerate().map(|(i, item)| read_message(item, &at.index(i))).collect()
}

pub(super) fn read_message(value: Value, at: &Path) -> Result<Message, FormatError> {
    let map = object(value, at)?;
    foreign::refuse_message(&map, at)?;
    let mut role = None;
    let mut content = None;
    let mut name = None;
    let mut tool_call_id = None;
    let mut thinking = Vec::new();
    let mut calls = Vec::new();
    let mut extra = Extra::new();
    for (key, value) in map {
        match key.as_str() {
            "role" => {
                let text = string(value, &at.key("role"))?;
                match Role::from_wire(&text) {
                    Some(known) => role = Some(known),
                    None => {
                        role = Some(Role::Other);
                        extra.insert(key, Value::String(text));
                    }
                }
            }
            "content" => content = Some(value),
            "name" if value.is_string() => name = Some(string(value, &at.key("name"))?),
            "tool_call_id" if value.is_string() => {
                tool_call_id = Some(string(value, &at.key("tool_call_id"))?)
            }
            "tool_calls" if value.as_array().is_some_and(|a| !a.is_empty()) => {
                let at = at.key("tool_calls");
                for (i, item) in array(value, &at)?.into_iter().enumerate() {
                    calls.push(Part::ToolCall(read_tool_call(item, &at.index(i))?));
                }
            }
            "function_call" if value.is_object() => {
                calls.push(Part::ToolCall(read_legacy_call(value, &at.key("function_call"))?));
            }
            "reasoning_content" | "reasoning" if value.is_string() => {
                let origin = if key == "reasoning" {
                    ThinkingOrigin::Reasoning
                } else {
                    ThinkingOrigin::ReasoningContent
                };
                thinking.push(Part::Thinking(ThinkingPart {
                    text: string(value, at)?,
                    signature: None,
                    origin,
                    extra: Extra::new(),
                }));
            }
            // a legacy `function_call` that is not an object (AG2 tests write a string) is
            // kept as it came; it calls nothing
            "name" | "tool_call_id" | "tool_calls" if !matches!(value, Value::Null | Value::Array(_)) => {
                let what = if key == "tool_calls" { "an array" } else { "a string" };
                return Err(at.key(&key).expected(what, &value));
            }
            _ => {
                extra.insert(key, value);
            }
        }
    }
    let role = role.ok_or_else(|| at.error("missing `role`"))?;
    let (content_form, content_parts) = match content {
        None => (ContentForm::Absent, Vec::new()),
        Some(value) => read_content(value, &at.key("content"))?,
    };
    let mut parts = thinking;
    parts.extend(content_parts);
    parts.extend(calls);
    Ok(Message { role, parts, name, tool_call_id, content_form, extra })
}

/// Reads a `content` value: null, a string, or a list of parts.
pub(super) fn read_content(value: Value, at: &Path) -> Result<(ContentForm, Vec<Part>), FormatError> {
    content::read_content(value, at, read_part, "a string, null or an array of parts")
}

fn read_tool_call(value: Value, at: &Path) -> Result<ToolCall, FormatError> {
    let mut map = object(value, at)?;
    let id = take_optional_string(&mut map, "id", at)?;
    let style = match map.get("type").and_then(Value::as_str) {
        None | Some("function") => CallStyle::OpenAiFunction,
        Some("custom") => CallStyle::OpenAiCustom,
        Some(other) => {
            return Err(at.key("type").error(format!(
                "unsupported tool call type {other:?} (expected \"function\" or \"custom\")"
            )))
        }
    };
    let (inner_key, args_key) = match style {
        CallStyle::OpenAiCustom => ("custom", "input"),
        _ => ("function", "arguments"),
    };
    let at_inner = at.key(inner_key);
    let inner = take(&mut map, inner_key).ok_or_else(|| at.error(format!("missing `{inner_key}`")))?;
    let mut inner = object(inner, &at_inner)?;
    let name = take(&mut inner, "name").ok_or_else(|| at_inner.error("missing `name`"))?;
    let name = string(name, &at_inner.key("name"))?;
    let arguments =
        take(&mut inner, args_key).ok_or_else(|| at_inner.error(format!("missing `{args_key}`")))?;
    let arguments = Arguments::Text(string(arguments, &at_inner.key(args_key))?);
    Ok(ToolCall { id, name, arguments, style, extra: map, inner_extra: inner })
}

fn read_legacy_call(value: Value, at: &Path) -> Result<ToolCall, FormatError> {
    let mut inner = object(value, at)?;
    let name = take(&mut inner, "name").ok_or_else(|| at.error("missing `name`"))?;
    let name = string(name, &at.key("name"))?;
    let arguments = take(&mut inner, "arguments").ok_or_else(|| at.error("missing `arguments`"))?;
    let arguments = Arguments::Text(string(arguments, &at.key("arguments"))?);
    Ok(ToolCall {
        id: None,
        name,
        arguments,
        style: CallStyle::OpenAiLegacy,
        extra: Extra::new(),
        inner_extra: inner,
    })
}

pub(super) fn read_tools(items: Vec<Value>, at: &Path) -> Result<Vec<Tool>, FormatError> {
    let mut tools = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = at.index(i);
        let mut map = object(item, &at)?;
        let is_function = map.get("type").and_then(Value::as_str) == Some("function")
            && map.get("function").is_some_and(Value::is_object);
        if !is_function {
            tools.push(Tool::other(map));
            continue;
        }
        let at_inner = at.key("function");
        let mut inner = object(take(&mut map, "function").unwrap_or_default(), &at_inner)?;
        let name = take(&mut inner, "name").ok_or_else(|| at_inner.error("missing `name`"))?;
        let name = string(name, &at_inner.key("name"))?;
        let description = take_optional_string(&mut inner, "description", &at_inner)?;
        let parameters = take(&mut inner, "parameters");
        tools.push(Tool {
            name,
            description,
            parameters,
            style: ToolStyle::OpenAi,
            extra: map,
            inner_extra: inner,
        });
    }
    Ok(tools)
}

// ---------------------------------------------------------------------------------------------
// Writing

pub(super) fn write_document(conversation: &Conversation) -> Value {
    write_request(&conversation.messages, conversation)
}

/// Writes `messages` in the envelope of `conversation` (its request fields and tools).
pub(super) fn write_request<M: Borrow<Message>>(messages: &[M], conversation: &Conversation) -> Value {
    let messages = Value::Array(messages.iter().map(|m| write_message(m.borrow())).collect());
    let Some(request) = &conversation.request else {
        return messages;
    };
    let mut out = Map::new();
    if let Some(model) = &request.model {
        out.insert("model".into(), Value::String(model.clone()));
    }
    out.insert("messages".into(), messages);
    if let Some(tools) = &conversation.tools {
        out.insert("tools".into(), Value::Array(tools.iter().map(write_tool).collect()));
    }
    if let Some(n) = request.max_tokens {
        out.insert("max_tokens".into(), n.into());
    }
    if let Some(n) = request.max_completion_tokens {
        out.insert("max_completion_tokens".into(), n.into());
    }
    extend_missing(&mut out, &request.extra);
    Value::Object(in_input_order(out, &request.key_order))
}

/// Writes one message in OpenAI form.
pub(crate) fn write_message(message: &Message) -> Value {
    let mut out = Map::new();
    if message.role != Role::Other {
        // an unknown role is written from `extra`, where it was kept
        out.insert("role".into(), Value::String(message.role.as_str().into()));
    }
    if let Some(name) = &message.name {
        out.insert("name".into(), Value::String(name.clone()));
    }
    let content: Vec<&Part> = message
        .parts
        .iter()
        .filter(|p| !matches!(p, Part::Thinking(t) if t.origin != ThinkingOrigin::Block))
        // calls go to `tool_calls`; a `tool_use` block read from the content stays there
        .filter(|p| !matches!(p, Part::ToolCall(c) if c.style != CallStyle::AnthropicToolUse))
        .collect();
    if let Some(value) = write_content(message.content_form, &content, write_part) {
        out.insert("content".into(), value);
    }
    for origin in [ThinkingOrigin::ReasoningContent, ThinkingOrigin::Reasoning] {
        let texts: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Thinking(t) if t.origin == origin => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        if !texts.is_empty() {
            let key = if origin == ThinkingOrigin::Reasoning { "reasoning" } else { "reasoning_content" };
            out.insert(key.into(), Value::String(texts.join("\n")));
        }
    }
    let calls: Vec<Value> = message
        .tool_calls()
        .filter(|c| !matches!(c.style, CallStyle::OpenAiLegacy | CallStyle::AnthropicToolUse))
        .map(write_tool_call)
        .collect();
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(legacy) = message.tool_calls().find(|c| c.style == CallStyle::OpenAiLegacy) {
        let mut inner = Map::new();
        inner.insert("name".into(), Value::String(legacy.name.clone()));
        inner.insert("arguments".into(), Value::String(legacy.arguments.to_json_string()));
        extend_missing(&mut inner, &legacy.inner_extra);
        out.insert("function_call".into(), Value::Object(inner));
    }
    if let Some(id) = &message.tool_call_id {
        out.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    extend_missing(&mut out, &message.extra);
    Value::Object(out)
}

fn write_tool_call(call: &ToolCall) -> Value {
    let mut out = Map::new();
    if let Some(id) = &call.id {
        out.insert("id".into(), Value::String(id.clone()));
    }
    let (inner_key, args_key) = match call.style {
        CallStyle::OpenAiCustom => ("custom", "input"),
        _ => ("function", "arguments"),
    };
    if call.style == CallStyle::AnthropicToolUse {
        out.insert("type".into(), "function".into());
    }
    let mut inner = Map::new();
    inner.insert("name".into(), Value::String(call.name.clone()));
    inner.insert(args_key.into(), Value::String(call.arguments.to_json_string()));
    if call.style != CallStyle::AnthropicToolUse {
        extend_missing(&mut inner, &call.inner_extra);
    }
    // `type` (kept as an extra field when read) goes before `function`, as OpenAI writes it
    if let Some(kind) = call.extra.get("type") {
        out.insert("type".into(), kind.clone());
    }
    out.insert(inner_key.into(), Value::Object(inner));
    if call.style != CallStyle::AnthropicToolUse {
        extend_missing(&mut out, &call.extra);
    }
    Value::Object(out)
}

pub(super) fn write_tool(tool: &Tool) -> Value {
    match tool.style {
        ToolStyle::Other => Value::Object(tool.extra.clone()),
        ToolStyle::OpenAi | ToolStyle::Anthropic | ToolStyle::Responses | ToolStyle::Gemini => {
            let mut inner = Map::new();
            inner.insert("name".into(), Value::String(tool.name.clone()));
            if let Some(description) = &tool.description {
                inner.insert("description".into(), Value::String(description.clone()));
            }
            if let Some(parameters) = &tool.parameters {
                inner.insert("parameters".into(), parameters.clone());
            }
            let mut out = Map::new();
            out.insert("type".into(), "function".into());
            if tool.style == ToolStyle::OpenAi {
                extend_missing(&mut inner, &tool.inner_extra);
                out.insert("function".into(), Value::Object(inner));
                extend_missing(&mut out, &tool.extra);
            } else {
                out.insert("function".into(), Value::Object(inner));
            }
            Value::Object(out)
        }
    }
}
