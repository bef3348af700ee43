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
    let messages = match document {
        Value::Array(items) => items,
        Value::Object(map) => {
            if map.contains_key("system") {
                return Format::Anthropic;
            }
            match map.get("messages") {
                Some(Value::Array(items)) => items,
                _ => return Format::OpenAi,
            }
        }
        _ => return Format::OpenAi,
    };
    for message in messages {
        let Some(object) = message.as_object() else {
            continue;
        };
        if object.contains_key("tool_calls")
            || object.contains_key("tool_call_id")
            || object.contains_key("function_call")
        {
            return Format::OpenAi;
        }
        if let Some(Value::Array(blocks)) = object.get("content") {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "document") => {
                        return Format::Anthropic
                    }
                    Some("image") if block.get("source").is_some() => return Format::Anthropic,
                    Some("image_url" | "input_audio" | "file" | "refusal") => return Format::OpenAi,
                    _ => {}
                }
            }
        }
    }
    Format::OpenAi
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
}
