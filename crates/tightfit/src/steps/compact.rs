//! `compact`: the one cut a session makes per epoch, placed so that a provider's prompt cache
//! keeps as much as it can.
//!
//! A provider caches the longest prefix a request shares with the one before. Removing a
//! message invalidates everything after it, so where the cut falls decides what stays cached:
//!
//! 1. the **head** — system messages and the conversation's first units (the task), up to
//!    `head_share` of the budget, at least the first unit — is never cut. It is a function of
//!    the conversation's first units and the budget only, so it is the same at every
//!    compaction and stays cached across them. The step pins it: the rungs after it that
//!    shorten results (`truncate_tool_results`, `clear_tool_results`) leave it whole;
//! 2. the **tail** — the newest units that fit what is left of the budget — is kept, starting
//!    on a unit whose index is a multiple of `grid`, so that two processes (or proxy replicas)
//!    that compact the same conversation a turn apart cut at the same place;
//! 3. everything between is removed at once, and one message made by the run's
//!    [`Trace`](super::Trace) (by default [`CountTrace`](super::CountTrace): how many messages
//!    went, and which) is left where they were — after the head, so the head stays cached.
//!
//! Protected units (system messages, the newest user turn) are never removed. If they alone
//! are over the budget the step removes what it can and leaves the rest to later steps. Cost:
//! O(units), plus the trace.

use super::shared::keep::read_keep;
use super::shared::trace::{CountTrace, Removed, Trace};
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep, Origin};
use crate::params::{FromParams, Params};
use crate::units::UnitKind;

/// `compact` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<Compact>("compact", &["epoch_cut"]).documented(
    "A session's cut: keep a fixed head and the newest units from a grid point, with a trace between.",
    &[
        KeyDoc::new(
            "max_tokens",
            KeyUnit::Tokens,
            "the budget; none: the call's budget (a session's low-water mark)",
        ),
        KeyDoc::new(
            "head_share",
            KeyUnit::Fraction,
            "the share of the budget the head may take (system messages not counted)",
        ),
        KeyDoc::new("grid", KeyUnit::Units, "the tail starts on a unit index that is a multiple of this"),
        KeyDoc::new("trace", KeyUnit::Flag, "leave a trace where messages were removed"),
        KEEP_SYSTEM,
        KEEP_NEWEST_USER_TURN,
    ],
);

/// Removes the units between a fixed head and the newest units that fit, in one cut aligned
/// to a grid, and leaves a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Compact {
    /// The token budget. Defaults to `None`: the call's budget (a session's low-water mark).
    pub max_tokens: Option<usize>,
    /// What is always kept. Defaults to system messages and the newest user turn.
    pub keep: Keep,
    /// The share of the budget the head may take (system messages not counted). Defaults to
    /// 0.7. The first unit after the system messages is in the head whatever its size.
    pub head_share: f64,
    /// The tail starts on a unit index that is a multiple of this. Defaults to 2.
    pub grid: usize,
    /// Leave a trace where messages were removed. Defaults to true.
    pub trace: bool,
}

impl Default for Compact {
    fn default() -> Compact {
        Compact { max_tokens: None, keep: Keep::default(), head_share: 0.7, grid: 2, trace: true }
    }
}

impl FromParams for Compact {
    /// Keys: `max_tokens`, `head_share`, `grid`, `trace`, `keep_system`,
    /// `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<Compact, ConfigError> {
        let mut step = Compact { max_tokens: p.usize(&["max_tokens"])?, ..Compact::default() };
        step.head_share = p.f64_or(&["head_share"], step.head_share)?;
        step.grid = p.usize_or(&["grid"], step.grid)?;
        step.trace = p.bool_or(&["trace"], step.trace)?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

impl Step for Compact {
    fn name(&self) -> &'static str {
        KIND.name
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("compact")
            .key("max_tokens", self.max_tokens)
            .key("head_share", self.head_share)
            .key("grid", self.grid)
            .key("trace", self.trace)
            .keep(self.keep)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if !(0.0..=1.0).contains(&self.head_share) {
            return Err(ConfigError::new("head_share", "must be between 0 and 1"));
        }
        if self.grid == 0 {
            return Err(ConfigError::new("grid", "must be at least 1"));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        let Some(budget) = self.max_tokens.or(cx.budget) else { return Ok(()) };
        if history.total_tokens() <= budget {
            return Ok(());
        }
        let trace: &dyn Trace = match cx.trace {
            Some(trace) => trace,
            None => &CountTrace,
        };
        // the trace takes room too: planned without it, the cut would leave the history over
        // its aim by the trace's size, and the rungs after it would cut every old result (or
        // the head) to make up for it. So the cut is planned again, keeping the room the trace
        // took, until the trace fits the room kept for it (a trace is a pure function of what
        // was removed: writing it again costs time, nothing else).
        let mut reserve = 0;
        let mut attempts = 0;
        let (cut, removed_message) = loop {
            let Some(cut) = self.plan_cut(history, budget, reserve) else { return Ok(()) };
            let traced = if self.trace { cut.trace(history, trace, cx)? } else { (None, None) };
            let tokens = traced.0.as_ref().map_or(0, |m| history.counter().message_tokens(m));
            attempts += 1;
            if tokens <= reserve || attempts == MAX_PLANS {
                break (cut, traced);
            }
            reserve = tokens;
        };
        let (removed_message, failed) = removed_message;
        if let Some(failed) = failed {
            history.note(failed);
        }
        let at = history.units()[cut.first_removed].messages.start;
        // the head stays as it is for the cache: later rungs do not shorten it
        let head_end = history.units()[..cut.head]
            .iter()
            .flat_map(|u| u.messages.clone())
            .filter_map(|m| match history.origin(m) {
                Origin::Input(input) => Some(input + 1),
                Origin::Inserted => None,
            })
            .max();
        if let Some(end) = head_end {
            history.pin_inputs_before(end);
        }
        let count = history.drop_units(&cut.drop, &cut.reason());
        let at = crate::validate::note_position(history.messages(), at, history.provider());
        if let Some(message) = removed_message {
            history.insert(at, message, format!("trace of the {count} messages removed"));
        }
        Ok(())
    }
}

/// Where a compaction cuts: the units it removes.
struct Cut {
    drop: Vec<bool>,
    first_removed: usize,
    head: usize,
    tail: usize,
}

impl Cut {
    fn removed_messages<'h>(&'h self, history: &'h History<'_>) -> impl Iterator<Item = usize> + 'h {
        history.units().iter().zip(&self.drop).filter(|(_, d)| **d).flat_map(|(u, _)| u.messages.clone())
    }

    /// Its trace by `trace`, and a note when the trace had to make do.
    fn trace(
        &self,
        history: &History<'_>,
        trace: &dyn Trace,
        cx: &StepContext<'_>,
    ) -> Result<(Option<crate::message::Message>, Option<String>), StepError> {
        let (messages, input_indices) = self
            .removed_messages(history)
            .map(|i| {
                let origin = match history.origin(i) {
                    Origin::Input(input) => Some(input),
                    Origin::Inserted => None,
                };
                (history.message(i), origin)
            })
            .unzip();
        trace.trace_noted(&Removed {
            messages,
            input_indices,
            provider: cx.provider,
            counter: history.counter(),
        })
    }

    fn reason(&self) -> String {
        format!("between the head (units 0..{}) and the tail (from unit {})", self.head, self.tail)
    }
}

/// The most times a compaction plans its cut to make room for its trace (the trace of a cut
/// that removes a little more is rarely bigger than the one before; when it is, the rungs
/// after the step deal with the few tokens left over).
const MAX_PLANS: usize = 3;

impl Compact {
    /// The units to remove, or `None` when removing none would do: a head fixed by `budget`,
    /// and the newest units that fit `budget` less `reserve` (the room the trace takes).
    fn plan_cut(&self, history: &History<'_>, budget: usize, reserve: usize) -> Option<Cut> {
        let units = history.units();
        let protected = history.protected_units(self.keep);
        let tokens: Vec<usize> = units.iter().map(|u| history.tokens_of(u.messages.clone())).collect();
        // the head: the first units after the system messages, up to its share of the budget
        let head_budget = (budget as f64 * self.head_share) as usize;
        let (mut head, mut head_tokens, mut taken) = (0, 0, false);
        while head < units.len() {
            if units[head].kind != UnitKind::Instruction {
                if taken && head_tokens + tokens[head] > head_budget {
                    break;
                }
                head_tokens += tokens[head];
                taken = true;
            }
            head += 1;
        }
        // what stays whatever is cut: the fixed tokens, the head, the protected units after
        // it, and the room kept for the trace
        let budget = budget.saturating_sub(reserve);
        let mut kept = history.fixed_tokens()
            + tokens[..head].iter().sum::<usize>()
            + (head..units.len()).filter(|&i| protected[i]).map(|i| tokens[i]).sum::<usize>();
        // the tail: the newest units that fit
        let mut tail = units.len();
        while tail > head {
            let i = tail - 1;
            if !protected[i] {
                if kept + tokens[i] > budget {
                    break;
                }
                kept += tokens[i];
            }
            tail -= 1;
        }
        // on the grid: the tail starts at the next multiple of `grid`, unless that would keep
        // none of the newest units that fit (the newest step, the model's latest result, is
        // what it needs most; off the grid, the cut is still a function of the history)
        let aligned = tail.div_ceil(self.grid).saturating_mul(self.grid).min(units.len());
        let tail = if aligned == units.len() { tail } else { aligned };
        let drop: Vec<bool> = (0..units.len()).map(|i| i >= head && i < tail && !protected[i]).collect();
        let first_removed = drop.iter().position(|d| *d)?;
        Some(Cut { drop, first_removed, head, tail })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::message::{Message, Role};
    use crate::steps::test_support::{counter, openai, run_in};
    use crate::tokens::CountCache;

    /// system, then `n` user/assistant exchanges of `words` words each.
    fn chat(n: usize, words: usize) -> Vec<Message> {
        let mut messages = vec![Message::text(Role::System, "You are terse.")];
        for i in 0..n {
            let text = |who: &str| format!("{who} {i}: {}", "word ".repeat(words));
            messages.push(Message::text(Role::User, text("question")));
            messages.push(Message::text(Role::Assistant, text("answer")));
        }
        messages
    }

    fn tokens(messages: &[Message]) -> usize {
        counter().count(messages, None).total
    }

    #[test]
    fn keeps_the_head_and_the_newest_and_leaves_a_trace_between() {
        let input = chat(40, 20);
        let budget = tokens(&input) / 3;
        let out = run_in(&Compact::default(), &input, StepContext::new(Format::OpenAi).with_budget(budget));
        assert!(tokens(&out) <= budget, "{} > {budget}", tokens(&out));
        assert_eq!(out[0], input[0], "the system prompt stays");
        assert_eq!(out[1], input[1], "the first user turn (the task) stays");
        let trace = out.iter().position(|m| m.text_content().starts_with("[tightfit: ")).expect("a trace");
        let removed = input.len() - (out.len() - 1);
        assert!(out[trace].text_content().contains(&format!("{removed} earlier messages")));
        assert_eq!(out.last(), input.last(), "the newest message stays");
        // what is kept after the trace is a contiguous run of the newest messages
        let tail = &out[trace + 1..];
        assert_eq!(tail, &input[input.len() - tail.len()..]);
    }

    /// A trace the size of a short summary: a line per message removed, up to 12.
    #[derive(Debug)]
    struct LongTrace;

    impl Trace for LongTrace {
        fn trace(&self, removed: &Removed<'_>) -> Result<Option<Message>, StepError> {
            let lines: Vec<String> = removed
                .messages
                .iter()
                .take(12)
                .map(|m| format!("- {}", m.text_content().chars().take(30).collect::<String>()))
                .collect();
            Ok(Some(Message::text(Role::User, format!("[tightfit: summary]\n{}", lines.join("\n")))))
        }
    }

    #[test]
    fn the_cut_leaves_room_for_its_trace() {
        // planned without the trace's room, the history would end over its budget by about
        // the trace's size (about a hundred tokens here), and the rungs after the step would cut
        // results to make up for it
        let input = chat(120, 12);
        let trace = LongTrace;
        let mut compacted = 0;
        for budget in (1_200..3_000).step_by(37) {
            let cx = StepContext::new(Format::OpenAi).with_budget(budget).with_trace(&trace);
            let out = run_in(&Compact::default(), &input, cx);
            assert!(tokens(&out) <= budget, "budget {budget}: {} tokens", tokens(&out));
            let at = out
                .iter()
                .position(|m| m.text_content().starts_with("[tightfit: summary]"))
                .expect("a trace");
            // the trace names what it replaced: every message between the head and the tail
            let removed = input.len() - (out.len() - 1);
            assert_eq!(out[at].text_content().lines().count() - 1, removed.min(12), "budget {budget}");
            compacted += 1;
        }
        assert!(compacted > 40);
    }

    #[test]
    fn the_head_does_not_move_as_the_conversation_grows() {
        let step = Compact::default();
        let cx = StepContext::new(Format::OpenAi).with_budget(600);
        let heads: Vec<Vec<Message>> = [30, 31, 45, 80]
            .iter()
            .map(|&n| {
                let out = run_in(&step, &chat(n, 15), cx);
                let trace = out.iter().position(|m| m.text_content().starts_with("[tightfit: ")).unwrap();
                out[..trace].to_vec()
            })
            .collect();
        assert!(heads.windows(2).all(|w| w[0] == w[1]), "{heads:?}");
    }

    #[test]
    fn the_tail_starts_on_the_grid() {
        for grid in [1, 4, 7] {
            let step = Compact { grid, trace: false, ..Compact::default() };
            let input = chat(50, 10);
            let mut history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
            let cut = step.plan_cut(&history, 500, 0).expect("a cut");
            assert_eq!(cut.tail % grid, 0, "grid {grid}: tail at unit {}", cut.tail);
            step.apply(&mut history, &StepContext::new(Format::OpenAi).with_budget(500)).unwrap();
            assert!(history.total_tokens() <= 500);
        }
    }

    #[test]
    fn the_newest_unit_stays_when_it_fits_even_off_the_grid() {
        // an agent run: the task, then steps of a call and its result (the newest step is
        // nobody's protected turn)
        let mut json = vec![
            serde_json::json!({"role": "system", "content": "You fix bugs."}),
            serde_json::json!({"role": "user", "content": "fix it"}),
        ];
        for i in 0..50 {
            let id = format!("call_{i}");
            json.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "sh", "arguments": format!("{{\"cmd\": \"cat f{i}\"}}")}}]}));
            json.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": "line ".repeat(10 + i % 7 * 9)}));
        }
        let input = openai(&serde_json::Value::Array(json).to_string());
        let history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
        let newest = history.units().len() - 1;
        let mut off_the_grid = 0;
        for grid in [2, 4, 7] {
            let step = Compact { grid, trace: false, ..Compact::default() };
            for budget in (300..1500).step_by(7) {
                let Some(cut) = step.plan_cut(&history, budget, 0) else { continue };
                let head: usize = history.fixed_tokens()
                    + history.units()[..cut.head]
                        .iter()
                        .map(|u| history.tokens_of(u.messages.clone()))
                        .sum::<usize>();
                let protected: usize = (cut.head..newest)
                    .filter(|&i| !cut.drop[i])
                    .map(|i| history.tokens_of(history.units()[i].messages.clone()))
                    .sum();
                let last = history.tokens_of(history.units()[newest].messages.clone());
                if head + protected + last <= budget {
                    assert!(
                        !cut.drop[newest],
                        "grid {grid}, budget {budget}: the newest unit fits and stays"
                    );
                }
                off_the_grid += usize::from(cut.tail % grid != 0);
            }
        }
        assert!(off_the_grid > 0, "some budgets keep a tail the grid alone would have dropped");
    }

    #[test]
    fn under_budget_it_does_nothing() {
        let input = chat(5, 5);
        let out = run_in(&Compact::default(), &input, StepContext::new(Format::OpenAi).with_budget(100_000));
        assert_eq!(out, input);
    }

    #[test]
    fn configuration_is_checked() {
        assert!(Compact { grid: 0, ..Compact::default() }.check().is_err());
        assert!(Compact { head_share: 1.5, ..Compact::default() }.check().is_err());
    }
}
