//! `token_budget`: keep the newest units that fit a token budget (llmling `TokenBudget`, AG2
//! `MessageTokenLimiter`'s `max_tokens` and `min_tokens`, autogen `TokenLimitedChatCompletionContext`,
//! LangChain `trim_messages` with strategy "last").
//!
//! The budget is for the whole request, counted as [`History::total_tokens`] counts it: every
//! message with its framing, the tool schemas and the reply priming. Protected units (system
//! messages and the newest user turn, by default) are reserved first; then units are added
//! from the newest backwards while they fit, and selection stops at the first unit that does
//! not: the kept tail is contiguous (plus the protected units), never a history with holes
//! where an older small unit slipped in after a big one was left out. Whole units are kept or
//! dropped, so a tool call never loses its results.
//!
//! With `allow_partial`, the unit that stopped the selection is kept with its text cut from
//! the front (its tail kept, as LangChain's `allow_partial` with strategy "last" and AG2's
//! cut of the message that crosses the limit), when it is a single user or assistant message
//! with text and no tool calls or results: the cut is measured on the message as the counter
//! counts it, framing included, so the request fits. A message that cannot fit even with one
//! token of text is dropped as usual.
//!
//! If the protected units alone exceed the budget, the step keeps them (and drops the rest):
//! it does not break its promise to keep them, and `fit` reports that the history does not
//! fit. Cost: O(units) plus, with `allow_partial`, a binary search over one message's text.

use super::shared::cut::plan_cut;
use super::shared::keep::read_keep;
use super::shared::select::{apply_mask, protected};
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::message::{Message, Part, Role};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::text::{KeepPart, Length};

/// `token_budget` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<TokenBudget>("token_budget", &["token_limited", "message_token_limiter"]).documented(
        "Keep the newest units that fit a token budget; optionally cut the one that crosses it.",
        &[
            KeyDoc::new("max_tokens", KeyUnit::Tokens, "the budget of the request; none: the call's budget"),
            KeyDoc::new(
                "min_tokens",
                KeyUnit::Tokens,
                "do nothing while the request is smaller than this (AG2 `min_tokens`)",
            ),
            KeyDoc::new(
                "allow_partial",
                KeyUnit::Flag,
                "keep the unit that crosses the budget with its text cut from the front",
            ),
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Keeps the newest units that fit a token budget.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TokenBudget {
    /// The budget of the request, in tokens. Defaults to `None`: the budget of the call
    /// ([`StepContext::budget`]); with neither the step fails.
    pub max_tokens: Option<usize>,
    /// Do nothing while the request has fewer tokens than this (AG2 `min_tokens`). Defaults
    /// to `None` (no threshold).
    pub min_tokens: Option<usize>,
    /// Keep the unit that crosses the budget with its text cut from the front, when it is a
    /// single user or assistant message with text and no tool calls or results. Defaults to
    /// false.
    pub allow_partial: bool,
    /// What is kept whatever the budget. Defaults to system messages and the newest user turn.
    pub keep: Keep,
}

impl TokenBudget {
    /// Keeps the newest units that fit `max_tokens`.
    pub fn new(max_tokens: usize) -> TokenBudget {
        TokenBudget { max_tokens: Some(max_tokens), ..TokenBudget::default() }
    }

    /// Keeps the newest units that fit the call's budget.
    pub fn call_budget() -> TokenBudget {
        TokenBudget::default()
    }
}

/// Whether the message can be kept in part: a user or assistant message with text and no
/// tool calls or results.
fn can_be_partial(message: &Message) -> bool {
    matches!(message.role, Role::User | Role::Assistant)
        && message.parts.iter().any(|p| matches!(p, Part::Text(t) if !t.text.trim().is_empty()))
        && !message.parts.iter().any(|p| matches!(p, Part::ToolCall(_) | Part::ToolResult(_)))
}

/// The message with its text cut from the front so that it counts at most `room` tokens,
/// framing included, with the report's detail; `None` if not even some text fits.
fn partial(history: &History<'_>, message: &Message, room: usize) -> Option<(Message, String)> {
    let chat = history.counter();
    let counter = chat.text_counter();
    let whole = chat.message_tokens(message);
    let text_tokens: usize = message
        .parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => counter.count(&t.text),
            _ => 0,
        })
        .sum();
    let mut limit = text_tokens.checked_sub(whole.saturating_sub(room))?;
    while limit > 0 {
        let cut = plan_cut(&message.parts, Length::Tokens(limit), KeepPart::Tail, "", counter)?;
        let mut candidate = message.clone();
        cut.apply(&mut candidate.parts);
        let tokens = chat.message_tokens(&candidate);
        if tokens <= room {
            let blank = candidate.text_content().trim().is_empty();
            return (!blank).then_some((candidate, cut.detail));
        }
        // framing and calibration do not scale one for one with the text: shrink by the excess
        limit = limit.saturating_sub((tokens - room).max(1));
    }
    None
}

impl Step for TokenBudget {
    fn name(&self) -> &'static str {
        "token_budget"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("token_budget")
            .key("max_tokens", self.max_tokens)
            .key("min_tokens", self.min_tokens)
            .key("allow_partial", self.allow_partial)
            .keep(self.keep)
            .done()
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        let budget = self.max_tokens.or(cx.budget).ok_or_else(|| {
            StepError::new(self.name(), "no token budget: set max_tokens or give the call a budget")
        })?;
        let total = history.total_tokens();
        if self.min_tokens.is_some_and(|min| total < min) || total <= budget {
            return Ok(());
        }
        let units = history.shared_units();
        let unit_tokens: Vec<usize> = units.iter().map(|u| history.tokens_of(u.messages.clone())).collect();
        let mut mask = protected(history, self.keep);
        let mut used = history.fixed_tokens()
            + unit_tokens.iter().zip(&mask).filter(|(_, k)| **k).map(|(t, _)| t).sum::<usize>();
        let mut crossing = None;
        for i in (0..units.len()).rev() {
            if mask[i] {
                continue;
            }
            if used + unit_tokens[i] > budget {
                crossing = Some(i);
                break;
            }
            used += unit_tokens[i];
            mask[i] = true;
        }
        // the crossing unit, cut to the room left, when it may be
        let partial = crossing
            .filter(|_| self.allow_partial && used < budget)
            .filter(|&c| units[c].len() == 1 && can_be_partial(history.message(units[c].messages.start)))
            .and_then(|c| {
                let message = history.message(units[c].messages.start);
                partial(history, message, budget - used).map(|p| (c, p))
            });
        if let Some((c, _)) = &partial {
            mask[*c] = true;
        }
        apply_mask(history, &mask, &format!("older than the newest units that fit {budget} tokens"));
        if let Some((c, (message, detail))) = partial {
            // its index once the units before it were dropped
            let index: usize = units[..c].iter().zip(&mask).filter(|(_, k)| **k).map(|(u, _)| u.len()).sum();
            let detail = format!("text cut from the front to fit {budget} tokens: {detail}");
            history.edit(index, ChangeKind::Truncated, detail, |m| *m = message);
            if history.total_tokens() > budget {
                history.remove(index, "did not fit the budget even cut");
            }
        }
        Ok(())
    }
}

impl FromParams for TokenBudget {
    /// Keys: `max_tokens` (alias `token_limit`), `min_tokens`, `allow_partial`, `keep_system`
    /// (alias `preserve_system_messages`), `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<TokenBudget, ConfigError> {
        let mut step = TokenBudget {
            max_tokens: p.usize(&["max_tokens", "token_limit"])?,
            min_tokens: p.usize(&["min_tokens"])?,
            ..TokenBudget::default()
        };
        step.allow_partial = p.bool_or(&["allow_partial"], step.allow_partial)?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::{anthropic, assert_valid, counter, openai, run_in, texts, tool_history};
    use crate::tokens::CountCache;
    use crate::validate::validate;
    use serde_json::json;

    /// The tokens of each message and of the whole request.
    fn count(messages: &[Message]) -> (Vec<usize>, usize) {
        let c = counter();
        let history = History::new(messages, None, &c, CountCache::new(), Format::OpenAi);
        ((0..messages.len()).map(|i| history.tokens(i)).collect(), history.total_tokens())
    }

    fn fixed() -> usize {
        let (per_message, total) = count(&tool_history());
        total - per_message.iter().sum::<usize>()
    }

    fn openai_cx() -> StepContext<'static> {
        StepContext::new(Format::OpenAi)
    }

    fn run_with(step: &TokenBudget, input: &[Message]) -> Vec<Message> {
        run_in(step, input, openai_cx())
    }

    #[test]
    fn keeps_the_newest_units_that_fit() {
        // system | user | assistant(call) + tool | user (newest) | assistant
        let input = tool_history();
        let (t, total) = count(&input);
        // system, newest user, the last answer and the tool step fit; the first user does not
        let budget = fixed() + t[0] + t[4] + t[5] + t[2] + t[3];
        assert!(budget < total);
        let out = run_with(&TokenBudget::new(budget), &input);
        assert_eq!(
            texts(&out),
            vec![
                "system: be brief",
                "assistant: calls lookup",
                "tool: found it",
                "user: and now?",
                "assistant: done"
            ]
        );
        assert_eq!(count(&out).1, budget);
        // one token less: the tool step stops the selection, whole
        let out = run_with(&TokenBudget::new(budget - 1), &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: and now?", "assistant: done"]);
        assert_valid(&out);
    }

    #[test]
    fn the_kept_tail_has_no_gaps() {
        let long = "word ".repeat(200);
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "a"}}, {{"role": "assistant", "content": "{long}"}},
                {{"role": "user", "content": "b"}}, {{"role": "assistant", "content": "c"}}]"#
        ));
        let (t, _) = count(&input);
        // room for everything but the long answer: the small first turn still goes
        let budget = fixed() + t[0] + t[2] + t[3] + 5;
        let out = run_with(&TokenBudget::new(budget), &input);
        assert_eq!(texts(&out), vec!["user: b", "assistant: c"]);
    }

    #[test]
    fn uses_the_call_budget_or_says_it_has_none() {
        let input = tool_history();
        let (t, _) = count(&input);
        let cx = StepContext::new(Format::OpenAi).with_budget(fixed() + t[0] + t[4] + t[5]);
        let out = run_in(&TokenBudget::call_budget(), &input, cx);
        assert_eq!(texts(&out), vec!["system: be brief", "user: and now?", "assistant: done"]);
        let c = counter();
        let mut history = History::new(&input, None, &c, CountCache::new(), Format::OpenAi);
        let e = TokenBudget::call_budget().apply(&mut history, &openai_cx()).unwrap_err();
        assert_eq!(e.step, "token_budget");
        assert!(e.reason.contains("max_tokens"), "{e}");
        // max_tokens wins over the call's budget
        let out = run_in(&TokenBudget::new(100_000), &input, cx);
        assert_eq!(out, input);
    }

    #[test]
    fn min_tokens_leaves_small_requests_alone() {
        let input = tool_history();
        let (_, total) = count(&input);
        let step = TokenBudget { min_tokens: Some(total + 1), ..TokenBudget::new(1) };
        assert_eq!(run_with(&step, &input), input);
        let step = TokenBudget { min_tokens: Some(total), ..TokenBudget::new(1) };
        assert_eq!(run_with(&step, &input).len(), 2, "at the threshold the step runs");
    }

    #[test]
    fn protected_units_stay_even_over_budget() {
        let input = tool_history();
        let out = run_with(&TokenBudget::new(1), &input);
        assert_eq!(texts(&out), vec!["system: be brief", "user: and now?"]);
        let bare =
            TokenBudget { keep: Keep { system: false, newest_user_turn: true }, ..TokenBudget::new(1) };
        assert_eq!(texts(&run_with(&bare, &input)), vec!["user: and now?"]);
    }

    fn long_answer() -> (Vec<Message>, String) {
        let answer = "The quick brown fox jumps over the lazy dog. ".repeat(20) + "日本語のテキスト👨‍👩‍👧‍👦 end";
        let input = openai(&format!(
            r#"[{{"role": "system", "content": "be brief"}}, {{"role": "user", "content": "tell me"}},
                {{"role": "assistant", "content": "{answer}"}}, {{"role": "user", "content": "shorter?"}}]"#
        ));
        (input, answer)
    }

    #[test]
    fn allow_partial_keeps_the_tail_of_the_crossing_message() {
        let (input, answer) = long_answer();
        let (t, _) = count(&input);
        let budget_for = |room: usize| fixed() + t[0] + t[3] + room;
        for room in [100, 40, 22, 16, 5] {
            let budget = budget_for(room);
            let out = run_with(&TokenBudget { allow_partial: true, ..TokenBudget::new(budget) }, &input);
            assert_eq!(out.len(), 3, "room {room}");
            let kept = out[1].text_content();
            assert!(answer.ends_with(&kept) && kept.len() < answer.len(), "room {room}: {kept:?}");
            assert_eq!(count(&out).1, budget, "room {room}: the request fits exactly");
            assert_valid(&out);
        }
        let kept = |room: usize| {
            let step = TokenBudget { allow_partial: true, ..TokenBudget::new(budget_for(room)) };
            run_with(&step, &input)[1].text_content()
        };
        assert_eq!(kept(22), " 日本語のテキスト👨\u{200d}👩\u{200d}👧\u{200d}👦 end");
        assert_eq!(kept(16), "👨\u{200d}👩\u{200d}👧\u{200d}👦 end");
        // the family emoji is one grapheme of several tokens: it is never split, so a little
        // less room keeps only what follows it
        assert_eq!(kept(15), " end");
        // without allow_partial it goes whole
        assert_eq!(run_with(&TokenBudget::new(budget_for(40)), &input).len(), 2);
    }

    #[test]
    fn allow_partial_never_cuts_a_tool_step_and_drops_what_cannot_fit() {
        let input = tool_history();
        let (t, _) = count(&input);
        let step = TokenBudget { allow_partial: true, ..TokenBudget::new(fixed() + t[0] + t[4] + t[5] + 5) };
        assert_eq!(
            texts(&run_with(&step, &input)),
            vec!["system: be brief", "user: and now?", "assistant: done"]
        );
        // room for the framing of a message but no text: the crossing message goes
        let (input, _) = long_answer();
        let (t, _) = count(&input);
        let step = TokenBudget { allow_partial: true, ..TokenBudget::new(fixed() + t[0] + t[3] + 3) };
        assert_eq!(run_with(&step, &input).len(), 2);
    }

    #[test]
    fn anthropic_parallel_results_stay_with_their_calls() {
        let input = anthropic(
            r#"[{"role": "system", "content": "be brief"},
                {"role": "user", "content": "q1"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}},
                    {"type": "tool_use", "id": "t2", "name": "g", "input": {"y": 2}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t2", "content": "two"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "one"}]},
                {"role": "assistant", "content": "answer"},
                {"role": "user", "content": "q2"}]"#,
        );
        let (t, _) = count(&input);
        let cx = StepContext::new(Format::Anthropic);
        // the step with both results fits; q1 does not
        let budget = fixed() + t[0] + t[5] + t[4] + t[2] + t[3];
        let out = run_in(&TokenBudget::new(budget), &input, cx);
        assert_eq!(out[1].role, Role::User, "a placeholder turn opens the history");
        assert_eq!(out[2..], input[2..]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        // one token less: the step goes whole, both results with it
        let out = run_in(&TokenBudget::new(budget - 1), &input, cx);
        assert_eq!(out[2..], input[4..]);
        assert!(!out.iter().any(Message::is_tool_result));
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn reads_params() {
        let mut p = Params::new(
            json!({"token_limit": 500, "min_tokens": 100, "allow_partial": true,
                   "preserve_system_messages": false})
            .as_object()
            .unwrap()
            .clone(),
        );
        let step = TokenBudget::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(
            step,
            TokenBudget {
                max_tokens: Some(500),
                min_tokens: Some(100),
                allow_partial: true,
                keep: Keep { system: false, newest_user_turn: true },
            }
        );
        let mut p = Params::new(json!({}).as_object().unwrap().clone());
        assert_eq!(TokenBudget::from_params(&mut p).unwrap(), TokenBudget::call_budget());
    }
}
