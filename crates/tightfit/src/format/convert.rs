//! Converting a conversation between OpenAI Chat Completions, OpenAI Responses, Anthropic and
//! Gemini shapes (Responses ⇄ Anthropic goes through Chat Completions, see `convert_responses`;
//! Gemini goes through the Anthropic shape, and on to Chat Completions and Responses from
//! there, see `convert_gemini`).
//!
//! What maps: system prompts (OpenAI system/developer messages ⇄ Anthropic top-level
//! `system`), tool calls (`tool_calls` ⇄ `tool_use` blocks), tool results (`tool` messages ⇄
//! `tool_result` blocks at the head of the next user message), images (data URIs ⇄ base64
//! sources, URLs ⇄ URL sources), reasoning (`reasoning_content` ⇄ thinking blocks), tool
//! schemas. What does not map is reported in [`Conversion::notes`], naming the message: dropped
//! names, unsigned reasoning, empty text, image `detail`, error flags and signatures, parts
//! kept in a shape the target has no counterpart for, and request fields copied unchanged.

use crate::message::{
    Arguments, CallStyle, ContentForm, Extra, ImagePart, ImageSource, ImageStyle, Message, Part, Role,
    TextPart, ThinkingOrigin, Tool, ToolCall, ToolResult, ToolStyle,
};

use super::common::split_data_uri;
use super::convert_gemini as gemini;
use super::convert_responses as responses;
use super::{Conversation, Format};

/// The second half of a conversion through Chat Completions: its notes name the messages of
/// the Chat Completions form, and say so.
fn second_leg(
    chat: &[Message],
    notes: &mut Vec<String>,
    convert: fn(&[Message], &mut Vec<String>) -> Vec<Message>,
) -> Vec<Message> {
    let mut own = Vec::new();
    let out = convert(chat, &mut own);
    notes.extend(own.into_iter().map(|n| format!("(in the Chat Completions form) {n}")));
    out
}

/// [`second_leg`] from the `form` form (Gemini goes through the Anthropic shape).
fn second_leg_in(
    messages: &[Message],
    notes: &mut Vec<String>,
    form: &str,
    convert: fn(&[Message], &mut Vec<String>) -> Vec<Message>,
) -> Vec<Message> {
    let mut own = Vec::new();
    let out = convert(messages, &mut own);
    notes.extend(own.into_iter().map(|n| format!("(in the {form} form) {n}")));
    out
}

/// The result of a conversion: the converted conversation and what could not be carried over.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// The conversation in the target format.
    pub conversation: Conversation,
    /// One line per loss or change, naming the input message index.
    pub notes: Vec<String>,
}

/// Converts a conversation to `target`. Converting to the format it is already in returns it
/// unchanged.
pub fn convert(conversation: &Conversation, target: Format) -> Conversion {
    let mut notes = Vec::new();
    let messages = &conversation.messages;
    let messages = match (conversation.format, target) {
        (Format::OpenAi, Format::Anthropic) => to_anthropic(messages, &mut notes),
        (Format::Anthropic, Format::OpenAi) => to_openai(messages, &mut notes),
        (Format::Responses, Format::OpenAi) => responses::to_chat(messages, &mut notes),
        (Format::OpenAi, Format::Responses) => responses::from_chat(messages, &mut notes),
        (Format::Responses, Format::Anthropic) => {
            let chat = responses::to_chat(messages, &mut notes);
            second_leg(&chat, &mut notes, to_anthropic)
        }
        (Format::Anthropic, Format::Responses) => {
            let chat = to_openai(messages, &mut notes);
            second_leg(&chat, &mut notes, responses::from_chat)
        }
        (Format::Gemini, Format::Anthropic) => gemini::to_anthropic(messages, &mut notes),
        (Format::Anthropic, Format::Gemini) => gemini::from_anthropic(messages, &mut notes),
        (Format::Gemini, _) if target != Format::Gemini => {
            let anthropic = gemini::to_anthropic(messages, &mut notes);
            let chat = second_leg_in(&anthropic, &mut notes, "Anthropic", to_openai);
            match target {
                Format::Responses => second_leg(&chat, &mut notes, responses::from_chat),
                _ => chat,
            }
        }
        (_, Format::Gemini) if conversation.format != Format::Gemini => {
            let chat = match conversation.format {
                Format::Responses => responses::to_chat(messages, &mut notes),
                _ => messages.clone(),
            };
            let anthropic = second_leg(&chat, &mut notes, to_anthropic);
            second_leg_in(&anthropic, &mut notes, "Anthropic", gemini::from_anthropic)
        }
        _ => messages.clone(),
    };
    let tools = conversation
        .tools
        .as_ref()
        .map(|tools| tools.iter().map(|tool| restyle_tool(tool, target)).collect::<Vec<_>>());
    let mut request = conversation.request.clone();
    if let (Some(request), true) = (&request, conversation.format != target) {
        let keys: Vec<&str> = request
            .extra
            .keys()
            .map(String::as_str)
            .filter(|k| !matches!(*k, "temperature" | "top_p" | "stream" | "metadata"))
            .collect();
        if !keys.is_empty() {
            notes.push(format!(
                "request fields copied unchanged, check them against the target API: {keys:?}"
            ));
        }
    }
    if let (Some(request), true) = (&mut request, conversation.format != target) {
        // the output budget under the name the target takes
        let reserved = request.reserved_output();
        request.max_tokens = None;
        request.max_completion_tokens = None;
        request.max_output_tokens = None;
        match target {
            Format::Anthropic => request.max_tokens = reserved,
            Format::Responses | Format::Gemini => request.max_output_tokens = reserved,
            _ if conversation.format == Format::Anthropic => request.max_tokens = reserved,
            _ => request.max_completion_tokens = reserved,
        }
        // a Gemini request's leading system message is its `systemInstruction`
        request.instructions = target == Format::Gemini;
        request.input_string = false;
    }
    Conversion { conversation: Conversation { format: target, messages, tools, request }, notes }
}

fn restyle_tool(tool: &Tool, target: Format) -> Tool {
    let style = match (tool.style, target) {
        (ToolStyle::Other, _) => ToolStyle::Other,
        (_, Format::OpenAi) => ToolStyle::OpenAi,
        (_, Format::Anthropic) => ToolStyle::Anthropic,
        (_, Format::Responses) => ToolStyle::Responses,
        (_, Format::Gemini) => ToolStyle::Gemini,
    };
    if style == tool.style {
        return tool.clone();
    }
    Tool { style, extra: Extra::new(), inner_extra: Extra::new(), ..tool.clone() }
}

fn new_message(role: Role, parts: Vec<Part>) -> Message {
    Message {
        role,
        parts,
        name: None,
        tool_call_id: None,
        content_form: ContentForm::Parts,
        extra: Extra::new(),
    }
}

fn to_anthropic(messages: &[Message], notes: &mut Vec<String>) -> Vec<Message> {
    let mut system = Vec::new();
    let mut out: Vec<Message> = Vec::new();
    let mut legacy_ids = 0usize;
    for (index, message) in messages.iter().enumerate() {
        if message.name.is_some() {
            notes.push(format!("messages[{index}]: dropped `name` (Anthropic messages have none)"));
        }
        if !message.extra.is_empty() {
            let keys: Vec<&str> = message.extra.keys().map(String::as_str).collect();
            notes.push(format!("messages[{index}]: dropped fields {keys:?} (not Anthropic fields)"));
        }
        let (role, mut parts) = match message.role {
            Role::System | Role::Developer => {
                if !out.is_empty() {
                    notes.push(format!(
                        "messages[{index}]: moved a mid-conversation {} message into the top-level system prompt",
                        message.role
                    ));
                }
                system.extend(message.parts.iter().map(to_anthropic_part));
                continue;
            }
            Role::Tool | Role::Function => {
                let id = match (&message.tool_call_id, message.role) {
                    (Some(id), _) => id.clone(),
                    (None, _) => {
                        notes.push(format!(
                            "messages[{index}]: a result without a call id got id `legacy_call_{legacy_ids}`"
                        ));
                        legacy_ids += 1;
                        format!("legacy_call_{}", legacy_ids - 1)
                    }
                };
                let parts: Vec<Part> = message.parts.iter().map(to_anthropic_part).collect();
                let result = ToolResult {
                    tool_use_id: id,
                    content_form: match parts.as_slice() {
                        [Part::Text(_)] => ContentForm::Text,
                        _ => ContentForm::Parts,
                    },
                    parts,
                    is_error: None,
                    extra: Extra::new(),
                };
                (Role::User, vec![Part::ToolResult(result)])
            }
            Role::User => (Role::User, message.parts.iter().map(to_anthropic_part).collect()),
            Role::Other => {
                notes.push(format!(
                    "messages[{index}]: the unknown role {:?} became a user message",
                    message.role_name()
                ));
                (Role::User, message.parts.iter().map(to_anthropic_part).collect())
            }
            Role::Assistant => {
                let mut parts = Vec::new();
                for part in &message.parts {
                    match part {
                        Part::Thinking(t) if t.signature.is_none() => notes.push(format!(
                            "messages[{index}]: dropped unsigned reasoning ({} chars): Anthropic only accepts signed thinking",
                            t.text.len()
                        )),
                        Part::ToolCall(call) if call.style == CallStyle::OpenAiLegacy => {
                            let id = format!("legacy_call_{legacy_ids}");
                            parts.push(Part::ToolCall(ToolCall {
                                id: Some(id),
                                arguments: Arguments::Json(call.arguments.to_value()),
                                style: CallStyle::AnthropicToolUse,
                                extra: Extra::new(),
                                inner_extra: Extra::new(),
                                ..call.clone()
                            }));
                        }
                        Part::Refusal(r) => parts.push(Part::Text(TextPart::new(r.refusal.clone()))),
                        other => parts.push(to_anthropic_part(other)),
                    }
                }
                (Role::Assistant, parts)
            }
        };
        note_foreign_parts(&message.parts, index, notes);
        let before = parts.len();
        parts.retain(|p| !matches!(p, Part::Text(t) if t.text.trim().is_empty()));
        if parts.len() < before {
            notes
                .push(format!("messages[{index}]: dropped empty text (Anthropic rejects empty text blocks)"));
        }
        if parts.is_empty() {
            notes.push(format!("messages[{index}]: dropped the message, which had no content left"));
            continue;
        }
        match out.last_mut() {
            // Anthropic alternates roles: consecutive same-role messages become one, with
            // tool results kept at the head of the user message.
            Some(last) if last.role == role => {
                let results_first = parts.iter().any(|p| matches!(p, Part::ToolResult(_)));
                if results_first {
                    let at = last.parts.iter().take_while(|p| matches!(p, Part::ToolResult(_))).count();
                    last.parts.splice(at..at, parts);
                } else {
                    last.parts.extend(parts);
                }
                last.content_form = ContentForm::Parts;
            }
            _ => {
                let form = match parts.as_slice() {
                    [Part::Text(t)] if t.extra.is_empty() => ContentForm::Text,
                    _ => ContentForm::Parts,
                };
                out.push(Message { content_form: form, ..new_message(role, parts) });
            }
        }
    }
    if !system.is_empty() {
        let form = match system.as_slice() {
            [Part::Text(_)] => ContentForm::Text,
            _ => ContentForm::Parts,
        };
        out.insert(0, Message { content_form: form, ..new_message(Role::System, system) });
    }
    out
}

/// Notes the parts of an OpenAI message that Anthropic has no exact counterpart for.
fn note_foreign_parts(parts: &[Part], index: usize, notes: &mut Vec<String>) {
    for part in parts {
        let note = match part {
            Part::Image(image) if image.detail.is_some() => {
                "dropped an image's `detail` (Anthropic has none)"
            }
            Part::Audio(_) => "kept an audio part as it came: Anthropic has no audio input",
            Part::File(file) if file.kind != "document" => {
                "kept a `file` part as it came: Anthropic expects a `document` block"
            }
            Part::Opaque(_) => "kept a part of unknown type as it came",
            _ => continue,
        };
        notes.push(format!("messages[{index}]: {note}"));
    }
}

fn to_anthropic_part(part: &Part) -> Part {
    match part {
        Part::Image(image) if image.style == ImageStyle::OpenAi => {
            let source = match &image.source {
                ImageSource::Url(url) => match split_data_uri(url) {
                    Some((media_type, data)) => {
                        ImageSource::Base64 { media_type: media_type.to_string(), data: data.to_string() }
                    }
                    None => ImageSource::Url(url.clone()),
                },
                other => other.clone(),
            };
            Part::Image(ImagePart {
                source,
                detail: None,
                style: ImageStyle::Anthropic,
                extra: Extra::new(),
                inner_extra: Extra::new(),
            })
        }
        Part::ToolCall(call) if call.style != CallStyle::AnthropicToolUse => Part::ToolCall(ToolCall {
            arguments: Arguments::Json(call.arguments.to_value()),
            style: CallStyle::AnthropicToolUse,
            extra: Extra::new(),
            inner_extra: Extra::new(),
            ..call.clone()
        }),
        other => other.clone(),
    }
}

fn to_openai(messages: &[Message], notes: &mut Vec<String>) -> Vec<Message> {
    let mut out = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let mut rest = Vec::new();
        for part in &message.parts {
            match part {
                Part::ToolResult(result) => {
                    if result.is_error == Some(true) {
                        notes.push(format!(
                            "messages[{index}]: tool result {} was an error; OpenAI has no error flag",
                            result.tool_use_id
                        ));
                    }
                    let parts: Vec<Part> = result.parts.iter().map(to_openai_part).collect();
                    let form = match (result.content_form, parts.as_slice()) {
                        (ContentForm::Absent | ContentForm::Null, []) => ContentForm::Text,
                        (_, [Part::Text(t)]) if t.extra.is_empty() => ContentForm::Text,
                        _ => ContentForm::Parts,
                    };
                    out.push(Message {
                        tool_call_id: Some(result.tool_use_id.clone()),
                        content_form: form,
                        ..new_message(Role::Tool, parts)
                    });
                }
                Part::Thinking(t) => {
                    if t.signature.is_some() {
                        notes.push(format!("messages[{index}]: dropped a thinking signature"));
                    }
                    rest.push(Part::Thinking(crate::message::ThinkingPart {
                        signature: None,
                        origin: ThinkingOrigin::ReasoningContent,
                        extra: Extra::new(),
                        ..t.clone()
                    }));
                }
                Part::RedactedThinking(_) => notes.push(format!(
                    "messages[{index}]: dropped redacted thinking (OpenAI has no place for it)"
                )),
                other => rest.push(to_openai_part(other)),
            }
        }
        let had_results = message.parts.iter().any(|p| matches!(p, Part::ToolResult(_)));
        if had_results && rest.is_empty() {
            continue;
        }
        let has_calls = rest.iter().any(|p| matches!(p, Part::ToolCall(_)));
        let content: Vec<&Part> =
            rest.iter().filter(|p| !matches!(p, Part::ToolCall(_) | Part::Thinking(_))).collect();
        let form = match (content.as_slice(), message.content_form) {
            ([], _) if has_calls => ContentForm::Null,
            ([Part::Text(t)], _) if t.extra.is_empty() => ContentForm::Text,
            (_, ContentForm::Text) if !had_results => ContentForm::Text,
            _ => ContentForm::Parts,
        };
        out.push(Message {
            name: message.name.clone(),
            extra: message.extra.clone(),
            content_form: form,
            ..new_message(message.role, rest)
        });
    }
    out
}

fn to_openai_part(part: &Part) -> Part {
    match part {
        Part::Image(image) if image.style == ImageStyle::Anthropic => {
            let source = match &image.source {
                ImageSource::Base64 { media_type, data } => {
                    ImageSource::Url(format!("data:{media_type};base64,{data}"))
                }
                other => other.clone(),
            };
            Part::Image(ImagePart {
                source,
                detail: None,
                style: ImageStyle::OpenAi,
                extra: Extra::new(),
                inner_extra: Extra::new(),
            })
        }
        Part::ToolCall(call) if call.style == CallStyle::AnthropicToolUse => {
            let mut extra = Extra::new();
            extra.insert("type".into(), "function".into());
            Part::ToolCall(ToolCall {
                arguments: Arguments::Text(call.arguments.to_json_string()),
                style: CallStyle::OpenAiFunction,
                extra,
                inner_extra: Extra::new(),
                ..call.clone()
            })
        }
        other => other.clone(),
    }
}
