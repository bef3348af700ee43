//! The rules a history must meet before a provider accepts it, checked message by message.
//!
//! `validate` lists every violation with the index of the message and the reason, so a caller
//! (or `fit`'s final check) learns exactly what a provider would reject with a 400. One pass
//! over the messages, O(messages + calls).
//!
//! OpenAI: no tool message before the first assistant message; every tool result answers a
//! call of the assistant message right before its run of tool messages; every call is answered
//! before the next non-tool message; call ids are unique within a message; roles are known.
//!
//! OpenAI Responses: the same rules, where the caller of a run of outputs is the items of one
//! response (its reasoning, message and calls in a row); and a reasoning item is followed by
//! the item it produced.
//!
//! Gemini: system instructions only at the head (there is no system role inside `contents`);
//! roles are `user` and `model`; every `functionCall` of a model turn is answered by a
//! `functionResponse` (by id, or by name in order) in the user turn right after it, with as
//! many responses as calls, and no response answers a call that turn did not make.
//!
//! Anthropic: system prompts only at the head; the first message is a user message; roles
//! alternate; `tool_result` blocks come first in the user message right after the assistant
//! message whose `tool_use` they answer, and answer every one of those calls; thinking blocks
//! carry their signatures, and when the history uses thinking, the assistant message of the
//! current tool turn still starts with its thinking.

use foldhash::HashSet;
use std::borrow::Borrow;
use std::fmt;

use crate::calls::{OpenCalls, SCANNED};
use crate::format::Format;
use crate::message::{Message, Part, Role};

/// Which rule a message breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A tool result that answers no open call of the assistant message before it.
    OrphanToolResult,
    /// A tool call that gets no result before the conversation moves on.
    UnansweredToolCall,
    /// The history (after its system messages) starts with a tool result.
    LeadingToolResult,
    /// Two calls of one message share an id.
    DuplicateCallId,
    /// A tool message without `tool_call_id`.
    MissingCallId,
    /// A role the provider does not accept.
    UnsupportedRole,
    /// Anthropic: a system message after the conversation started.
    SystemNotAtStart,
    /// Anthropic: the first message is not a user message.
    FirstNotUser,
    /// Anthropic: two messages in a row with the same role.
    NotAlternating,
    /// Anthropic: a `tool_result` block after other content of its message.
    ToolResultNotFirst,
    /// Anthropic: a thinking block without its signature.
    UnsignedThinking,
    /// Anthropic: an empty or whitespace-only text block (or message), which the API rejects.
    EmptyText,
    /// Anthropic: the history uses thinking, but the assistant message of the current tool
    /// turn lost its thinking block.
    MissingCurrentThinking,
    /// OpenAI Responses: a reasoning item that is not followed by the item it produced (a
    /// message or a call of the same response).
    LoneReasoning,
    /// Gemini: the user turn after a model turn with `functionCall` parts has a different
    /// number of `functionResponse` parts than there are calls.
    ResponseCountMismatch,
}

impl Rule {
    /// Every rule, in declaration order.
    pub const ALL: [Rule; 15] = [
        Rule::OrphanToolResult,
        Rule::UnansweredToolCall,
        Rule::LeadingToolResult,
        Rule::DuplicateCallId,
        Rule::MissingCallId,
        Rule::UnsupportedRole,
        Rule::SystemNotAtStart,
        Rule::FirstNotUser,
        Rule::NotAlternating,
        Rule::ToolResultNotFirst,
        Rule::UnsignedThinking,
        Rule::EmptyText,
        Rule::MissingCurrentThinking,
        Rule::LoneReasoning,
        Rule::ResponseCountMismatch,
    ];

    /// The rule's stable snake_case name (`orphan_tool_result`), for machine-readable output
    /// and the Python package; unlike the `Debug` form it is part of the API and will not
    /// change when a variant is renamed in Rust.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::OrphanToolResult => "orphan_tool_result",
            Rule::UnansweredToolCall => "unanswered_tool_call",
            Rule::LeadingToolResult => "leading_tool_result",
            Rule::DuplicateCallId => "duplicate_call_id",
            Rule::MissingCallId => "missing_call_id",
            Rule::UnsupportedRole => "unsupported_role",
            Rule::SystemNotAtStart => "system_not_at_start",
            Rule::FirstNotUser => "first_not_user",
            Rule::NotAlternating => "not_alternating",
            Rule::ToolResultNotFirst => "tool_result_not_first",
            Rule::UnsignedThinking => "unsigned_thinking",
            Rule::EmptyText => "empty_text",
            Rule::MissingCurrentThinking => "missing_current_thinking",
            Rule::LoneReasoning => "lone_reasoning",
            Rule::ResponseCountMismatch => "response_count_mismatch",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule a history breaks, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The index of the message in the history.
    pub index: usize,
    /// The rule.
    pub rule: Rule,
    /// What is wrong, for a person.
    pub reason: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "messages[{}]: {}", self.index, self.reason)
    }
}

/// Whether `messages` meet `provider`'s rules, knowing (`valid_before`) how many of their first
/// messages are those of a history found to meet them. For OpenAI's rules only the messages
/// from the last restart point among those on are checked: every rule there is decided by a
/// message and those of its step, and a message that is not a tool result (Chat Completions)
/// or a user message (Responses, whose response spans several items) closes every step
/// before it, so the check restarts there as at the start of a history. Why: a warm fit of a
/// long history would otherwise open every call and result id again to learn that the part it
/// saw is still valid. Anthropic's and Gemini's rules look further back (whether the history
/// uses thinking at all): they are checked whole.
pub(crate) fn is_valid_knowing(messages: &[Message], provider: Format, valid_before: Option<usize>) -> bool {
    let restarts = |m: &Message| match provider {
        Format::OpenAi => matches!(m.role, Role::User | Role::Assistant),
        _ => m.role == Role::User,
    };
    let restart = match (provider, valid_before) {
        (Format::OpenAi | Format::Responses, Some(unchanged)) => {
            messages[..unchanged.min(messages.len())].iter().rposition(restarts)
        }
        _ => None,
    };
    let valid = validate(&messages[restart.unwrap_or(0)..], provider).is_empty();
    debug_assert_eq!(
        valid,
        validate(messages, provider).is_empty(),
        "validity from a restart at {restart:?}"
    );
    valid
}

/// Every violation of `provider`'s rules in `messages`, in message order; empty when a
/// provider would accept the history.
///
/// `messages` may be owned messages or anything that borrows one (a fitted history's
/// `Cow<Message>`s, say).
pub fn validate<M: Borrow<Message>>(messages: &[M], provider: Format) -> Vec<Violation> {
    let messages: Vec<&Message> = messages.iter().map(Borrow::borrow).collect();
    let mut out = Vec::new();
    match provider {
        Format::Anthropic => anthropic(&messages, &mut out),
        Format::Gemini => gemini(&messages, &mut out),
        Format::Responses => {
            openai(&messages, provider, &mut out);
            lone_reasoning(&messages, &mut out);
        }
        _ => openai(&messages, provider, &mut out),
    }
    out.sort_by_key(|v| v.index);
    out
}

fn push(out: &mut Vec<Violation>, index: usize, rule: Rule, reason: String) {
    out.push(Violation { index, rule, reason });
}

/// Opens in `open` the ids of the calls of `callers` (one message, or the items of one
/// Responses response); a second call with the same id is reported at the message that makes
/// it. `ids` is room for the list on its way, kept from one caller to the next.
fn call_ids<'m>(
    callers: &[&'m Message],
    index: usize,
    out: &mut Vec<Violation>,
    open: &mut OpenCalls<&'m str>,
    ids: &mut Vec<&'m str>,
) {
    ids.clear();
    // a set only for many calls: a step's few ids are compared directly, as `OpenCalls` does
    let mut seen: HashSet<&str> = HashSet::default();
    let calls = callers.iter().enumerate().flat_map(|(at, m)| m.tool_calls().map(move |c| (index + at, c)));
    for (index, call) in calls {
        let id = call.id.as_deref().unwrap_or(call.name.as_str());
        let new = if ids.len() < SCANNED {
            !ids.contains(&id)
        } else {
            if seen.is_empty() {
                seen.extend(ids.iter().copied());
            }
            seen.insert(id)
        };
        if new {
            ids.push(id);
        } else {
            push(out, index, Rule::DuplicateCallId, format!("two tool calls share the id {id:?}"));
        }
    }
    open.refill(ids.iter().copied());
}

fn openai(messages: &[&Message], provider: Format, out: &mut Vec<Violation>) {
    // the calls of the last assistant message (or response) that still wait for results, and
    // its index
    let mut open: OpenCalls<&str> = OpenCalls::new([]);
    let mut ids: Vec<&str> = Vec::new();
    let mut caller: Option<usize> = None;
    let mut answered: HashSet<&str> = HashSet::default();
    let mut seen_conversation = false;
    // the end of the response whose items are being read: its later messages are not new callers
    let mut response_end = 0;
    let api = if provider == Format::Responses { "an OpenAI Responses" } else { "an OpenAI" };
    for (index, message) in messages.iter().enumerate() {
        if index < response_end && message.role == Role::Assistant {
            continue;
        }
        match message.role {
            Role::Tool | Role::Function => {
                if !seen_conversation {
                    push(
                        out,
                        index,
                        Rule::LeadingToolResult,
                        "a tool result before any assistant message".into(),
                    );
                    continue;
                }
                let id = match (message.role, &message.tool_call_id) {
                    (_, Some(id)) => id.as_str(),
                    (Role::Function, None) => message.name.as_deref().unwrap_or_default(),
                    (_, None) => {
                        push(out, index, Rule::MissingCallId, "a tool message without `tool_call_id`".into());
                        continue;
                    }
                };
                match open.first_open(&id) {
                    Some(at) => {
                        open.close(at);
                        answered.insert(id);
                    }
                    None => {
                        let reason = match caller {
                            _ if answered.contains(id) => format!("a second result for call {id:?}"),
                            Some(caller) => format!(
                                "answers call {id:?}, which messages[{caller}] (the assistant message before it) did not make"
                            ),
                            None => format!("answers call {id:?}, which no assistant message before it made"),
                        };
                        push(out, index, Rule::OrphanToolResult, reason);
                    }
                }
            }
            role => {
                report_unanswered(&mut open, caller, messages, out);
                answered.clear();
                if role == Role::Other {
                    push(
                        out,
                        index,
                        Rule::UnsupportedRole,
                        format!("the role {:?} is not {api} role", message.role_name()),
                    );
                }
                if !role.is_instruction() {
                    seen_conversation = true;
                }
                if role == Role::Assistant {
                    response_end = crate::units::response_end(messages, index);
                    call_ids(&messages[index..response_end], index, out, &mut open, &mut ids);
                    caller = Some(index);
                } else {
                    caller = None;
                }
            }
        }
    }
    report_unanswered(&mut open, caller, messages, out);
}

/// Reports the calls of `callers` (the messages from the caller on) that got no result, each
/// at the message that makes it.
fn report_unanswered(
    open: &mut OpenCalls<&str>,
    caller: Option<usize>,
    callers: &[&Message],
    out: &mut Vec<Violation>,
) {
    if let (Some(caller), false) = (caller, open.is_empty()) {
        for id in open.remaining() {
            let makes =
                |m: &&Message| m.tool_calls().any(|c| c.id.as_deref().unwrap_or(c.name.as_str()) == *id);
            let at = caller + callers.get(caller..).and_then(|c| c.iter().position(makes)).unwrap_or(0);
            push(out, at, Rule::UnansweredToolCall, format!("tool call {id:?} gets no result"));
        }
    }
    open.refill([]);
}

fn gemini(messages: &[&Message], out: &mut Vec<Violation>) {
    let head = messages.iter().take_while(|m| m.role.is_instruction()).count();
    // the calls of the model turn before this message that wait for responses, and its index
    let mut open: OpenCalls<&str> = OpenCalls::new([]);
    let mut ids: Vec<&str> = Vec::new();
    let mut caller: Option<(usize, usize)> = None;
    for (index, message) in messages.iter().enumerate().skip(head) {
        let role = message.role;
        match role {
            Role::User | Role::Assistant => {}
            Role::System | Role::Developer => push(
                out,
                index,
                Rule::SystemNotAtStart,
                "a system message inside contents (Gemini takes it only as the systemInstruction)".into(),
            ),
            _ => push(
                out,
                index,
                Rule::UnsupportedRole,
                format!("the role {:?} is not a Gemini role (user or model)", message.role_name()),
            ),
        }
        let responses: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult(result) => Some(result.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let previous_caller = caller.take();
        if let Some((at, calls)) = previous_caller {
            if !responses.is_empty() && responses.len() != calls {
                push(
                    out,
                    index,
                    Rule::ResponseCountMismatch,
                    format!(
                        "{} functionResponse parts answer the {calls} functionCall parts of contents[{at}]",
                        responses.len()
                    ),
                );
            }
        }
        for id in &responses {
            match open.first_open(id) {
                Some(at) => open.close(at),
                None => push(
                    out,
                    index,
                    Rule::OrphanToolResult,
                    format!(
                        "a functionResponse for {id:?} answers no functionCall of the model turn before it"
                    ),
                ),
            }
        }
        let caller_at = previous_caller.map_or(index, |(at, _)| at);
        for id in open.remaining() {
            push(
                out,
                caller_at,
                Rule::UnansweredToolCall,
                format!("the functionCall {id:?} gets no functionResponse in the next turn"),
            );
        }
        open.refill([]);
        if role == Role::Assistant && message.tool_calls().next().is_some() {
            call_ids(std::slice::from_ref(message), index, out, &mut open, &mut ids);
            caller = Some((index, message.tool_calls().count()));
        }
    }
    if let Some((at, _)) = caller {
        for id in open.remaining() {
            push(
                out,
                at,
                Rule::UnansweredToolCall,
                format!("the functionCall {id:?} gets no functionResponse"),
            );
        }
    }
}

fn anthropic(messages: &[&Message], out: &mut Vec<Violation>) {
    let head = messages.iter().take_while(|m| m.role.is_instruction()).count();
    let uses_thinking = messages
        .iter()
        .any(|m| m.parts.iter().any(|p| matches!(p, Part::Thinking(_) | Part::RedactedThinking(_))));
    let mut previous: Option<(usize, Role)> = None;
    let mut open: OpenCalls<&str> = OpenCalls::new([]);
    let mut ids: Vec<&str> = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(head) {
        let role = message.role;
        if !matches!(role, Role::User | Role::Assistant) {
            let (rule, reason) = match role {
                Role::System | Role::Developer => {
                    (Rule::SystemNotAtStart, "a system message after the conversation started".to_string())
                }
                _ => (
                    Rule::UnsupportedRole,
                    format!("the role {:?} is not an Anthropic role", message.role_name()),
                ),
            };
            push(out, index, rule, reason);
            continue;
        }
        match previous {
            None if role != Role::User => {
                push(out, index, Rule::FirstNotUser, "the first message must be a user message".into())
            }
            Some((_, last)) if last == role => {
                push(out, index, Rule::NotAlternating, format!("a second {role} message in a row"))
            }
            _ => {}
        }
        let is_final = index + 1 == messages.len();
        let empty_text = message.parts.iter().any(|p| matches!(p, Part::Text(t) if t.text.trim().is_empty()));
        if empty_text && !(is_final && role == Role::Assistant) {
            push(
                out,
                index,
                Rule::EmptyText,
                "an empty text block (Anthropic requires non-whitespace text)".into(),
            );
        }
        // the results of the previous assistant message's calls, first in this message
        let mut leading = true;
        for part in &message.parts {
            match part {
                Part::ToolResult(result) => {
                    let id = result.tool_use_id.as_str();
                    if !leading {
                        push(
                            out,
                            index,
                            Rule::ToolResultNotFirst,
                            format!("the result for {id:?} follows other content"),
                        );
                    }
                    match open.first_open(&id) {
                        Some(at) => {
                            open.close(at);
                        }
                        None => push(
                            out,
                            index,
                            Rule::OrphanToolResult,
                            format!(
                                "answers tool_use {id:?}, which the assistant message before it did not make"
                            ),
                        ),
                    }
                }
                _ => leading = false,
            }
        }
        if let Some((caller, Role::Assistant)) = previous {
            for id in open.remaining() {
                push(
                    out,
                    caller,
                    Rule::UnansweredToolCall,
                    format!("tool_use {id:?} gets no tool_result in the next message"),
                );
            }
        }
        open.refill([]);
        if role == Role::Assistant {
            call_ids(std::slice::from_ref(message), index, out, &mut open, &mut ids);
            for part in &message.parts {
                if let Part::Thinking(t) = part {
                    if t.signature.is_none() {
                        push(
                            out,
                            index,
                            Rule::UnsignedThinking,
                            "a thinking block without its signature".into(),
                        );
                    }
                }
            }
        }
        previous = Some((index, role));
    }
    if let Some((caller, Role::Assistant)) = previous {
        // the last message makes calls: the request ends waiting for results
        for id in open.remaining() {
            push(out, caller, Rule::UnansweredToolCall, format!("tool_use {id:?} gets no tool_result"));
        }
    }
    if uses_thinking {
        if let Some(index) = current_tool_turn(messages) {
            let starts_with_thinking =
                matches!(messages[index].parts.first(), Some(Part::Thinking(_) | Part::RedactedThinking(_)));
            if !starts_with_thinking {
                push(
                    out,
                    index,
                    Rule::MissingCurrentThinking,
                    "the assistant message of the current tool turn must keep its thinking block".into(),
                );
            }
        }
    }
}

/// Whether a message is a Responses reasoning item.
pub(crate) fn is_reasoning_item(message: &Message) -> bool {
    message.is_response_item() && matches!(message.parts.first(), Some(Part::Thinking(_)))
}

/// Responses: every reasoning item is followed by an item of its response (an assistant
/// message: its message or a call).
fn lone_reasoning(messages: &[&Message], out: &mut Vec<Violation>) {
    for (index, message) in messages.iter().enumerate() {
        let followed = messages.get(index + 1).is_some_and(|next| next.role == Role::Assistant);
        if is_reasoning_item(message) && !followed {
            push(
                out,
                index,
                Rule::LoneReasoning,
                "a reasoning item must be followed by the item it produced (a message or a call)".into(),
            );
        }
    }
}

/// Where a note written by tightfit (a placeholder, a trace, a summary: user text) may go so
/// as to stand at `position`: there, unless that is inside a unit (a call and its results, the
/// items of one Responses reply: then before the unit), or inside Anthropic's current tool turn, where
/// user text would end the turn (and the assistant message after it would need the thinking
/// it does not have): then just before the turn's first assistant message; or, for OpenAI
/// Responses, right after a reasoning item (which must be followed by what it produced): then
/// before the reasoning. Never after the message a request ends on when the assistant wrote it
/// (a prefill the model goes on from): after it, the note would make the model answer a new
/// user turn, and the prefill's allowances (Anthropic: an empty text block) would no longer
/// hold; then before it.
pub(crate) fn note_position<M: Borrow<Message>>(messages: &[M], position: usize, provider: Format) -> usize {
    let ends_on_prefill = messages.last().is_some_and(|m| m.borrow().role == Role::Assistant);
    let position = if position >= messages.len() && ends_on_prefill { messages.len() - 1 } else { position };
    // never inside a unit (between a call and its results, or among the items of one
    // Responses reply): before it
    let position = crate::units::units(messages)
        .iter()
        .find(|u| u.messages.start < position && position < u.messages.end)
        .map_or(position, |u| u.messages.start);
    match provider {
        // never between a reasoning item and the item it produced: before the reasoning
        Format::Responses => {
            let mut position = position.min(messages.len());
            while position > 0 && is_reasoning_item(messages[position - 1].borrow()) {
                position -= 1;
            }
            position
        }
        Format::Anthropic => match current_tool_turn(messages) {
            Some(first) if position > first => first,
            _ => position,
        },
        _ => position,
    }
}

/// The first assistant message of the current assistant turn, when the history ends inside a
/// tool loop: the last message holds only tool results, and the turn began with the first
/// assistant message after the last user message that is not only results.
pub(crate) fn current_tool_turn<M: Borrow<Message>>(messages: &[M]) -> Option<usize> {
    let messages: Vec<&Message> = messages.iter().map(Borrow::borrow).collect();
    let only_results = |m: &Message| {
        m.role == Role::User
            && !m.parts.is_empty()
            && m.parts.iter().all(|p| matches!(p, Part::ToolResult(_)))
    };
    // any user message but one of only results starts a turn (an empty one too, as the units
    // and the protection of the newest user turn see it)
    let starts_turn = |m: &Message| m.role == Role::User && !only_results(m);
    if !messages.last().is_some_and(|m| only_results(m)) {
        return None;
    }
    let turn_start = messages.iter().rposition(|m| starts_turn(m)).map_or(0, |user| user + 1);
    let index = turn_start + messages[turn_start..].iter().position(|m| m.role == Role::Assistant)?;
    messages[index].tool_calls().next().is_some().then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_the_snake_case_of_the_variants_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for rule in Rule::ALL {
            let debug = format!("{rule:?}");
            let snake: String = debug
                .chars()
                .enumerate()
                .flat_map(|(i, c)| {
                    let sep = (i > 0 && c.is_ascii_uppercase()).then_some('_');
                    sep.into_iter().chain(std::iter::once(c.to_ascii_lowercase()))
                })
                .collect();
            assert_eq!(rule.as_str(), snake);
            assert_eq!(rule.to_string(), snake);
            assert!(seen.insert(rule.as_str()));
        }
    }
}
