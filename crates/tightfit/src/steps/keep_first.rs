//! `keep_first`: keep the first N messages, pairs or units (llmling `KeepFirstMessages`).
//!
//! The start of a conversation often holds the task and its setup; this step keeps it and
//! drops everything after it. Selection is by whole units counted from the start: a unit is
//! kept only if all of it fits the count, and selection stops at the first unit that does not
//! fit, so a tool call is never kept without its results and the kept start stays one
//! contiguous block. System messages and the newest user turn are kept in addition unless
//! `keep` says otherwise; protected units do not count toward N (so `count: 2` keeps the first
//! two messages of the conversation proper, after the instructions, as llmling does, where the
//! system prompt is not a message of its own). Cost: O(messages).

use super::shared::keep::{measure_word, read_keep, read_measure};
use super::shared::select::keep_first;
use super::shared::select::{apply_mask, protected, Measure};
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::params::{FromParams, Params};

/// `keep_first` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<KeepFirst>("keep_first", &["keep_first_messages"])
    .documented(
        "Keep the first N messages, pairs or units.",
        &[
            KeyDoc::new(
                "count",
                KeyUnit::Measure,
                "how many to keep, counted in messages, pairs or units as `measure` says",
            ),
            KeyDoc::new("measure", KeyUnit::Choice, "what `count` counts: `messages`, `pairs` or `units`"),
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Keeps the first `count` messages, pairs or units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepFirst {
    /// How many to keep. Defaults to 2 (llmling's default). Must be at least 1.
    pub count: usize,
    /// What `count` counts. Defaults to [`Measure::Messages`] (llmling counts messages here).
    pub measure: Measure,
    /// What is kept besides the start. Defaults to system messages and the newest user turn.
    pub keep: Keep,
}

impl Default for KeepFirst {
    fn default() -> KeepFirst {
        KeepFirst { count: 2, measure: Measure::Messages, keep: Keep::default() }
    }
}

impl KeepFirst {
    /// The first `count` messages.
    pub fn messages(count: usize) -> KeepFirst {
        KeepFirst { count, measure: Measure::Messages, ..KeepFirst::default() }
    }

    /// The first `count` request/response pairs.
    pub fn pairs(count: usize) -> KeepFirst {
        KeepFirst { count, measure: Measure::Pairs, ..KeepFirst::default() }
    }

    /// The first `count` units.
    pub fn units(count: usize) -> KeepFirst {
        KeepFirst { count, measure: Measure::Units, ..KeepFirst::default() }
    }
}

impl Step for KeepFirst {
    fn name(&self) -> &'static str {
        "keep_first"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("keep_first")
            .key("count", self.count)
            .key("measure", measure_word(self.measure))
            .keep(self.keep)
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
        keep_first(history, self.count, self.measure, &mut mask);
        let reason = format!("after the first {} {}", self.count, measure_word(self.measure));
        apply_mask(history, &mask, &reason);
        Ok(())
    }
}

impl FromParams for KeepFirst {
    /// Keys: `count`, `measure` (`messages`, `pairs`, `units`), `keep_system` (alias
    /// `preserve_system_messages`), `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<KeepFirst, ConfigError> {
        let mut step = KeepFirst::default();
        step.count = p.usize_or(&["count"], step.count)?;
        step.measure = read_measure(p, step.measure)?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::message::Part;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, openai, run, run_in, texts, tool_history};
    use crate::validate::validate;
    use serde_json::json;

    const BARE: Keep = Keep { system: false, newest_user_turn: false };

    /// user, assistant with two parallel calls, their results, assistant, user.
    fn parallel_anthropic() -> Vec<crate::message::Message> {
        anthropic(
            r#"[{"role": "user", "content": "weather in Paris and Tokyo?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "p", "name": "weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "t", "name": "weather", "input": {"city": "Tokyo"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": "22C"},
                    {"type": "tool_result", "tool_use_id": "p", "content": "18C"}]},
                {"role": "assistant", "content": "Paris 18C, Tokyo 22C"},
                {"role": "user", "content": "thanks"}]"#,
        )
    }

    #[test]
    fn keeps_the_first_messages_and_the_protected_ones() {
        // system, user, assistant(call a) + tool a, user, assistant
        let input = tool_history();
        // the default: two messages after the system prompt; the tool step (2 messages) does
        // not fit after the first user message, and selection stops there
        let out = run(&KeepFirst::default(), &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: look it up", "user: and now?"]);
        assert_valid(&out);
        let out = run(&KeepFirst::messages(3), &input);
        assert_eq!(
            texts(&out),
            vec![
                "system: be brief",
                "user: look it up",
                "assistant: calls lookup",
                "tool: found it",
                "user: and now?"
            ]
        );
        assert_valid(&out);
    }

    #[test]
    fn an_unprotected_system_message_counts() {
        let input = tool_history();
        let out = run(&KeepFirst { keep: BARE, ..KeepFirst::messages(2) }, &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: look it up"]);
        // the tool step does not fit in 3 messages after system and user: it is not split
        let out = run(&KeepFirst { keep: BARE, ..KeepFirst::messages(3) }, &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: look it up"]);
        let out = run(&KeepFirst { keep: BARE, ..KeepFirst::messages(4) }, &input);
        assert_eq!(
            texts(&out),
            vec!["system: be brief", "user: look it up", "assistant: calls lookup", "tool: found it"]
        );
        assert_valid(&out);
    }

    #[test]
    fn pairs_and_units() {
        let input = tool_history();
        // the first pair: the user turn with the step that answers it
        let out = run(&KeepFirst::pairs(1), &input);
        assert_eq!(
            texts(&out),
            vec![
                "system: be brief",
                "user: look it up",
                "assistant: calls lookup",
                "tool: found it",
                "user: and now?"
            ]
        );
        let out = run(&KeepFirst { keep: BARE, ..KeepFirst::units(2) }, &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: look it up"]);
        let out = run(&KeepFirst { keep: BARE, ..KeepFirst::units(3) }, &input);
        assert_eq!(out.len(), 4);
        assert_valid(&out);
    }

    #[test]
    fn parallel_calls_stay_with_their_results_in_anthropic_shape() {
        let input = parallel_anthropic();
        let out = run_in(&KeepFirst::messages(3), &input, anthropic_cx());
        // the results message and the newest user turn are merged into one user turn
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].tool_calls().count(), 2);
        let ids: Vec<&str> = out[2].answered_call_ids().collect();
        assert_eq!(ids, vec!["t", "p"]);
        assert!(matches!(&out[2].parts[2], Part::Text(t) if t.text == "thanks"));
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        // two messages cannot hold the step: only the first user turn, then the newest one
        let out = run_in(&KeepFirst::messages(2), &input, anthropic_cx());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].text_content(), "weather in Paris and Tokyo?\nthanks");
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn parallel_calls_in_openai_shape() {
        let input = openai(
            r#"[{"role": "user", "content": "both?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "y", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "y", "content": "Y"},
                {"role": "tool", "tool_call_id": "x", "content": "X"},
                {"role": "assistant", "content": "X and Y"},
                {"role": "user", "content": "ok"}]"#,
        );
        let out = run(&KeepFirst { keep: BARE, ..KeepFirst::messages(3) }, &input);
        assert_eq!(texts(&out), vec!["user: both?"]);
        let out = run(&KeepFirst { keep: BARE, ..KeepFirst::messages(4) }, &input);
        assert_eq!(texts(&out), vec!["user: both?", "assistant: calls f,g", "tool: Y", "tool: X"]);
        assert_valid(&out);
    }

    #[test]
    fn odd_input_does_not_panic() {
        assert!(run(&KeepFirst::default(), &[]).is_empty());
        // a legacy function call and its result, then an orphan tool result
        let input = openai(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
                {"role": "function", "name": "f", "content": "r"},
                {"role": "tool", "tool_call_id": "nobody", "content": "lost"},
                {"role": "user", "content": "next"}]"#,
        );
        let out = run(&KeepFirst::messages(3), &input);
        assert_eq!(texts(&out), vec!["user: go", "assistant: calls f", "function: r", "user: next"]);
        assert_valid(&out);
    }

    #[test]
    fn reads_its_parameters() {
        let map = json!({"count": 4, "measure": "units", "preserve_system_messages": false});
        let mut p = Params::new(map.as_object().unwrap().clone());
        let step = KeepFirst::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(
            step,
            KeepFirst {
                count: 4,
                measure: Measure::Units,
                keep: Keep { system: false, newest_user_turn: true }
            }
        );
        let mut p = Params::new(json!({"measure": "tokens"}).as_object().unwrap().clone());
        assert_eq!(KeepFirst::from_params(&mut p).unwrap_err().key, "measure");
        assert_eq!(KeepFirst::from_params(&mut Params::default()).unwrap(), KeepFirst::default());
    }

    #[test]
    fn zero_is_a_configuration_error() {
        assert_eq!(KeepFirst::messages(0).check().unwrap_err().key, "count");
        assert!(KeepFirst::default().check().is_ok());
    }
}
