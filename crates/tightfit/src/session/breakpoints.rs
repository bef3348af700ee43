//! Anthropic prompt-cache breakpoints placed by the session (a setting, off by default).
//!
//! Anthropic caches a prompt only up to the blocks marked `cache_control`, at most four per
//! request, and a read looks back at most 20 blocks from a breakpoint for an earlier entry.
//! An agent loop that marks only its last message loses the cache whenever a turn adds more
//! than 20 blocks (parallel tool calls), and after every compaction. The session marks, with
//! `{"type": "ephemeral"}` on the message's last block that can carry it:
//!
//! 1. the request's last message (the entry the next turn reads);
//! 2. the message that ended the previous turn, when it is still sent (the entry this turn
//!    reads, however many blocks the turn added);
//! 3. the message before the compaction's trace, the end of the fixed head (it stays cached
//!    across compactions).
//!
//! The positions follow from the request alone (the turn boundaries of its input and the
//! plan), so two processes mark alike. A request that already carries a `cache_control`
//! anywhere is left as the caller marked it. The plan records every marked message, so it
//! still replays the request exactly. Marks are not counted as tokens (the provider does not).

use serde_json::{json, Value};

use crate::fit::Fitted;
use crate::format::{messages_to_value, Format};
use crate::message::{ContentForm, Extra, Message, Part};
use crate::units::turn_ends;

/// Marks the breakpoints of a fitted Anthropic request whose input was `input`; returns how
/// many it placed.
pub(crate) fn place(fitted: &mut Fitted<'_>, input: &[Message]) -> usize {
    if fitted.messages.iter().any(|m| has_cache_control(m)) {
        return 0;
    }
    let mut marks: Vec<usize> = Vec::with_capacity(3);
    // 1. the last message
    if let Some(last) = fitted.messages.len().checked_sub(1) {
        marks.push(last);
    }
    // 2. the end of the previous turn, where the input message that ended it is sent
    let ends = turn_ends(input);
    let previous_end = ends.iter().rev().find(|&&end| end < input.len()).copied();
    if let Some(end) = previous_end.filter(|&end| end > 0) {
        let sent = fitted.plan.output.iter().position(|entry| entry.input == Some(end - 1));
        marks.extend(sent);
    }
    // 3. the end of the head: the message before the first message a step wrote
    let written = fitted.plan.output.iter().position(|entry| entry.input.is_none());
    marks.extend(written.and_then(|at| at.checked_sub(1)));
    marks.sort_unstable();
    marks.dedup();
    let mut placed = 0;
    for at in marks {
        let message = fitted.messages[at].to_mut();
        if mark(message) {
            fitted.plan.output[at].message = Some(wire(message));
            placed += 1;
        }
    }
    placed
}

/// Puts `cache_control` on the last block of `message` that can carry it (not thinking);
/// whether it did.
fn mark(message: &mut Message) -> bool {
    let Some(extra) = message.parts.iter_mut().rev().find_map(markable) else { return false };
    extra.insert("cache_control".into(), json!({"type": "ephemeral"}));
    // a string content cannot carry a mark: written as blocks from now on
    message.content_form = ContentForm::Parts;
    true
}

fn markable(part: &mut Part) -> Option<&mut Extra> {
    match part {
        Part::Text(p) => Some(&mut p.extra),
        Part::Image(p) => Some(&mut p.extra),
        Part::File(p) => Some(&mut p.fields),
        Part::ToolCall(p) => Some(&mut p.extra),
        Part::ToolResult(p) => Some(&mut p.extra),
        _ => None,
    }
}

/// Whether any of `messages` carries a `cache_control` mark of the caller's.
pub(crate) fn carries_marks(messages: &[Message]) -> bool {
    messages.iter().any(has_cache_control)
}

fn has_cache_control(message: &Message) -> bool {
    message.parts.iter().any(|part| match part {
        Part::Text(p) => p.extra.contains_key("cache_control"),
        Part::Image(p) => p.extra.contains_key("cache_control"),
        Part::File(p) => p.fields.contains_key("cache_control"),
        Part::ToolCall(p) => p.extra.contains_key("cache_control"),
        Part::ToolResult(p) => p.extra.contains_key("cache_control"),
        Part::Thinking(p) => p.extra.contains_key("cache_control"),
        Part::RedactedThinking(p) => p.extra.contains_key("cache_control"),
        Part::Opaque(v) => v.get("cache_control").is_some(),
        _ => false,
    })
}

fn wire(message: &Message) -> Value {
    match messages_to_value(std::slice::from_ref(message), Format::Anthropic) {
        Value::Array(mut items) => items.pop().unwrap_or(Value::Null),
        other => other,
    }
}
