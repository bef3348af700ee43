//! Anthropic Messages: reading and writing messages, tools and request bodies (the content
//! blocks themselves are read and written in `common`, beside OpenAI's parts).
//!
//! The top-level `system` (a string or text blocks) becomes a leading system [`Message`] and is
//! written back to `system`. Blocks: `text`, `image` (base64, URL or other source), `document`,
//! `tool_use`, `tool_result` (string or blocks, `is_error`), `thinking` (with signature),
//! `redacted_thinking`; any other block is kept verbatim as an opaque part.

use std::borrow::Borrow;

use serde_json::{Map, Value};

use super::common::{
    extend_missing, in_input_order, read_block_content, read_request_fields, write_block, write_block_content,
};
use super::content::take_tools;
use super::foreign;
use super::path::{array, object, string, take, take_non_null, Path};
use super::{Conversation, Format, FormatError, RequestFields};
use crate::message::{ContentForm, Extra, Message, Role, Tool, ToolStyle};

pub(super) fn read_document(value: Value) -> Result<Conversation, FormatError> {
    match value {
        Value::Array(items) => Ok(Conversation {
            format: Format::Anthropic,
            messages: read_messages(items, &Path::root("messages"), true)?,
            tools: None,
            request: None,
        }),
        Value::Object(mut map) => {
            let root = Path::root("");
            let key_order: Vec<String> = map.keys().cloned().collect();
            let mut messages = Vec::new();
            if let Some(system) = take_non_null(&mut map, "system") {
                let (content_form, parts) = read_block_content(system, &root.key("system"))?;
                messages.push(Message {
                    role: Role::System,
                    parts,
                    name: None,
                    tool_call_id: None,
                    content_form,
                    extra: Extra::new(),
                });
            }
            let Some(list) = take(&mut map, "messages") else {
                return Err(foreign::missing_messages(&map, &root));
            };
            let at = root.key("messages");
            messages.extend(read_messages(array(list, &at)?, &at, false)?);
            let tools = take_tools(&mut map, &root, read_tools)?;
            let request = RequestFields { key_order, ..read_request_fields(map, &root)? };
            Ok(Conversation { format: Format::Anthropic, messages, tools, request: Some(request) })
        }
        other => Err(Path::root("").expected("an array of messages or an object", &other)),
    }
}

/// Reads messages; `allow_system` accepts `system` messages in the list (bare arrays have
/// nowhere else to put a system prompt; a request body must use the top-level field).
fn read_messages(items: Vec<Value>, at: &Path, allow_system: bool) -> Result<Vec<Message>, FormatError> {
    let mut messages = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        messages.push(read_message(item, &at.index(i), allow_system)?);
    }
    Ok(messages)
}

/// Reads one message of a list; `allow_system` when the list is a bare history (a request
/// body has its system prompt in the top-level `system` field).
pub(super) fn read_message(item: Value, at: &Path, allow_system: bool) -> Result<Message, FormatError> {
    let map = object(item, at)?;
    foreign::refuse_message(&map, at)?;
    let mut role = None;
    let mut content = None;
    let mut extra = Extra::new();
    for (key, value) in map {
        match key.as_str() {
            "role" => {
                let text = string(value, &at.key("role"))?;
                role = match text.as_str() {
                    "user" => Some(Role::User),
                    "assistant" => Some(Role::Assistant),
                    "system" if allow_system => Some(Role::System),
                    _ => {
                        let expected = if allow_system {
                            "\"user\", \"assistant\" or \"system\""
                        } else {
                            "\"user\" or \"assistant\" (the system prompt goes in the top-level `system` field)"
                        };
                        return Err(at
                            .key("role")
                            .error(format!("unknown role {text:?} (expected {expected})")));
                    }
                };
            }
            "content" => content = Some(value),
            _ => {
                extra.insert(key, value);
            }
        }
    }
    let role = role.ok_or_else(|| at.error("missing `role`"))?;
    let (content_form, parts) = match content {
        None => (ContentForm::Absent, Vec::new()),
        Some(value) => read_block_content(value, &at.key("content"))?,
    };
    Ok(Message { role, parts, name: None, tool_call_id: None, content_form, extra })
}

fn read_tools(items: Vec<Value>, at: &Path) -> Result<Vec<Tool>, FormatError> {
    let mut tools = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = at.index(i);
        let mut map = object(item, &at)?;
        let custom = map.contains_key("input_schema")
            && map.get("name").is_some_and(Value::is_string)
            && map.get("description").is_none_or(Value::is_string);
        if !custom {
            tools.push(Tool::other(map));
            continue;
        }
        let name = string(take(&mut map, "name").unwrap_or_default(), &at.key("name"))?;
        let description = take(&mut map, "description").and_then(|v| v.as_str().map(String::from));
        let parameters = take(&mut map, "input_schema");
        tools.push(Tool {
            name,
            description,
            parameters,
            style: ToolStyle::Anthropic,
            extra: map,
            inner_extra: Extra::new(),
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
    let Some(request) = &conversation.request else {
        return Value::Array(messages.iter().map(|m| write_message(m.borrow())).collect());
    };
    let system_count =
        messages.iter().take_while(|m| Borrow::<Message>::borrow(*m).role.is_instruction()).count();
    let (system, rest) = messages.split_at(system_count);
    let mut out = Map::new();
    if let Some(model) = &request.model {
        out.insert("model".into(), Value::String(model.clone()));
    }
    if !system.is_empty() {
        out.insert("system".into(), write_system(system));
    }
    out.insert("messages".into(), Value::Array(rest.iter().map(|m| write_message(m.borrow())).collect()));
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

/// The top-level `system` value: a string when there is one plain-text system message, text
/// blocks otherwise.
fn write_system<M: Borrow<Message>>(system: &[M]) -> Value {
    if let [only] = system {
        let only = only.borrow();
        if let Some(value) = write_block_content(only.content_form, &only.parts) {
            return value;
        }
    }
    let blocks = system.iter().flat_map(|m| m.borrow().parts.iter()).map(write_block).collect();
    Value::Array(blocks)
}

pub(super) fn write_message(message: &Message) -> Value {
    let mut out = Map::new();
    if message.role != Role::Other {
        out.insert("role".into(), Value::String(message.role.as_str().into()));
    }
    if let Some(name) = &message.name {
        out.insert("name".into(), Value::String(name.clone()));
    }
    if let Some(content) = write_block_content(message.content_form, &message.parts) {
        out.insert("content".into(), content);
    }
    extend_missing(&mut out, &message.extra);
    Value::Object(out)
}

fn write_tool(tool: &Tool) -> Value {
    match tool.style {
        ToolStyle::Other => Value::Object(tool.extra.clone()),
        ToolStyle::OpenAi | ToolStyle::Anthropic | ToolStyle::Responses | ToolStyle::Gemini => {
            let mut out = Map::new();
            out.insert("name".into(), Value::String(tool.name.clone()));
            if let Some(description) = &tool.description {
                out.insert("description".into(), Value::String(description.clone()));
            }
            let schema = tool
                .parameters
                .clone()
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
            out.insert("input_schema".into(), schema);
            if tool.style == ToolStyle::Anthropic {
                extend_missing(&mut out, &tool.extra);
            }
            Value::Object(out)
        }
    }
}
