//! OpenAI Responses API: input items, `instructions` and request bodies.
//!
//! One message per item, so that message `i` is item `i` (errors name `input[i]`, and a plan
//! or the Python package hands an item back as it came):
//! - a `message` item (also the short form without `type`) is a message of its role, its
//!   content `input_text` / `output_text` as text, `input_image` as an image, `input_file` as
//!   a file, `refusal` as a refusal, any other part opaque;
//! - a `reasoning` item is an assistant message of one thinking part (its summary as the text,
//!   `encrypted_content` as the signature);
//! - a `function_call` or `custom_tool_call` item is an assistant message of one tool call
//!   (`call_id` is the call's id);
//! - a `function_call_output` or `custom_tool_call_output` item is a `tool` message answering
//!   its `call_id`;
//! - any other item (`web_search_call`, `computer_call`, `item_reference`, …) is an assistant
//!   message holding the item verbatim as an opaque part.
//!
//! The items of one model response (reasoning, message, calls) sit in a row; the units keep
//! them together, with the outputs of their calls, as one assistant step
//! ([`Message::is_response_item`]). A request body's `instructions` is read as a leading
//! system message and written back there; `input` may be a string (one user message).

use std::borrow::Borrow;

use serde_json::{Map, Value};

use super::common::extend_missing;
use super::content::{read_content, take_tools, write_content};
use super::foreign;
use super::path::{array, object, string, take, take_non_null, Path};
use super::{Conversation, Format, FormatError, RequestFields};
use crate::message::{
    Arguments, CallStyle, ContentForm, Extra, FilePart, ImagePart, ImageSource, ImageStyle, Message, Part,
    RefusalPart, Role, TextPart, ThinkingOrigin, ThinkingPart, Tool, ToolCall, ToolStyle,
};

/// How a reasoning item's summary parts are joined into one text.
const SUMMARY_SEPARATOR: &str = "\n\n";

pub(super) fn read_document(value: Value) -> Result<Conversation, FormatError> {
    match value {
        Value::Array(items) => Ok(Conversation {
            format: Format::Responses,
            messages: read_items(items, &Path::root("input"))?,
            tools: None,
            request: None,
        }),
        Value::Object(mut map) => {
            let root = Path::root("");
            let mut messages = Vec::new();
            let instructions = match take_non_null(&mut map, "instructions") {
                Some(value) => {
                    messages.push(Message::text(Role::System, string(value, &root.key("instructions"))?));
                    true
                }
                None => false,
            };
            let input = match take(&mut map, "input") {
                Some(input) => input,
                None if map.contains_key("messages") => {
                    return Err(root.error(
                        "a request with `messages` is a Chat Completions or Anthropic request, not a Responses one",
                    ))
                }
                None => return Err(foreign::missing_messages(&map, &root)),
            };
            let input_string = match input {
                Value::String(text) => {
                    messages.push(Message::text(Role::User, text));
                    true
                }
                other => {
                    let at = root.key("input");
                    messages.extend(read_items(array(other, &at)?, &at)?);
                    false
                }
            };
            let tools = take_tools(&mut map, &root, read_tools)?;
            let max_output_tokens = match take_non_null(&mut map, "max_output_tokens") {
                Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
                Some(other) => {
                    return Err(root.key("max_output_tokens").expected("a non-negative integer", &other))
                }
                None => None,
            };
            let request = RequestFields {
                max_output_tokens,
                instructions,
                input_string,
                ..super::common::read_request_fields(map, &root)?
            };
            Ok(Conversation { format: Format::Responses, messages, tools, request: Some(request) })
        }
        other => Err(Path::root("").expected("an array of input items or an object with `input`", &other)),
    }
}

fn read_items(items: Vec<Value>, at: &Path) -> Result<Vec<Message>, FormatError> {
    items.into_iter().enumerate().map(|(i, item)| read_item(item, &at.index(i))).collect()
}

/// LangChain's message `type`s: a list of LangChain messages dumped to dicts looks like items.
const LANGCHAIN_TYPES: [&str; 7] = ["human", "ai", "system", "tool", "function", "chat", "remove"];

/// Reads one input item as one message.
pub(super) fn read_item(value: Value, at: &Path) -> Result<Message, FormatError> {
    let mut map = object(value, at)?;
    let kind = match map.get("type") {
        None => None,
        Some(Value::String(kind)) => Some(kind.clone()),
        Some(other) => return Err(at.key("type").expected("a string", other)),
    };
    match kind.as_deref() {
        None | Some("message") if map.contains_key("role") => read_message_item(map, at),
        None => Err(at.error("an input item needs a `type` (or a `role`, for a message)")),
        Some("message") => Err(at.error("missing `role`")),
        Some("reasoning") => {
            take(&mut map, "type");
            Ok(item_message(Part::Thinking(read_reasoning(map, at)?)))
        }
        Some(kind @ ("function_call" | "custom_tool_call")) => {
            let custom = kind == "custom_tool_call";
            take(&mut map, "type");
            let call_id = required_string(&mut map, "call_id", at)?;
            let name = required_string(&mut map, "name", at)?;
            let arguments = required_string(&mut map, if custom { "input" } else { "arguments" }, at)?;
            let style = if custom { CallStyle::ResponsesCustom } else { CallStyle::ResponsesFunction };
            Ok(item_message(Part::ToolCall(ToolCall {
                id: Some(call_id),
                name,
                arguments: Arguments::Text(arguments),
                style,
                extra: map,
                inner_extra: Extra::new(),
            })))
        }
        Some("function_call_output" | "custom_tool_call_output") => read_output(map, at),
        Some(kind) if LANGCHAIN_TYPES.contains(&kind) && map.contains_key("content") => {
            Err(at.key("type").error(format!(
                "{kind:?} is a LangChain message type, not a Responses item: convert LangChain \
                 messages with tightfit.compat.langchain (or langchain_core's convert_to_openai_messages)"
            )))
        }
        Some(_) => Ok(item_message(Part::Opaque(Value::Object(map)))),
    }
}

/// A message of one item other than a `message` (see [`Message::is_response_item`]).
fn item_message(part: Part) -> Message {
    Message {
        role: Role::Assistant,
        parts: vec![part],
        name: None,
        tool_call_id: None,
        content_form: ContentForm::Absent,
        extra: Extra::new(),
    }
}

fn required_string(map: &mut Map<String, Value>, key: &str, at: &Path) -> Result<String, FormatError> {
    let value = take(map, key).ok_or_else(|| at.error(format!("missing `{key}`")))?;
    string(value, &at.key(key))
}

/// Fields of a Chat Completions message that no Responses message has: a list that mixes
/// the formats is an error, not a history whose calls would count as nothing.
const CHAT_FIELDS: [&str; 3] = ["tool_calls", "tool_call_id", "function_call"];

fn read_message_item(mut map: Map<String, Value>, at: &Path) -> Result<Message, FormatError> {
    if let Some(key) = CHAT_FIELDS.iter().find(|k| map.get(**k).is_some_and(|v| !v.is_null())) {
        return Err(at.key(key).error(
            "a Chat Completions field in a Responses input: the list mixes formats (convert the \
             Chat Completions messages, or read the list as format \"openai\")",
        ));
    }
    let role_name = required_string(&mut map, "role", at)?;
    let role = match role_name.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        "developer" => Role::Developer,
        _ => Role::Other,
    };
    let (content_form, parts) = match take(&mut map, "content") {
        None => (ContentForm::Absent, Vec::new()),
        Some(value) => {
            let read = if role == Role::Assistant { read_output_part } else { read_input_part };
            read_content(value, &at.key("content"), read, "a string or an array of content parts")?
        }
    };
    if role == Role::Other {
        // the unknown role is written back from here, like OpenAI's
        map.insert("role".into(), Value::String(role_name));
    }
    Ok(Message { role, parts, name: None, tool_call_id: None, content_form, extra: map })
}

fn read_output(mut map: Map<String, Value>, at: &Path) -> Result<Message, FormatError> {
    let call_id = required_string(&mut map, "call_id", at)?;
    let output = take(&mut map, "output").ok_or_else(|| at.error("missing `output`"))?;
    // the API takes no null output; read as empty, it would come back as "" (not the input)
    if output.is_null() {
        return Err(at.key("output").expected("a string or an array of content parts", &output));
    }
    let (content_form, parts) =
        read_content(output, &at.key("output"), read_input_part, "a string or an array of content parts")?;
    // `type` stays in `extra`: it says which kind of output this is
    Ok(Message { role: Role::Tool, parts, name: None, tool_call_id: Some(call_id), content_form, extra: map })
}

fn read_reasoning(mut map: Map<String, Value>, at: &Path) -> Result<ThinkingPart, FormatError> {
    let text = match map.get("summary") {
        Some(Value::Array(parts)) => summary_text(parts),
        Some(other) => return Err(at.key("summary").expected("an array", other)),
        None => String::new(),
    };
    let signature = match take_non_null(&mut map, "encrypted_content") {
        Some(Value::String(s)) => Some(s),
        Some(other) => return Err(at.key("encrypted_content").expected("a string", &other)),
        None => None,
    };
    Ok(ThinkingPart { text, signature, origin: ThinkingOrigin::ResponsesItem, extra: map })
}

/// The text of a reasoning summary: its `summary_text` parts joined.
fn summary_text(parts: &[Value]) -> String {
    let texts: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
    texts.join(SUMMARY_SEPARATOR)
}

/// The text part type a message of this role takes by default.
fn text_type(assistant: bool) -> &'static str {
    if assistant {
        "output_text"
    } else {
        "input_text"
    }
}

fn read_input_part(value: Value, at: &Path) -> Result<Part, FormatError> {
    read_part(value, at, false)
}

fn read_output_part(value: Value, at: &Path) -> Result<Part, FormatError> {
    read_part(value, at, true)
}

/// Reads one content part; `assistant` says which text type is the default (the other is
/// kept as the part's `type`).
fn read_part(value: Value, at: &Path, assistant: bool) -> Result<Part, FormatError> {
    let Value::Object(mut map) = value else {
        return Ok(Part::Opaque(value));
    };
    let kind = match map.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Ok(Part::Opaque(Value::Object(map))),
    };
    match kind.as_str() {
        "input_text" | "output_text" => {
            let text = required_string(&mut map, "text", at)?;
            if kind == text_type(assistant) {
                take(&mut map, "type");
            }
            Ok(Part::Text(TextPart { text, extra: map }))
        }
        "input_image" => {
            take(&mut map, "type");
            let source = match take_non_null(&mut map, "image_url") {
                Some(url) => ImageSource::Url(string(url, &at.key("image_url"))?),
                None => ImageSource::Other(Extra::new()),
            };
            let detail = match take_non_null(&mut map, "detail") {
                Some(Value::String(detail)) => Some(detail),
                Some(other) => return Err(at.key("detail").expected("a string", &other)),
                None => None,
            };
            Ok(Part::Image(ImagePart {
                source,
                detail,
                style: ImageStyle::Responses,
                extra: map,
                inner_extra: Extra::new(),
            }))
        }
        "input_file" => {
            take(&mut map, "type");
            Ok(Part::File(FilePart { kind, fields: map }))
        }
        "refusal" => {
            take(&mut map, "type");
            let refusal = required_string(&mut map, "refusal", at)?;
            Ok(Part::Refusal(RefusalPart { refusal, extra: map }))
        }
        _ => Ok(Part::Opaque(Value::Object(map))),
    }
}

pub(super) fn read_tools(items: Vec<Value>, at: &Path) -> Result<Vec<Tool>, FormatError> {
    let mut tools = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = at.index(i);
        let mut map = object(item, &at)?;
        let is_function = map.get("type").and_then(Value::as_str) == Some("function")
            && map.get("name").is_some_and(Value::is_string)
            && map.get("description").is_none_or(|d| d.is_string() || d.is_null());
        if !is_function {
            tools.push(Tool::other(map));
            continue;
        }
        let name = required_string(&mut map, "name", &at)?;
        let description = take_non_null(&mut map, "description").and_then(|d| d.as_str().map(String::from));
        let parameters = take(&mut map, "parameters");
        tools.push(Tool {
            name,
            description,
            parameters,
            style: ToolStyle::Responses,
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
        return Value::Array(messages.iter().map(|m| write_item(m.borrow())).collect());
    };
    let is_instructions = |m: &Message| m.role.is_instruction() && m.extra.is_empty();
    let (instructions, rest) = match messages.split_first() {
        Some((first, rest)) if request.instructions && is_instructions(first.borrow()) => {
            (Some(first.borrow().text_content()), rest)
        }
        _ => (None, messages),
    };
    let mut out = Map::new();
    if let Some(model) = &request.model {
        out.insert("model".into(), Value::String(model.clone()));
    }
    if let Some(instructions) = instructions {
        out.insert("instructions".into(), Value::String(instructions));
    }
    let input = match rest {
        [only] if request.input_string && is_plain_user_text(only.borrow()) => {
            Value::String(only.borrow().text_content())
        }
        _ => Value::Array(rest.iter().map(|m| write_item(m.borrow())).collect()),
    };
    out.insert("input".into(), input);
    if let Some(tools) = &conversation.tools {
        out.insert("tools".into(), Value::Array(tools.iter().map(write_tool).collect()));
    }
    if let Some(n) = request.max_output_tokens {
        out.insert("max_output_tokens".into(), n.into());
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

/// A user message that a string `input` says all of.
fn is_plain_user_text(message: &Message) -> bool {
    message.role == Role::User
        && message.extra.is_empty()
        && message.content_form == ContentForm::Text
        && matches!(message.parts.as_slice(), [Part::Text(t)] if t.extra.is_empty())
}

/// Writes one message as one input item.
pub(crate) fn write_item(message: &Message) -> Value {
    if message.is_response_item() {
        return write_item_part(&message.parts[0]);
    }
    match message.role {
        Role::Tool | Role::Function => write_output(message),
        _ => write_message_item(message),
    }
}

fn write_message_item(message: &Message) -> Value {
    let mut out = Map::new();
    if let Some(kind) = message.extra.get("type") {
        out.insert("type".into(), kind.clone());
    }
    if message.role != Role::Other {
        out.insert("role".into(), Value::String(message.role.as_str().into()));
    }
    let parts: Vec<&Part> = message.parts.iter().collect();
    let write = if message.role == Role::Assistant { write_output_part } else { write_input_part };
    if let Some(content) = write_content(message.content_form, &parts, write) {
        out.insert("content".into(), content);
    }
    extend_missing(&mut out, &message.extra);
    Value::Object(out)
}

fn write_output(message: &Message) -> Value {
    let mut out = Map::new();
    let kind = message.extra.get("type").cloned().unwrap_or_else(|| "function_call_output".into());
    out.insert("type".into(), kind);
    let call_id = message.tool_call_id.clone().or_else(|| message.name.clone()).unwrap_or_default();
    out.insert("call_id".into(), Value::String(call_id));
    let parts: Vec<&Part> = message.parts.iter().collect();
    let form = match message.content_form {
        ContentForm::Absent | ContentForm::Null => ContentForm::Text,
        form => form,
    };
    let output =
        write_content(form, &parts, write_input_part).unwrap_or_else(|| Value::String(String::new()));
    out.insert("output".into(), output);
    extend_missing(&mut out, &message.extra);
    Value::Object(out)
}

/// Writes a part that is a whole item: reasoning, a call, or an item kept verbatim.
fn write_item_part(part: &Part) -> Value {
    let mut out = Map::new();
    match part {
        Part::Thinking(t) => {
            out.insert("type".into(), "reasoning".into());
            let mut wrote_summary = false;
            for (key, value) in &t.extra {
                if key == "summary" {
                    wrote_summary = true;
                    out.insert(key.clone(), write_summary(value, &t.text));
                } else {
                    out.insert(key.clone(), value.clone());
                }
            }
            if !wrote_summary && !t.text.is_empty() {
                out.insert("summary".into(), write_summary(&Value::Null, &t.text));
            }
            if let Some(signature) = &t.signature {
                out.insert("encrypted_content".into(), Value::String(signature.clone()));
            }
        }
        Part::ToolCall(call) => {
            let custom = call.style == CallStyle::ResponsesCustom;
            out.insert("type".into(), if custom { "custom_tool_call" } else { "function_call" }.into());
            if let Some(id) = &call.id {
                out.insert("call_id".into(), Value::String(id.clone()));
            }
            out.insert("name".into(), Value::String(call.name.clone()));
            let key = if custom { "input" } else { "arguments" };
            out.insert(key.into(), Value::String(call.arguments.to_json_string()));
            extend_missing(&mut out, &call.extra);
        }
        Part::Opaque(value) => return value.clone(),
        other => return write_input_part(other),
    }
    Value::Object(out)
}

/// A reasoning summary: as it came while its text is unchanged, else one `summary_text`.
fn write_summary(original: &Value, text: &str) -> Value {
    if let Value::Array(parts) = original {
        if summary_text(parts) == text {
            return original.clone();
        }
    }
    if text.is_empty() {
        return Value::Array(Vec::new());
    }
    serde_json::json!([{"type": "summary_text", "text": text}])
}

fn write_input_part(part: &Part) -> Value {
    write_part(part, false)
}

fn write_output_part(part: &Part) -> Value {
    write_part(part, true)
}

fn write_part(part: &Part, assistant: bool) -> Value {
    let mut out = Map::new();
    match part {
        Part::Text(t) => {
            let kind = t.extra.get("type").cloned().unwrap_or_else(|| text_type(assistant).into());
            out.insert("type".into(), kind);
            out.insert("text".into(), Value::String(t.text.clone()));
            extend_missing(&mut out, &t.extra);
        }
        Part::Image(image) => {
            out.insert("type".into(), "input_image".into());
            match &image.source {
                ImageSource::Url(url) => {
                    out.insert("image_url".into(), Value::String(url.clone()));
                }
                ImageSource::Base64 { media_type, data } => {
                    out.insert("image_url".into(), Value::String(format!("data:{media_type};base64,{data}")));
                }
                ImageSource::Other(_) => {}
            }
            if let Some(detail) = &image.detail {
                out.insert("detail".into(), Value::String(detail.clone()));
            }
            if image.style == ImageStyle::Responses {
                extend_missing(&mut out, &image.extra);
            }
        }
        Part::File(file) => {
            out.insert("type".into(), Value::String(file.kind.clone()));
            extend_missing(&mut out, &file.fields);
        }
        Part::Refusal(r) => {
            out.insert("type".into(), "refusal".into());
            out.insert("refusal".into(), Value::String(r.refusal.clone()));
            extend_missing(&mut out, &r.extra);
        }
        Part::Opaque(value) => return value.clone(),
        // a part no content list of this format holds (a call, reasoning, a tool_result
        // block) is written in the shape of its own item or block rather than lost
        Part::Thinking(_) | Part::ToolCall(_) => return write_item_part_any(part),
        other => return super::common::write_block(other),
    }
    Value::Object(out)
}

/// [`write_item_part`] for any thinking or call, whatever format it was read in.
fn write_item_part_any(part: &Part) -> Value {
    match part {
        Part::Thinking(t) if t.origin != ThinkingOrigin::ResponsesItem => {
            write_item_part(&Part::Thinking(ThinkingPart { extra: Extra::new(), ..t.clone() }))
        }
        Part::ToolCall(c)
            if !matches!(c.style, CallStyle::ResponsesFunction | CallStyle::ResponsesCustom) =>
        {
            write_item_part(&Part::ToolCall(ToolCall {
                style: CallStyle::ResponsesFunction,
                extra: Extra::new(),
                ..c.clone()
            }))
        }
        other => write_item_part(other),
    }
}

pub(super) fn write_tool(tool: &Tool) -> Value {
    if tool.style == ToolStyle::Other {
        return Value::Object(tool.extra.clone());
    }
    let mut out = Map::new();
    out.insert("type".into(), "function".into());
    out.insert("name".into(), Value::String(tool.name.clone()));
    if let Some(description) = &tool.description {
        out.insert("description".into(), Value::String(description.clone()));
    }
    if let Some(parameters) = &tool.parameters {
        out.insert("parameters".into(), parameters.clone());
    }
    if tool.style == ToolStyle::Responses {
        extend_missing(&mut out, &tool.extra);
    }
    Value::Object(out)
}
