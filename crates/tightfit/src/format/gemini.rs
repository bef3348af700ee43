//! Google Gemini: `contents` entries, `systemInstruction` and request bodies.
//!
//! One message per `contents` entry (errors name `contents[i]`): role `user` is a user
//! message, `model` an assistant message, any other role kept by name. Its `parts`, in order:
//! - `{"text"}` is a text part, and with `"thought": true` a thinking part
//!   ([`ThinkingOrigin::Gemini`], `thoughtSignature` as its signature);
//! - `{"inlineData"}` of an `image/…` type is a base64 image ([`ImageStyle::Gemini`]), of any
//!   other type a file part (`kind` `inlineData`, the whole part as its fields), as is
//!   `{"fileData"}` (`kind` `fileData`);
//! - `{"functionCall": {"name", "args", "id"?}}` is a tool call;
//! - `{"functionResponse": {"name", "response", "id"?}}` is a tool result answering the call
//!   of that id, or, without ids, the n-th call of that name in the turn before (a call
//!   without an id gets the made-up id `name#n`, [`CallStyle::GeminiNoId`]; its response the
//!   same one, and neither is written back);
//! - any other part (`executableCode`, `videoMetadata` alone, …) is kept verbatim.
//!
//! Fields tightfit does not interpret (`thoughtSignature` on a text or call part, a
//! `functionCall`'s other fields) are kept and written back. An entry without `role` (the API
//! reads it as a user turn) is a user message whose `content_form` is
//! [`ContentForm::Null`], written back without one.
//!
//! A request body's `systemInstruction` is read as a leading system message and written back
//! there; `generationConfig.maxOutputTokens` is the output budget (the `generationConfig`
//! object itself stays where it is). Each `functionDeclarations` entry of `tools` is a tool;
//! declarations of consecutive `tools` entries are written back as one entry.

use std::borrow::Borrow;

use serde_json::{Map, Value};

use super::common::{extend_missing, read_request_fields};
use super::foreign;
use super::path::{array, object, string, take, take_non_null, Path};
use super::{Conversation, Format, FormatError, RequestFields};
use crate::message::{
    Arguments, CallStyle, ContentForm, Extra, FilePart, ImagePart, ImageSource, ImageStyle, Message, Part,
    Role, TextPart, ThinkingOrigin, ThinkingPart, Tool, ToolCall, ToolResult, ToolStyle,
};

pub(super) fn read_document(value: Value) -> Result<Conversation, FormatError> {
    match value {
        Value::Array(items) => Ok(Conversation {
            format: Format::Gemini,
            messages: read_contents(items, &Path::root("contents"))?,
            tools: None,
            request: None,
        }),
        Value::Object(mut map) => {
            let root = Path::root("");
            let mut messages = Vec::new();
            let instructions = match take_non_null(&mut map, "systemInstruction") {
                Some(value) => {
                    let at = root.key("systemInstruction");
                    // a `role` on the instruction (the API ignores it) is kept as it came
                    let role = value.get("role").cloned();
                    let mut message = read_entry(value, &at, Role::System)?;
                    message.role = Role::System;
                    message.content_form = ContentForm::Parts;
                    if let Some(role) = role {
                        message.extra.insert("role".into(), role);
                    }
                    messages.push(message);
                    true
                }
                None => false,
            };
            let Some(contents) = take(&mut map, "contents") else {
                if map.contains_key("messages") {
                    return Err(root.error(
                        "a request with `messages` is a Chat Completions or Anthropic request, not a Gemini one",
                    ));
                }
                return Err(foreign::missing_messages(&map, &root));
            };
            let at = root.key("contents");
            messages.extend(read_contents(array(contents, &at)?, &at)?);
            let tools = match take_non_null(&mut map, "tools") {
                Some(Value::Array(items)) => Some(read_tools(items, &root.key("tools"))?),
                Some(other) => return Err(root.key("tools").expected("an array", &other)),
                None => None,
            };
            let max_output_tokens = match map.get("generationConfig").and_then(|c| c.get("maxOutputTokens")) {
                Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
                Some(Value::Null) | None => None,
                Some(other) => {
                    return Err(root
                        .key("generationConfig")
                        .key("maxOutputTokens")
                        .expected("a non-negative integer", other))
                }
            };
            let request =
                RequestFields { max_output_tokens, instructions, ..read_request_fields(map, &root)? };
            Ok(Conversation { format: Format::Gemini, messages, tools, request: Some(request) })
        }
        other => Err(Path::root("").expected("an array of contents or an object with `contents`", &other)),
    }
}

fn read_contents(items: Vec<Value>, at: &Path) -> Result<Vec<Message>, FormatError> {
    items.into_iter().enumerate().map(|(i, item)| read_message(item, &at.index(i))).collect()
}

/// Reads one `contents` entry as one message.
pub(super) fn read_message(value: Value, at: &Path) -> Result<Message, FormatError> {
    read_entry(value, at, Role::User)
}

/// Reads a `Content` object; `default_role` is the role of one without `role`.
fn read_entry(value: Value, at: &Path, default_role: Role) -> Result<Message, FormatError> {
    let mut map = object(value, at)?;
    if map.contains_key("content") && !map.contains_key("parts") {
        return Err(at.key("content").error(
            "a Chat Completions or Anthropic message in Gemini contents (Gemini entries have `parts`): \
             the list mixes formats",
        ));
    }
    let (role, content_form) = match take(&mut map, "role") {
        None => (default_role, ContentForm::Null),
        Some(Value::String(name)) => {
            let role = match name.as_str() {
                "user" => Role::User,
                "model" => Role::Assistant,
                "system" => Role::System,
                _ => Role::Other,
            };
            if role == Role::Other {
                map.insert("role".into(), Value::String(name));
            }
            (role, ContentForm::Parts)
        }
        Some(other) => return Err(at.key("role").expected("a string", &other)),
    };
    let parts_at = at.key("parts");
    let items = match take(&mut map, "parts") {
        Some(items) => array(items, &parts_at)?,
        None => return Err(at.error("missing `parts`")),
    };
    let mut named = NameCounter::default();
    let mut parts = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        parts.push(read_part(item, &parts_at.index(i), &mut named)?);
    }
    Ok(Message { role, parts, name: None, tool_call_id: None, content_form, extra: map })
}

/// Counts the calls (or responses) of each name in one turn, for the made-up ids of those
/// without an `id`: the n-th response of a name answers the n-th call of it.
#[derive(Default)]
struct NameCounter {
    seen: Vec<(String, usize)>,
}

impl NameCounter {
    fn next_id(&mut self, name: &str) -> String {
        let n = match self.seen.iter_mut().find(|(seen, _)| seen == name) {
            Some((_, count)) => {
                *count += 1;
                *count - 1
            }
            None => {
                self.seen.push((name.to_string(), 1));
                0
            }
        };
        made_up_id(name, n)
    }
}

/// The id of the `n`-th call (or response) of `name` in a turn when it has none.
fn made_up_id(name: &str, n: usize) -> String {
    format!("{name}#{n}")
}

fn required_string(map: &mut Map<String, Value>, key: &str, at: &Path) -> Result<String, FormatError> {
    let value = take(map, key).ok_or_else(|| at.error(format!("missing `{key}`")))?;
    string(value, &at.key(key))
}

fn optional_string(
    map: &mut Map<String, Value>,
    key: &str,
    at: &Path,
) -> Result<Option<String>, FormatError> {
    match take_non_null(map, key) {
        Some(value) => string(value, &at.key(key)).map(Some),
        None => Ok(None),
    }
}

fn read_part(value: Value, at: &Path, named: &mut NameCounter) -> Result<Part, FormatError> {
    let Value::Object(mut map) = value else {
        return Ok(Part::Opaque(value));
    };
    if map.contains_key("text") {
        let text = required_string(&mut map, "text", at)?;
        if map.get("thought") == Some(&Value::Bool(true)) {
            take(&mut map, "thought");
            let signature = optional_string(&mut map, "thoughtSignature", at)?;
            return Ok(Part::Thinking(ThinkingPart {
                text,
                signature,
                origin: ThinkingOrigin::Gemini,
                extra: map,
            }));
        }
        return Ok(Part::Text(TextPart { text, extra: map }));
    }
    if let Some(Value::Object(inline)) = map.get("inlineData") {
        let is_image =
            inline.get("mimeType").and_then(Value::as_str).is_some_and(|m| m.starts_with("image/"))
                && inline.get("data").is_some_and(Value::is_string);
        if is_image {
            let Some(Value::Object(mut inline)) = take(&mut map, "inlineData") else { unreachable!() };
            let at = at.key("inlineData");
            let media_type = required_string(&mut inline, "mimeType", &at)?;
            let data = required_string(&mut inline, "data", &at)?;
            return Ok(Part::Image(ImagePart {
                source: ImageSource::Base64 { media_type, data },
                detail: None,
                style: ImageStyle::Gemini,
                extra: map,
                inner_extra: inline,
            }));
        }
        return Ok(Part::File(FilePart { kind: "inlineData".into(), fields: map }));
    }
    if map.contains_key("fileData") {
        return Ok(Part::File(FilePart { kind: "fileData".into(), fields: map }));
    }
    if let Some(call) = take(&mut map, "functionCall") {
        let at = at.key("functionCall");
        let mut call = object(call, &at)?;
        let name = required_string(&mut call, "name", &at)?;
        // no `args` (a call without arguments) is a null, written back as no `args`
        let arguments = take(&mut call, "args").unwrap_or_default();
        let (id, style) = match optional_string(&mut call, "id", &at)? {
            Some(id) => (id, CallStyle::Gemini),
            None => (named.next_id(&name), CallStyle::GeminiNoId),
        };
        return Ok(Part::ToolCall(ToolCall {
            id: Some(id),
            name,
            arguments: Arguments::Json(arguments),
            style,
            extra: map,
            inner_extra: call,
        }));
    }
    if map.len() == 1 && map.contains_key("functionResponse") {
        let at = at.key("functionResponse");
        let mut response = object(take(&mut map, "functionResponse").unwrap_or_default(), &at)?;
        let name = match response.get("name") {
            Some(Value::String(name)) => name.clone(),
            Some(other) => return Err(at.key("name").expected("a string", other)),
            None => return Err(at.error("missing `name`")),
        };
        let tool_use_id = match response.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(other) => return Err(at.key("id").expected("a string", other)),
            None => named.next_id(&name),
        };
        let (content_form, parts) = match take(&mut response, "response") {
            Some(value) => (ContentForm::Parts, vec![Part::Opaque(value)]),
            None => (ContentForm::Absent, Vec::new()),
        };
        // `name` and, when it came with one, `id` stay in `extra`: the id is written from
        // `tool_use_id` where `extra` has it
        return Ok(Part::ToolResult(ToolResult {
            tool_use_id,
            parts,
            content_form,
            is_error: None,
            extra: response,
        }));
    }
    Ok(Part::Opaque(Value::Object(map)))
}

pub(super) fn read_tools(items: Vec<Value>, at: &Path) -> Result<Vec<Tool>, FormatError> {
    let mut tools = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let at = at.index(i);
        let mut map = object(item, &at)?;
        let declarations = match map.get("functionDeclarations") {
            Some(Value::Array(_)) if map.len() == 1 => take(&mut map, "functionDeclarations"),
            _ => None,
        };
        let Some(Value::Array(declarations)) = declarations else {
            tools.push(Tool::other(map));
            continue;
        };
        let at = at.key("functionDeclarations");
        for (j, declaration) in declarations.into_iter().enumerate() {
            let at = at.index(j);
            let mut map = object(declaration, &at)?;
            let name = required_string(&mut map, "name", &at)?;
            let description = optional_string(&mut map, "description", &at)?;
            let parameters = take(&mut map, "parameters");
            tools.push(Tool {
                name,
                description,
                parameters,
                style: ToolStyle::Gemini,
                extra: map,
                inner_extra: Extra::new(),
            });
        }
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
    let (instruction, rest) = match messages.split_first() {
        Some((first, rest)) if request.instructions && first.borrow().role.is_instruction() => {
            (Some(first.borrow()), rest)
        }
        _ => (None, messages),
    };
    let mut out = Map::new();
    if let Some(model) = &request.model {
        out.insert("model".into(), Value::String(model.clone()));
    }
    out.insert("contents".into(), Value::Array(rest.iter().map(|m| write_message(m.borrow())).collect()));
    if let Some(instruction) = instruction {
        let mut system = write_message(instruction);
        if let Value::Object(map) = &mut system {
            match instruction.extra.get("role") {
                Some(role) => map.insert("role".into(), role.clone()),
                None => map.shift_remove("role"),
            };
        }
        out.insert("systemInstruction".into(), system);
    }
    if let Some(tools) = &conversation.tools {
        out.insert("tools".into(), write_tools(tools));
    }
    for (key, value) in &request.extra {
        if !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        }
    }
    if let Some(n) = request.max_output_tokens {
        let config = out.entry("generationConfig").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(config) = config {
            config.insert("maxOutputTokens".into(), n.into());
        }
    }
    Value::Object(out)
}

/// Writes one message as one `contents` entry.
pub(crate) fn write_message(message: &Message) -> Value {
    let mut out = Map::new();
    let role = match message.role {
        Role::Assistant => Some("model"),
        Role::Other => None,
        _ if message.content_form == ContentForm::Null => None,
        Role::User | Role::Tool | Role::Function => Some("user"),
        role => Some(role.as_str()),
    };
    if let Some(role) = role {
        out.insert("role".into(), Value::String(role.into()));
    }
    let mut parts: Vec<Value> = Vec::with_capacity(message.parts.len() + 1);
    if message.is_tool_result() && message.tool_call_id.is_some() {
        // a Chat Completions tool message: its content is the response
        let id = message.tool_call_id.clone().unwrap_or_default();
        let name = message.name.clone().unwrap_or_else(|| id.clone());
        parts.push(function_response(&id, &name, true, &response_of(&message.parts)));
    } else {
        parts.extend(message.parts.iter().map(write_part));
    }
    out.insert("parts".into(), Value::Array(parts));
    extend_missing(&mut out, &message.extra);
    Value::Object(out)
}

fn function_response(id: &str, name: &str, with_id: bool, response: &Value) -> Value {
    let mut inner = Map::new();
    if with_id {
        inner.insert("id".into(), Value::String(id.into()));
    }
    inner.insert("name".into(), Value::String(name.into()));
    inner.insert("response".into(), response.clone());
    serde_json::json!({ "functionResponse": inner })
}

/// The `response` object of a tool result's parts: the object as it came, or one made from
/// the text: the text itself when it is a JSON object written compactly (so converting a
/// Chat Completions result and back gives the same text), else `{"result": text}`.
pub(crate) fn response_of(parts: &[Part]) -> Value {
    if let [Part::Opaque(value @ Value::Object(_))] = parts {
        return value.clone();
    }
    let text = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(&text) {
        if serde_json::to_string(&value).is_ok_and(|written| written == text) {
            return value;
        }
    }
    serde_json::json!({ "result": text })
}

/// The text a `response` object says: its `result` when that is all it holds and a string,
/// else the object as compact JSON (the inverse of [`response_of`]).
pub(crate) fn response_text(response: &Value) -> String {
    match response.as_object() {
        Some(map) if map.len() == 1 => match map.get("result") {
            Some(Value::String(text)) => text.clone(),
            _ => response.to_string(),
        },
        _ => response.to_string(),
    }
}

fn write_part(part: &Part) -> Value {
    let mut out = Map::new();
    match part {
        Part::Text(t) => {
            out.insert("text".into(), Value::String(t.text.clone()));
            extend_missing(&mut out, &t.extra);
        }
        Part::Thinking(t) => {
            out.insert("text".into(), Value::String(t.text.clone()));
            out.insert("thought".into(), Value::Bool(true));
            if t.origin == ThinkingOrigin::Gemini {
                if let Some(signature) = &t.signature {
                    out.insert("thoughtSignature".into(), Value::String(signature.clone()));
                }
                extend_missing(&mut out, &t.extra);
            }
        }
        Part::Image(image) => {
            let gemini = image.style == ImageStyle::Gemini;
            match &image.source {
                ImageSource::Base64 { media_type, data } => {
                    let mut inline = Map::new();
                    inline.insert("mimeType".into(), Value::String(media_type.clone()));
                    inline.insert("data".into(), Value::String(data.clone()));
                    if gemini {
                        extend_missing(&mut inline, &image.inner_extra);
                    }
                    out.insert("inlineData".into(), Value::Object(inline));
                }
                ImageSource::Url(url) => match super::common::split_data_uri(url) {
                    Some((media_type, data)) => {
                        out.insert(
                            "inlineData".into(),
                            serde_json::json!({"mimeType": media_type, "data": data}),
                        );
                    }
                    None => {
                        out.insert("fileData".into(), serde_json::json!({"fileUri": url}));
                    }
                },
                ImageSource::Other(fields) => return Value::Object(fields.clone()),
            }
            if gemini {
                extend_missing(&mut out, &image.extra);
            }
        }
        Part::File(file) if matches!(file.kind.as_str(), "inlineData" | "fileData") => {
            return Value::Object(file.fields.clone());
        }
        Part::ToolCall(call) => {
            let mut inner = Map::new();
            let gemini = matches!(call.style, CallStyle::Gemini | CallStyle::GeminiNoId);
            if call.style != CallStyle::GeminiNoId {
                if let Some(id) = &call.id {
                    inner.insert("id".into(), Value::String(id.clone()));
                }
            }
            inner.insert("name".into(), Value::String(call.name.clone()));
            match call.arguments.to_value() {
                Value::Null if gemini => {}
                Value::Null => {
                    inner.insert("args".into(), Value::Object(Map::new()));
                }
                args => {
                    inner.insert("args".into(), args);
                }
            }
            if gemini {
                extend_missing(&mut inner, &call.inner_extra);
            }
            out.insert("functionCall".into(), Value::Object(inner));
            if gemini {
                extend_missing(&mut out, &call.extra);
            }
        }
        Part::ToolResult(result) => {
            let mut inner = Map::new();
            let gemini = result.extra.contains_key("name");
            for (key, value) in &result.extra {
                let value =
                    if key == "id" { Value::String(result.tool_use_id.clone()) } else { value.clone() };
                inner.insert(key.clone(), value);
            }
            if !gemini {
                inner.insert("id".into(), Value::String(result.tool_use_id.clone()));
                inner.insert("name".into(), Value::String(result.tool_use_id.clone()));
            }
            if result.content_form != ContentForm::Absent || !result.parts.is_empty() {
                inner.insert("response".into(), response_of(&result.parts));
            }
            out.insert("functionResponse".into(), Value::Object(inner));
        }
        Part::Opaque(value) => return value.clone(),
        // a part Gemini has no counterpart for (a refusal, audio, an OpenAI file, redacted
        // thinking) is written in the shape of its own format rather than lost
        other => return super::common::write_block(other),
    }
    Value::Object(out)
}

fn write_tools(tools: &[Tool]) -> Value {
    let mut out: Vec<Value> = Vec::new();
    let mut declarations: Vec<Value> = Vec::new();
    for tool in tools {
        if tool.style == ToolStyle::Other {
            if !declarations.is_empty() {
                out.push(serde_json::json!({ "functionDeclarations": std::mem::take(&mut declarations) }));
            }
            out.push(Value::Object(tool.extra.clone()));
            continue;
        }
        let mut map = Map::new();
        map.insert("name".into(), Value::String(tool.name.clone()));
        if let Some(description) = &tool.description {
            map.insert("description".into(), Value::String(description.clone()));
        }
        if let Some(parameters) = &tool.parameters {
            map.insert("parameters".into(), parameters.clone());
        }
        if tool.style == ToolStyle::Gemini {
            extend_missing(&mut map, &tool.extra);
        }
        declarations.push(Value::Object(map));
    }
    if !declarations.is_empty() {
        out.push(serde_json::json!({ "functionDeclarations": declarations }));
    }
    Value::Array(out)
}
