//! Converting Gemini `contents` to and from the Anthropic message shape, the form Gemini's
//! is closest to (calls are parts of the model turn, their responses parts of the next user
//! turn); Gemini ⇄ Chat Completions and Responses go on from there (see `convert`).
//!
//! What does not carry over, reported per message: thought signatures (Gemini's and
//! Anthropic's are not interchangeable, so a thought becomes unsigned thinking, and signed
//! thinking becomes an unsigned thought), `thoughtSignature` on other parts, made-up call ids
//! (a Gemini call without an `id` gets `name#n`, which the converted call and result carry),
//! `fileData` and non-image `inlineData` parts, and parts kept verbatim.

use serde_json::{Map, Value};

use super::gemini::{response_of, response_text};
use crate::message::{
    Arguments, CallStyle, ContentForm, Extra, ImagePart, ImageStyle, Message, Part, Role, TextPart,
    ThinkingOrigin, ThinkingPart, ToolCall, ToolResult,
};

/// Gemini messages as Anthropic-shaped ones.
pub(super) fn to_anthropic(messages: &[Message], notes: &mut Vec<String>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let at = format!("messages[{index}]");
        if !message.extra.is_empty() {
            let keys: Vec<&str> = message.extra.keys().map(String::as_str).collect();
            notes.push(format!("{at}: dropped fields {keys:?} (not Anthropic fields)"));
        }
        let mut parts = Vec::with_capacity(message.parts.len());
        for part in &message.parts {
            let signed = |extra: &Extra| extra.contains_key("thoughtSignature");
            match part {
                Part::Text(t) => {
                    if signed(&t.extra) {
                        notes.push(format!("{at}: dropped a thoughtSignature"));
                    }
                    parts.push(Part::Text(TextPart::new(t.text.clone())));
                }
                Part::Thinking(t) => {
                    if t.signature.is_some() {
                        notes.push(format!(
                            "{at}: dropped a thought's thoughtSignature (the thinking is unsigned)"
                        ));
                    }
                    parts.push(Part::Thinking(ThinkingPart {
                        text: t.text.clone(),
                        signature: None,
                        origin: ThinkingOrigin::Block,
                        extra: Extra::new(),
                    }));
                }
                Part::Image(image) => parts.push(Part::Image(ImagePart {
                    style: ImageStyle::Anthropic,
                    extra: Extra::new(),
                    inner_extra: Extra::new(),
                    ..image.clone()
                })),
                Part::ToolCall(call) => {
                    if signed(&call.extra) {
                        notes.push(format!("{at}: dropped a function call's thoughtSignature"));
                    }
                    if call.style == CallStyle::GeminiNoId {
                        notes.push(format!(
                            "{at}: the call of {:?} has no id; it and its response carry the made-up id {:?}",
                            call.name,
                            call.id.as_deref().unwrap_or_default()
                        ));
                    }
                    let arguments = match call.arguments.to_value() {
                        Value::Null => Value::Object(Map::new()),
                        args => args,
                    };
                    parts.push(Part::ToolCall(ToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: Arguments::Json(arguments),
                        style: CallStyle::AnthropicToolUse,
                        extra: Extra::new(),
                        inner_extra: Extra::new(),
                    }));
                }
                Part::ToolResult(result) => {
                    let text = match result.parts.as_slice() {
                        [Part::Opaque(response)] => response_text(response),
                        parts => super::gemini::response_text(&response_of(parts)),
                    };
                    parts.push(Part::ToolResult(ToolResult {
                        tool_use_id: result.tool_use_id.clone(),
                        parts: vec![Part::Text(TextPart::new(text))],
                        content_form: ContentForm::Text,
                        is_error: None,
                        extra: Extra::new(),
                    }));
                }
                Part::File(file) => {
                    notes.push(format!(
                        "{at}: kept a `{}` part as it is (no Anthropic counterpart)",
                        file.kind
                    ));
                    parts.push(Part::Opaque(Value::Object(file.fields.clone())));
                }
                Part::Opaque(_) => {
                    notes.push(format!("{at}: kept a part Anthropic has no counterpart for as it is"));
                    parts.push(part.clone());
                }
                other => parts.push(other.clone()),
            }
        }
        out.push(Message {
            role: match message.role {
                Role::Other => Role::User,
                role => role,
            },
            parts,
            name: None,
            tool_call_id: None,
            content_form: ContentForm::Parts,
            extra: Extra::new(),
        });
    }
    out
}

/// Anthropic-shaped messages as Gemini ones: a tool result names the call it answers (looked
/// up by id among the calls before it).
pub(super) fn from_anthropic(messages: &[Message], notes: &mut Vec<String>) -> Vec<Message> {
    let mut names: Vec<(String, String)> = Vec::new();
    let mut out = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let at = format!("messages[{index}]");
        let mut parts = Vec::with_capacity(message.parts.len());
        for part in &message.parts {
            match part {
                Part::Text(t) => parts.push(Part::Text(TextPart::new(t.text.clone()))),
                Part::Thinking(t) => {
                    if t.signature.is_some() {
                        notes.push(format!(
                            "{at}: dropped a thinking signature (Gemini thoughts are signed by Gemini)"
                        ));
                    }
                    parts.push(Part::Thinking(ThinkingPart {
                        text: t.text.clone(),
                        signature: None,
                        origin: ThinkingOrigin::Gemini,
                        extra: Extra::new(),
                    }));
                }
                Part::RedactedThinking(_) => {
                    notes.push(format!("{at}: dropped redacted thinking (Gemini has no counterpart)"))
                }
                Part::Image(image) => parts.push(Part::Image(ImagePart {
                    style: ImageStyle::Gemini,
                    detail: None,
                    extra: Extra::new(),
                    inner_extra: Extra::new(),
                    ..image.clone()
                })),
                Part::ToolCall(call) => {
                    let id = call.id.clone().unwrap_or_else(|| call.name.clone());
                    names.push((id.clone(), call.name.clone()));
                    parts.push(Part::ToolCall(ToolCall {
                        id: Some(id),
                        name: call.name.clone(),
                        arguments: Arguments::Json(call.arguments.to_value()),
                        style: CallStyle::Gemini,
                        extra: Extra::new(),
                        inner_extra: Extra::new(),
                    }));
                }
                Part::ToolResult(result) => {
                    if result.is_error == Some(true) {
                        notes.push(format!("{at}: dropped a tool result's error flag"));
                    }
                    let id = result.tool_use_id.clone();
                    let name = names.iter().rev().find(|(call, _)| *call == id).map(|(_, name)| name.clone());
                    let name = name.unwrap_or_else(|| id.clone());
                    let mut extra = Extra::new();
                    extra.insert("id".into(), Value::String(id.clone()));
                    extra.insert("name".into(), Value::String(name));
                    let response = response_of(&result.parts);
                    parts.push(Part::ToolResult(ToolResult {
                        tool_use_id: id,
                        parts: vec![Part::Opaque(response)],
                        content_form: ContentForm::Parts,
                        is_error: None,
                        extra,
                    }));
                }
                other => {
                    notes.push(format!("{at}: kept a part Gemini has no counterpart for in its own shape"));
                    parts.push(other.clone());
                }
            }
        }
        out.push(Message {
            role: message.role,
            parts,
            name: None,
            tool_call_id: None,
            content_form: ContentForm::Parts,
            extra: Extra::new(),
        });
    }
    out
}
