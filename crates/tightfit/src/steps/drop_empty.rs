//! `drop_empty`: remove messages that say nothing (llmling `FilterEmptyMessages`).
//!
//! A message is empty when it has no parts, or only text that is empty or whitespace, and
//! no other field that carries something (an OpenAI `audio` reference, say; fields that are
//! null or empty do not count). Tool calls, tool results, media, refusals and thinking are
//! all content. Empty messages cost their framing, and Anthropic rejects an empty text block,
//! so they go; empty system messages too (they instruct nothing) unless `keep.system` says
//! otherwise.
//!
//! Validity: a tool result is never removed (it answers a call, even when it says nothing)
//! and an assistant message with calls is never empty, so every removed message is a unit of
//! its own (a user turn, an instruction, or an assistant step without calls). Messages of an
//! unknown role are left alone, and so is an empty assistant message that ends the history:
//! it is how the request ends (an Anthropic prefill), and without it a history that ends in a
//! tool loop would fall under Anthropic's current-turn thinking rule. Besides whole messages,
//! blank text parts go from a content list that has other content (Anthropic rejects them
//! there too), in every message: protection keeps a message, and a blank part carries nothing
//! of it. Cost: O(parts).

use super::shared::keep::read_keep;
use super::shared::written::Written;
use super::{ConfigError, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM};
use crate::format::Format;
use crate::history::{History, Keep};
use crate::message::{CallStyle, ContentForm, Message, Part, Role, ThinkingOrigin};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::shape::is_blank;

/// `drop_empty` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<DropEmpty>("drop_empty", &["filter_empty", "filter_empty_messages"])
        .documented("Remove messages with no meaningful content.", &[KEEP_SYSTEM, KEEP_NEWEST_USER_TURN]);

/// Removes empty messages and blank text parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropEmpty {
    /// What is kept even when empty. Defaults to the newest user turn only: an empty system
    /// message goes.
    pub keep: Keep,
}

impl Default for DropEmpty {
    fn default() -> DropEmpty {
        DropEmpty { keep: Keep { system: false, newest_user_turn: true } }
    }
}

impl FromParams for DropEmpty {
    /// Keys: `keep_system` (alias `preserve_system_messages`; defaults to false here),
    /// `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<DropEmpty, ConfigError> {
        let mut step = DropEmpty::default();
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

impl Step for DropEmpty {
    fn name(&self) -> &'static str {
        "drop_empty"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("drop_empty").keep(self.keep).done()
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        for i in 0..history.len() {
            // most messages have no blank text: known from their shape, without opening them
            if !history.shape(i).has_blank_text() {
                continue;
            }
            let blank = blank_parts(history.message(i));
            if blank > 0 {
                history.edit(
                    i,
                    ChangeKind::Removed,
                    format!("removed {blank} empty text part(s)"),
                    remove_blank_parts,
                );
            }
        }
        let protected = history.protected_units(self.keep);
        let last = history.len().checked_sub(1);
        let drop: Vec<bool> = history
            .units()
            .iter()
            .zip(&protected)
            .map(|(unit, protected)| {
                let start = unit.messages.start;
                let says_nothing = unit.len() == 1 && history.shape(start).says_nothing();
                let prefill = Some(start) == last && history.message(start).role == Role::Assistant;
                !protected && !prefill && says_nothing
            })
            .collect();
        let drop = keep_newest_turn_apart(history, drop);
        if drop.contains(&true) {
            history.drop_units(&drop, "no content");
        }
        Ok(())
    }
}

/// `drop` (one flag per unit), less the unit just before the newest user turn when dropping
/// it would leave that turn right after another user message: Anthropic's turns of one role
/// in a row are merged into one, and the newest user turn, merged into the results before it,
/// would no longer start a turn (an empty one, which only that unit kept apart, would end the
/// history inside the tool loop, whose first step may have no thinking).
fn keep_newest_turn_apart(history: &History<'_>, mut drop: Vec<bool>) -> Vec<bool> {
    if history.provider() != Format::Anthropic {
        return drop;
    }
    let Some(newest) = history.newest_user_unit().filter(|&n| n > 0 && drop[n - 1]) else {
        return drop;
    };
    let units = history.units();
    if history.message(units[newest].messages.start).role != Role::User {
        return drop;
    }
    let before = (0..newest - 1).rev().find(|&u| !drop[u]);
    let user_before = before.is_some_and(|u| history.message(units[u].messages.end - 1).role == Role::User);
    if user_before {
        drop[newest - 1] = false;
    }
    drop
}

/// The blank text parts that can go from a content list: those beside other content, in the
/// message and in its `tool_result` blocks.
fn blank_parts(message: &Message) -> usize {
    let own = if message.content_form == ContentForm::Parts { removable_blanks(&message.parts) } else { 0 };
    let in_results: usize = message
        .parts
        .iter()
        .map(|p| match p {
            Part::ToolResult(r) if r.content_form == ContentForm::Parts => removable_blanks(&r.parts),
            _ => 0,
        })
        .sum();
    own + in_results
}

fn removable_blanks(parts: &[Part]) -> usize {
    let blank = parts.iter().filter(|p| is_blank(p)).count();
    if blank < parts.len() {
        blank
    } else {
        0
    }
}

fn remove_blank_parts(message: &mut Message) {
    if message.content_form == ContentForm::Parts && removable_blanks(&message.parts) > 0 {
        message.parts.retain(|p| !is_blank(p));
        if !has_content_list_parts(message) {
            // only OpenAI calls and reasoning fields are left: no content at all, not `[]`
            message.content_form = ContentForm::Null;
        }
    }
    for part in &mut message.parts {
        if let Part::ToolResult(r) = part {
            if r.content_form == ContentForm::Parts && removable_blanks(&r.parts) > 0 {
                r.parts.retain(|p| !is_blank(p));
            }
        }
    }
}

/// Whether any part is written in the content list (OpenAI writes its calls and reasoning
/// fields beside it).
fn has_content_list_parts(message: &Message) -> bool {
    message.parts.iter().any(|p| match p {
        Part::ToolCall(c) => c.style == CallStyle::AnthropicToolUse,
        Part::Thinking(t) => t.origin == ThinkingOrigin::Block,
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{messages_to_value, Format};
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, openai, run, run_in, texts};
    use crate::validate::validate;
    use serde_json::Value;

    #[test]
    fn removes_empty_messages_but_never_results_or_calls() {
        let input = openai(
            r#"[{"role": "system", "content": ""},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": ""},
                {"role": "assistant", "content": "  \n", "refusal": null, "annotations": []},
                {"role": "user", "content": [{"type": "text", "text": " "}]},
                {"role": "assistant", "content": null, "reasoning_content": "hmm"},
                {"role": "assistant", "content": null, "audio": {"id": "audio_1"}},
                {"role": "user", "content": ""}]"#,
        );
        let out = run(&DropEmpty::default(), &input);
        assert_eq!(
            texts(&out),
            vec!["user: go", "assistant: calls f", "tool: ", "assistant: ", "assistant: ", "user: "]
        );
        // the thinking-only and the audio messages stay
        assert!(matches!(out[3].parts[0], Part::Thinking(_)));
        assert!(out[4].extra.contains_key("audio"));
        assert_valid(&out);
        // an empty system message stays when asked
        let keep = DropEmpty { keep: Keep::default() };
        assert_eq!(run(&keep, &input).len(), out.len() + 1);
    }

    #[test]
    fn blank_parts_go_from_content_lists() {
        let input = openai(
            r#"[{"role": "user", "content": [{"type": "text", "text": ""},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]},
                {"role": "assistant", "content": [{"type": "text", "text": " "}], "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "r"},
                {"role": "user", "content": "ok"}]"#,
        );
        let out = run(&DropEmpty::default(), &input);
        assert_eq!(out[0].parts.len(), 1);
        assert!(matches!(out[0].parts[0], Part::Image(_)));
        // the call's message has no content left: written as null, not as an empty list
        let written = messages_to_value(&out[1..2], Format::OpenAi);
        assert_eq!(written[0]["content"], Value::Null);
        assert_valid(&out);
    }

    #[test]
    fn anthropic_turns_around_a_removed_one_are_merged() {
        let input = anthropic(
            r#"[{"role": "user", "content": "q1"},
                {"role": "assistant", "content": [{"type": "text", "text": "a1"}]},
                {"role": "user", "content": [{"type": "text", "text": "  "}]},
                {"role": "assistant", "content": [{"type": "text", "text": ""},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [
                    {"type": "text", "text": ""}, {"type": "text", "text": "r"}]}]},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "q2"}]"#,
        );
        assert!(!validate(&input, Format::Anthropic).is_empty());
        let out = run_in(&DropEmpty::default(), &input, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert_eq!(out.len(), 5);
        assert_eq!(texts(&out)[1], "assistant: a1");
        assert_eq!(out[1].tool_calls().count(), 1);
        let Part::ToolResult(result) = &out[2].parts[0] else { panic!("a result: {out:?}") };
        assert_eq!(result.parts.len(), 1);
    }

    #[test]
    fn the_newest_user_turn_stays_even_when_empty() {
        let input = openai(
            r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yes"}, {"role": "user", "content": ""}]"#,
        );
        assert_eq!(run(&DropEmpty::default(), &input), input);
        let all = DropEmpty { keep: Keep { system: false, newest_user_turn: false } };
        assert_eq!(run(&all, &input).len(), 2);
    }

    #[test]
    fn an_empty_assistant_message_that_ends_the_history_stays() {
        // an Anthropic tool loop with thinking, ended by an empty prefill: without it the
        // history would end in the tool loop, whose first step has no thinking
        let input = anthropic(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "c2ln"},
                    {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "2"}]},
                {"role": "assistant", "content": ""}]"#,
        );
        assert_eq!(validate(&input, Format::Anthropic), vec![]);
        let out = run_in(&DropEmpty::default(), &input, anthropic_cx());
        assert_eq!(out, input);
        // the same message anywhere else goes
        let earlier = openai(r#"[{"role": "assistant", "content": ""}, {"role": "user", "content": "hi"}]"#);
        assert_eq!(run(&DropEmpty::default(), &earlier).len(), 1);
    }

    #[test]
    fn the_newest_user_turn_is_not_merged_into_the_results_before_it() {
        // the empty assistant message between the last results and the (empty) newest user
        // turn would go, and Anthropic's two user messages in a row would then merge: the
        // history would end inside the tool loop, whose first step has no thinking (found by
        // the step property tests)
        let input = anthropic(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "c2ln"},
                    {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}]},
                {"role": "assistant", "content": []},
                {"role": "user", "content": []}]"#,
        );
        assert_eq!(validate(&input, Format::Anthropic), vec![]);
        let out = run_in(&DropEmpty::default(), &input, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert_eq!(out, input);
        // with a user turn that says something after it, the empty assistant message goes
        let mut later = input.clone();
        later.extend(anthropic(
            r#"[{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]"#,
        ));
        let out = run_in(&DropEmpty::default(), &later, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert!(out.len() < later.len(), "{out:?}");
    }

    #[test]
    fn reads_its_keys() {
        let map = serde_json::json!({"preserve_system_messages": true, "keep_newest_user_turn": false});
        let mut p = Params::new(map.as_object().unwrap().clone());
        let step = DropEmpty::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(step.keep, Keep { system: true, newest_user_turn: false });
    }
}
