//! The messages to summarize as one text for the model: a line per message (`[index] role:`),
//! tool calls as `call name(arguments)`, results as `result for id:`; each message cut at
//! `MESSAGE_CHARS` characters (head and tail) so that one huge tool output cannot crowd out the
//! rest of the request.

use std::fmt::Write;

use tightfit::message::Part;
use tightfit::summary::SummaryRequest;

/// The most characters of one message sent.
const MESSAGE_CHARS: usize = 4_000;

/// The transcript of `request`'s messages.
pub(crate) fn render(request: &SummaryRequest<'_>) -> String {
    let mut out = String::new();
    for (i, message) in request.messages.iter().enumerate() {
        let at = request.input_indices.get(i).copied().flatten().map_or(String::new(), |n| format!("[{n}] "));
        let mut text = String::new();
        for part in &message.parts {
            match part {
                Part::Text(t) => text.push_str(&t.text),
                Part::ToolCall(c) => {
                    let _ = write!(text, "\ncall {}({})", c.name, c.arguments.to_json_string());
                }
                Part::ToolResult(r) => {
                    let body: Vec<&str> = r
                        .parts
                        .iter()
                        .filter_map(|p| match p {
                            Part::Text(t) => Some(t.text.as_str()),
                            _ => None,
                        })
                        .collect();
                    let _ = write!(text, "\nresult for {}: {}", r.tool_use_id, body.join("\n"));
                }
                _ => {}
            }
        }
        let _ = writeln!(out, "{at}{}: {}\n", message.role_name(), cut(text.trim()));
    }
    out
}

/// `text`, or its head and tail with the middle's length where it is longer than
/// `MESSAGE_CHARS`.
fn cut(text: &str) -> String {
    let count = text.chars().count();
    if count <= MESSAGE_CHARS {
        return text.to_string();
    }
    let half = MESSAGE_CHARS / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!("{head}\n[... {} characters ...]\n{tail}", count - 2 * half)
}
