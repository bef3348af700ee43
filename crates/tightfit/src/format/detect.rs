//! Telling OpenAI from Anthropic input by its shape.

use serde_json::Value;

use super::Format;

/// Decides the format of a document from what only one of the formats has.
///
/// Anthropic: a top-level `system` field, or a content block of type `tool_use`,
/// `tool_result`, `thinking`, `redacted_thinking`, `document`, or `image` with a `source`.
/// OpenAI: everything else, including plain-text conversations that are valid in both (they
/// are written back identically either way). Costs one pass over the message list, stopping
/// at the first message that decides.
pub fn detect(document: &Value) -> Format {
    verdict(document).unwrap_or(Format::OpenAi)
}

/// What the document's shape decides: `None` when nothing in it belongs to one format only
/// (a caller that knows the target model then reads it in that model's format).
pub fn verdict(document: &Value) -> Option<Format> {
    let messages = match document {
        Value::Array(items) => items,
        Value::Object(map) => {
            if map.contains_key("system") {
                return Some(Format::Anthropic);
            }
            match map.get("messages") {
                Some(Value::Array(items)) => items,
                _ => return None,
            }
        }
        _ => return None,
    };
    messages.iter().find_map(message_verdict)
}

/// What one message of a list says about the list's format: the format only it has, or
/// `None` when it is valid in both. [`detect`] takes the first message that decides, so a
/// caller that reads a list message by message (and remembers each one's verdict) decides
/// alike.
pub fn message_verdict(message: &Value) -> Option<Format> {
    let object = message.as_object()?;
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
    }
}
