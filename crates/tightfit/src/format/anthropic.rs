//! Anthropic Messages: reading and writing messages, content blocks, tools and request bodies.
//!
//! The top-level `system` (a string or text blocks) becomes a leading system [`Message`] and is
//! written back to `system`. Blocks: `text`, `image` (base64, URL or other source), `document`,
//! `tool_use`, `tool_result` (string or blocks, `is_error`), `thinking` (with signature),
//! `redacted_thinking`; any other block is kept verbatim as an opaque part.

use serde_json::{Map, Value};

use super::content::{self, take_tools};
use super::openai::{self, extend_missing, read_request_fields};
use super::path::{array, object, string, take, take_non_null, Path};
use super::{Conversation, Format, FormatError};
use crate::message::{
    Arguments, CallStyle, ContentForm, Extra, FilePart, ImagePart, ImageSource, ImageStyle, Message, Part,
    RedactedThinkingPart, Role, TextPart, ThinkingOrigin, ThinkingPart, Tool, ToolCall, ToolResult,
    ToolStyle,
};

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
            let mut messages = Vec::new();
            if let Some(system) = take_non_null(&mut map, "system") {
                let (content_form, parts) = read_content(system, &root.key("system"))?;
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
                return Err(root.error("expected a list of messages or an object with `messages`"));
            };
            let at = root.key("messages");
            messages.extend(read_messages(array(list, &at)?, &at, false)?);
            let tools = take_tools(&mut map, &root, read_tools)?;
            let request = read_request_fields(map, &root)?;
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
        let at = at.index(i);
        let map = object(item, &at)?;
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
            Some(value) => read_content(value, &at.key("content"))?,
        };
        messages.push(Message { role, parts, name: None, tool_call_id: None, content_form, extra });
    }
    Ok(messages)
}

fn read_content(value: Value, at: &Path) -> Result<(ContentForm, Vec<Part>), FormatError> {
    content::read_content(value, at, read_block, "a string or an array of content blocks")
}

/// Reads one content block; unknown blocks become opaque parts.
pub(super) fn read_block(value: Value, at: &Path) -> Result<Part, FormatError> {
    let Value::Object(mut map) = value else {
        return Ok(Part::Opaque(value));
    };
    let kind = match map.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Ok(Part::Opaque(Value::Object(map))),
    };
    let required = |map: &mut Map<String, Value>, key: &str| {
        take(map, key).ok_or_else(|| at.error(format!("missing `{key}`")))
    };
    let part = match kind.as_str() {
        "text" => {
            let text = string(required(&mut map, "text")?, &at.key("text"))?;
            take(&mut map, "type");
            Part::Text(TextPart { text, extra: map })
        }
        "image" => {
            let at_source = at.key("source");
            let mut source = object(required(&mut map, "source")?, &at_source)?;
            take(&mut map, "type");
            let source_kind = source.get("type").and_then(Value::as_str).unwrap_or_default();
            let image_source = match source_kind {
                "base64" if source.get("data").is_some_and(Value::is_string) => {
                    take(&mut source, "type");
                    let data = string(take(&mut source, "data").unwrap_or_default(), &at_source)?;
                    let media_type = match take(&mut source, "media_type") {
                        Some(Value::String(s)) => s,
                        Some(other) => return Err(at_source.key("media_type").expected("a string", &other)),
                        None => return Err(at_source.error("missing `media_type`")),
                    };
                    ImageSource::Base64 { media_type, data }
                }
                "url" if source.get("url").is_some_and(Value::is_string) => {
                    take(&mut source, "type");
                    ImageSource::Url(string(take(&mut source, "url").unwrap_or_default(), &at_source)?)
                }
                _ => ImageSource::Other(std::mem::take(&mut source)),
            };
            Part::Image(ImagePart {
                source: image_source,
                detail: None,
                style: ImageStyle::Anthropic,
                extra: map,
                inner_extra: source,
            })
        }
        "document" => {
            take(&mut map, "type");
            Part::File(FilePart { kind, fields: map })
        }
        "tool_use" => {
            let id = string(required(&mut map, "id")?, &at.key("id"))?;
            let name = string(required(&mut map, "name")?, &at.key("name"))?;
            let input = required(&mut map, "input")?;
            take(&mut map, "type");
            Part::ToolCall(ToolCall {
                id: Some(id),
                name,
                arguments: Arguments::Json(input),
                style: CallStyle::AnthropicToolUse,
                extra: map,
                inner_extra: Extra::new(),
            })
        }
        "tool_result" => {
            let tool_use_id = string(required(&mut map, "tool_use_id")?, &at.key("tool_use_id"))?;
            let (content_form, parts) = match take(&mut map, "content") {
                None => (ContentForm::Absent, Vec::new()),
                Some(value) => read_content(value, &at.key("content"))?,
            };
            let is_error = match take_non_null(&mut map, "is_error") {
                Some(Value::Bool(b)) => Some(b),
                Some(other) => return Err(at.key("is_error").expected("a boolean", &other)),
                None => None,
            };
            take(&mut map, "type");
            Part::ToolResult(ToolResult { tool_use_id, parts, content_form, is_error, extra: map })
        }
        "thinking" => {
            let text = string(required(&mut map, "thinking")?, &at.key("thinking"))?;
            let signature = match take(&mut map, "signature") {
                Some(Value::String(s)) => Some(s),
                Some(other) => {
                    map.insert("signature".into(), other);
                    None
                }
                None => None,
            };
            take(&mut map, "type");
            Part::Thinking(ThinkingPart { text, signature, origin: ThinkingOrigin::Block, extra: map })
        }
        "redacted_thinking" => {
            let data = string(required(&mut map, "data")?, &at.key("data"))?;
            take(&mut map, "type");
            Part::RedactedThinking(RedactedThinkingPart { data, extra: map })
        }
        _ => Part::Opaque(Value::Object(map)),
    };
    Ok(part)
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
    let Some(request) = &conversation.request else {
        return Value::Array(conversation.messages.iter().map(write_message).collect());
    };
    let system_count = conversation.messages.iter().take_while(|m| m.role.is_instruction()).count();
    let (system, rest) = conversation.messages.split_at(system_count);
    let mut out = Map::new();
    if let Some(model) = &request.model {
        out.insert("model".into(), Value::String(model.clone()));
    }
    if !system.is_empty() {
        out.insert("system".into(), write_system(system));
    }
    out.insert("messages".into(), Value::Array(rest.iter().map(write_message).collect()));
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
    Value::Object(out)
}

/// The top-level `system` value: a string when there is one plain-text system message, text
/// blocks otherwise.
fn write_system(system: &[Message]) -> Value {
    if let [only] = system {
        if let Some(value) = write_content(only.content_form, &only.parts) {
            return value;
        }
    }
    let blocks = system.iter().flat_map(|m| m.parts.iter()).map(write_block).collect();
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
    if let Some(content) = write_content(message.content_form, &message.parts) {
        out.insert("content".into(), content);
    }
    extend_missing(&mut out, &message.extra);
    Value::Object(out)
}

fn write_content(form: ContentForm, parts: &[Part]) -> Option<Value> {
    let parts: Vec<&Part> = parts.iter().collect();
    content::write_content(form, &parts, write_block)
}

/// Writes one part as an Anthropic content block. Parts Anthropic has no block for (audio,
/// refusals, OpenAI files) are written in their OpenAI shape rather than lost.
pub(crate) fn write_block(part: &Part) -> Value {
    let mut out = Map::new();
    match part {
        Part::Text(t) => {
            out.insert("type".into(), "text".into());
            out.insert("text".into(), Value::String(t.text.clone()));
            extend_missing(&mut out, &t.extra);
        }
        Part::Image(image) => {
            let source = match &image.source {
                ImageSource::Url(url) if image.style == ImageStyle::OpenAi => match split_data_uri(url) {
                    Some((media_type, data)) => base64_source(media_type, data),
                    None => url_source(url),
                },
                ImageSource::Url(url) => url_source(url),
                ImageSource::Base64 { media_type, data } => base64_source(media_type, data),
                ImageSource::Other(map) => map.clone(),
            };
            let mut source = source;
            if image.style == ImageStyle::Anthropic {
                extend_missing(&mut source, &image.inner_extra);
            }
            out.insert("type".into(), "image".into());
            out.insert("source".into(), Value::Object(source));
            extend_missing(&mut out, &image.extra);
        }
        Part::File(file) if file.kind == "document" => {
            out.insert("type".into(), "document".into());
            extend_missing(&mut out, &file.fields);
        }
        Part::ToolCall(call) => {
            out.insert("type".into(), "tool_use".into());
            if let Some(id) = &call.id {
                out.insert("id".into(), Value::String(id.clone()));
            }
            out.insert("name".into(), Value::String(call.name.clone()));
            out.insert("input".into(), call.arguments.to_value());
            if call.style == CallStyle::AnthropicToolUse {
                extend_missing(&mut out, &call.extra);
            }
        }
        Part::ToolResult(result) => {
            out.insert("type".into(), "tool_result".into());
            out.insert("tool_use_id".into(), Value::String(result.tool_use_id.clone()));
            if let Some(content) = write_content(result.content_form, &result.parts) {
                out.insert("content".into(), content);
            }
            if let Some(is_error) = result.is_error {
                out.insert("is_error".into(), Value::Bool(is_error));
            }
            extend_missing(&mut out, &result.extra);
        }
        Part::Thinking(t) => {
            out.insert("type".into(), "thinking".into());
            out.insert("thinking".into(), Value::String(t.text.clone()));
            if let Some(signature) = &t.signature {
                out.insert("signature".into(), Value::String(signature.clone()));
            }
            extend_missing(&mut out, &t.extra);
        }
        Part::RedactedThinking(r) => {
            out.insert("type".into(), "redacted_thinking".into());
            out.insert("data".into(), Value::String(r.data.clone()));
            extend_missing(&mut out, &r.extra);
        }
        Part::Opaque(value) => return value.clone(),
        _ => return openai::write_part(part),
    }
    Value::Object(out)
}

fn url_source(url: &str) -> Map<String, Value> {
    let mut source = Map::new();
    source.insert("type".into(), "url".into());
    source.insert("url".into(), Value::String(url.to_string()));
    source
}

fn base64_source(media_type: &str, data: &str) -> Map<String, Value> {
    let mut source = Map::new();
    source.insert("type".into(), "base64".into());
    source.insert("media_type".into(), Value::String(media_type.to_string()));
    source.insert("data".into(), Value::String(data.to_string()));
    source
}

/// Splits `data:<media type>;base64,<data>` into its media type and data.
pub(crate) fn split_data_uri(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    Some((media_type, data))
}

fn write_tool(tool: &Tool) -> Value {
    match tool.style {
        ToolStyle::Other => Value::Object(tool.extra.clone()),
        ToolStyle::OpenAi | ToolStyle::Anthropic => {
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
