//! A turn that only appends to the previous one, answered from it.
//!
//! Between compactions a session's turn is the previous turn's output with the new messages
//! after it: the decision covers the same messages, and what came after it passes as it came.
//! Running the replay again (building the history, validating input and output, recording
//! the plan) costs time in the whole history, 0.26 ms at 1,500 messages; answering from the
//! previous turn costs time in the new messages, plus copying the plan and the report.
//!
//! The answer must be the one the replay would give, byte for byte, report and plan included
//! (a test runs both on the same turns). That holds when nothing the replay does can reach
//! across the join, which is checked, else the turn is replayed:
//! - the same decision, tool schemas and provider; the previous turn's input is a prefix of
//!   this one (by fingerprints); the previous input was valid (no repair ran);
//! - the new messages start a unit and keep the history valid, judged from the join on. OpenAI
//!   Chat Completions: the validator starts afresh at a message that is not a tool result, so
//!   the new messages must start with one (and not be a second assistant message of one reply)
//!   and be valid alone. Anthropic: the new messages are validated after the message before
//!   them, in the input and in the output (what that message's own results answer was checked
//!   on the previous turn), so roles alternate across the join and no turn needs merging; the
//!   one rule that reads the whole history (the current tool turn keeps its thinking, when the
//!   history uses thinking) is checked on the whole. Gemini and Responses turns replay;
//! - the output stays under the high-water mark (a turn past it may compact).
//!
//! Memory: per conversation that keeps one, 16 bytes per input message, one entry per output
//! message (the messages the decision rewrote or wrote are held again here), and the plan
//! and report: about 0.2 KB per input message (see [`Settings::previous_turns`] for the
//! bound).
//!
//! [`Settings::previous_turns`]: super::Settings::previous_turns

use std::borrow::Cow;
use std::sync::Arc;

use super::decision::Decision;
use crate::fit::Fitted;
use crate::format::{Conversation, Format};
use crate::message::{Message, Part, Role};
use crate::plan::Plan;
use crate::report::Report;
use crate::units::units;
use crate::validate::{current_tool_turn, validate, Rule};

/// The previous turn of a conversation, as [`PreviousTurn::answer`] extends it.
#[derive(Debug, Clone)]
pub(crate) struct PreviousTurn {
    provider: Format,
    decision: Arc<Decision>,
    /// A hash of the tool schemas sent beside the messages.
    tools: u64,
    fingerprints: Vec<u128>,
    /// Its output: input messages by index, the messages the decision rewrote or wrote whole.
    output: Vec<Sent>,
    report: Report,
    plan: Plan,
    thinking: Thinking,
}

/// Whether a turn's input and output hold thinking blocks: Anthropic's rule on the current
/// tool turn then applies to them.
#[derive(Debug, Clone, Copy)]
struct Thinking {
    input: bool,
    output: bool,
}

/// One message of a previous turn's output.
#[derive(Debug, Clone)]
enum Sent {
    /// The input message at this index, as it came.
    Input(usize),
    /// A message as the decision left it.
    Written(Message),
}

impl Sent {
    /// The message sent, the input being `messages`.
    fn message<'m>(&'m self, messages: &'m [Message]) -> &'m Message {
        match self {
            Sent::Input(i) => &messages[*i],
            Sent::Written(m) => m,
        }
    }
}

impl PreviousTurn {
    /// The turn `fitted` (a replayed turn of `conversation`, whose messages have
    /// `fingerprints`, under `decision`, for `provider`) as the next turn may extend it;
    /// `None` for a provider this does not serve, or when a repair ran (the input was not
    /// valid: the repair's own messages would have to be placed again).
    pub(crate) fn of(
        provider: Format,
        decision: Arc<Decision>,
        tools: u64,
        conversation: &Conversation,
        fingerprints: &[u128],
        fitted: &Fitted<'_>,
    ) -> Option<PreviousTurn> {
        if !matches!(provider, Format::OpenAi | Format::Anthropic)
            || !fitted.report.repairs.is_empty()
            || fitted.plan.output.len() != fitted.messages.len()
        {
            return None;
        }
        let output = fitted
            .plan
            .output
            .iter()
            .zip(&fitted.messages)
            .map(|(entry, message)| match (entry.input, &entry.message) {
                (Some(i), None) => Sent::Input(i),
                _ => Sent::Written(message.clone().into_owned()),
            })
            .collect();
        let thinking = Thinking {
            input: conversation.messages.iter().any(thinks),
            output: fitted.messages.iter().any(|m| thinks(m)),
        };
        Some(PreviousTurn {
            provider,
            decision,
            tools,
            fingerprints: fingerprints.to_vec(),
            output,
            report: fitted.report.clone(),
            plan: fitted.plan.clone(),
            thinking,
        })
    }

    /// This turn answered from the previous one, when it only appends messages across whose
    /// join nothing can reach (see the module documentation), and the output stays within
    /// `high` tokens; `tokens(i)` counts the input message `i` (through the session's cache).
    /// Extends `self` to this turn. `None`: replay the turn.
    pub(crate) fn answer<'a>(
        &mut self,
        decision: &Arc<Decision>,
        tools: u64,
        conversation: &'a Conversation,
        fingerprints: &[u128],
        high: usize,
        mut tokens: impl FnMut(usize) -> usize,
    ) -> Option<Fitted<'a>> {
        let messages = &conversation.messages;
        let seen = self.fingerprints.len();
        if !Arc::ptr_eq(&self.decision, decision)
            || tools != self.tools
            || fingerprints.len() < seen
            || fingerprints[..seen] != self.fingerprints[..]
        {
            return None;
        }
        let new = &messages[seen..];
        let last_output = self.output.last().map(|sent| sent.message(messages));
        let joins = new.is_empty()
            || match self.provider {
                Format::OpenAi => chat_joins(seen.checked_sub(1).map(|i| &messages[i]), last_output, new),
                Format::Anthropic => self.anthropic_joins(messages, seen, last_output, new),
                _ => false,
            };
        if !joins {
            return None;
        }
        let added: usize = (seen..messages.len()).map(&mut tokens).sum();
        let total = self.report.compressed_token_count + added;
        if total > high {
            return None;
        }
        if !new.is_empty() {
            self.extend_to(fingerprints, new, added);
        }
        let out = self
            .output
            .iter()
            .map(|sent| match sent {
                Sent::Input(i) => Cow::Borrowed(&messages[*i]),
                Sent::Written(m) => Cow::Owned(m.clone()),
            })
            .collect();
        Some(Fitted { messages: out, report: self.report.clone(), plan: self.plan.clone() })
    }

    /// Whether the Anthropic messages `new`, after the `seen` messages of the previous turn
    /// (whose output ends with `last_output`), keep the input and the output valid.
    fn anthropic_joins(
        &self,
        messages: &[Message],
        seen: usize,
        last_output: Option<&Message>,
        new: &[Message],
    ) -> bool {
        if !matches!(new[0].role, Role::User | Role::Assistant) {
            return false;
        }
        let (Some(last_input), Some(last_output)) = (seen.checked_sub(1).map(|i| &messages[i]), last_output)
        else {
            return false;
        };
        if !anthropic_join(last_input, new) || !anthropic_join(last_output, new) {
            return false;
        }
        let new_thinks = new.iter().any(thinks);
        let input_keeps = !(self.thinking.input || new_thinks) || keeps_current_thinking(messages);
        input_keeps
            && (!(self.thinking.output || new_thinks) || {
                let mut output: Vec<&Message> =
                    self.output.iter().map(|sent| sent.message(messages)).collect();
                output.extend(new);
                keeps_current_thinking(&output)
            })
    }

    /// Appends the messages `new` (their tokens `added`) to the turn: sent as they came, in
    /// units of their own, through every step untouched.
    fn extend_to(&mut self, fingerprints: &[u128], new: &[Message], added: usize) {
        let seen = self.fingerprints.len();
        self.fingerprints.extend_from_slice(&fingerprints[seen..]);
        self.output.extend((seen..fingerprints.len()).map(Sent::Input));
        self.plan.extend_as_it_came(&units(new), seen, fingerprints);
        self.report.extend_as_it_came(new.len(), added);
        let new_thinks = new.iter().any(thinks);
        self.thinking.input |= new_thinks;
        self.thinking.output |= new_thinks;
    }
}

/// Whether Chat Completions messages `new`, after a valid history whose input ends with
/// `last_input` and whose output ends with `last_output`, keep both valid: the validator
/// starts afresh at a message that is not a tool result, unless it continues one reply (two
/// assistant messages in a row).
fn chat_joins(last_input: Option<&Message>, last_output: Option<&Message>, new: &[Message]) -> bool {
    let first = &new[0];
    let one_reply = |last: Option<&Message>| {
        first.role == Role::Assistant && last.is_some_and(|m| m.role == Role::Assistant)
    };
    !first.is_tool_result()
        && !matches!(first.role, Role::Tool | Role::Function)
        && !one_reply(last_input)
        && !one_reply(last_output)
        && validate(new, Format::OpenAi).is_empty()
}

/// Whether Anthropic messages `new`, after `before` (the last message of a history the
/// validator accepted), break no rule, judged from `before` on: what `before`'s own results
/// answer, and whether it is the first message, were judged with the history before it; the
/// thinking rule, which reads the whole history, is checked by the caller.
fn anthropic_join(before: &Message, new: &[Message]) -> bool {
    let mut from: Vec<&Message> = Vec::with_capacity(new.len() + 1);
    from.push(before);
    from.extend(new);
    validate(&from, Format::Anthropic).iter().all(|v| match v.rule {
        Rule::OrphanToolResult | Rule::FirstNotUser => v.index == 0,
        Rule::MissingCurrentThinking => true,
        _ => false,
    })
}

/// Whether a message holds thinking.
fn thinks(message: &Message) -> bool {
    message.parts.iter().any(|p| matches!(p, Part::Thinking(_) | Part::RedactedThinking(_)))
}

/// Anthropic's rule for a history that uses thinking: the assistant message of the current
/// tool turn still starts with its thinking.
fn keeps_current_thinking<M: std::borrow::Borrow<Message>>(messages: &[M]) -> bool {
    current_tool_turn(messages).is_none_or(|i| {
        matches!(messages[i].borrow().parts.first(), Some(Part::Thinking(_) | Part::RedactedThinking(_)))
    })
}
