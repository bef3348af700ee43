//! `task_truncation`: keep the first user message of the task and its newest assistant steps,
//! drop the middle, respecting task boundaries (azad `TruncationStrategy`).
//!
//! In a long agent task the first user message states the goal and the newest steps hold the
//! work in progress; what lies between is the least likely to matter. Within the current task
//! (from the last unit that [starts a task](crate::units::Unit::starts_task), set by the
//! message field [`TASK_BOUNDARY_FIELD`](crate::units::TASK_BOUNDARY_FIELD), to the end; the
//! whole history when no unit does) the step keeps:
//!
//! - the task's first user turn,
//! - the newest `preserve_recent_pairs` assistant steps (azad's "message pairs": an assistant
//!   message with the results of its calls) and everything after the oldest of them, so a
//!   user turn between two kept steps stays with the step that answers it (azad drops such
//!   turns, which leaves an answer without its question),
//! - every unit that starts a task, system messages and the newest user turn (per `keep`),
//!
//! and drops the rest. Earlier tasks are kept as they are under [`TaskScope::CurrentTask`];
//! under [`TaskScope::All`] each earlier task (the part before the first boundary counting as
//! one) keeps only its boundary and its first user turn, and the newest steps are kept only
//! in the last task.
//!
//! The step is deterministic and replayable: its output depends on the history and the
//! configuration only, never on the budget or the tokens left. This is what keeps prompt
//! caches warm: a cut point that moved with the remaining budget would change the prefix on
//! every call, and every change of the prefix is a cache miss. Run it rarely (under a
//! [`When`](crate::steps::When) condition, when the history is really too long); between runs
//! the caller sends the same truncated prefix, and the [`Plan`](crate::plan::Plan) the run
//! records is the checkpoint: it says which units were dropped and why, and replays to the
//! same bytes on the same input. For Anthropic, the pass after each step merges user turns
//! that end up next to each other (a message carrying a boundary field merged into the turn
//! before it no longer carries it).
//!
//! Units are kept or dropped whole, so tool calls stay with their results. Cost: O(messages).

use super::shared::written::Written;
use std::ops::Range;

use super::shared::keep::read_keep;
use super::shared::select::{apply_mask, protected};
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::message::Role;
use crate::params::{FromParams, Params};
use crate::units::{Unit, UnitKind};

/// Which tasks the step truncates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TaskScope {
    /// Only the current (last) task; earlier tasks are kept as they are (azad).
    #[default]
    CurrentTask,
    /// Every task: earlier ones keep their boundary and first user turn only, the current one
    /// also its newest steps.
    All,
}

impl TaskScope {
    /// Its name in configuration (`current_task`, `all`).
    pub fn word(self) -> &'static str {
        match self {
            TaskScope::CurrentTask => "current_task",
            TaskScope::All => "all",
        }
    }
}

/// `task_truncation` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<TaskTruncation>("task_truncation", &["truncation"])
    .documented(
        "Keep each task's first user message and the newest assistant steps of the current task, respecting task boundaries.",
        &[
            KeyDoc::new("preserve_recent_pairs", KeyUnit::Count("assistant steps"), "the newest assistant steps (with their results) kept in the current task"),
            KeyDoc::new("scope", KeyUnit::Choice, "which tasks are truncated: `current_task` or `all`"),
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Keeps each truncated task's first user turn and the newest assistant steps of the current
/// task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTruncation {
    /// How many of the newest assistant steps of the current task to keep. Defaults to 4
    /// (a few tool round trips: enough for the model to see what it just did and what came
    /// back). 0 keeps none: only the first user turn, boundaries and protected units.
    pub preserve_recent_pairs: usize,
    /// Which tasks to truncate. Defaults to [`TaskScope::CurrentTask`].
    pub scope: TaskScope,
    /// What is kept in addition. Defaults to system messages and the newest user turn.
    pub keep: Keep,
}

impl Default for TaskTruncation {
    fn default() -> TaskTruncation {
        TaskTruncation { preserve_recent_pairs: 4, scope: TaskScope::CurrentTask, keep: Keep::default() }
    }
}

impl TaskTruncation {
    /// Keeps the newest `pairs` assistant steps of the current task.
    pub fn recent(pairs: usize) -> TaskTruncation {
        TaskTruncation { preserve_recent_pairs: pairs, ..TaskTruncation::default() }
    }

    /// The same step truncating every task.
    pub fn all_tasks(self) -> TaskTruncation {
        TaskTruncation { scope: TaskScope::All, ..self }
    }
}

impl Step for TaskTruncation {
    fn name(&self) -> &'static str {
        "task_truncation"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("task_truncation")
            .key("preserve_recent_pairs", self.preserve_recent_pairs)
            .key("scope", self.scope.word())
            .keep(self.keep)
            .done()
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let mut mask = protected(history, self.keep);
        let units = history.units();
        let tasks = tasks(units);
        let Some((current, earlier)) = tasks.split_last() else {
            return Ok(());
        };
        for task in earlier {
            match self.scope {
                TaskScope::CurrentTask => mask[task.clone()].fill(true),
                TaskScope::All => keep_task_start(history, task.clone(), &mut mask),
            }
        }
        keep_task_start(history, current.clone(), &mut mask);
        keep_recent_steps(units, current.clone(), self.preserve_recent_pairs, &mut mask);
        let reason = format!(
            "truncated task: neither its first user turn nor within its newest {} steps",
            self.preserve_recent_pairs
        );
        apply_mask(history, &mask, &reason);
        Ok(())
    }
}

/// The tasks of a history, as ranges of unit indices covering every unit: each starts at a
/// unit that starts a task, except the first, which starts at unit 0. O(units).
fn tasks(units: &[Unit]) -> Vec<Range<usize>> {
    let mut starts: Vec<usize> =
        units.iter().enumerate().filter(|(_, u)| u.starts_task).map(|(i, _)| i).collect();
    if starts.first() != Some(&0) && !units.is_empty() {
        starts.insert(0, 0);
    }
    let ends = starts.iter().skip(1).copied().chain(std::iter::once(units.len()));
    starts.iter().zip(ends).map(|(&start, end)| start..end).collect()
}

/// Marks the task's boundary unit and its first user turn.
fn keep_task_start(history: &History<'_>, task: Range<usize>, mask: &mut [bool]) {
    let units = history.units();
    if units[task.start].starts_task {
        mask[task.start] = true;
    }
    let is_user_turn =
        |u: &Unit| u.kind == UnitKind::UserTurn && history.message(u.messages.start).role == Role::User;
    if let Some(first) = task.clone().find(|&i| is_user_turn(&units[i])) {
        mask[first] = true;
    }
}

/// Marks the task's newest `count` assistant steps and every unit after the oldest of them.
fn keep_recent_steps(units: &[Unit], task: Range<usize>, count: usize, mask: &mut [bool]) {
    if count == 0 {
        return;
    }
    let steps: Vec<usize> = task.clone().filter(|&i| units[i].kind == UnitKind::AssistantStep).collect();
    if let Some(&oldest) = steps.get(steps.len().saturating_sub(count)) {
        mask[oldest..task.end].fill(true);
    }
}

impl FromParams for TaskTruncation {
    /// Keys: `preserve_recent_pairs` (alias `preserve_recent_pairs_count`), `scope`
    /// (`current_task` or `all`), `keep_system` (alias `preserve_system_messages`),
    /// `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<TaskTruncation, ConfigError> {
        let mut step = TaskTruncation::default();
        step.preserve_recent_pairs = p.usize_or(
            &["preserve_recent_pairs", "preserve_recent_pairs_count"],
            step.preserve_recent_pairs,
        )?;
        let scope = p.choice_or(&["scope"], &["current_task", "all"], step.scope.word())?;
        step.scope = if scope == "all" { TaskScope::All } else { TaskScope::CurrentTask };
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
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
    use serde_json::json;

    /// system, the task, a tool step, a user turn, a text step, a step with two parallel
    /// calls answered out of order, a text step, the newest user turn (11 messages).
    fn agent_loop() -> Vec<Message> {
        openai(
            r#"[{"role": "system", "content": "rules"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "r1"},
                {"role": "user", "content": "more"},
                {"role": "assistant", "content": "a2"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "c3", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c3", "content": "r3"},
                {"role": "tool", "tool_call_id": "c2", "content": "r2"},
                {"role": "assistant", "content": "a4"},
                {"role": "user", "content": "go on"}]"#,
        )
    }

    /// Three tasks: before the first boundary, t2.., t3.. (boundaries on t2 and t3).
    fn three_tasks() -> Vec<Message> {
        openai(
            r#"[{"role": "system", "content": "rules"},
                {"role": "user", "content": "t1"},
                {"role": "assistant", "content": "a1"},
                {"role": "user", "content": "t1 more"},
                {"role": "assistant", "content": "a1b"},
                {"role": "user", "content": "t2", "tightfit_task_boundary": true},
                {"role": "assistant", "content": "a2"},
                {"role": "user", "content": "t2 more"},
                {"role": "assistant", "content": "a2b"},
                {"role": "user", "content": "t3", "tightfit_task_boundary": true},
                {"role": "assistant", "content": "a3"},
                {"role": "user", "content": "t3 more"},
                {"role": "assistant", "content": "a3b"},
                {"role": "user", "content": "now"}]"#,
        )
    }

    #[test]
    fn keeps_the_task_and_the_newest_steps() {
        let input = agent_loop();
        let out = run(&TaskTruncation::recent(2), &input);
        assert_eq!(
            texts(&out),
            vec![
                "system: rules",
                "user: task",
                "assistant: calls f,g",
                "tool: r3",
                "tool: r2",
                "assistant: a4",
                "user: go on"
            ]
        );
        assert_valid(&out);
        // three steps: the oldest kept one starts the window; the turn before it goes
        let out = run(&TaskTruncation::recent(3), &input);
        assert_eq!(
            texts(&out),
            vec![
                "system: rules",
                "user: task",
                "assistant: a2",
                "assistant: calls f,g",
                "tool: r3",
                "tool: r2",
                "assistant: a4",
                "user: go on"
            ]
        );
        assert_valid(&out);
    }

    #[test]
    fn no_steps_kept_and_nothing_dropped() {
        let input = agent_loop();
        let out = run(&TaskTruncation::recent(0), &input);
        assert_eq!(texts(&out), vec!["system: rules", "user: task", "user: go on"]);
        let bare = Keep { system: false, newest_user_turn: false };
        let out = run(&TaskTruncation { keep: bare, ..TaskTruncation::recent(0) }, &input);
        assert_eq!(texts(&out), vec!["user: task"]);
        // the default keeps 4 steps: this loop has exactly 4, so nothing goes
        assert_eq!(run(&TaskTruncation::default(), &input), input);
    }

    #[test]
    fn only_the_current_task_is_truncated_by_default() {
        let input = three_tasks();
        let out = run(&TaskTruncation::recent(1), &input);
        let mut expected: Vec<String> = texts(&input[..10]);
        expected.extend(["assistant: a3b".to_string(), "user: now".to_string()]);
        assert_eq!(texts(&out), expected);
        assert_valid(&out);
    }

    #[test]
    fn all_tasks_keep_their_start_and_only_the_last_its_steps() {
        let input = three_tasks();
        let out = run(&TaskTruncation::recent(1).all_tasks(), &input);
        assert_eq!(
            texts(&out),
            vec!["system: rules", "user: t1", "user: t2", "user: t3", "assistant: a3b", "user: now"]
        );
        assert_valid(&out);
        // the boundaries are still there, so a second run changes nothing
        assert_eq!(run(&TaskTruncation::recent(1).all_tasks(), &out), out);
    }

    #[test]
    fn a_boundary_that_is_not_a_user_turn_is_kept() {
        let input = openai(
            r#"[{"role": "user", "content": "t1"},
                {"role": "assistant", "content": "a1"},
                {"role": "assistant", "content": "entering subtask", "tightfit_task_boundary": true},
                {"role": "user", "content": "sub"},
                {"role": "assistant", "content": "s1"},
                {"role": "assistant", "content": "s2"},
                {"role": "user", "content": "now"}]"#,
        );
        let out = run(&TaskTruncation::recent(1), &input);
        assert_eq!(
            texts(&out),
            vec![
                "user: t1",
                "assistant: a1",
                "assistant: entering subtask",
                "user: sub",
                "assistant: s2",
                "user: now"
            ]
        );
        assert_valid(&out);
    }

    #[test]
    fn anthropic_parallel_calls_stay_with_their_results() {
        let input = anthropic(
            r#"[{"role": "user", "content": "task"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "X"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "y", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "z", "name": "g", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "z", "content": "Z"},
                    {"type": "tool_result", "tool_use_id": "y", "content": "Y"}]},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "next"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "w", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "w", "content": "W"}]}]"#,
        );
        let out = run_in(&TaskTruncation::recent(2), &input, anthropic_cx());
        assert_eq!(
            out,
            vec![input[0].clone(), input[5].clone(), input[6].clone(), input[7].clone(), input[8].clone()]
        );
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        let out = run_in(&TaskTruncation::recent(3), &input, anthropic_cx());
        assert_eq!(out.len(), 7);
        assert_eq!(out[1].tool_calls().count(), 2);
        assert_eq!(out[2].answered_call_ids().collect::<Vec<_>>(), vec!["z", "y"]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        // merged user turns stay valid: 0 steps leaves the task and "next" side by side, and
        // the step of the tool loop in progress stays (its start is protected for Anthropic)
        let out = run_in(&TaskTruncation::recent(0), &input, anthropic_cx());
        assert_eq!(texts(&out), vec!["user: task\nnext", "assistant: calls f", "user: "]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn the_budget_does_not_change_the_result_and_a_rerun_changes_nothing() {
        let input = agent_loop();
        let step = TaskTruncation::recent(2);
        let unbounded = run(&step, &input);
        for budget in [1, 50, 100_000] {
            let cx = StepContext::new(Format::OpenAi).with_budget(budget);
            assert_eq!(run_in(&step, &input, cx), unbounded);
        }
        assert_eq!(run(&step, &unbounded), unbounded);
    }

    #[test]
    fn odd_input_does_not_panic() {
        assert!(run(&TaskTruncation::default(), &[]).is_empty());
        // no user message at all, a legacy function call, an orphan result
        let input = openai(
            r#"[{"role": "system", "content": "s"},
                {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
                {"role": "function", "name": "f", "content": "r"},
                {"role": "tool", "tool_call_id": "nobody", "content": "lost"},
                {"role": "assistant", "content": "end"}]"#,
        );
        let out = run(&TaskTruncation::recent(1), &input);
        assert_eq!(texts(&out), vec!["system: s", "assistant: end"]);
    }

    #[test]
    fn reads_its_parameters() {
        let params = |v: serde_json::Value| Params::new(v.as_object().unwrap().clone());
        let mut p =
            params(json!({"preserve_recent_pairs_count": 2, "scope": "all", "keep_newest_user_turn": false}));
        let step = TaskTruncation::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(
            step,
            TaskTruncation {
                preserve_recent_pairs: 2,
                scope: TaskScope::All,
                keep: Keep { system: true, newest_user_turn: false }
            }
        );
        assert_eq!(TaskTruncation::from_params(&mut Params::default()).unwrap(), TaskTruncation::default());
        let mut p = params(json!({"scope": "parent"}));
        assert_eq!(TaskTruncation::from_params(&mut p).unwrap_err().key, "scope");
    }
}
