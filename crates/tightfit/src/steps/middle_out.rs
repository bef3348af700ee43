//! `middle_out`: keep the system prompt, the start and the newest part of the conversation,
//! and remove (or, as a last resort, shorten) from the middle until the request fits (swarms
//! "middle-out", OpenRouter's middle-out transform).
//!
//! The last rung of `fit`'s default ladder, so it is the step that guarantees the budget:
//!
//! 1. the units to keep are reserved: system messages and the newest user turn (`keep`),
//!    the first `keep_first` units of the conversation (its start: usually the task), and
//!    the units holding the last `keep_recent` messages (whole units, so a step keeps its
//!    results);
//! 2. the other units are dropped from the middle outwards — the one in the middle first,
//!    then alternately its older and newer neighbours — until the request fits;
//! 3. if it still does not fit, the longest texts of the kept units that are not protected
//!    are cut in their middle (never below `min_text_tokens`), then those units are dropped,
//!    oldest first;
//! 4. with `shorten_protected`, the texts of protected units are cut last.
//!
//! If the protected units alone do not fit, the step leaves them and `fit` reports by how much
//! they are over. Cost: O(units) to select; step 3 tokenizes only the texts it cuts.

use super::shared::keep::read_keep;
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep, Origin};
use crate::message::{Message, Part, Role};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::text::{cut, KeepPart, Length};
use crate::units::UnitKind;

/// The marker left where `middle_out` cut the middle of a text.
pub const MIDDLE_CUT_MARKER: &str = "\n[... middle cut to fit the context window ...]\n";

/// `middle_out` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<MiddleOut>("middle_out", &["middle-out"]).documented(
    "Keep the system prompt, the start and the newest; remove (or shorten) from the middle until the request fits.",
    &[
        KeyDoc::new("max_tokens", KeyUnit::Tokens, "the budget; none: the call's budget"),
        KeyDoc::new("keep_first", KeyUnit::Units, "units kept at the start, after system messages (the first user turn states the task)"),
        KeyDoc::new("keep_recent", KeyUnit::Messages, "recent messages kept, rounded out to whole units (swarms `preserve_recent_messages`)"),
        KeyDoc::new("shorten", KeyUnit::Flag, "cut the middle of long texts of kept units when dropping whole units is not enough"),
        KeyDoc::new("shorten_protected", KeyUnit::Flag, "also cut the system prompt and newest user turn as a last resort"),
        KeyDoc::new("min_text_tokens", KeyUnit::Tokens, "a text is never cut below this"),
        KeyDoc::new("placeholder", KeyUnit::Text, "a user message put where units were dropped, `{skipped}` standing for how many; none: nothing"),
        KEEP_SYSTEM,
        KEEP_NEWEST_USER_TURN,
    ],
);

/// Removes units from the middle until the request fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MiddleOut {
    /// The token budget. Defaults to `None`: the call's budget.
    pub max_tokens: Option<usize>,
    /// What is always kept. Defaults to system messages and the newest user turn.
    pub keep: Keep,
    /// Units kept at the start of the conversation (after system messages). Defaults to 1:
    /// the first user turn, which usually states the task.
    pub keep_first: usize,
    /// Recent messages kept, as whole units (swarms `preserve_recent_messages`). Defaults to
    /// 2, as swarms.
    pub keep_recent: usize,
    /// Cut the middle of long texts of kept units when dropping whole units is not enough.
    /// Defaults to true.
    pub shorten: bool,
    /// Also cut texts of protected units (system prompt, newest user turn) as a last resort.
    /// Defaults to false: `fit` reports that they do not fit instead.
    pub shorten_protected: bool,
    /// A text is never cut below this many tokens. Defaults to 64.
    pub min_text_tokens: usize,
    /// A user message put where units were dropped, `{skipped}` replaced by the number of
    /// messages removed. Defaults to `None` (nothing is put there).
    pub placeholder: Option<String>,
}

impl Default for MiddleOut {
    fn default() -> MiddleOut {
        MiddleOut {
            max_tokens: None,
            keep: Keep::default(),
            keep_first: 1,
            keep_recent: 2,
            shorten: true,
            shorten_protected: false,
            min_text_tokens: 64,
            placeholder: None,
        }
    }
}

impl FromParams for MiddleOut {
    /// Keys: `max_tokens` (alias `token_limit`), `keep_first`, `keep_recent` (alias
    /// `preserve_recent_messages`), `shorten`, `shorten_protected`, `min_text_tokens`,
    /// `placeholder`, `keep_system` (alias `preserve_system_messages`),
    /// `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<MiddleOut, ConfigError> {
        let mut step =
            MiddleOut { max_tokens: p.usize(&["max_tokens", "token_limit"])?, ..MiddleOut::default() };
        step.keep_first = p.usize_or(&["keep_first"], step.keep_first)?;
        step.keep_recent = p.usize_or(&["keep_recent", "preserve_recent_messages"], step.keep_recent)?;
        step.shorten = p.bool_or(&["shorten"], step.shorten)?;
        step.shorten_protected = p.bool_or(&["shorten_protected"], step.shorten_protected)?;
        step.min_text_tokens = p.usize_or(&["min_text_tokens"], step.min_text_tokens)?;
        step.placeholder = p.string(&["placeholder"])?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

/// Where a text sits in a message: a top-level part, or a part inside a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextAt {
    Part(usize),
    InResult(usize, usize),
}

fn texts(message: &Message) -> Vec<(TextAt, &str)> {
    let mut out = Vec::new();
    for (j, part) in message.parts.iter().enumerate() {
        match part {
            Part::Text(t) => out.push((TextAt::Part(j), t.text.as_str())),
            Part::ToolResult(r) => {
                for (k, inner) in r.parts.iter().enumerate() {
                    if let Part::Text(t) = inner {
                        out.push((TextAt::InResult(j, k), t.text.as_str()));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn text_mut(message: &mut Message, at: TextAt) -> Option<&mut String> {
    let part = match at {
        TextAt::Part(j) => message.parts.get_mut(j)?,
        TextAt::InResult(j, k) => match message.parts.get_mut(j)? {
            Part::ToolResult(r) => r.parts.get_mut(k)?,
            _ => return None,
        },
    };
    match part {
        Part::Text(t) => Some(&mut t.text),
        _ => None,
    }
}

impl MiddleOut {
    /// Units reserved under the configuration: (protected, preferred).
    fn reserved(&self, history: &History<'_>) -> (Vec<bool>, Vec<bool>) {
        let protected = history.protected_units(self.keep);
        let units = history.units();
        let mut preferred = vec![false; units.len()];
        let mut first = self.keep_first;
        for (i, unit) in units.iter().enumerate() {
            if first == 0 {
                break;
            }
            if unit.kind != UnitKind::Instruction {
                preferred[i] = true;
                first -= 1;
            }
        }
        let mut recent = 0;
        for (i, unit) in units.iter().enumerate().rev() {
            if recent >= self.keep_recent {
                break;
            }
            preferred[i] = true;
            recent += unit.len();
        }
        (protected, preferred)
    }

    /// Cuts the longest texts of the messages in `eligible` (by message index) until the
    /// request fits `budget` or nothing more can be cut.
    fn shorten_texts(&self, history: &mut History<'_>, eligible: &[usize], budget: usize) {
        let counter = history.counter().clone();
        let text_counter = counter.text_counter();
        // (tokens, message, where), largest first; ties by position, for determinism
        // a text the tokenizer knows to be within `min_text_tokens` from its length alone is
        // never cut, and not counted (80,000 short tool results cost no tokenizer pass)
        let may_be_cut = |text: &str| {
            text_counter.max_tokens_of_len(text.len()).is_none_or(|most| most > self.min_text_tokens)
        };
        let mut candidates: Vec<(usize, usize, TextAt)> = eligible
            .iter()
            .flat_map(|&i| texts(history.message(i)).into_iter().map(move |(at, text)| (i, at, text)))
            .filter(|(_, _, text)| may_be_cut(text))
            .map(|(i, at, text)| (text_counter.count(text), i, at))
            .filter(|(tokens, _, _)| *tokens > self.min_text_tokens)
            .collect();
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (tokens, index, at) in candidates {
            let excess = history.total_tokens().saturating_sub(budget);
            if excess == 0 {
                return;
            }
            let target = tokens.saturating_sub(excess).max(self.min_text_tokens);
            let Some(text) =
                texts(history.message(index)).into_iter().find(|(a, _)| *a == at).map(|(_, t)| t)
            else {
                continue;
            };
            let Some(c) =
                cut(text, Length::Tokens(target), KeepPart::HeadAndTail, MIDDLE_CUT_MARKER, text_counter)
            else {
                continue;
            };
            history.edit(index, ChangeKind::Truncated, format!("middle cut to fit: {}", c.detail), |m| {
                if let Some(t) = text_mut(m, at) {
                    *t = c.text;
                }
            });
        }
    }
}

impl Step for MiddleOut {
    fn name(&self) -> &'static str {
        "middle_out"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("middle_out")
            .key("max_tokens", self.max_tokens)
            .key("keep_first", self.keep_first)
            .key("keep_recent", self.keep_recent)
            .key("shorten", self.shorten)
            .key("shorten_protected", self.shorten_protected)
            .key("min_text_tokens", self.min_text_tokens)
            .key("placeholder", self.placeholder.clone())
            .keep(self.keep)
            .done()
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        let budget = self.max_tokens.or(cx.budget).ok_or_else(|| {
            StepError::new(self.name(), "no token budget: set `max_tokens` or run it inside `fit`")
        })?;
        if history.total_tokens() <= budget {
            return Ok(());
        }
        // room for the placeholder, put in last (it is a user message: put in earlier, it
        // would pass for the newest user turn)
        let placeholder = |skipped: usize| {
            self.placeholder
                .as_ref()
                .map(|t| Message::text(Role::User, t.replace("{skipped}", &skipped.to_string())))
        };
        let reserve = placeholder(history.len()).map_or(0, |m| history.counter().message_tokens(&m));
        let budget = budget.saturating_sub(reserve);
        let messages_before = history.len();
        let (protected, preferred) = self.reserved(history);
        let units = history.shared_units();
        let tokens: Vec<usize> = units.iter().map(|u| history.tokens_of(u.messages.clone())).collect();
        let candidates: Vec<usize> = (0..units.len()).filter(|&i| !protected[i] && !preferred[i]).collect();
        // middle first, then alternately older and newer neighbours
        let n = candidates.len();
        let mid = n / 2;
        let mut order = Vec::with_capacity(n);
        if n > 0 {
            order.push(candidates[mid]);
        }
        for d in 1..=n {
            if d <= mid {
                order.push(candidates[mid - d]);
            }
            if mid + d < n {
                order.push(candidates[mid + d]);
            }
        }
        let mut excess = history.total_tokens().saturating_sub(budget);
        let mut drop = vec![false; units.len()];
        for &u in &order {
            if excess == 0 {
                break;
            }
            drop[u] = true;
            excess = excess.saturating_sub(tokens[u]);
        }
        // where the gap starts: the input index of the first message dropped
        let gap = units.iter().zip(&drop).find(|(_, d)| **d).map(|(u, _)| history.origin(u.messages.start));
        if drop.iter().any(|d| *d) {
            history.drop_units(&drop, "dropped from the middle to fit the budget");
        }
        self.fit_what_is_left(history, budget);
        let skipped = messages_before - history.len();
        if let (Some(note), true) = (placeholder(skipped), skipped > 0) {
            let at = match gap {
                Some(Origin::Input(first)) => (0..history.len())
                    .find(|&i| matches!(history.origin(i), Origin::Input(k) if k > first))
                    .unwrap_or(history.len()),
                _ => history.len(),
            };
            let at = crate::validate::note_position(history.messages(), at, history.provider());
            history.insert(at, note, format!("placeholder for {skipped} messages dropped from the middle"));
        }
        Ok(())
    }
}

impl MiddleOut {
    /// Still over after the middle went: cuts what is kept but not protected, then drops it,
    /// oldest first; with `shorten_protected`, cuts protected texts last.
    fn fit_what_is_left(&self, history: &mut History<'_>, budget: usize) {
        if history.total_tokens() <= budget {
            return;
        }
        let (protected, _) = self.reserved(history);
        let units = history.shared_units();
        let eligible: Vec<usize> = units
            .iter()
            .zip(&protected)
            .filter(|(_, p)| !**p)
            .flat_map(|(u, _)| u.messages.clone())
            .collect();
        if self.shorten {
            self.shorten_texts(history, &eligible, budget);
        }
        if history.total_tokens() > budget {
            let (protected, _) = self.reserved(history);
            let units = history.shared_units();
            let mut excess = history.total_tokens() - budget;
            let mut drop = vec![false; units.len()];
            for (i, unit) in units.iter().enumerate() {
                if excess == 0 {
                    break;
                }
                if !protected[i] {
                    drop[i] = true;
                    excess = excess.saturating_sub(history.tokens_of(unit.messages.clone()));
                }
            }
            history.drop_units(&drop, "dropped to fit the budget after the middle was gone");
        }
        if history.total_tokens() > budget && self.shorten_protected {
            let all: Vec<usize> = (0..history.len()).collect();
            self.shorten_texts(history, &all, budget);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::{anthropic, openai, run_in, texts as lines};
    use crate::validate::validate;

    fn long_chat(turns: usize) -> Vec<Message> {
        let mut items = vec![r#"{"role": "system", "content": "be brief"}"#.to_string()];
        for t in 0..turns {
            items.push(format!(r#"{{"role": "user", "content": "question {t} {}"}}"#, "word ".repeat(20)));
            items.push(format!(
                r#"{{"role": "assistant", "content": null, "tool_calls": [{{"id": "c{t}", "type": "function", "function": {{"name": "f", "arguments": "{{}}"}}}}]}}"#
            ));
            items.push(format!(
                r#"{{"role": "tool", "tool_call_id": "c{t}", "content": "result {t} {}"}}"#,
                "data ".repeat(30)
            ));
            items.push(format!(r#"{{"role": "assistant", "content": "answer {t}"}}"#));
        }
        openai(&format!("[{}]", items.join(",")))
    }

    fn cx(budget: usize) -> StepContext<'static> {
        StepContext::new(Format::OpenAi).with_budget(budget)
    }

    #[test]
    fn drops_from_the_middle_and_keeps_start_and_end() {
        let input = long_chat(10);
        let out = run_in(&MiddleOut::default(), &input, cx(400));
        let l = lines(&out);
        assert_eq!(l[0], "system: be brief");
        assert!(l[1].starts_with("user: question 0"), "the start is kept: {l:?}");
        assert_eq!(l.last().unwrap(), "assistant: answer 9");
        assert!(l.iter().any(|x| x.starts_with("user: question 9")), "the newest user turn is kept");
        assert!(out.len() < input.len());
        assert_eq!(validate(&out, Format::OpenAi), vec![]);
        let total = crate::steps::test_support::counter().count(&out, None).total;
        assert!(total <= 400, "{total}");
        // the dropped units are a middle run: the kept questions are a prefix and a suffix
        let kept: Vec<usize> = l
            .iter()
            .filter_map(|x| x.strip_prefix("user: question "))
            .map(|x| x.split(' ').next().unwrap().parse().unwrap())
            .collect();
        let gap = kept.windows(2).filter(|w| w[1] != w[0] + 1).count();
        assert_eq!(gap, 1, "one contiguous gap: {kept:?}");
    }

    #[test]
    fn fits_nothing_to_do_when_within_budget() {
        let input = long_chat(2);
        let out = run_in(&MiddleOut::default(), &input, cx(100_000));
        assert_eq!(out, input);
    }

    #[test]
    fn shortens_a_huge_tool_result_when_dropping_is_not_enough() {
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "read the log"}},
                {{"role": "assistant", "content": null, "tool_calls": [{{"id": "a", "type": "function", "function": {{"name": "cat", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": "{}"}}]"#,
            "line of the log é ".repeat(2000)
        ));
        // the step is recent (kept by default): its result is cut rather than dropped
        let out = run_in(&MiddleOut::default(), &input, cx(500));
        assert_eq!(out.len(), 3);
        let total = crate::steps::test_support::counter().count(&out, None).total;
        assert!(total <= 500, "{total}");
        assert!(out[2].text_content().contains(MIDDLE_CUT_MARKER));
    }

    #[test]
    fn anthropic_output_stays_valid_with_a_placeholder() {
        let input = anthropic(
            r#"[{"role": "user", "content": "first task words words words words"},
                {"role": "assistant", "content": "reply one words words words words words"},
                {"role": "user", "content": "second words words words words words words"},
                {"role": "assistant", "content": "reply two words words words words words"},
                {"role": "user", "content": "third words words words words words"},
                {"role": "assistant", "content": "reply three words words words words"},
                {"role": "user", "content": "newest question"}]"#,
        );
        let cx = StepContext::new(Format::Anthropic).with_budget(60);
        let step =
            MiddleOut { placeholder: Some("[{skipped} messages omitted]".into()), ..MiddleOut::default() };
        let out = run_in(&step, &input, cx);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert!(out.iter().any(|m| m.text_content().contains("messages omitted]")), "{:?}", lines(&out));
        assert!(out.last().unwrap().text_content().contains("newest question"));
    }

    #[test]
    fn a_placeholder_never_ends_the_current_tool_turn() {
        // one tool turn with thinking, no user words: user text in the middle of it would start
        // a new turn whose first assistant message has no thinking
        let step = |i: usize| {
            format!(
                r#"{{"role": "assistant", "content": [{{"type": "tool_use", "id": "t{i}", "name": "a", "input": {{"q": "{}"}}}}]}},
                   {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t{i}", "content": "{}"}}]}}"#,
                "words ".repeat(20),
                "result ".repeat(30)
            )
        };
        let later: Vec<String> = (1..8).map(step).collect();
        let input = anthropic(&format!(
            r#"[{{"role": "user", "content": "go"}},
                {{"role": "assistant", "content": [{{"type": "thinking", "thinking": "plan", "signature": "c2ln"}},
                    {{"type": "tool_use", "id": "t0", "name": "a", "input": {{}}}}]}},
                {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t0", "content": "r"}}]}},
                {}]"#,
            later.join(",")
        ));
        let cx = StepContext::new(Format::Anthropic).with_budget(400);
        let step =
            MiddleOut { placeholder: Some("[{skipped} messages omitted]".into()), ..MiddleOut::default() };
        let out = run_in(&step, &input, cx);
        assert!(out.len() < input.len());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        assert!(out.iter().any(|m| m.text_content().contains("messages omitted]")), "{:?}", lines(&out));
    }
}
