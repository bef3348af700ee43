//! `keep_last`: keep the last N messages, pairs or units (llmling `KeepLastMessages`, autogen
//! `BufferedChatCompletionContext`, AG2 `MessageHistoryLimiter`).
//!
//! Selection is by whole units, so a tool call is never kept without its results (autogen's
//! buffer drops a results message at the start of the window; AG2 can leave a tool result
//! first): when the last N messages would start inside an assistant step, the window starts
//! after it and holds fewer than N. System messages and the newest user turn are kept in
//! addition unless `keep` says otherwise. Cost: O(messages).

use super::shared::keep::{measure_word, read_keep, read_measure};
use super::shared::select::{apply_mask, keep_last, protected, Measure};
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::params::{FromParams, Params};
use crate::units::UnitKind;

/// `keep_last` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<KeepLast>("keep_last", &["keep_last_messages", "buffered"])
    .documented(
        "Keep the last N messages, pairs or units, never splitting a tool call from its results.",
        &[
            KeyDoc::new(
                "count",
                KeyUnit::Measure,
                "how many to keep, counted in pairs, messages or units as `measure` says",
            ),
            KeyDoc::new(
                "count_pairs",
                KeyUnit::Flag,
                "llmling's spelling of `measure`: true is `pairs`, false `messages`",
            ),
            KeyDoc::new("measure", KeyUnit::Choice, "what `count` counts: `messages`, `pairs` or `units`"),
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
            KeyDoc::new(
                "keep_first_message",
                KeyUnit::Flag,
                "also keep the first non-system unit (AG2 `keep_first_message`)",
            ),
        ],
    );

/// Keeps the last `count` messages, pairs or units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepLast {
    /// How many to keep. Defaults to 10 (llmling's default). Must be at least 1.
    pub count: usize,
    /// What `count` counts. Defaults to [`Measure::Pairs`] (llmling `count_pairs: true`).
    pub measure: Measure,
    /// What is kept besides the window. Defaults to system messages and the newest user turn.
    pub keep: Keep,
    /// Also keep the first message of the conversation that is not a system message (AG2
    /// `keep_first_message`; the first unit, whole). Defaults to false.
    pub keep_first_message: bool,
}

impl Default for KeepLast {
    fn default() -> KeepLast {
        KeepLast { count: 10, measure: Measure::Pairs, keep: Keep::default(), keep_first_message: false }
    }
}

impl KeepLast {
    /// The last `count` messages.
    pub fn messages(count: usize) -> KeepLast {
        KeepLast { count, measure: Measure::Messages, ..KeepLast::default() }
    }

    /// The last `count` request/response pairs.
    pub fn pairs(count: usize) -> KeepLast {
        KeepLast { count, measure: Measure::Pairs, ..KeepLast::default() }
    }

    /// The last `count` units.
    pub fn units(count: usize) -> KeepLast {
        KeepLast { count, measure: Measure::Units, ..KeepLast::default() }
    }
}

impl Step for KeepLast {
    fn name(&self) -> &'static str {
        "keep_last"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("keep_last")
            .key("count", self.count)
            .key("measure", measure_word(self.measure))
            .keep(self.keep)
            .key("keep_first_message", self.keep_first_message)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.count == 0 {
            return Err(ConfigError::new("count", "must be at least 1"));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let mut mask = protected(history, self.keep);
        if self.keep_first_message {
            if let Some(first) = history.units().iter().position(|u| u.kind != UnitKind::Instruction) {
                mask[first] = true;
            }
        }
        keep_last(history, self.count, self.measure, &mut mask);
        let reason = format!("older than the last {} {}", self.count, measure_word(self.measure));
        apply_mask(history, &mask, &reason);
        Ok(())
    }
}

impl FromParams for KeepLast {
    /// Keys: `count` (aliases `max_messages`, `buffer_size`), `measure` (`messages`, `pairs`,
    /// `units`) or llmling's `count_pairs`, `keep_system` (alias `preserve_system_messages`),
    /// `keep_newest_user_turn`, `keep_first_message`.
    fn from_params(p: &mut Params) -> Result<KeepLast, ConfigError> {
        let mut step = KeepLast::default();
        step.count = p.usize_or(&["count", "max_messages", "buffer_size"], step.count)?;
        if let Some(pairs) = p.bool(&["count_pairs"])? {
            step.measure = if pairs { Measure::Pairs } else { Measure::Messages };
        }
        step.measure = read_measure(p, step.measure)?;
        step.keep = read_keep(p, step.keep)?;
        step.keep_first_message = p.bool_or(&["keep_first_message"], step.keep_first_message)?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::test_support::{assert_valid, run, texts, tool_history};

    #[test]
    fn keeps_the_last_messages_without_splitting_a_step() {
        // system, user, assistant(call a) + tool a, user, assistant
        let input = tool_history();
        let out = run(&KeepLast::messages(2), &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: and now?", "assistant: done"]);
        // 3 messages from the end start inside the tool step: the window shrinks to 2
        let bare = Keep { system: false, newest_user_turn: false };
        let out = run(&KeepLast { keep: bare, ..KeepLast::messages(3) }, &input);
        assert_eq!(texts(&out), vec!["user: and now?", "assistant: done"]);
        // a protected unit outside the window is kept besides it
        let newest = Keep { system: false, newest_user_turn: true };
        let out = run(&KeepLast { keep: newest, ..KeepLast::messages(1) }, &input);
        assert_eq!(texts(&out), vec!["user: and now?", "assistant: done"]);
        let out = run(&KeepLast { keep: bare, ..KeepLast::messages(1) }, &input);
        assert_eq!(texts(&out), vec!["assistant: done"]);
        assert_valid(&out);
    }

    #[test]
    fn pairs_keep_the_request_with_its_response() {
        let input = tool_history();
        let out = run(&KeepLast::pairs(1), &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: and now?", "assistant: done"]);
        let out = run(&KeepLast::pairs(2), &input);
        assert_eq!(out.len(), input.len());
    }

    #[test]
    fn keeps_the_first_message_when_asked() {
        let input = tool_history();
        let step = KeepLast { keep_first_message: true, ..KeepLast::messages(2) };
        let out = run(&step, &input);
        assert_eq!(
            texts(&out),
            vec!["system: be brief", "user: look it up", "user: and now?", "assistant: done"]
        );
    }

    #[test]
    fn zero_is_a_configuration_error() {
        assert_eq!(KeepLast::messages(0).check().unwrap_err().key, "count");
    }
}
