//! Repair: making a broken input valid before steps run, and keeping a history in its
//! provider's shape after each step.
//!
//! The repair pass fixes what real agent loops produce: tool results that answer no call
//! (dropped, or for Anthropic the orphan blocks removed from a message that also carries user
//! words), calls that never got a result (answered with a synthetic "aborted" result, or
//! dropped, as configured), and for Anthropic turns of the same role in a row (merged) and a
//! conversation that starts with the assistant (a short placeholder user turn is put first).
//! Every fix is a line of the report. Cost: one pass over the units.

use crate::format::Format;
use crate::history::History;
use crate::message::{ContentForm, Message, Part, Role, TextPart, ToolResult};
use crate::plan::ChangeKind;
use crate::units::UnitKind;

/// What to do with a tool call that never got a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnansweredCalls {
    /// Answer it with a synthetic result saying the call was aborted (the default: the model
    /// still sees what it tried).
    #[default]
    AnswerAborted,
    /// Remove the call (and its assistant message, if nothing else is left of it).
    Drop,
}

/// How the repair pass fixes a broken input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// What to do with unanswered calls. Defaults to [`UnansweredCalls::AnswerAborted`].
    pub unanswered_calls: UnansweredCalls,
    /// The text of a synthetic result. Defaults to [`ABORTED_RESULT`].
    pub aborted_text: String,
}

/// The default text of a synthetic result for a call that never got one.
pub const ABORTED_RESULT: &str = "[aborted: this tool call got no result]";

/// The text of the user turn put first when an Anthropic history would start with the
/// assistant.
pub const CONTINUED_PLACEHOLDER: &str = "[earlier conversation omitted]";

impl Default for Repair {
    fn default() -> Repair {
        Repair { unanswered_calls: UnansweredCalls::AnswerAborted, aborted_text: ABORTED_RESULT.to_string() }
    }
}

/// How the reason of a message merged into the turn before it starts: its content is still
/// sent, in that turn.
pub(crate) const MERGED_INTO: &str = "merged into the ";

/// Fixes the rule violations of an input; returns one line per fix.
pub fn repair(history: &mut History<'_>, policy: &Repair) -> Vec<String> {
    history.set_step("repair");
    let mut lines = Vec::new();
    drop_orphan_results(history, &mut lines);
    answer_unanswered(history, policy, &mut lines);
    lines.extend(normalize(history));
    lines
}

fn drop_orphan_results(history: &mut History<'_>, lines: &mut Vec<String>) {
    let orphans: Vec<usize> = history
        .units()
        .iter()
        .rev()
        .filter(|u| u.kind == UnitKind::OrphanResults)
        .map(|u| u.messages.start)
        .collect();
    for index in orphans {
        let message = history.message(index);
        let ids: Vec<String> = message.answered_call_ids().map(str::to_string).collect();
        let keeps_words =
            message.role == Role::User && message.parts.iter().any(|p| !matches!(p, Part::ToolResult(_)));
        if keeps_words {
            history.edit(
                index,
                ChangeKind::Removed,
                format!("removed results {ids:?} that answer no call"),
                |m| m.parts.retain(|p| !matches!(p, Part::ToolResult(_))),
            );
            lines.push(format!("messages[{index}]: removed tool results {ids:?} that answer no call"));
        } else {
            history.remove(index, &format!("tool result {ids:?} answers no call"));
            lines.push(format!("messages[{index}]: dropped tool result {ids:?} that answers no call"));
        }
    }
}

fn answer_unanswered(history: &mut History<'_>, policy: &Repair, lines: &mut Vec<String>) {
    // the synthetic results of every step go in together at the end, in one pass: the steps
    // are answered from the last, so no insertion moves a message an earlier step reads
    let mut inserts = Vec::new();
    let steps: Vec<(usize, usize, Vec<String>)> = history
        .units()
        .iter()
        .rev()
        .filter(|u| u.kind == UnitKind::AssistantStep && !u.unanswered_calls.is_empty())
        .map(|u| (u.messages.start, u.messages.end, u.unanswered_calls.clone()))
        .collect();
    for (start, end, ids) in steps {
        match policy.unanswered_calls {
            UnansweredCalls::Drop => {
                let unanswered = |p: &Part| matches!(p, Part::ToolCall(c) if ids.contains(c.id.as_ref().unwrap_or(&c.name)));
                // the step's assistant messages: one, or the items of one Responses response
                let callers =
                    (start..end).take_while(|&i| history.message(i).role == Role::Assistant).count();
                for at in (start..start + callers).rev() {
                    if !history.message(at).parts.iter().any(unanswered) {
                        continue;
                    }
                    history.edit(
                        at,
                        ChangeKind::Removed,
                        format!("removed calls {ids:?} that got no result"),
                        |m| {
                            m.parts.retain(|p| !unanswered(p));
                            if m.parts.is_empty() && m.content_form == ContentForm::Parts {
                                m.content_form = ContentForm::Null;
                            }
                        },
                    );
                    let message = history.message(at);
                    let alone = end == start + 1 || message.content_form == ContentForm::Absent;
                    if message.parts.is_empty() && alone {
                        history.remove(at, "nothing left after removing calls that got no result");
                    }
                }
                lines.push(format!("messages[{start}]: dropped tool calls {ids:?} that got no result"));
            }
            UnansweredCalls::AnswerAborted => {
                answer_aborted(history, start, end, &ids, &policy.aborted_text, &mut inserts);
                lines.push(format!(
                    "messages[{start}]: answered tool calls {ids:?} with a synthetic aborted result"
                ));
            }
        }
    }
    history.insert_all(inserts);
}

/// Answers the calls `ids` of the step `start..end`: Anthropic and Gemini results join the
/// user message after the call now; a new message goes into `inserts` (index, message,
/// detail), for the caller to insert with the others.
fn answer_aborted(
    history: &mut History<'_>,
    start: usize,
    end: usize,
    ids: &[String],
    text: &str,
    inserts: &mut Vec<(usize, Message, String)>,
) {
    let detail = format!("synthetic result for calls {ids:?} that got none");
    if matches!(history.provider(), Format::Anthropic | Format::Gemini) {
        let gemini = history.provider() == Format::Gemini;
        let blocks: Vec<Part> = ids
            .iter()
            .map(|id| {
                let (content_form, is_error, extra) = if gemini {
                    (ContentForm::Parts, None, gemini_response_fields(history, start, end, id))
                } else {
                    (ContentForm::Text, Some(true), Default::default())
                };
                Part::ToolResult(ToolResult {
                    tool_use_id: id.clone(),
                    parts: vec![Part::Text(TextPart::new(text))],
                    content_form,
                    is_error,
                    extra,
                })
            })
            .collect();
        // results go into the user message right after the call: the step's own results
        // message, or the next user message, or a new one
        let target = if end > start + 1 {
            Some(end - 1)
        } else if end < history.len() && history.message(end).role == Role::User {
            Some(end)
        } else {
            None
        };
        match target {
            Some(index) => {
                history.edit(index, ChangeKind::Rewritten, detail, |m| {
                    let at = m.parts.iter().take_while(|p| matches!(p, Part::ToolResult(_))).count();
                    m.parts.splice(at..at, blocks);
                    m.content_form = ContentForm::Parts;
                });
            }
            None => {
                let mut message = Message::text(Role::User, "");
                message.parts = blocks;
                message.content_form = ContentForm::Parts;
                inserts.push((end, message, detail));
            }
        }
    } else {
        // the step's calls, in its assistant messages (several for a Responses response)
        let legacy = (start..end).flat_map(|i| history.message(i).tool_calls()).all(|c| c.id.is_none());
        for id in ids {
            let mut message = Message::text(if legacy { Role::Function } else { Role::Tool }, text);
            if legacy {
                message.name = Some(id.clone());
            } else {
                message.tool_call_id = Some(id.clone());
            }
            inserts.push((end, message, detail.clone()));
        }
    }
}

/// The fields of a Gemini `functionResponse` answering call `id` of the step: the call's
/// `name`, and an `id` when the call had one on the wire (written from the result's id).
fn gemini_response_fields(
    history: &History<'_>,
    start: usize,
    end: usize,
    id: &str,
) -> crate::message::Extra {
    let mut extra = crate::message::Extra::new();
    let call =
        (start..end).flat_map(|i| history.message(i).tool_calls()).find(|c| c.id.as_deref() == Some(id));
    if call.is_none_or(|c| c.style != crate::message::CallStyle::GeminiNoId) {
        extra.insert("id".into(), serde_json::Value::String(id.into()));
    }
    let name = call.map_or(id, |c| c.name.as_str());
    extra.insert("name".into(), serde_json::Value::String(name.into()));
    extra
}

/// Puts a history back in its provider's shape after a step: for Anthropic, turns of the same
/// role in a row are merged into one message (the API would merge them anyway, and tool
/// results must lead their message), and a history that starts with the assistant gets a
/// placeholder user turn first; for OpenAI Responses, a reasoning item whose message or call
/// a step removed goes too (the API rejects a reasoning item without its following item). Returns one line per fix; nothing to do costs one pass.
pub fn normalize(history: &mut History<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    if history.provider() == Format::Responses {
        drop_lone_reasoning(history, &mut lines);
    }
    if history.provider() != Format::Anthropic {
        return lines;
    }
    drop_blank_text(history, &mut lines);
    let head = history.messages().iter().take_while(|m| m.role.is_instruction()).count();
    if head < history.len() && history.message(head).role == Role::Assistant {
        history.insert(
            head,
            Message::text(Role::User, CONTINUED_PLACEHOLDER),
            "placeholder: the history must start with a user turn",
        );
        lines.push(format!("messages[{head}]: put a placeholder user turn first"));
    }
    let mut i = head + 1;
    while i < history.len() {
        let (previous, current) = (history.message(i - 1).role, history.message(i).role);
        if previous == current && matches!(current, Role::User | Role::Assistant) {
            let moved = history.message(i).clone();
            let kept = &history.message(i - 1).extra;
            let differing: Vec<String> = moved
                .extra
                .iter()
                .filter(|(key, value)| kept.get(*key).is_some_and(|k| k != *value))
                .map(|(key, _)| format!("`{key}`"))
                .collect();
            history.edit(
                i - 1,
                ChangeKind::Rewritten,
                format!("merged the next {current} turn into it"),
                |m| {
                    // the second turn's own fields go with its content; a field both carry
                    // keeps the first's value (the line below names it)
                    for (key, value) in moved.extra {
                        m.extra.entry(key).or_insert(value);
                    }
                    let mut parts = std::mem::take(&mut m.parts);
                    parts.extend(moved.parts);
                    // tool results lead a user message, thinking an assistant message
                    // (Anthropic checks that the current tool turn starts with its thinking)
                    parts.sort_by_key(|p| {
                        !matches!(p, Part::ToolResult(_) | Part::Thinking(_) | Part::RedactedThinking(_))
                    });
                    m.parts = parts;
                    m.content_form = ContentForm::Parts;
                },
            );
            history.remove(i, &format!("{MERGED_INTO}{current} turn before it"));
            let mut line = format!("messages[{}]: merged two {current} turns in a row", i - 1);
            if !differing.is_empty() {
                line += &format!("; their {} differed, the first's kept", differing.join(", "));
            }
            lines.push(line);
        } else {
            i += 1;
        }
    }
    lead_with_thinking(history, &mut lines);
    lines
}

/// Removes the Responses reasoning items that no item of their response follows any more.
/// From the end back, so a run of them goes whole.
fn drop_lone_reasoning(history: &mut History<'_>, lines: &mut Vec<String>) {
    for index in (0..history.len()).rev() {
        let followed = index + 1 < history.len() && history.message(index + 1).role == Role::Assistant;
        if !followed && crate::validate::is_reasoning_item(history.message(index)) {
            history.remove(index, "a reasoning item whose message or call is gone");
            lines.push(format!("messages[{index}]: dropped a reasoning item whose message or call is gone"));
        }
    }
}

/// Anthropic rejects a blank text block anywhere but in a final assistant message (a
/// prefill). A step can make one non-final (by putting a message after it) or leave one behind
/// (by removing what stood beside it): blank blocks beside other content go, and a message of
/// nothing but blank text goes whole. Walks from the end, so a blank final assistant message
/// stays even when a blank user message after it went.
fn drop_blank_text(history: &mut History<'_>, lines: &mut Vec<String>) {
    let blank = |p: &Part| matches!(p, Part::Text(t) if t.text.trim().is_empty());
    for index in (0..history.len()).rev() {
        let message = history.message(index);
        let prefill = index + 1 == history.len() && message.role == Role::Assistant;
        if prefill
            || !matches!(message.role, Role::User | Role::Assistant)
            || !message.parts.iter().any(blank)
        {
            continue;
        }
        if message.parts.iter().all(blank) {
            history.remove(index, "only blank text, which Anthropic rejects here");
            lines.push(format!("messages[{index}]: dropped a message of blank text"));
        } else {
            history.edit(index, ChangeKind::Removed, "removed blank text blocks", |m| {
                m.parts.retain(|p| !blank(p))
            });
            lines.push(format!("messages[{index}]: removed blank text blocks"));
        }
    }
}

/// Anthropic checks that the assistant message of the current tool turn starts with its
/// thinking. A history whose thinking sits after text there (a client that assembled the
/// blocks itself, or a step that removed the turn's end so the rule now applies) gets the
/// thinking blocks moved first, in their order; the other blocks keep theirs.
fn lead_with_thinking(history: &mut History<'_>, lines: &mut Vec<String>) {
    let is_thinking = |p: &Part| matches!(p, Part::Thinking(_) | Part::RedactedThinking(_));
    let Some(index) = crate::validate::current_tool_turn(history.messages()) else { return };
    let parts = &history.message(index).parts;
    if parts.first().is_none_or(is_thinking) || !parts.iter().any(is_thinking) {
        return;
    }
    history.edit(index, ChangeKind::Rewritten, "moved its thinking first", |m| {
        m.parts.sort_by_key(|p| !is_thinking(p));
    });
    lines.push(format!("messages[{index}]: moved the thinking of the current tool turn first"));
}
