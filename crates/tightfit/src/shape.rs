//! What kinds of content a message holds (tool calls, tool results, media, blank text,
//! thinking), as a few bits the history keeps beside each message's tokens.
//!
//! Why: a message's parts live in their own allocation, away from the message. A step that
//! works on tool results, media or blank text would otherwise open every message to learn
//! that most hold none. Once a history outgrows the processor's caches (tens of thousands of
//! messages), each of those looks is a trip to memory, paid again by every step of the
//! ladder. The history works the bits out when it first counts a message (remembered with
//! the count, so a message at its place in the history counted last is not looked at
//! again), and again after each change; a step reads them from one sequential list. Cost:
//! one pass over a new message's parts, one byte a message.

use serde_json::Value;

use crate::message::{Message, Part, Role};

/// The kinds of content a message holds; see the [module](self) for why.
///
/// Each bit is exact for the message it was worked out from: a step may skip a message whose
/// bit is clear without opening it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape(u8);

impl Shape {
    const CALLS: u8 = 1;
    const RESULTS: u8 = 1 << 1;
    const MEDIA: u8 = 1 << 2;
    const BLANK_TEXT: u8 = 1 << 3;
    const SAYS_NOTHING: u8 = 1 << 4;
    const THINKING: u8 = 1 << 5;
    const WHOLE_RESULT: u8 = 1 << 6;

    /// The shape of `message`, from one pass over its parts.
    pub(crate) fn of(message: &Message) -> Shape {
        let mut bits = 0;
        let mut all_blank = true;
        for part in &message.parts {
            let blank = is_blank(part);
            all_blank &= blank;
            bits |= match part {
                Part::ToolCall(_) => Shape::CALLS,
                Part::ToolResult(result) if result.parts.iter().any(is_blank) => {
                    Shape::RESULTS | Shape::BLANK_TEXT
                }
                Part::ToolResult(_) => Shape::RESULTS,
                Part::Image(_) | Part::Audio(_) | Part::File(_) => Shape::MEDIA,
                Part::Thinking(_) | Part::RedactedThinking(_) => Shape::THINKING,
                _ if blank => Shape::BLANK_TEXT,
                _ => 0,
            };
        }
        match message.role {
            Role::Tool | Role::Function if is_whole_result(message) => {
                bits |= Shape::RESULTS | Shape::WHOLE_RESULT;
            }
            Role::Tool | Role::Function => bits |= Shape::RESULTS,
            Role::Other => {}
            _ if all_blank && message.extra.values().all(is_nothing) => bits |= Shape::SAYS_NOTHING,
            _ => {}
        }
        Shape(bits)
    }

    /// The shape of a whole result (see [`is_whole_result`](Shape::is_whole_result)) whose
    /// content is the text `text`, as [`Shape::of`] would work it out (without the message
    /// written out).
    pub(crate) fn of_whole_result_text(text: &str) -> Shape {
        let blank = if text.trim_start().is_empty() { Shape::BLANK_TEXT } else { 0 };
        Shape(Shape::RESULTS | Shape::WHOLE_RESULT | blank)
    }

    /// Whether the message makes tool calls.
    pub(crate) fn has_calls(self) -> bool {
        self.0 & Shape::CALLS != 0
    }

    /// Whether the message is a tool result (`tool` or `function`) or holds `tool_result`
    /// blocks.
    pub(crate) fn has_results(self) -> bool {
        self.0 & Shape::RESULTS != 0
    }

    /// Whether the message holds an image, audio or a file of its own (outside any
    /// `tool_result` block).
    pub(crate) fn has_media(self) -> bool {
        self.0 & Shape::MEDIA != 0
    }

    /// Whether a text part of the message, or of one of its `tool_result` blocks, is blank.
    pub(crate) fn has_blank_text(self) -> bool {
        self.0 & Shape::BLANK_TEXT != 0
    }

    /// Whether the message holds a thinking block (signed, or redacted).
    pub(crate) fn has_thinking(self) -> bool {
        self.0 & Shape::THINKING != 0
    }

    /// Whether the message is itself one tool result that names its call (a `tool` message
    /// with its call's id, or a `function` message), not a message holding `tool_result`
    /// blocks: its one result is its whole content, under the key
    /// [`result_keys`](crate::calls::result_keys) gives it.
    pub(crate) fn is_whole_result(self) -> bool {
        self.0 & Shape::WHOLE_RESULT != 0
    }

    /// [`says_nothing`] of the message.
    pub(crate) fn says_nothing(self) -> bool {
        self.0 & Shape::SAYS_NOTHING != 0
    }
}

/// Whether `message` is one tool result that names its call, its whole content (see
/// [`Shape::is_whole_result`]).
pub(crate) fn is_whole_result(message: &Message) -> bool {
    match message.role {
        Role::Tool => message.tool_call_id.is_some(),
        Role::Function => true,
        _ => false,
    }
}

/// Whether a part is text that is empty or only whitespace.
pub(crate) fn is_blank(part: &Part) -> bool {
    // from the start only: a text that is not blank is known so at its first word
    matches!(part, Part::Text(t) if t.text.trim_start().is_empty())
}

/// Whether a message says nothing: no content and no meaningful field, not a tool result,
/// not of an unknown role (the definition `drop_empty` removes by).
pub(crate) fn says_nothing(message: &Message) -> bool {
    !matches!(message.role, Role::Tool | Role::Function | Role::Other)
        && message.parts.iter().all(is_blank)
        && message.extra.values().all(is_nothing)
}

/// A field value that carries nothing: null, `false`, or an empty string, list or map.
fn is_nothing(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, FormatHint};

    fn shapes(json: &str) -> Vec<Shape> {
        parse_str(json, FormatHint::Auto).unwrap().messages.iter().map(Shape::of).collect()
    }

    #[test]
    fn each_bit_says_what_the_message_holds() {
        let s = shapes(
            r#"[{"role": "user", "content": [{"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "r"},
                {"role": "assistant", "content": "  \n"},
                {"role": "user", "content": [{"type": "text", "text": " "}, {"type": "text", "text": "x"}]},
                {"role": "assistant", "content": "", "audio": {"id": "a1"}}]"#,
        );
        let bits =
            |s: Shape| (s.has_calls(), s.has_results(), s.has_media(), s.has_blank_text(), s.says_nothing());
        assert_eq!(bits(s[0]), (false, false, true, false, false));
        assert_eq!(bits(s[1]), (true, false, false, false, false));
        assert_eq!(bits(s[2]), (false, true, false, false, false));
        assert_eq!(bits(s[3]), (false, false, false, true, true));
        assert_eq!(bits(s[4]), (false, false, false, true, false));
        // blank text, but a field that carries something
        assert_eq!(bits(s[5]), (false, false, false, true, false));
    }

    #[test]
    fn results_in_blocks_and_their_blank_text_count() {
        let s = shapes(
            r#"{"messages": [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                    "content": [{"type": "text", "text": ""}, {"type": "text", "text": "ok"}]}]}]}"#,
        );
        assert!(s[1].has_calls() && !s[1].has_results());
        assert!(s[2].has_results() && s[2].has_blank_text() && !s[2].says_nothing());
    }

    #[test]
    fn the_bits_agree_with_the_predicates_on_both_corpora() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
        let (mut seen, mut thinking) = (0, 0);
        for file in [
            "data/agent_mini_swe_deepseek.jsonl",
            "data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl",
        ] {
            let text =
                std::fs::read_to_string(root.join(file)).expect("the shared corpora beside the repository");
            for line in text.lines().take(20) {
                let conversation = parse_str(line, FormatHint::Auto).unwrap();
                for message in &conversation.messages {
                    let shape = Shape::of(message);
                    assert_eq!(shape.says_nothing(), says_nothing(message));
                    assert_eq!(
                        shape.has_calls(),
                        message.parts.iter().any(|p| matches!(p, Part::ToolCall(_)))
                    );
                    assert_eq!(shape.has_results(), message.is_tool_result());
                    assert_eq!(shape.is_whole_result(), is_whole_result(message));
                    let thinks = message
                        .parts
                        .iter()
                        .any(|p| matches!(p, Part::Thinking(_) | Part::RedactedThinking(_)));
                    assert_eq!(shape.has_thinking(), thinks);
                    thinking += usize::from(thinks);
                    seen += 1;
                }
            }
        }
        assert!(seen > 1000, "{seen} messages");
        // the thinking bit met (DeepSeek's reasoning, Claude's signed thinking)
        assert!(thinking > 10, "{thinking} messages with thinking");
    }
}
