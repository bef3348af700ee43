//! `drop_retry_prompts`: remove failed attempts once the conversation has moved on (llmling
//! `FilterRetryPrompts`).
//!
//! Two kinds of dead ends are removed:
//!
//! - a tool call whose result is an error (an Anthropic `tool_result` with `is_error: true`,
//!   or a result whose text matches `error_pattern` or `pattern`) when a later assistant step
//!   calls the same tool again: the retry superseded it;
//! - a retry or validation-feedback prompt (a user turn whose text matches `pattern`, by
//!   default pydantic-ai's "Validation feedback: ... Fix the errors and try again.") when
//!   assistant steps follow it, together with the plain reply it rejected (the assistant
//!   message right before it, when that message makes no calls), unless
//!   `drop_rejected_replies` is off.
//!
//! Only the past is touched: nothing in the current turn (the messages after the last user
//! message that is neither tool results nor a retry prompt), nor the newest user turn, nor
//! system messages. Validity: failed calls are removed call by call with their results (see
//! `drop_tool_calls`), a retry prompt is a whole user turn, and the rejected reply makes no
//! calls, so no call loses its result. Matching is linear in the text (the regex engine never
//! backtracks): cost O(bytes of text + messages + calls).

use super::shared::written::Written;
use std::collections::HashMap;

use regex::Regex;

use super::shared::calls::{call_sites, remove_calls, CallSite};
use super::shared::keep::read_keep;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::calls::ResultAt;
use crate::history::{History, Keep};
use crate::message::{Message, Part, Role};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::result_text::joined_text;
use crate::shape::is_blank;
use crate::units::UnitKind;

/// The default `pattern`: pydantic-ai's retry prompts, which end with "Fix the errors and try
/// again." and, when no tool is involved, start with "Validation feedback:".
pub const DEFAULT_RETRY_PATTERN: &str =
    r"(?i)(\A\s*validation feedback:|fix the errors and try again\.?\s*\z)";

/// The default `error_pattern`: a result that starts with "Error", "Traceback" or
/// "Exception".
pub const DEFAULT_ERROR_PATTERN: &str = r"(?i)\A\s*(error|traceback|exception)\b";

/// A regular expression compiled once, kept with its source (for configuration and reports).
/// An invalid source is kept too, so that [`Step::check`] can report it under its key; it
/// matches nothing.
#[derive(Debug, Clone)]
pub struct TextPattern {
    source: String,
    compiled: Result<Regex, String>,
}

impl TextPattern {
    /// Compiles `source` (Rust `regex` syntax: linear time, no look-around or back-references).
    pub fn new(source: impl Into<String>) -> TextPattern {
        let source = source.into();
        let compiled = Regex::new(&source).map_err(|e| e.to_string());
        TextPattern { source, compiled }
    }

    /// The source of the expression.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Why the source is not a valid expression, if it is not.
    pub fn error(&self) -> Option<&str> {
        self.compiled.as_ref().err().map(String::as_str)
    }

    /// Whether `text` matches (never, for an invalid expression).
    pub fn is_match(&self, text: &str) -> bool {
        self.compiled.as_ref().is_ok_and(|r| r.is_match(text))
    }

    fn check(&self, key: &str) -> Result<(), ConfigError> {
        match self.error() {
            Some(e) => Err(ConfigError::new(key, format!("not a valid regular expression: {e}"))),
            None if self.is_match("") => {
                Err(ConfigError::new(key, "matches the empty text, so it would match every message"))
            }
            None => Ok(()),
        }
    }
}

impl PartialEq for TextPattern {
    fn eq(&self, other: &TextPattern) -> bool {
        self.source == other.source
    }
}

impl Eq for TextPattern {}

/// `drop_retry_prompts` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<DropRetryPrompts>("drop_retry_prompts", &["filter_retry_prompts"]).documented(
        "Remove failed attempts once the conversation moved on: a failed tool call a later step retried, and retry or validation-feedback prompts.",
        &[
            KeyDoc::new("pattern", KeyUnit::Text, "regular expression a retry or validation-feedback prompt matches"),
            KeyDoc::new("error_pattern", KeyUnit::Text, "regular expression a failed tool result matches (besides Anthropic's `is_error`)"),
            KeyDoc::new("drop_rejected_replies", KeyUnit::Flag, "also remove the assistant reply a removed retry prompt answered"),
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Removes failed tool calls that were retried and retry prompts the conversation moved past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropRetryPrompts {
    /// What a retry or validation-feedback prompt looks like (matched against a user turn's
    /// text, and against tool results). Defaults to pydantic-ai's prompts: text that starts
    /// with `Validation feedback:` or ends with `Fix the errors and try again.`, in any case.
    pub pattern: TextPattern,
    /// What a failed tool result looks like (besides Anthropic's `is_error`). Defaults to
    /// text that starts with `Error`, `Traceback` or `Exception`, in any case.
    pub error_pattern: TextPattern,
    /// Also remove the plain assistant reply a removed retry prompt answered. Defaults to true.
    pub drop_rejected_replies: bool,
    /// What is kept untouched. Defaults to system messages and the newest user turn.
    pub keep: Keep,
}

impl Default for DropRetryPrompts {
    fn default() -> DropRetryPrompts {
        DropRetryPrompts {
            pattern: TextPattern::new(DEFAULT_RETRY_PATTERN),
            error_pattern: TextPattern::new(DEFAULT_ERROR_PATTERN),
            drop_rejected_replies: true,
            keep: Keep::default(),
        }
    }
}

impl DropRetryPrompts {
    /// Recognizes retry prompts by `pattern` instead of the default.
    pub fn with_pattern(pattern: &str) -> DropRetryPrompts {
        DropRetryPrompts { pattern: TextPattern::new(pattern), ..DropRetryPrompts::default() }
    }

    /// Whether a tool result's text reports a failure.
    fn is_error_text(&self, text: &str) -> bool {
        self.error_pattern.is_match(text) || self.pattern.is_match(text)
    }

    /// Whether the result at `at` reports a failure.
    fn is_failed(&self, history: &History<'_>, at: ResultAt) -> bool {
        match at {
            ResultAt::Message(i) => self.is_error_text(&history.message(i).text_content()),
            ResultAt::Block(i, p) => match &history.message(i).parts[p] {
                Part::ToolResult(r) => r.is_error == Some(true) || self.is_error_text(&joined_text(&r.parts)),
                _ => false,
            },
        }
    }
}

impl FromParams for DropRetryPrompts {
    /// Keys: `pattern` (alias `retry_pattern`), `error_pattern`, `drop_rejected_replies`,
    /// `keep_system` (alias `preserve_system_messages`), `keep_newest_user_turn`. Patterns are
    /// checked by [`Step::check`].
    fn from_params(p: &mut Params) -> Result<DropRetryPrompts, ConfigError> {
        let mut step = DropRetryPrompts::default();
        step.pattern = TextPattern::new(p.string_or(&["pattern", "retry_pattern"], DEFAULT_RETRY_PATTERN)?);
        step.error_pattern = TextPattern::new(p.string_or(&["error_pattern"], DEFAULT_ERROR_PATTERN)?);
        step.drop_rejected_replies = p.bool_or(&["drop_rejected_replies"], step.drop_rejected_replies)?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

impl Step for DropRetryPrompts {
    fn name(&self) -> &'static str {
        "drop_retry_prompts"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("drop_retry_prompts")
            .key("pattern", self.pattern.as_str())
            .key("error_pattern", self.error_pattern.as_str())
            .key("drop_rejected_replies", self.drop_rejected_replies)
            .keep(self.keep)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        self.pattern.check("pattern")?;
        self.error_pattern.check("error_pattern")
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        self.check().map_err(|e| StepError::new(self.name(), e.to_string()))?;
        self.drop_prompts(history);
        self.drop_failed_calls(history);
        Ok(())
    }
}

impl DropRetryPrompts {
    /// The index of the first message of the current turn: the one after the last user
    /// message that carries words (not only tool results) that are not a retry prompt; 0 when
    /// there is none, so that nothing is touched.
    fn current_turn_start(&self, history: &History<'_>) -> usize {
        let is_real_user = |m: &Message| {
            m.role == Role::User
                && m.parts.iter().any(|p| !matches!(p, Part::ToolResult(_)) && !is_blank(p))
                && !self.pattern.is_match(&m.text_content())
        };
        history.messages().iter().rposition(|m| is_real_user(m)).map_or(0, |i| i + 1)
    }

    /// Removes retry prompts (whole user turns, or text beside Anthropic tool results) that
    /// an assistant step follows, with the replies they rejected.
    fn drop_prompts(&self, history: &mut History<'_>) {
        let current = self.current_turn_start(history);
        let protected = history.protected_units(self.keep);
        let units = history.shared_units();
        let last_step = units.iter().rposition(|u| u.kind == UnitKind::AssistantStep);
        let mut drop = vec![false; units.len()];
        let mut edits = Vec::new();
        for (u, unit) in units.iter().enumerate() {
            let moved_on = last_step.is_some_and(|last| last > u);
            if protected[u] || !moved_on || unit.messages.end > current {
                continue;
            }
            match unit.kind {
                UnitKind::UserTurn
                    if self.pattern.is_match(&history.message(unit.messages.start).text_content()) =>
                {
                    drop[u] = true;
                    if self.drop_rejected_replies
                        && u > 0
                        && is_plain_reply(history, &units[u - 1])
                        && !protected[u - 1]
                    {
                        drop[u - 1] = true;
                    }
                }
                UnitKind::AssistantStep if unit.has_user_text => {
                    let last = unit.messages.end - 1;
                    if history.message(last).parts.iter().any(|p| self.is_prompt_text(p)) {
                        edits.push(last);
                    }
                }
                _ => {}
            }
        }
        for i in edits {
            let pattern = &self.pattern;
            history.edit(i, ChangeKind::Removed, "removed a retry prompt the conversation moved past", |m| {
                m.parts.retain(|p| !matches!(p, Part::Text(t) if pattern.is_match(&t.text)));
            });
        }
        if drop.contains(&true) {
            history.drop_units(&drop, "a retry prompt the conversation moved past, or the reply it rejected");
        }
    }

    fn is_prompt_text(&self, part: &Part) -> bool {
        matches!(part, Part::Text(t) if self.pattern.is_match(&t.text))
    }

    /// Removes failed calls before the current turn that a later step retried.
    fn drop_failed_calls(&self, history: &mut History<'_>) {
        let current = self.current_turn_start(history);
        let protected = history.protected_units(self.keep);
        let sites = call_sites(history);
        let last_call: HashMap<&str, usize> = sites.iter().map(|s| (s.name.as_str(), s.unit)).collect();
        let units = history.units();
        let doomed: Vec<CallSite> = sites
            .iter()
            .filter(|s| {
                !protected[s.unit]
                    && units[s.unit].messages.end <= current
                    && last_call[s.name.as_str()] > s.unit
                    && s.results.iter().any(|&at| self.is_failed(history, at))
            })
            .cloned()
            .collect();
        remove_calls(history, &doomed, "a failed tool call that a later step retried");
    }
}

/// An assistant step that makes no calls: a reply a retry prompt may have rejected.
fn is_plain_reply(history: &History<'_>, unit: &crate::units::Unit) -> bool {
    unit.kind == UnitKind::AssistantStep
        && unit.len() == 1
        && history.message(unit.messages.start).tool_calls().next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, openai, run, run_in, texts};
    use crate::validate::validate;

    const FEEDBACK: &str = "Validation feedback:\\nnot JSON\\n\\nFix the errors and try again.";

    fn call(id: &str, name: &str) -> String {
        format!(
            r#"{{"role": "assistant", "content": null, "tool_calls": [
                {{"id": "{id}", "type": "function", "function": {{"name": "{name}", "arguments": "{{}}"}}}}]}}"#
        )
    }

    fn result(id: &str, text: &str) -> String {
        format!(r#"{{"role": "tool", "tool_call_id": "{id}", "content": "{text}"}}"#)
    }

    fn user(text: &str) -> String {
        format!(r#"{{"role": "user", "content": "{text}"}}"#)
    }

    fn history(messages: &[String]) -> Vec<Message> {
        openai(&format!("[{}]", messages.join(",")))
    }

    #[test]
    fn a_failed_call_retried_later_goes_with_its_result() {
        let input = history(&[
            user("find it"),
            call("a", "search"),
            result("a", "Error: timeout"),
            call("b", "search"),
            result("b", "found"),
            r#"{"role": "assistant", "content": "here"}"#.into(),
            user("thanks"),
        ]);
        let out = run(&DropRetryPrompts::default(), &input);
        assert_eq!(
            texts(&out),
            vec![
                "user: find it",
                "assistant: calls search",
                "tool: found",
                "assistant: here",
                "user: thanks"
            ]
        );
        assert_eq!(out[1].tool_calls().next().unwrap().id.as_deref(), Some("b"));
        assert_valid(&out);
    }

    #[test]
    fn a_failure_that_was_not_retried_or_is_current_stays() {
        // another tool next: not a retry
        let other = history(&[
            user("find it"),
            call("a", "search"),
            result("a", "Traceback (most recent call last): ..."),
            call("b", "fetch"),
            result("b", "found"),
            user("thanks"),
        ]);
        assert_eq!(run(&DropRetryPrompts::default(), &other), other);
        // retried, but in the turn still in progress
        let current = history(&[
            user("find it"),
            call("a", "search"),
            result("a", "error: timeout"),
            call("b", "search"),
            result("b", "found"),
        ]);
        assert_eq!(run(&DropRetryPrompts::default(), &current), current);
    }

    #[test]
    fn parallel_calls_lose_only_the_failed_one() {
        let input = openai(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": "trying both", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "search", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "Exception: rate limited"},
                {"role": "tool", "tool_call_id": "b", "content": "page"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "hits"},
                {"role": "user", "content": "ok"}]"#,
        );
        let out = run(&DropRetryPrompts::default(), &input);
        assert_eq!(
            texts(&out),
            vec![
                "user: go",
                "assistant: trying both",
                "tool: page",
                "assistant: calls search",
                "tool: hits",
                "user: ok"
            ]
        );
        assert_valid(&out);
    }

    #[test]
    fn anthropic_error_blocks_are_failures() {
        let input = anthropic(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "a", "name": "search", "input": {"q": "x"}},
                    {"type": "tool_use", "id": "b", "name": "fetch", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "no such index", "is_error": true},
                    {"type": "tool_result", "tool_use_id": "b", "content": "page"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "search", "input": {"q": "y"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "hits"}]},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "ok"}]"#,
        );
        let out = run_in(&DropRetryPrompts::default(), &input, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert_eq!(out.len(), 7);
        assert_eq!(out[1].tool_calls().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["fetch"]);
        assert_eq!(out[2].answered_call_ids().collect::<Vec<_>>(), vec!["b"]);
    }

    #[test]
    fn retry_prompts_go_with_the_reply_they_rejected() {
        let input = history(&[
            user("give me JSON"),
            r#"{"role": "assistant", "content": "sure thing"}"#.into(),
            user(FEEDBACK),
            r#"{"role": "assistant", "content": "{}"}"#.into(),
            user("thanks"),
        ]);
        let out = run(&DropRetryPrompts::default(), &input);
        assert_eq!(texts(&out), vec!["user: give me JSON", "assistant: {}", "user: thanks"]);
        let keep_reply = DropRetryPrompts { drop_rejected_replies: false, ..DropRetryPrompts::default() };
        let out = run(&keep_reply, &input);
        assert_eq!(
            texts(&out),
            vec!["user: give me JSON", "assistant: sure thing", "assistant: {}", "user: thanks"]
        );
        assert_valid(&out);
    }

    #[test]
    fn a_retry_prompt_of_the_current_turn_stays() {
        // the feedback is the newest user turn, then it is in the turn in progress
        let newest = history(&[
            user("give me JSON"),
            r#"{"role": "assistant", "content": "sure thing"}"#.into(),
            user(FEEDBACK),
        ]);
        assert_eq!(run(&DropRetryPrompts::default(), &newest), newest);
        let answered = history(&[
            user("give me JSON"),
            r#"{"role": "assistant", "content": "sure thing"}"#.into(),
            user(FEEDBACK),
            r#"{"role": "assistant", "content": "{}"}"#.into(),
        ]);
        assert_eq!(run(&DropRetryPrompts::default(), &answered), answered);
    }

    #[test]
    fn anthropic_feedback_beside_tool_results_is_cut_out() {
        let input = anthropic(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "fetch", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "page"},
                    {"type": "text", "text": "Validation feedback: too long. Fix the errors and try again."}]},
                {"role": "assistant", "content": "short"},
                {"role": "user", "content": "ok"}]"#,
        );
        let out = run_in(&DropRetryPrompts::default(), &input, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert_eq!(out.len(), 5);
        assert_eq!(out[2].parts.len(), 1);
        assert!(matches!(out[2].parts[0], Part::ToolResult(_)));
    }

    #[test]
    fn bad_patterns_are_reported_under_their_key() {
        let step = DropRetryPrompts::with_pattern("(unclosed");
        assert_eq!(step.check().unwrap_err().key, "pattern");
        let step = DropRetryPrompts { error_pattern: TextPattern::new(".*"), ..DropRetryPrompts::default() };
        assert_eq!(step.check().unwrap_err().key, "error_pattern");
        assert_eq!(DropRetryPrompts::default().check(), Ok(()));
    }

    #[test]
    fn reads_its_keys() {
        let map = serde_json::json!({"retry_pattern": "^again", "error_pattern": "^oops", "drop_rejected_replies": false});
        let mut p = Params::new(map.as_object().unwrap().clone());
        let step = DropRetryPrompts::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(step.pattern.as_str(), "^again");
        assert_eq!(step.error_pattern.as_str(), "^oops");
        assert!(!step.drop_rejected_replies);
        assert!(step.is_error_text("oops, no") && step.is_error_text("again please"));
    }

    #[test]
    fn default_patterns_recognize_the_usual_shapes() {
        let step = DropRetryPrompts::default();
        assert!(step.pattern.is_match("Validation feedback:\nbad\n\nFix the errors and try again."));
        assert!(step.pattern.is_match("2 validation errors: [...]\n\nFix the errors and try again."));
        assert!(!step.pattern.is_match("Can you fix the errors and try again later today?"));
        assert!(step.error_pattern.is_match("  ERROR: no such file"));
        assert!(!step.error_pattern.is_match("errors are rare here"));
    }
}
