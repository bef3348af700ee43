//! `head_and_tail`: keep the first N and the last M messages, pairs or units, and drop the
//! middle (autogen `HeadAndTailChatCompletionContext`, llmling `KeepFirstAndLast`), with an
//! optional user message saying how many were skipped.
//!
//! The head keeps how the conversation started (the task, its setup), the tail keeps where it
//! is now. Both are selected by whole units: the head from the start and the tail from the
//! end, each unit kept only if all of it fits and each side stopping at the first unit that
//! does not, so a tool call is never kept without its results (autogen can leave a call at the
//! end of the head without its results, or results at the start of the tail without their
//! call). When head and tail together cover the whole history, everything is kept, even where
//! unit edges would leave a gap. System messages and the newest user turn are kept in addition
//! and do not count toward N or M, unless `keep` says otherwise.
//!
//! The placeholder, when set, is a user message put where messages were dropped, one per run
//! of dropped messages, with `{skipped}` replaced by the number of messages in that run (the
//! messages the step actually dropped). A user message is valid after any whole unit in both
//! formats: for OpenAI it may follow a tool result or a user message; for Anthropic the pass
//! that runs after each step merges it into an adjacent user turn (after the tool results of
//! a step's results message). A run at the very end puts the placeholder last.
//! Cost: O(messages).

use super::shared::keep::{measure_word, read_keep, read_measure};
use super::shared::select::{apply_mask, keep_first, keep_last, protected, sizes, Measure};
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::message::{Message, Role};
use crate::params::{FromParams, Params};

/// The placeholder autogen's head-and-tail context puts where it skipped messages.
pub const AUTOGEN_PLACEHOLDER: &str = "Skipped {skipped} messages.";

/// `head_and_tail` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<HeadAndTail>("head_and_tail", &["keep_first_last", "keep_first_and_last", "head_tail"])
        .documented(
            "Keep the first N and the last M, with an optional \"skipped K\" placeholder between.",
            &[
                KeyDoc::new("head", KeyUnit::Measure, "how many to keep from the start, in what `measure` counts"),
                KeyDoc::new("tail", KeyUnit::Measure, "how many to keep from the end, in what `measure` counts"),
                KeyDoc::new("measure", KeyUnit::Choice, "what `head` and `tail` count: `messages`, `pairs` or `units`"),
                KeyDoc::new("placeholder", KeyUnit::Text, "a user message put where messages were dropped, `{skipped}` standing for how many; none: nothing"),
                KEEP_SYSTEM,
                KEEP_NEWEST_USER_TURN,
            ],
        );

/// Keeps the first `head` and the last `tail` messages, pairs or units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadAndTail {
    /// How many to keep from the start. Defaults to 2 (llmling `first_count`). May be 0 if
    /// `tail` is not.
    pub head: usize,
    /// How many to keep from the end. Defaults to 5 (llmling `last_count`). May be 0 if
    /// `head` is not.
    pub tail: usize,
    /// What `head` and `tail` count. Defaults to [`Measure::Messages`].
    pub measure: Measure,
    /// The text of a user message put where messages were dropped, `{skipped}` replaced by
    /// how many. Defaults to none (llmling); autogen's is [`AUTOGEN_PLACEHOLDER`]. Must not be
    /// blank (Anthropic rejects empty text).
    pub placeholder: Option<String>,
    /// What is kept besides head and tail. Defaults to system messages and the newest user
    /// turn.
    pub keep: Keep,
}

impl Default for HeadAndTail {
    fn default() -> HeadAndTail {
        HeadAndTail { head: 2, tail: 5, measure: Measure::Messages, placeholder: None, keep: Keep::default() }
    }
}

impl HeadAndTail {
    /// The first `head` and the last `tail` messages, no placeholder.
    pub fn messages(head: usize, tail: usize) -> HeadAndTail {
        HeadAndTail { head, tail, ..HeadAndTail::default() }
    }

    /// As autogen's `HeadAndTailChatCompletionContext(head_size, tail_size)`: messages counted
    /// from the very start and end with nothing protected (a system message counts toward the
    /// head), and [`AUTOGEN_PLACEHOLDER`] where messages were skipped.
    pub fn autogen(head: usize, tail: usize) -> HeadAndTail {
        HeadAndTail {
            head,
            tail,
            measure: Measure::Messages,
            placeholder: Some(AUTOGEN_PLACEHOLDER.to_string()),
            keep: Keep { system: false, newest_user_turn: false },
        }
    }

    /// The same step with `text` as its placeholder.
    pub fn with_placeholder(self, text: impl Into<String>) -> HeadAndTail {
        HeadAndTail { placeholder: Some(text.into()), ..self }
    }
}

impl Step for HeadAndTail {
    fn name(&self) -> &'static str {
        "head_and_tail"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("head_and_tail")
            .key("head", self.head)
            .key("tail", self.tail)
            .key("measure", measure_word(self.measure))
            .key("placeholder", self.placeholder.clone())
            .keep(self.keep)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.head == 0 && self.tail == 0 {
            return Err(ConfigError::new("head", "head and tail cannot both be 0"));
        }
        if self.placeholder.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(ConfigError::new("placeholder", "must not be empty"));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let mut mask = protected(history, self.keep);
        let selectable: usize =
            sizes(history, self.measure).iter().zip(&mask).filter(|(_, p)| !**p).map(|(s, _)| s).sum();
        if self.head.saturating_add(self.tail) >= selectable {
            return Ok(());
        }
        keep_first(history, self.head, self.measure, &mut mask);
        keep_last(history, self.tail, self.measure, &mut mask);
        let gaps = gaps(history, &mask);
        let word = measure_word(self.measure);
        let reason = format!("between the first {} and the last {} {word}", self.head, self.tail);
        apply_mask(history, &mask, &reason);
        if let Some(text) = &self.placeholder {
            insert_placeholders(history, text, &gaps);
        }
        Ok(())
    }
}

/// Each run of units `mask` drops: where it will be once they are dropped (the number of
/// kept messages before it) and how many messages it holds. O(units).
fn gaps(history: &History<'_>, mask: &[bool]) -> Vec<(usize, usize)> {
    let mut gaps = Vec::new();
    let (mut kept, mut run) = (0, 0);
    for (unit, keep) in history.units().iter().zip(mask) {
        if *keep {
            if run > 0 {
                gaps.push((kept, run));
                run = 0;
            }
            kept += unit.len();
        } else {
            run += unit.len();
        }
    }
    if run > 0 {
        gaps.push((kept, run));
    }
    gaps
}

/// Puts one placeholder user message at each gap, in order (each insertion shifts the next).
fn insert_placeholders(history: &mut History<'_>, text: &str, gaps: &[(usize, usize)]) {
    for (inserted, &(at, skipped)) in gaps.iter().enumerate() {
        let message = Message::text(Role::User, text.replace("{skipped}", &skipped.to_string()));
        history.insert(at + inserted, message, format!("placeholder for {skipped} skipped messages"));
    }
}

impl FromParams for HeadAndTail {
    /// Keys: `head` (aliases `head_size`, `first_count`), `tail` (aliases `tail_size`,
    /// `last_count`), `measure` (`messages`, `pairs`, `units`), `placeholder`, `keep_system`
    /// (alias `preserve_system_messages`), `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<HeadAndTail, ConfigError> {
        let mut step = HeadAndTail::default();
        step.head = p.usize_or(&["head", "head_size", "first_count"], step.head)?;
        step.tail = p.usize_or(&["tail", "tail_size", "last_count"], step.tail)?;
        step.measure = read_measure(p, step.measure)?;
        step.placeholder = p.string(&["placeholder"])?;
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
    use crate::steps::test_support::{anthropic, assert_valid, openai, run, run_in, texts};
    use crate::validate::validate;
    use serde_json::json;

    const BARE: Keep = Keep { system: false, newest_user_turn: false };

    /// autogen's parallel-call conversation in OpenAI shape: system, user, assistant calling
    /// twice, two results, assistant, user (7 messages).
    fn weather() -> Vec<Message> {
        openai(
            r#"[{"role": "system", "content": "use tools"},
                {"role": "user", "content": "Paris and Tokyo?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Tokyo\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "18C"},
                {"role": "tool", "tool_call_id": "c2", "content": "22C"},
                {"role": "assistant", "content": "18C and 22C"},
                {"role": "user", "content": "thanks"}]"#,
        )
    }

    /// `u1 a1 u2 a2 ... un` as a JSON array of plain text turns (either format reads it).
    fn chat(n: usize) -> String {
        let mut turns = Vec::new();
        for i in 1..=n {
            turns.push(format!(r#"{{"role": "user", "content": "u{i}"}}"#));
            if i < n {
                turns.push(format!(r#"{{"role": "assistant", "content": "a{i}"}}"#));
            }
        }
        format!("[{}]", turns.join(","))
    }

    #[test]
    fn autogen_counts_from_the_very_ends_and_says_what_it_skipped() {
        let input = weather();
        let out = run(&HeadAndTail::autogen(1, 1), &input);
        assert_eq!(texts(&out), vec!["system: use tools", "user: Skipped 5 messages.", "user: thanks"]);
        assert_valid(&out);
        // the tail would start inside the tool step: it stops after it (autogen keeps the
        // results without their call)
        let out = run(&HeadAndTail::autogen(2, 3), &input);
        assert_eq!(
            texts(&out),
            vec![
                "system: use tools",
                "user: Paris and Tokyo?",
                "user: Skipped 3 messages.",
                "assistant: 18C and 22C",
                "user: thanks"
            ]
        );
        assert_valid(&out);
        // head and tail cover all 7 messages: everything is kept, nothing inserted
        let out = run(&HeadAndTail::autogen(3, 4), &input);
        assert_eq!(out, input);
    }

    #[test]
    fn overlapping_head_and_tail_keep_everything_even_across_a_step() {
        let input = openai(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "r"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "next"}]"#,
        );
        // 2 + 3 = 5 messages: unit edges alone would drop the step in the middle
        let out = run(&HeadAndTail { keep: BARE, ..HeadAndTail::messages(2, 3) }, &input);
        assert_eq!(out, input);
        let out = run(&HeadAndTail { keep: BARE, ..HeadAndTail::messages(2, 2) }, &input);
        assert_eq!(texts(&out), vec!["user: go", "assistant: done", "user: next"]);
        assert_valid(&out);
    }

    #[test]
    fn llmling_defaults_keep_two_and_five_besides_the_protected() {
        // u1 a1 ... a9 u10: 19 messages
        let input = openai(&chat(10));
        let out = run(&HeadAndTail::default(), &input);
        // the newest user turn (u10) falls in the tail and counts toward it
        assert_eq!(
            texts(&out),
            vec![
                "user: u1",
                "assistant: a1",
                "user: u8",
                "assistant: a8",
                "user: u9",
                "assistant: a9",
                "user: u10"
            ]
        );
        assert_valid(&out);
        let out = run_in(&HeadAndTail::default(), &anthropic(&chat(10)), anthropic_cx());
        assert_eq!(texts(&out[..3]), vec!["user: u1", "assistant: a1", "user: u8"]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn placeholders_go_in_each_gap() {
        // a system message in the middle and the newest user turn are protected, so two runs
        // are dropped
        let input = openai(
            r#"[{"role": "user", "content": "u1"},
                {"role": "assistant", "content": "a1"},
                {"role": "user", "content": "u2"},
                {"role": "assistant", "content": "a2"},
                {"role": "system", "content": "mid"},
                {"role": "user", "content": "u3"},
                {"role": "assistant", "content": "a3"},
                {"role": "user", "content": "u4"},
                {"role": "assistant", "content": "a4"}]"#,
        );
        let step = HeadAndTail::messages(1, 1).with_placeholder("[{skipped} skipped]");
        let out = run(&step, &input);
        assert_eq!(
            texts(&out),
            vec![
                "user: u1",
                "user: [3 skipped]",
                "system: mid",
                "user: [2 skipped]",
                "user: u4",
                "assistant: a4"
            ]
        );
        assert_valid(&out);
    }

    #[test]
    fn anthropic_placeholder_merges_into_the_adjacent_user_turn() {
        let input = anthropic(&chat(4));
        let step = HeadAndTail::messages(1, 2).with_placeholder(AUTOGEN_PLACEHOLDER);
        // u1 | a1 u2 a2 u3 | a3 u4
        let openai_out = run(&step, &openai(&chat(4)));
        assert_eq!(
            texts(&openai_out),
            vec!["user: u1", "user: Skipped 4 messages.", "assistant: a3", "user: u4"]
        );
        let out = run_in(&step, &input, anthropic_cx());
        assert_eq!(texts(&out), vec!["user: u1\nSkipped 4 messages.", "assistant: a3", "user: u4"]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn anthropic_placeholder_after_tool_results_keeps_them_first() {
        let input = anthropic(
            r#"[{"role": "user", "content": "u1"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "x", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "y", "name": "f", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "x", "content": "X"},
                    {"type": "tool_result", "tool_use_id": "y", "content": "Y"}]},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "next"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "last"}]"#,
        );
        let step = HeadAndTail::messages(3, 2).with_placeholder(AUTOGEN_PLACEHOLDER);
        let out = run_in(&step, &input, anthropic_cx());
        assert_eq!(out.len(), 5);
        assert_eq!(out[1].tool_calls().count(), 2);
        let results = &out[2];
        assert_eq!(results.answered_call_ids().collect::<Vec<_>>(), vec!["x", "y"]);
        assert!(matches!(&results.parts[2], Part::Text(t) if t.text == "Skipped 2 messages."));
        assert_eq!(texts(&out[3..]), vec!["assistant: ok", "user: last"]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn pairs_measure_keeps_requests_with_their_responses() {
        let input = openai(&chat(5));
        // head: (u1 a1); tail: the trailing u5, an open pair of its own
        let out = run(&HeadAndTail { measure: Measure::Pairs, ..HeadAndTail::messages(1, 1) }, &input);
        assert_eq!(texts(&out), vec!["user: u1", "assistant: a1", "user: u5"]);
        let out = run(&HeadAndTail { measure: Measure::Pairs, ..HeadAndTail::messages(1, 2) }, &input);
        assert_eq!(texts(&out), vec!["user: u1", "assistant: a1", "user: u4", "assistant: a4", "user: u5"]);
    }

    #[test]
    fn empty_history_and_nothing_to_drop() {
        assert!(run(&HeadAndTail::autogen(1, 1), &[]).is_empty());
        let input = openai(&chat(2));
        assert_eq!(run(&HeadAndTail::autogen(1, 2), &input), input);
        assert_eq!(
            texts(&run(&HeadAndTail::autogen(1, 1), &input)),
            vec!["user: u1", "user: Skipped 1 messages.", "user: u2"]
        );
    }

    #[test]
    fn reads_its_parameters() {
        let params = |v: serde_json::Value| Params::new(v.as_object().unwrap().clone());
        let mut p =
            params(json!({"head_size": 1, "tail_size": 3, "placeholder": "Skipped {skipped} messages."}));
        let step = HeadAndTail::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(step, HeadAndTail { keep: Keep::default(), ..HeadAndTail::autogen(1, 3) });
        let mut p =
            params(json!({"first_count": 4, "last_count": 6, "measure": "pairs", "keep_system": false}));
        let step = HeadAndTail::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(
            step,
            HeadAndTail {
                head: 4,
                tail: 6,
                measure: Measure::Pairs,
                placeholder: None,
                keep: Keep { system: false, newest_user_turn: true }
            }
        );
        assert_eq!(HeadAndTail::from_params(&mut Params::default()).unwrap(), HeadAndTail::default());
        let mut p = params(json!({"tail": "five"}));
        assert_eq!(HeadAndTail::from_params(&mut p).unwrap_err().key, "tail");
    }

    #[test]
    fn checks_its_configuration() {
        assert!(HeadAndTail::default().check().is_ok());
        assert!(HeadAndTail::messages(0, 3).check().is_ok());
        assert_eq!(HeadAndTail::messages(0, 0).check().unwrap_err().key, "head");
        assert_eq!(HeadAndTail::default().with_placeholder(" ").check().unwrap_err().key, "placeholder");
    }
}
