//! The one-line gist a placeholder gives of the messages it stands for: enough for the model to
//! know whether to recall them — the first words the user wrote there, the tools called (with
//! the start of their arguments), and the size.

use std::fmt::Write;

use crate::message::{Message, Part, Role};
use crate::text::thousands;

/// Words of the user's first text quoted.
const USER_WORDS: usize = 12;
/// Calls named with their arguments.
const CALLS_NAMED: usize = 3;
/// Characters of a call's arguments quoted.
const ARGUMENT_CHARS: usize = 40;

/// The gist of `messages`: `user: "Fix the failing test ..."; 7 tool calls: bash {"command":
/// "ls -la"}, ... and 4 more; 41,201 characters`.
pub(crate) fn of(messages: &[&Message]) -> String {
    let mut pieces = Vec::new();
    let user_text =
        messages.iter().filter(|m| m.role == Role::User).flat_map(|m| m.parts.iter()).find_map(|p| match p {
            Part::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
            _ => None,
        });
    if let Some(text) = user_text {
        let words: Vec<&str> = text.split_whitespace().collect();
        let more = if words.len() > USER_WORDS { " ..." } else { "" };
        pieces.push(format!("user: \"{}{more}\"", words[..words.len().min(USER_WORDS)].join(" ")));
    }
    let calls: Vec<_> = messages.iter().flat_map(|m| m.tool_calls()).collect();
    if !calls.is_empty() {
        let mut line = format!("{} tool call{}: ", calls.len(), if calls.len() == 1 { "" } else { "s" });
        for (i, call) in calls.iter().take(CALLS_NAMED).enumerate() {
            if i > 0 {
                line.push_str(", ");
            }
            let arguments = call.arguments.to_json_string();
            let short: String = arguments.chars().take(ARGUMENT_CHARS).collect();
            let more = if arguments.chars().count() > ARGUMENT_CHARS { "..." } else { "" };
            let _ = write!(line, "{} {short}{more}", call.name);
        }
        if calls.len() > CALLS_NAMED {
            let _ = write!(line, " and {} more", calls.len() - CALLS_NAMED);
        }
        pieces.push(line);
    }
    let chars: usize = messages.iter().map(|m| content_chars(m)).sum();
    pieces.push(format!("{} characters", thousands(chars as u64)));
    pieces.join("; ")
}

/// The characters of a message's text, tool results included.
fn content_chars(message: &Message) -> usize {
    fn of_parts(parts: &[Part]) -> usize {
        parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.text.chars().count(),
                Part::Thinking(t) => t.text.chars().count(),
                Part::ToolCall(c) => c.arguments.to_json_string().chars().count(),
                Part::ToolResult(r) => of_parts(&r.parts),
                _ => 0,
            })
            .sum()
    }
    of_parts(&message.parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, FormatHint};

    #[test]
    fn the_gist_names_the_user_words_the_calls_and_the_size() {
        let conversation = parse_str(
            r#"[{"role": "user", "content": "Please fix the failing test in tests/test_app.py, it started failing after the upgrade yesterday"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pytest tests/test_app.py -x -q --maxfail=1 --no-header\"}"}},
                    {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"app.py\"}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "1 failed"},
                {"role": "tool", "tool_call_id": "b", "content": "def main(): ..."}]"#,
            FormatHint::Auto,
        )
        .unwrap();
        let messages: Vec<&Message> = conversation.messages.iter().collect();
        let gist = of(&messages);
        assert!(gist.starts_with("user: \"Please fix the failing test in tests/test_app.py, it started failing after the ...\""), "{gist}");
        assert!(gist.contains("2 tool calls: bash {\"command\": \"pytest tests/test_app.py -x..., read {\"path\": \"app.py\"}"), "{gist}");
        assert!(gist.ends_with(" characters"), "{gist}");
        assert_eq!(thousands(41201), "41,201");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(0), "0");
    }
}
