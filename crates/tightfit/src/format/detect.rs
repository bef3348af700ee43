//! Telling OpenAI Chat Completions, OpenAI Responses, Anthropic and Gemini input apart by shape.

use serde_json::Value;

use super::Format;

/// Decides the format of a document from what only one of the formats has.
///
/// Anthropic: a top-level `system` field, or a content block of type `tool_use`,
/// `tool_result`, `thinking`, `redacted_thinking`, `document`, or `image` with a `source`.
/// OpenAI Responses: a request body with `input` or `instructions` (and no `messages`), an
/// item with a `type` and no `role` (`function_call`, `reasoning`, …), a message with
/// `"type": "message"`, or a content part of type `input_text`, `output_text`, `input_image`
/// or `input_file`. Gemini: a request body with `contents` or `systemInstruction`, an entry
/// with `parts` and no `content`, or the role `model`. OpenAI Chat Completions: everything else, including plain-text
/// conversations that are valid in all three (they are written back identically either way).
/// Costs one pass over the message list, stopping at the first message that decides.
pub fn detect(document: &Value) -> Format {
    verdict(document).unwrap_or(Format::OpenAi)
}

/// What the document's shape decides: `None` when nothing in it belongs to one format only
/// (a caller that knows the target model then reads it in that model's format).
pub fn verdict(document: &Value) -> Option<Format> {
    let messages = match document {
        Value::Array(items) => items,
        Value::Object(map) => {
            if map.contains_key("contents") || map.contains_key("systemInstruction") {
                return Some(Format::Gemini);
            }
            if map.contains_key("system") {
                return Some(Format::Anthropic);
            }
            if !map.contains_key("messages")
                && (map.contains_key("input") || map.contains_key("instructions"))
            {
                return Some(Format::Responses);
            }
            match map.get("messages") {
                // a body with `messages` is never a Responses request (that has `input`)
                Some(Value::Array(items)) => {
                    return items
                        .iter()
                        .filter_map(message_verdict)
                        .find(|f| !matches!(f, Format::Responses | Format::Gemini))
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    list_verdict(messages.iter().map(message_verdict))
}

/// Whether the document holds no message: an empty list, or a body whose `messages` (or
/// `contents`) is empty.
pub(super) fn is_empty_history(document: &Value) -> bool {
    match document {
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => ["messages", "contents"]
            .iter()
            .all(|key| map.get(*key).is_none_or(|v| v.as_array().is_some_and(Vec::is_empty))),
        _ => false,
    }
}

/// The format of a list from the verdicts of its messages ([`message_verdict`]): OpenAI
/// Responses (or Gemini) when any message has a shape only Responses (Gemini) has (an item, an `input_text` part:
/// Chat Completions and Anthropic never do, while a Responses list may hold a `refusal` part
/// before its first item), else the first message that decides. For a caller that reads a
/// list message by message and remembers each one's verdict.
pub fn list_verdict(verdicts: impl IntoIterator<Item = Option<Format>>) -> Option<Format> {
    let mut first = None;
    for verdict in verdicts.into_iter().flatten() {
        if matches!(verdict, Format::Responses | Format::Gemini) {
            return Some(verdict);
        }
        first = first.or(Some(verdict));
    }
    first
}

/// What one message of a list says about the list's format: the format only it has, or
/// `None` when it is valid in several. [`detect`] combines them with [`list_verdict`], so a
/// caller that reads a list message by message (and remembers each one's verdict) decides
/// alike.
pub fn message_verdict(message: &Value) -> Option<Format> {
    let object = message.as_object()?;
    if (!object.contains_key("content") && object.get("parts").is_some_and(Value::is_array))
        || object.get("role").and_then(Value::as_str) == Some("model")
    {
        return Some(Format::Gemini);
    }
    match (object.contains_key("role"), object.get("type").and_then(Value::as_str)) {
        (false, Some(_)) | (true, Some("message")) => return Some(Format::Responses),
        _ => {}
    }
    if object.contains_key("tool_calls")
        || object.contains_key("tool_call_id")
        || object.contains_key("function_call")
    {
        return Some(Format::OpenAi);
    }
    if let Some(Value::Array(blocks)) = object.get("content") {
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "document") => {
                    return Some(Format::Anthropic)
                }
                Some("image") if block.get("source").is_some() => return Some(Format::Anthropic),
                Some("image_url" | "input_audio" | "file" | "refusal") => return Some(Format::OpenAi),
                Some("input_text" | "output_text" | "input_image" | "input_file") => {
                    return Some(Format::Responses)
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn plain_text_is_openai_and_blocks_decide() {
        assert_eq!(detect(&json!([{"role": "user", "content": "hi"}])), Format::OpenAi);
        let tool_use = json!([{"role": "assistant", "content": [
            {"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]);
        assert_eq!(detect(&tool_use), Format::Anthropic);
        assert_eq!(detect(&json!({"system": "s", "messages": []})), Format::Anthropic);
        let tool = json!({"messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}]});
        assert_eq!(detect(&tool), Format::OpenAi);
    }

    #[test]
    fn responses_items_and_bodies_are_recognised_by_shape() {
        let items = json!([{"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]);
        assert_eq!(detect(&items), Format::Responses);
        assert_eq!(detect(&json!([{"type": "message", "role": "user", "content": "hi"}])), Format::Responses);
        let parts = json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]);
        assert_eq!(detect(&parts), Format::Responses);
        assert_eq!(detect(&json!({"model": "gpt-5", "input": "hi"})), Format::Responses);
        assert_eq!(detect(&json!({"instructions": "be brief", "input": []})), Format::Responses);
        // a plain message decides nothing
        assert_eq!(verdict(&json!([{"role": "user", "content": "hi"}])), None);
    }

    #[test]
    fn gemini_contents_and_bodies_are_recognised_by_shape() {
        let contents = json!([{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": []}]);
        assert_eq!(detect(&contents), Format::Gemini);
        assert_eq!(detect(&json!([{"parts": [{"text": "hi"}]}])), Format::Gemini);
        assert_eq!(detect(&json!({"contents": []})), Format::Gemini);
        assert_eq!(detect(&json!({"systemInstruction": {"parts": []}, "contents": []})), Format::Gemini);
        // a Chat Completions message with a stray `parts` beside its content is not Gemini
        assert_eq!(detect(&json!([{"role": "user", "content": "hi", "parts": []}])), Format::OpenAi);
    }

    #[test]
    fn a_preferred_format_reads_what_the_shape_does_not_decide() {
        use crate::format::{parse_value, FormatHint};
        let plain = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]);
        assert_eq!(verdict(&plain), None);
        let read = parse_value(plain, FormatHint::Prefer(Format::Anthropic)).unwrap();
        assert_eq!(read.format, Format::Anthropic);
        // a shape that decides wins over the preference
        let calls = json!([{"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"}]);
        assert_eq!(verdict(&calls), Some(Format::OpenAi));
        assert_eq!(parse_value(calls, FormatHint::Prefer(Format::Anthropic)).unwrap().format, Format::OpenAi);
        // Gemini contents always say so: plain messages stay Chat Completions, an empty list is Gemini's
        let plain = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(parse_value(plain, FormatHint::Prefer(Format::Gemini)).unwrap().format, Format::OpenAi);
        assert_eq!(
            parse_value(json!([]), FormatHint::Prefer(Format::Gemini)).unwrap().format,
            Format::Gemini
        );
    }
}
