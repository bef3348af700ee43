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
//!   this one (by fingerprints);
//! - OpenAI Chat Completions only: a Chat history is valid exactly when its part before a
//!   non-tool message and its part from it are (the validator's state starts afresh there),
//!   and nothing else the run does looks across messages; Anthropic's merging of turns and its
//!   thinking rule, and Responses' multi-item replies, are not checked here, and replay;
//! - the previous turn's input was valid (no repair ran), and the new messages are valid on
//!   their own and start with a message that is not a tool result, not an assistant message
//!   right after an assistant message (one reply in two messages);
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
use crate::format::Conversation;
use crate::message::{Message, Role};
use crate::plan::{input_fingerprint, unit_plan_as_it_came, OutputEntry, Plan};
use crate::report::Report;
use crate::units::units;
use crate::validate::validate;

/// The previous turn of a conversation, as [`PreviousTurn::answer`] extends it.
#[derive(Debug, Clone)]
pub(crate) struct PreviousTurn {
    decision: Arc<Decision>,
    /// A hash of the tool schemas sent beside the messages.
    tools: u64,
    fingerprints: Vec<u128>,
    /// Its output: input messages by index, the messages the decision rewrote or wrote whole.
    output: Vec<Sent>,
    report: Report,
    plan: Plan,
}

/// One message of a previous turn's output.
#[derive(Debug, Clone)]
enum Sent {
    /// The input message at this index, as it came.
    Input(usize),
    /// A message as the decision left it.
    Written(Message),
}

impl PreviousTurn {
    /// The turn `fitted` (a replayed turn of `fingerprints`, Chat Completions, under
    /// `decision`) as the next turn may extend it; `None` when a repair ran (its input was not
    /// valid: the repair's own messages would have to be placed again).
    pub(crate) fn of(
        decision: Arc<Decision>,
        tools: u64,
        fingerprints: &[u128],
        fitted: &Fitted<'_>,
    ) -> Option<PreviousTurn> {
        if !fitted.report.repairs.is_empty() || fitted.plan.output.len() != fitted.messages.len() {
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
        Some(PreviousTurn {
            decision,
            tools,
            fingerprints: fingerprints.to_vec(),
            output,
            report: fitted.report.clone(),
            plan: fitted.plan.clone(),
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
        if let Some(first) = new.first() {
            let last_input = seen.checked_sub(1).map(|i| &messages[i]);
            let last_output = match self.output.last() {
                Some(Sent::Input(i)) => messages.get(*i),
                Some(Sent::Written(m)) => Some(m),
                None => None,
            };
            let one_reply = |last: Option<&Message>| {
                first.role == Role::Assistant && last.is_some_and(|m| m.role == Role::Assistant)
            };
            if first.is_tool_result()
                || matches!(first.role, Role::Tool | Role::Function)
                || one_reply(last_input)
                || one_reply(last_output)
                || !validate(new, crate::format::Format::OpenAi).is_empty()
            {
                return None;
            }
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

    /// Appends the messages `new` (their tokens `added`) to the turn: sent as they came, in
    /// units of their own, through every step untouched.
    fn extend_to(&mut self, fingerprints: &[u128], new: &[Message], added: usize) {
        let seen = self.fingerprints.len();
        self.fingerprints.extend_from_slice(&fingerprints[seen..]);
        self.output.extend((seen..fingerprints.len()).map(Sent::Input));
        let plan = &mut self.plan;
        plan.input_messages = fingerprints.len();
        plan.input_fingerprint = input_fingerprint(fingerprints.iter().copied());
        plan.units.extend(units(new).iter().map(|unit| unit_plan_as_it_came(unit, seen)));
        plan.output.extend((seen..fingerprints.len()).map(|i| OutputEntry {
            input: Some(i),
            message: None,
            steps: Vec::new(),
            details: Vec::new(),
        }));
        let report = &mut self.report;
        report.original_token_count += added;
        report.compressed_token_count += added;
        report.original_message_count += new.len();
        report.compressed_message_count += new.len();
        report.compression_ratio = if report.original_token_count == 0 {
            1.0
        } else {
            report.compressed_token_count as f64 / report.original_token_count as f64
        };
        for step in &mut report.steps {
            step.messages_before += new.len();
            step.messages_after += new.len();
            step.tokens_before += added;
            step.tokens_after += added;
        }
    }
}
