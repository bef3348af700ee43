//! The trace a compaction leaves where it removed messages: the extension point that
//! summaries and offload fill.
//!
//! A session's compaction (the `compact` step) removes a run of old units at once. What it
//! leaves in their place is one message made by a [`Trace`]: by default [`CountTrace`], a
//! line saying how many messages went and which ones; a summarizer (a structured hand-off) or
//! an offload store (a placeholder with a recall handle) implement the same trait and are lent
//! to the run through [`StepContext::with_trace`](crate::steps::StepContext::with_trace).

use std::fmt;

use crate::format::Format;
use crate::message::{Message, Role};
use crate::steps::StepError;
use crate::text::message_span;
use crate::tokens::ChatCounter;

/// The messages a compaction removed, in order, with where each sat in the input.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Removed<'h> {
    /// The removed messages, as the steps before the compaction left them.
    pub messages: Vec<&'h Message>,
    /// For each removed message, its index in the input (`None` for a message a step wrote).
    pub input_indices: Vec<Option<usize>>,
    /// The provider the history is fitted for.
    pub provider: Format,
    /// The run's counter (what a trace with a token budget measures itself with).
    pub counter: &'h ChatCounter,
}

impl Removed<'_> {
    /// The first and last input index removed, if any input message was.
    pub fn input_span(&self) -> Option<(usize, usize)> {
        let mut indices = self.input_indices.iter().flatten();
        let first = *indices.next()?;
        Some((first, indices.last().copied().unwrap_or(first)))
    }
}

/// Makes the message left where a compaction removed messages.
///
/// Called once per compaction, with everything removed. The message is put where the removed
/// run started; for Anthropic, a user message next to another user turn is merged into it.
/// Implementations must be deterministic: the same removed messages give the same message
/// (byte-stable output is what keeps a provider's prompt cache).
pub trait Trace: Send + Sync + fmt::Debug {
    /// The message to leave, or `None` to leave nothing.
    fn trace(&self, removed: &Removed<'_>) -> Result<Option<Message>, StepError>;

    /// [`trace`](Trace::trace), and a line for the report when the trace had to make do (a
    /// summarizer that failed, and what stood in). The default has nothing to say.
    fn trace_noted(&self, removed: &Removed<'_>) -> Result<(Option<Message>, Option<String>), StepError> {
        Ok((self.trace(removed)?, None))
    }
}

/// How the text of tightfit's own traces starts ([`CountTrace`], and the `cache` preset's
/// last-resort placeholder), so that a trace folded into a neighbouring message (Anthropic's
/// turns of one role are merged) can still be recognised.
pub const TRACE_PREFIX: &str = "[tightfit: ";

/// The default trace: one user message that says how many messages were removed and which
/// input messages they were, so the model knows the conversation has a gap.
#[derive(Debug, Clone, Default)]
pub struct CountTrace;

impl Trace for CountTrace {
    fn trace(&self, removed: &Removed<'_>) -> Result<Option<Message>, StepError> {
        let count = removed.messages.len();
        if count == 0 {
            return Ok(None);
        }
        let which = removed.input_span().map_or(String::new(), |(first, last)| {
            format!(" ({} of the conversation)", message_span(first, last))
        });
        let plural = if count == 1 { "message was" } else { "messages were" };
        Ok(Some(Message::text(
            Role::User,
            format!("{TRACE_PREFIX}{count} earlier {plural} removed here to fit the context window{which}]"),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_trace_names_how_many_and_which() {
        let counter = crate::steps::test_support::counter();
        let a = Message::text(Role::User, "a");
        let b = Message::text(Role::Assistant, "b");
        let removed = Removed {
            messages: vec![&a, &b, &a],
            input_indices: vec![Some(3), None, Some(9)],
            provider: Format::OpenAi,
            counter: &counter,
        };
        let message = CountTrace.trace(&removed).unwrap().unwrap();
        assert_eq!(message.role, Role::User);
        assert_eq!(
            message.text_content(),
            "[tightfit: 3 earlier messages were removed here to fit the context window (messages 3-9 of the conversation)]"
        );
        let none =
            Removed { messages: vec![], input_indices: vec![], provider: Format::OpenAi, counter: &counter };
        assert!(CountTrace.trace(&none).unwrap().is_none());
    }
}
