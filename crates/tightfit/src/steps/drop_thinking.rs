//! `drop_thinking`: remove thinking and reasoning from earlier turns (llmling
//! `FilterThinking`, Vercel `pruneMessages`, Anthropic's clearing of thinking).
//!
//! Thinking costs tokens and rarely helps later turns, but a provider may require some of it:
//! Anthropic rejects a tool loop whose current assistant turn lost its signed thinking, and
//! DeepSeek-style reasoning must be passed back within the current tool loop. So the thinking
//! of the current turn (the assistant messages after the last user message that is not only
//! tool results, when the history ends in tool results) is kept by default. An assistant
//! message left with nothing (it held only thinking) is removed. Cost: O(messages).

use super::shared::keep::current_turn_start;
use super::shared::written::Written;
use super::{ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};
use crate::history::History;
use crate::message::{ContentForm, Part, Role};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;

/// `drop_thinking` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<DropThinking>("drop_thinking", &["filter_thinking"])
    .documented(
        "Remove thinking and reasoning parts, keeping those a provider requires for the current tool turn.",
        &[
            KeyDoc::new(
                "keep_current_turn",
                KeyUnit::Flag,
                "keep the thinking of the tool turn in progress (Anthropic requires it)",
            ),
            KeyDoc::new("redacted", KeyUnit::Flag, "also remove redacted (encrypted) thinking"),
        ],
    );

/// Removes thinking and reasoning parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropThinking {
    /// Keep the thinking of the current tool turn, which providers require. Defaults to true.
    pub keep_current_turn: bool,
    /// Also remove redacted (encrypted) thinking. Defaults to true.
    pub redacted: bool,
}

impl Default for DropThinking {
    fn default() -> DropThinking {
        DropThinking { keep_current_turn: true, redacted: true }
    }
}

impl FromParams for DropThinking {
    /// Keys: `keep_current_turn`, `redacted`.
    fn from_params(p: &mut Params) -> Result<DropThinking, ConfigError> {
        let step = DropThinking::default();
        Ok(DropThinking {
            keep_current_turn: p.bool_or(&["keep_current_turn"], step.keep_current_turn)?,
            redacted: p.bool_or(&["redacted"], step.redacted)?,
        })
    }
}

fn is_thinking(part: &Part, redacted: bool) -> bool {
    match part {
        Part::Thinking(_) => true,
        Part::RedactedThinking(_) => redacted,
        _ => false,
    }
}

impl Step for DropThinking {
    fn name(&self) -> &'static str {
        "drop_thinking"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("drop_thinking")
            .key("keep_current_turn", self.keep_current_turn)
            .key("redacted", self.redacted)
            .done()
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let end = if self.keep_current_turn {
            current_turn_start(history).unwrap_or(history.len())
        } else {
            history.len()
        };
        // a message without thinking is known by its shape, without opening it
        let targets: Vec<usize> = (0..end)
            .filter(|&i| {
                history.shape(i).has_thinking()
                    && history.message(i).parts.iter().any(|p| is_thinking(p, self.redacted))
            })
            .collect();
        let mut emptied = Vec::new();
        for &i in &targets {
            let n = history.message(i).parts.iter().filter(|p| is_thinking(p, self.redacted)).count();
            let redacted = self.redacted;
            history.edit(i, ChangeKind::Removed, format!("removed {n} thinking part(s)"), |m| {
                m.parts.retain(|p| !is_thinking(p, redacted));
                if m.parts.is_empty() && m.content_form == ContentForm::Parts {
                    m.content_form = ContentForm::Null;
                }
            });
            let m = history.message(i);
            if m.parts.is_empty() && m.role == Role::Assistant && m.extra.is_empty() {
                emptied.push(i);
            }
        }
        for &i in emptied.iter().rev() {
            history.remove(i, "held only thinking");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::{anthropic, openai, run, run_in};
    use crate::validate::validate;

    #[test]
    fn removes_reasoning_of_earlier_turns() {
        let input = openai(
            r#"[{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello", "reasoning_content": "greet back"},
                {"role": "user", "content": "bye"}]"#,
        );
        let out = run(&DropThinking::default(), &input);
        assert_eq!(out[1].parts.len(), 1);
        assert_eq!(out[1].text_content(), "hello");
    }

    #[test]
    fn keeps_the_thinking_of_the_current_tool_turn() {
        let input = anthropic(
            r#"[{"role": "user", "content": "q1"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "old", "signature": "s1"}, {"type": "text", "text": "a1"}]},
                {"role": "user", "content": "q2"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "now", "signature": "s2"},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]"#,
        );
        let cx = StepContext::new(Format::Anthropic);
        let out = run_in(&DropThinking::default(), &input, cx);
        assert!(!out[1].parts.iter().any(|p| matches!(p, Part::Thinking(_))), "old thinking removed");
        assert!(matches!(out[3].parts[0], Part::Thinking(_)), "current thinking kept");
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        let all = run_in(&DropThinking { keep_current_turn: false, ..DropThinking::default() }, &input, cx);
        assert!(!all[3].parts.iter().any(|p| matches!(p, Part::Thinking(_))));
    }

    #[test]
    fn a_message_of_only_thinking_goes() {
        let input = anthropic(
            r#"[{"role": "user", "content": "q1"},
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xx"}]},
                {"role": "user", "content": "q2"}]"#,
        );
        let cx = StepContext::new(Format::Anthropic);
        let out = run_in(&DropThinking::default(), &input, cx);
        // the two user turns are merged back into one
        assert_eq!(out.len(), 1);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }
}
