//! Units: the indivisible groups of messages that steps select, so that validity holds by
//! construction.
//!
//! - an instruction: one system or developer message;
//! - a user turn: one user message (that is not carrying tool results);
//! - an assistant step: one assistant message and every tool result that answers its calls,
//!   parallel calls included, in whatever order the results came; for OpenAI Responses items,
//!   the items of one response in a row (reasoning, message, calls: assistant messages of
//!   which every other one is such an item, [`Message::is_response_item`]) and the outputs of
//!   their calls, so that a reasoning item stays with the call it precedes;
//! - orphan results: a tool result that answers no call of the step right before it (a broken
//!   input; the validator reports it and the repair pass fixes it).
//!
//! Grouping is one pass over the messages, O(messages + calls).

use std::borrow::Borrow;
use std::ops::Range;

use crate::calls::OpenCalls;
use crate::message::{Message, Part, Role};
use crate::shape::Shape;

/// The metadata field a caller sets on a message to mark the start of a task (for agents
/// that nest tasks). It is tightfit's own field: kept through the round trip, not sent on.
pub const TASK_BOUNDARY_FIELD: &str = "tightfit_task_boundary";

/// What a unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnitKind {
    /// A system or developer message.
    Instruction,
    /// A user message.
    UserTurn,
    /// An assistant message with the results of its tool calls.
    AssistantStep,
    /// Tool results that answer no call of the step before them.
    OrphanResults,
}

/// A group of consecutive messages that is kept or dropped as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// What it is.
    pub kind: UnitKind,
    /// The messages it spans.
    pub messages: Range<usize>,
    /// Ids of calls made in this step that no result answers (and the names of legacy
    /// `function_call`s without one).
    pub unanswered_calls: Vec<String>,
    /// Whether its first message carries [`TASK_BOUNDARY_FIELD`].
    pub starts_task: bool,
    /// Whether the step's last message, besides tool results, carries text from the user
    /// (Anthropic puts the next user words in the message with the results): a step that
    /// keeps "the newest user turn" must then keep this unit.
    pub has_user_text: bool,
}

impl Unit {
    fn new(kind: UnitKind, messages: Range<usize>, first: &Message) -> Unit {
        Unit {
            kind,
            messages,
            unanswered_calls: Vec::new(),
            starts_task: first.extra.get(TASK_BOUNDARY_FIELD).is_some_and(|v| v.as_bool() != Some(false)),
            has_user_text: false,
        }
    }

    /// The number of messages in the unit.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the unit spans no message (never true of units from [`units`]).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// Groups a history into units, in order; every message belongs to exactly one unit.
///
/// `messages` may be owned messages or anything that borrows one.
pub fn units<M: Borrow<Message>>(messages: &[M]) -> Vec<Unit> {
    units_knowing(messages, |i| CallsAndResults::of(messages[i].borrow()))
}

/// What grouping needs to know of a message besides its role and ids: whether it makes
/// calls, and whether it holds results. A caller that knows it already (a history keeps a
/// [`Shape`] of each message) saves opening the parts of every message that has neither.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallsAndResults {
    pub(crate) calls: bool,
    pub(crate) results: bool,
}

impl CallsAndResults {
    pub(crate) fn of(message: &Message) -> CallsAndResults {
        CallsAndResults { calls: message.tool_calls().next().is_some(), results: message.is_tool_result() }
    }
}

impl From<Shape> for CallsAndResults {
    fn from(shape: Shape) -> CallsAndResults {
        CallsAndResults { calls: shape.has_calls(), results: shape.has_results() }
    }
}

/// [`units`], told by `holds` what message `i` holds.
pub(crate) fn units_knowing<M: Borrow<Message>>(
    messages: &[M],
    holds: impl Fn(usize) -> CallsAndResults,
) -> Vec<Unit> {
    units_resuming(messages, holds, &[], 0)
}

/// [`units_knowing`], given the units `known` of an earlier history whose first `unchanged`
/// messages are these ones: the known units that end before `unchanged` are taken as they are
/// and grouping resumes after them. Why it is sound: a unit's extent is decided by its own
/// messages and the first one after it, and each unit starts afresh (no call of one step is
/// answered in another), so a unit whose messages and follower did not change is the same
/// unit. Why: a warm fit of a long history would otherwise open every message again (its
/// role, its call ids) to group it the same way; copying the known units is one sequential
/// read of 48 bytes a unit.
pub(crate) fn units_resuming<M: Borrow<Message>>(
    messages: &[M],
    holds: impl Fn(usize) -> CallsAndResults,
    known: &[Unit],
    unchanged: usize,
) -> Vec<Unit> {
    let unchanged = unchanged.min(messages.len());
    // at most one unit a message; made at that size, the list is written once instead of
    // grown (and copied) from empty, and the pages it does not use are never touched
    let mut units = Vec::with_capacity(messages.len());
    let kept = known.partition_point(|u| u.messages.end < unchanged);
    units.extend_from_slice(&known[..kept]);
    // the open calls of a step, their room kept from one step to the next
    let mut open = OpenCalls::new([]);
    let mut i = units.last().map_or(0, |u| u.messages.end);
    while i < messages.len() {
        let message = messages[i].borrow();
        let unit = if message.role.is_instruction() {
            Unit::new(UnitKind::Instruction, i..i + 1, message)
        } else if message.role == Role::Assistant {
            assistant_step(messages, i, &holds, &mut open)
        } else if holds(i).results {
            Unit::new(UnitKind::OrphanResults, i..i + 1, message)
        } else {
            Unit::new(UnitKind::UserTurn, i..i + 1, message)
        };
        i = unit.messages.end;
        units.push(unit);
    }
    units
}

/// How a call of a step is answered: by its id, or (a legacy `function_call`) by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Answered<'m> {
    Id(&'m str),
    Name(&'m str),
}

/// The step that starts at the assistant message `start`: it takes every following message
/// whose results all answer a still-open call of this step. O(messages + calls) with the
/// lookups of [`OpenCalls`].
fn assistant_step<'m, M: Borrow<Message>>(
    messages: &'m [M],
    start: usize,
    holds: &impl Fn(usize) -> CallsAndResults,
    open: &mut OpenCalls<Answered<'m>>,
) -> Unit {
    let callers = response_end(messages, start);
    if !(start..callers).any(|i| holds(i).calls) {
        // a reply that calls nothing is a step of its messages alone (most steps of a chat,
        // and of agents that run commands from text): no call index to build
        return Unit::new(UnitKind::AssistantStep, start..callers, messages[start].borrow());
    }
    open.refill(messages[start..callers].iter().flat_map(|m| m.borrow().tool_calls()).map(|c| {
        match c.id.as_deref() {
            Some(id) => Answered::Id(id),
            None => Answered::Name(c.name.as_str()),
        }
    }));
    let mut end = callers;
    while end < messages.len() && !open.is_empty() {
        let next = messages[end].borrow();
        // a result message closes the call it answers (no list made for the one slot); a
        // message of `tool_result` blocks closes one call each, or none if any block answers
        // no open call
        let answered = match next.role {
            Role::Tool => next.tool_call_id.as_deref().and_then(|id| open.first_open(&Answered::Id(id))),
            Role::Function => open.first_open(&Answered::Name(next.name.as_deref().unwrap_or_default())),
            _ => None,
        };
        let belongs = match answered {
            Some(slot) => {
                open.close(slot);
                true
            }
            None => next.role == Role::User && close_blocks(open, next),
        };
        if !belongs {
            break;
        }
        end += 1;
    }
    let mut unit = Unit::new(UnitKind::AssistantStep, start..end, messages[start].borrow());
    let last = messages[end - 1].borrow();
    unit.has_user_text = end > start + 1
        && last.role == Role::User
        && last.parts.iter().any(|p| !matches!(p, Part::ToolResult(_)));
    unit.unanswered_calls = open
        .remaining()
        .map(|key| match key {
            Answered::Id(s) | Answered::Name(s) => s.to_string(),
        })
        .collect();
    unit
}

/// Closes the calls that the `tool_result` blocks of `message` answer, when each block answers
/// an open call, and returns true; closes nothing and returns false otherwise (the message is
/// not part of the step).
fn close_blocks<'m>(open: &mut OpenCalls<Answered<'m>>, message: &'m Message) -> bool {
    let ids = message.parts.iter().filter_map(|p| match p {
        Part::ToolResult(r) => Some(r.tool_use_id.as_str()),
        _ => None,
    });
    let mut found: Vec<usize> = Vec::new();
    for id in ids {
        match open.first_open(&Answered::Id(id)) {
            Some(slot) => found.push(slot),
            None => return false,
        }
    }
    found.sort_unstable();
    found.dedup();
    for &slot in &found {
        open.close(slot);
    }
    !found.is_empty()
}

/// The end of the assistant messages of one response that starts at `start`: the assistant
/// messages in a row of which every pair has a Responses item on one side (a reasoning item
/// and what follows it, a message and its calls, parallel calls). A Chat Completions or
/// Anthropic assistant message is a response of its own.
pub(crate) fn response_end<M: Borrow<Message>>(messages: &[M], start: usize) -> usize {
    let mut end = start + 1;
    while end < messages.len() && one_response(messages[end - 1].borrow(), messages[end].borrow()) {
        end += 1;
    }
    end
}

/// Whether `next` continues the model response `last` belongs to: two assistant messages of
/// which one is a Responses item.
fn one_response(last: &Message, next: &Message) -> bool {
    last.role == Role::Assistant
        && next.role == Role::Assistant
        && (last.is_response_item() || next.is_response_item())
}

/// Where the turns of the sessions issue's agent loop end: one message appended per turn (the
/// loop the issue measures: a 1,000 → 1,500-message stream is 500 turns), except that the
/// results of one step come together, and so do the items of one Responses reply (its
/// reasoning, message and calls). A turn may thus end on the assistant's call before its
/// results: such a request is not valid as it stands, and a policy has to make it so (a
/// session's repair does; a peer that sends it is counted invalid). [`turn_ends`] is the
/// sparser loop of requests a caller sends to the model. O(messages).
pub fn message_ends<M: Borrow<Message>>(messages: &[M]) -> Vec<usize> {
    (1..=messages.len())
        .filter(|&k| {
            k == messages.len() || {
                let (last, next) = (messages[k - 1].borrow(), messages[k].borrow());
                let results_of_one_step = last.is_tool_result() && next.is_tool_result();
                !results_of_one_step && !one_response(last, next)
            }
        })
        .collect()
}

/// Where the turns of an agent loop end: the prefix lengths at which a caller sends a request
/// — after each message that is not the assistant's (the model answers the request), and
/// never between a call and its results (the results of a step come together). O(messages).
pub fn turn_ends<M: Borrow<Message>>(messages: &[M]) -> Vec<usize> {
    (1..=messages.len())
        .filter(|&k| {
            messages[k - 1].borrow().role != Role::Assistant
                && (k == messages.len() || !messages[k].borrow().is_tool_result())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, FormatHint};

    #[test]
    fn a_turn_takes_a_step_with_all_its_results() {
        let messages = parse_str(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "tool_call_id": "b", "content": "2"},
                {"role": "assistant", "content": "done"}]"#,
            FormatHint::Auto,
        )
        .unwrap()
        .messages;
        assert_eq!(turn_ends(&messages), vec![1, 4]);
    }

    #[test]
    fn a_message_turn_appends_one_message_but_a_step_s_results_together() {
        let messages = parse_str(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": "thinking aloud"},
                {"role": "user", "content": "and?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "tool_call_id": "b", "content": "2"},
                {"role": "assistant", "content": "done"}]"#,
            FormatHint::Auto,
        )
        .unwrap()
        .messages;
        assert_eq!(message_ends(&messages), vec![1, 2, 3, 4, 6, 7]);
    }

    #[test]
    fn a_message_turn_keeps_a_responses_reply_whole() {
        let messages = parse_str(
            r#"[{"type": "message", "role": "user", "content": "go"},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "1"},
                {"type": "reasoning", "id": "rs_2", "summary": []},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]"#,
            FormatHint::Auto,
        )
        .unwrap()
        .messages;
        assert_eq!(message_ends(&messages), vec![1, 3, 4, 6]);
    }
}
