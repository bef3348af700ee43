//! `drop_tool_calls`: remove the calls of named tools together with their results (llmling
//! `FilterToolCalls`).
//!
//! Some tools matter only for the moment they run (a debugger, a clock, a one-time lookup);
//! their calls and results can go once answered. Tools are named by an exclude list, or by
//! an include list that keeps only the tools it names.
//!
//! Validity: work is at call level. A removed call's results go with it (OpenAI `tool` and
//! legacy `function` messages, Anthropic `tool_result` blocks); the other calls of a parallel
//! step stay with their results; an assistant message left with neither calls nor text goes
//! (its step has nothing left to answer). The newest user turn is kept, and so, by default,
//! is the tool turn in progress (the calls after the last user message when the history ends
//! in tool results): the model is waiting on those results, and for Anthropic the thinking of
//! that turn belongs with its calls. Cost: O(messages + calls).
//!
//! The call-level work (finding every call with its results, removing calls) is in
//! `steps::shared::calls`, shared with the other steps that remove calls.

use super::shared::calls::{call_sites, remove_calls, CallSite};
use super::shared::keep::{current_turn_start, read_keep};
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::params::{FromParams, Params};

/// `drop_tool_calls` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<DropToolCalls>("drop_tool_calls", &["filter_tools", "filter_tool_calls"]).documented(
        "Remove the calls of named tools together with their results.",
        &[
            KeyDoc::new("exclude_tools", KeyUnit::Names, "the tools whose calls are removed"),
            KeyDoc::new(
                "include_only",
                KeyUnit::Names,
                "when set, only calls of these tools stay and `exclude_tools` is ignored",
            ),
            KeyDoc::new("keep_current_turn", KeyUnit::Flag, "keep the calls of the tool turn in progress"),
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Removes the calls of named tools and their results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropToolCalls {
    /// The tools whose calls go. Defaults to none.
    pub exclude_tools: Vec<String>,
    /// When set, only calls of these tools stay and `exclude_tools` is ignored. Defaults to
    /// unset.
    pub include_only: Option<Vec<String>>,
    /// What is kept untouched. Defaults to system messages and the newest user turn.
    pub keep: Keep,
    /// Keep the calls of the tool turn in progress. Defaults to true.
    pub keep_current_turn: bool,
}

impl Default for DropToolCalls {
    fn default() -> DropToolCalls {
        DropToolCalls {
            exclude_tools: Vec::new(),
            include_only: None,
            keep: Keep::default(),
            keep_current_turn: true,
        }
    }
}

impl DropToolCalls {
    /// Removes the calls of `tools`.
    pub fn excluding<S: Into<String>>(tools: impl IntoIterator<Item = S>) -> DropToolCalls {
        DropToolCalls {
            exclude_tools: tools.into_iter().map(Into::into).collect(),
            ..DropToolCalls::default()
        }
    }

    /// Removes the calls of every tool but `tools`.
    pub fn including_only<S: Into<String>>(tools: impl IntoIterator<Item = S>) -> DropToolCalls {
        DropToolCalls {
            include_only: Some(tools.into_iter().map(Into::into).collect()),
            ..DropToolCalls::default()
        }
    }

    /// Whether calls of the tool `name` go.
    pub fn drops(&self, name: &str) -> bool {
        match &self.include_only {
            Some(include) => !include.iter().any(|t| t == name),
            None => self.exclude_tools.iter().any(|t| t == name),
        }
    }
}

impl FromParams for DropToolCalls {
    /// Keys: `exclude_tools` (alias `exclude`), `include_only` (alias `include`),
    /// `keep_current_turn`, `keep_system` (alias `preserve_system_messages`),
    /// `keep_newest_user_turn`. A single tool name may be given as a string.
    fn from_params(p: &mut Params) -> Result<DropToolCalls, ConfigError> {
        let mut step = DropToolCalls::default();
        step.exclude_tools = p.strings_or(&["exclude_tools", "exclude"], &step.exclude_tools)?;
        step.include_only = p.strings(&["include_only", "include"])?;
        step.keep_current_turn = p.bool_or(&["keep_current_turn"], step.keep_current_turn)?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

impl Step for DropToolCalls {
    fn name(&self) -> &'static str {
        "drop_tool_calls"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("drop_tool_calls")
            .key("exclude_tools", self.exclude_tools.clone())
            .key("include_only", self.include_only.clone())
            .key("keep_current_turn", self.keep_current_turn)
            .keep(self.keep)
            .done()
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let protected = history.protected_units(self.keep);
        let end = match self.keep_current_turn {
            true => current_turn_start(history).unwrap_or(history.len()),
            false => history.len(),
        };
        let doomed: Vec<CallSite> = call_sites(history)
            .into_iter()
            .filter(|s| !protected[s.unit] && s.message < end && self.drops(&s.name))
            .collect();
        remove_calls(history, &doomed, "a call of a tool the configuration drops");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::message::Message;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, openai, run, run_in, texts};
    use crate::validate::validate;

    /// user, a parallel step (search a, debug b), user, a step calling only debug, its
    /// result, user, a step with text calling debug, its result, user.
    fn parallel() -> Vec<Message> {
        openai(
            r#"[{"role": "system", "content": "be brief"},
                {"role": "user", "content": "find it"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "search", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "debug", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "b", "content": "trace"},
                {"role": "tool", "tool_call_id": "a", "content": "found"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "debug", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "trace 2"},
                {"role": "assistant", "content": "checking", "tool_calls": [
                    {"id": "d", "type": "function", "function": {"name": "debug", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "d", "content": "trace 3"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "thanks"}]"#,
        )
    }

    #[test]
    fn removes_excluded_calls_and_keeps_their_parallel_siblings() {
        let out = run(&DropToolCalls::excluding(["debug"]), &parallel());
        assert_eq!(
            texts(&out),
            vec![
                "system: be brief",
                "user: find it",
                "assistant: calls search",
                "tool: found",
                "assistant: checking",
                "assistant: done",
                "user: thanks"
            ]
        );
        assert_eq!(out[2].tool_calls().map(|c| c.id.as_deref()).collect::<Vec<_>>(), vec![Some("a")]);
        assert_valid(&out);
    }

    #[test]
    fn include_only_overrides_exclude() {
        let step = DropToolCalls {
            exclude_tools: vec!["search".into()],
            ..DropToolCalls::including_only(["search"])
        };
        let out = run(&step, &parallel());
        assert_eq!(
            texts(&out)[2..],
            [
                "assistant: calls search",
                "tool: found",
                "assistant: checking",
                "assistant: done",
                "user: thanks"
            ]
        );
        assert_valid(&out);
        // nothing to drop: the input comes back as it was
        assert_eq!(run(&DropToolCalls::default(), &parallel()), parallel());
    }

    #[test]
    fn legacy_function_calls_go_with_their_function_message() {
        let input = openai(
            r#"[{"role": "user", "content": "time?"},
                {"role": "assistant", "content": null, "function_call": {"name": "clock", "arguments": "{}"}},
                {"role": "function", "name": "clock", "content": "12:00"},
                {"role": "assistant", "content": "noon"},
                {"role": "user", "content": "ok"}]"#,
        );
        let out = run(&DropToolCalls::excluding(["clock"]), &input);
        assert_eq!(texts(&out), vec!["user: time?", "assistant: noon", "user: ok"]);
        assert_valid(&out);
    }

    #[test]
    fn anthropic_blocks_are_removed_one_by_one() {
        let input = anthropic(
            r#"[{"role": "user", "content": "find it"},
                {"role": "assistant", "content": [{"type": "text", "text": "looking"},
                    {"type": "tool_use", "id": "a", "name": "search", "input": {}},
                    {"type": "tool_use", "id": "b", "name": "debug", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "found"},
                    {"type": "tool_result", "tool_use_id": "b", "content": "trace"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "debug", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "trace 2"}]},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "thanks"}]"#,
        );
        let out = run_in(&DropToolCalls::excluding(["debug"]), &input, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert_eq!(out.len(), 5);
        assert_eq!(out[1].tool_calls().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["search"]);
        assert_eq!(out[2].answered_call_ids().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(texts(&out)[3..], ["assistant: done", "user: thanks"]);
    }

    #[test]
    fn the_turn_in_progress_and_the_newest_user_turn_stay() {
        // Anthropic: the newest user words ride in the results message of the debug step
        let input = anthropic(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "debug", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "trace"},
                    {"type": "text", "text": "and now?"}]}]"#,
        );
        let out = run_in(&DropToolCalls::excluding(["debug"]), &input, anthropic_cx());
        assert_eq!(out, input);
        // a history that ends in tool results: the pending turn is kept unless told otherwise
        let pending = openai(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "debug", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "trace"}]"#,
        );
        assert_eq!(run(&DropToolCalls::excluding(["debug"]), &pending), pending);
        let all = DropToolCalls { keep_current_turn: false, ..DropToolCalls::excluding(["debug"]) };
        assert_eq!(texts(&run(&all, &pending)), vec!["user: go"]);
    }

    #[test]
    fn reads_its_keys() {
        let map = serde_json::json!({"exclude": "debug", "include": ["search"], "keep_current_turn": false});
        let mut p = Params::new(map.as_object().unwrap().clone());
        let step = DropToolCalls::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(step.exclude_tools, vec!["debug"]);
        assert_eq!(step.include_only, Some(vec!["search".to_string()]));
        assert!(!step.keep_current_turn);
        assert!(step.drops("debug") && !step.drops("search"));
    }
}
