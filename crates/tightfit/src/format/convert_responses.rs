//! Converting between OpenAI Responses items and Chat Completions messages (Anthropic goes
//! through Chat Completions, see [`super::convert`]).
//!
//! What maps: message items ⇄ messages (`input_text`/`output_text` ⇄ text, `input_image` ⇄
//! `image_url`, `input_file` ⇄ `file`), the items of one response (reasoning summary, message,
//! `function_call`s) ⇄ one assistant message with `tool_calls`, `function_call_output` ⇄ `tool`
//! messages, `custom_tool_call` ⇄ custom tool calls. What does not is noted, naming the input
//! message: encrypted reasoning and reasoning without a summary, unsigned reasoning (a
//! Responses reasoning item only comes from OpenAI), items Chat Completions has no shape for,
//! names, and item fields beyond the response's own bookkeeping (`id`, `status`).

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use crate::message::{
    Arguments, CallStyle, ContentForm, Extra, FilePart, ImagePart, ImageSource, ImageStyle, Message, Part,
    Role, TextPart, ThinkingOrigin, ThinkingPart, ToolCall,
};

/// Item fields that are the response's bookkeeping, not content: dropped without a note.
const BOOKKEEPING: [&str; 3] = ["type", "id", "status"];

fn message(role: Role, parts: Vec<Part>, content_form: ContentForm) -> Message {
    Message { role, parts, name: None, tool_call_id: None, content_form, extra: Extra::new() }
}

fn note_fields(fields: &Extra, index: usize, what: &str, notes: &mut Vec<String>) {
    let keys: Vec<&str> = fields.keys().map(String::as_str).filter(|k| !BOOKKEEPING.contains(k)).collect();
    if !keys.is_empty() {
        notes.push(format!("messages[{index}]: dropped {what} fields {keys:?}"));
    }
}

/// The content form for converted content parts: a string for one plain text part, where the
/// input was a string or the parts say no more.
fn form_of(parts: &[Part], was: ContentForm) -> ContentForm {
    match (parts, was) {
        ([Part::Text(t)], _) if t.extra.is_empty() => ContentForm::Text,
        ([], ContentForm::Text) => ContentForm::Text,
        _ => ContentForm::Parts,
    }
}

// ---------------------------------------------------------------------------------------------
// Responses → Chat Completions

/// Converts Responses items to Chat Completions messages.
pub(super) fn to_chat(messages: &[Message], notes: &mut Vec<String>) -> Vec<Message> {
    let mut out = Vec::new();
    // the assistant message being assembled from the items of one response
    let mut pending: Option<Message> = None;
    let flush = |pending: &mut Option<Message>, out: &mut Vec<Message>| {
        if let Some(mut m) = pending.take() {
            let content: Vec<&Part> =
                m.parts.iter().filter(|p| !matches!(p, Part::ToolCall(_) | Part::Thinking(_))).collect();
            m.content_form = match content.as_slice() {
                [] => ContentForm::Null,
                [Part::Text(t)] if t.extra.is_empty() => ContentForm::Text,
                _ => ContentForm::Parts,
            };
            out.push(m);
        }
    };
    for (index, m) in messages.iter().enumerate() {
        if m.is_response_item() {
            let assistant =
                pending.get_or_insert_with(|| message(Role::Assistant, vec![], ContentForm::Null));
            match &m.parts[0] {
                Part::Thinking(t) => {
                    if t.signature.is_some() {
                        notes.push(format!(
                            "messages[{index}]: dropped a reasoning item's encrypted_content (Chat Completions has no place for it)"
                        ));
                    }
                    if t.text.is_empty() {
                        notes.push(format!("messages[{index}]: dropped a reasoning item without a summary"));
                    } else {
                        assistant.parts.push(Part::Thinking(ThinkingPart {
                            text: t.text.clone(),
                            signature: None,
                            origin: ThinkingOrigin::ReasoningContent,
                            extra: Extra::new(),
                        }));
                    }
                }
                Part::ToolCall(call) => {
                    note_fields(&call.extra, index, "call", notes);
                    let custom = call.style == CallStyle::ResponsesCustom;
                    let mut extra = Extra::new();
                    extra.insert("type".into(), if custom { "custom" } else { "function" }.into());
                    assistant.parts.push(Part::ToolCall(ToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: Arguments::Text(call.arguments.to_json_string()),
                        style: if custom { CallStyle::OpenAiCustom } else { CallStyle::OpenAiFunction },
                        extra,
                        inner_extra: Extra::new(),
                    }));
                }
                part => {
                    let kind = match part {
                        Part::Opaque(v) => v.get("type").and_then(Value::as_str).unwrap_or("unknown"),
                        _ => "unknown",
                    };
                    notes.push(format!(
                        "messages[{index}]: dropped a `{kind}` item (Chat Completions has no counterpart)"
                    ));
                }
            }
            continue;
        }
        note_fields(&m.extra, index, "item", notes);
        let parts: Vec<Part> = m.parts.iter().map(|p| from_responses_part(p, index, notes)).collect();
        match m.role {
            Role::Assistant => {
                let busy =
                    pending.as_ref().is_some_and(|p| p.parts.iter().any(|p| !matches!(p, Part::Thinking(_))));
                if busy {
                    flush(&mut pending, &mut out);
                }
                let assistant =
                    pending.get_or_insert_with(|| message(Role::Assistant, vec![], ContentForm::Null));
                assistant.parts.extend(parts);
            }
            Role::Tool | Role::Function => {
                flush(&mut pending, &mut out);
                let form = form_of(&parts, ContentForm::Text);
                out.push(Message {
                    tool_call_id: m.tool_call_id.clone(),
                    ..message(Role::Tool, parts, form)
                });
            }
            role => {
                flush(&mut pending, &mut out);
                let form = form_of(&parts, m.content_form);
                let mut converted = message(role, parts, form);
                if role == Role::Other {
                    notes.push(format!("messages[{index}]: kept the unknown role {:?}", m.role_name()));
                    if let Some(name) = m.extra.get("role") {
                        converted.extra.insert("role".into(), name.clone());
                    }
                }
                out.push(converted);
            }
        }
    }
    flush(&mut pending, &mut out);
    out
}

fn from_responses_part(part: &Part, index: usize, notes: &mut Vec<String>) -> Part {
    match part {
        Part::Text(t) => {
            let dropped: Vec<&str> = t
                .extra
                .keys()
                .map(String::as_str)
                .filter(|k| !matches!(*k, "type" | "annotations" | "logprobs"))
                .collect();
            if !dropped.is_empty() {
                notes.push(format!("messages[{index}]: dropped text part fields {dropped:?}"));
            }
            Part::Text(TextPart::new(t.text.clone()))
        }
        Part::Image(image) if image.style == ImageStyle::Responses => match &image.source {
            ImageSource::Url(url) => Part::Image(ImagePart {
                source: ImageSource::Url(url.clone()),
                detail: image.detail.clone(),
                style: ImageStyle::OpenAi,
                extra: Extra::new(),
                inner_extra: Extra::new(),
            }),
            _ => {
                notes.push(format!(
                    "messages[{index}]: kept an image known by file id as it came: Chat Completions takes images by URL"
                ));
                part.clone()
            }
        },
        Part::File(file) if file.kind == "input_file" => {
            if file.fields.contains_key("file_url") {
                notes.push(format!(
                    "messages[{index}]: kept a file by URL as it came: Chat Completions takes files by id or data"
                ));
                return part.clone();
            }
            let mut fields = Extra::new();
            fields.insert("file".into(), Value::Object(file.fields.clone()));
            Part::File(FilePart { kind: "file".into(), fields })
        }
        Part::Opaque(_) => {
            notes.push(format!("messages[{index}]: kept a part of unknown type as it came"));
            part.clone()
        }
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Chat Completions → Responses

/// Converts Chat Completions messages to Responses items.
pub(super) fn from_chat(messages: &[Message], notes: &mut Vec<String>) -> Vec<Message> {
    let mut out = Vec::new();
    let mut custom_calls: HashSet<String> = HashSet::new();
    // ids given to legacy calls that have none, waiting for their `function` result by name
    let mut legacy: HashMap<String, VecDeque<String>> = HashMap::new();
    let mut legacy_count = 0usize;
    for (index, m) in messages.iter().enumerate() {
        if m.name.is_some() && m.role != Role::Function {
            notes.push(format!("messages[{index}]: dropped `name` (Responses messages have none)"));
        }
        let extra_keys: Vec<&str> = m.extra.keys().map(String::as_str).filter(|k| *k != "role").collect();
        if !extra_keys.is_empty() {
            notes.push(format!("messages[{index}]: dropped fields {extra_keys:?} (not Responses fields)"));
        }
        match m.role {
            Role::Assistant => {
                let mut content = Vec::new();
                let mut calls = Vec::new();
                for part in &m.parts {
                    match part {
                        Part::Thinking(t) => notes.push(format!(
                            "messages[{index}]: dropped reasoning ({} chars): a Responses reasoning item only comes from OpenAI",
                            t.text.len()
                        )),
                        Part::RedactedThinking(_) => notes.push(format!(
                            "messages[{index}]: dropped redacted thinking (Responses has no place for it)"
                        )),
                        Part::ToolCall(call) => {
                            let custom = call.style == CallStyle::OpenAiCustom;
                            let id = match &call.id {
                                Some(id) => id.clone(),
                                None => {
                                    let id = format!("legacy_call_{legacy_count}");
                                    legacy_count += 1;
                                    legacy.entry(call.name.clone()).or_default().push_back(id.clone());
                                    notes.push(format!("messages[{index}]: a call without an id got id `{id}`"));
                                    id
                                }
                            };
                            if custom {
                                custom_calls.insert(id.clone());
                            }
                            calls.push(Part::ToolCall(ToolCall {
                                id: Some(id),
                                name: call.name.clone(),
                                arguments: Arguments::Text(call.arguments.to_json_string()),
                                style: if custom { CallStyle::ResponsesCustom } else { CallStyle::ResponsesFunction },
                                extra: Extra::new(),
                                inner_extra: Extra::new(),
                            }));
                        }
                        other => content.push(to_responses_part(other, index, notes)),
                    }
                }
                content.retain(|p| !matches!(p, Part::Text(t) if t.text.is_empty()));
                if !content.is_empty() || calls.is_empty() {
                    let form = form_of(&content, m.content_form);
                    out.push(message(Role::Assistant, content, form));
                }
                for call in calls {
                    out.push(message(Role::Assistant, vec![call], ContentForm::Absent));
                }
            }
            Role::Tool | Role::Function => {
                let id = match (&m.tool_call_id, m.name.as_ref().and_then(|n| legacy.get_mut(n))) {
                    (Some(id), _) => id.clone(),
                    (None, Some(queue)) if !queue.is_empty() => queue.pop_front().unwrap_or_default(),
                    (None, _) => {
                        notes.push(format!(
                            "messages[{index}]: a result answering no call id got call_id \"\""
                        ));
                        String::new()
                    }
                };
                let parts: Vec<Part> = m.parts.iter().map(|p| to_responses_part(p, index, notes)).collect();
                let form = form_of(&parts, ContentForm::Text);
                let mut output =
                    Message { tool_call_id: Some(id.clone()), ..message(Role::Tool, parts, form) };
                if custom_calls.contains(&id) {
                    output.extra.insert("type".into(), "custom_tool_call_output".into());
                }
                out.push(output);
            }
            role => {
                let parts: Vec<Part> = m.parts.iter().map(|p| to_responses_part(p, index, notes)).collect();
                let form = match m.content_form {
                    ContentForm::Absent | ContentForm::Null => ContentForm::Text,
                    _ => form_of(&parts, m.content_form),
                };
                let mut converted = message(role, parts, form);
                if role == Role::Other {
                    notes.push(format!("messages[{index}]: kept the unknown role {:?}", m.role_name()));
                    if let Some(name) = m.extra.get("role") {
                        converted.extra.insert("role".into(), name.clone());
                    }
                }
                out.push(converted);
            }
        }
    }
    out
}

fn to_responses_part(part: &Part, index: usize, notes: &mut Vec<String>) -> Part {
    match part {
        Part::Text(t) => Part::Text(TextPart::new(t.text.clone())),
        Part::Image(image) if image.style != ImageStyle::Responses => {
            let source = match &image.source {
                ImageSource::Url(url) => ImageSource::Url(url.clone()),
                ImageSource::Base64 { media_type, data } => {
                    ImageSource::Url(format!("data:{media_type};base64,{data}"))
                }
                ImageSource::Other(_) => {
                    notes.push(format!("messages[{index}]: kept an image of an unknown source as it came"));
                    return part.clone();
                }
            };
            Part::Image(ImagePart {
                source,
                detail: image.detail.clone(),
                style: ImageStyle::Responses,
                extra: Extra::new(),
                inner_extra: Extra::new(),
            })
        }
        Part::File(file) if file.kind == "file" => match file.fields.get("file") {
            Some(Value::Object(inner)) => {
                Part::File(FilePart { kind: "input_file".into(), fields: inner.clone() })
            }
            _ => {
                notes.push(format!(
                    "messages[{index}]: kept a `file` part without a `file` object as it came"
                ));
                part.clone()
            }
        },
        Part::Audio(_) | Part::File(_) | Part::Opaque(_) | Part::ToolResult(_) => {
            notes.push(format!("messages[{index}]: kept a part Responses has no shape for as it came"));
            part.clone()
        }
        other => other.clone(),
    }
}
