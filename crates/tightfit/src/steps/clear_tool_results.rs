//! `clear_tool_results`: replace the content of old tool results by a short placeholder,
//! keeping the calls (Anthropic context editing's `clear_tool_uses`, LangChain's context
//! editing).
//!
//! In an agent loop old tool outputs (files read, pages fetched, search hits) are most of the
//! context and rarely read again; the calls themselves say what was done. So every result but
//! the `keep` most recent ones (and those inside the last `keep_units` units, and those of
//! `exclude_tools`) has its content replaced by `placeholder`; with `clear_inputs` the call's
//! arguments become `{}` too.
//!
//! With `until_fits` (the default ladder's setting) results are cleared oldest first, a
//! message at a time, and clearing stops as soon as the history is within the call's budget:
//! no more context goes than the budget needs. The text result that crosses the line, when
//! cutting it would keep at least [`MIN_CUT_KEEPS`] tokens of it (one 250k-token log in a
//! conversation 150k over a 128k budget), is not cleared but cut, head and tail, to the length
//! that fits, and the report says so.
//!
//! Each OpenAI `tool` (or legacy `function`) message is one result, and so is each Anthropic
//! `tool_result` block. A result is only cleared when it is bigger than `min_tokens` and than
//! the placeholder itself (a placeholder never makes a result grow); a media part counts as
//! bigger than any threshold. The placeholder is fixed text, the same whatever the budget,
//! so the cleared prefix of a conversation stays byte-identical from one request to the next
//! and prompt caches keep hitting. Validity: every call keeps a result, and nothing moves.
//! Cost: O(messages + calls), plus counting the text of results when `min_tokens` or the
//! placeholder's size must be compared (stopping at the threshold).

use super::shared::written::Written;
use std::ops::Range;
use std::sync::Arc;

use super::shared::cut::{plan_cut, until_fits_budget, TRUNCATED_MARKER};
use super::{ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};
use crate::calls::{result_keys, CallKeyRef, ResultAt};
use crate::history::History;
use crate::message::{Arguments, CallStyle, ContentForm, Part, Role, TextPart};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::record::{cleared_line, Detail};
use crate::text::{KeepPart, Length};
use crate::tokens::TokenCounter;
use crate::units::UnitKind;

/// With `until_fits`, the result that crosses the line is cut rather than cleared when the cut
/// keeps at least this many tokens of it.
pub const MIN_CUT_KEEPS: usize = 200;

/// The default placeholder.
pub const CLEARED_RESULT: &str = "[tool result cleared to save context]";

/// `clear_tool_results` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<ClearToolResults>(
    "clear_tool_results",
    &["clear_tool_uses"],
)
.documented(
    "Replace old tool results by a placeholder, keeping the calls.",
    &[
        KeyDoc::new("keep", KeyUnit::Count("tool results"), "the most recent results left whole"),
        KeyDoc::new(
            "keep_units",
            KeyUnit::Units,
            "when set, results inside the last this many units also stay",
        ),
        KeyDoc::new("exclude_tools", KeyUnit::Names, "tools whose results are never cleared"),
        KeyDoc::new("placeholder", KeyUnit::Text, "the text a cleared result holds"),
        KeyDoc::new(
            "min_tokens",
            KeyUnit::Tokens,
            "only results bigger than this (and than the placeholder) are cleared",
        ),
        KeyDoc::new("clear_inputs", KeyUnit::Flag, "also replace a cleared result's call arguments by `{}`"),
        KeyDoc::new(
            "until_fits",
            KeyUnit::Flag,
            "clear oldest first only until the history fits the call's budget",
        ),
    ],
);

/// Replaces old tool results by a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClearToolResults {
    /// How many of the most recent results stay. Defaults to 3 (Anthropic's default).
    pub keep: usize,
    /// When set, results inside the last N units also stay. Defaults to unset.
    pub keep_units: Option<usize>,
    /// Tools whose results are never cleared. Defaults to none.
    pub exclude_tools: Vec<String>,
    /// The text a cleared result holds. Defaults to
    /// `[tool result cleared to save context]`. Must not be blank.
    pub placeholder: String,
    /// Only results bigger than this many tokens are cleared. Defaults to 0: any result
    /// bigger than the placeholder.
    pub min_tokens: usize,
    /// Also replace the arguments of a cleared result's call by `{}`. Defaults to false.
    pub clear_inputs: bool,
    /// Clear oldest first and stop once the history is within the call's budget (which the
    /// step then needs), instead of clearing every old result. Defaults to false.
    pub until_fits: bool,
}

impl Default for ClearToolResults {
    fn default() -> ClearToolResults {
        ClearToolResults {
            keep: 3,
            keep_units: None,
            exclude_tools: Vec::new(),
            placeholder: CLEARED_RESULT.to_string(),
            min_tokens: 0,
            clear_inputs: false,
            until_fits: false,
        }
    }
}

impl ClearToolResults {
    /// Clears every result but the `keep` most recent ones.
    pub fn keeping(keep: usize) -> ClearToolResults {
        ClearToolResults { keep, ..ClearToolResults::default() }
    }
}

impl FromParams for ClearToolResults {
    /// Keys: `keep` (alias `keep_last`), `keep_units`, `exclude_tools` (alias `exclude`),
    /// `placeholder`, `min_tokens`, `clear_inputs` (alias `clear_tool_inputs`), `until_fits`
    /// (alias `only_as_needed`).
    fn from_params(p: &mut Params) -> Result<ClearToolResults, ConfigError> {
        let step = ClearToolResults::default();
        Ok(ClearToolResults {
            keep: p.usize_or(&["keep", "keep_last"], step.keep)?,
            keep_units: p.usize(&["keep_units"])?,
            exclude_tools: p.strings_or(&["exclude_tools", "exclude"], &step.exclude_tools)?,
            placeholder: p.string_or(&["placeholder"], &step.placeholder)?,
            min_tokens: p.usize_or(&["min_tokens"], step.min_tokens)?,
            clear_inputs: p.bool_or(&["clear_inputs", "clear_tool_inputs"], step.clear_inputs)?,
            until_fits: p.bool_or(&["until_fits", "only_as_needed"], step.until_fits)?,
        })
    }
}

/// One tool result of the history, borrowed from it (80,000 parallel results cost no
/// allocation each).
#[derive(Debug, Clone, Copy)]
struct ResultSite<'h> {
    at: ResultAt,
    unit: usize,
    /// The call it answers: the tool's name, and where the call is (message, part).
    call: Option<(&'h str, usize, usize)>,
    /// The key it names its call by; `None` when not read (a whole tool message's, when no
    /// call is looked up: its line is written from the message when read).
    key: Option<CallKeyRef<'h>>,
}

impl ResultSite<'_> {
    fn key(&self) -> &str {
        self.key.map_or("", CallKeyRef::as_str)
    }
}

/// The clearing of the results of one message, worked out before the history changes.
struct MessageClear {
    message: usize,
    /// The line of the report (written when read for a whole tool message).
    detail: Detail,
    /// The results of the message to clear, a range of the list of cleared sites.
    sites: Range<usize>,
}

impl Step for ClearToolResults {
    fn name(&self) -> &'static str {
        "clear_tool_results"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("clear_tool_results")
            .key("keep", self.keep)
            .key("keep_units", self.keep_units)
            .key("exclude_tools", self.exclude_tools.clone())
            .key("placeholder", self.placeholder.as_str())
            .key("min_tokens", self.min_tokens)
            .key("clear_inputs", self.clear_inputs)
            .key("until_fits", self.until_fits)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.placeholder.trim().is_empty() {
            return Err(ConfigError::new("placeholder", "must not be blank"));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        let budget = until_fits_budget(self.name(), self.until_fits, cx)?;
        if budget.is_some_and(|b| history.total_tokens() <= b) {
            return Ok(());
        }
        let (edits, at, calls) = self.plan(history);
        let (cleared, cut) = self.clear(history, edits, &at, budget);
        if self.clear_inputs {
            let calls = calls
                .into_iter()
                .filter(|(site, _)| *site < cleared && !cut.contains(site))
                .map(|(_, call)| call)
                .collect();
            clear_inputs(history, calls);
        }
        Ok(())
    }
}

/// The call whose arguments a cleared result's call has: (message, part, key).
type CallAt = (usize, usize, String);

/// A call to clear the input of, after the index of its result among the cleared sites.
type SiteCall = (usize, CallAt);

impl ClearToolResults {
    /// What to clear, read from the history before it changes: one edit per message (for one
    /// line of the report each), where the cleared results are, and (with `clear_inputs`) the
    /// calls whose arguments go.
    fn plan(&self, history: &History<'_>) -> (Vec<MessageClear>, Vec<ResultAt>, Vec<SiteCall>) {
        // the calls are looked up only when a result's call matters (its tool's name, or its
        // input to clear): without that, no assistant message is opened
        let sites = result_sites(history, !self.exclude_tools.is_empty() || self.clear_inputs);
        let units = history.units().len();
        let first_kept_unit = self.keep_units.map_or(units, |n| units.saturating_sub(n));
        let counter = history.counter().text_counter();
        let threshold = self.min_tokens.max(counter.count(&self.placeholder));
        let old = sites.len().saturating_sub(self.keep);
        // whether each shared replacing text exceeds the threshold, by its address: the texts
        // are held by the history for as long as this runs
        let mut weighed: foldhash::HashMap<*const u8, bool> = Default::default();
        let clear: Vec<ResultSite<'_>> = sites[..old]
            .iter()
            .filter(|s| s.unit < first_kept_unit && !history.is_pinned(s.at.message()))
            .filter(|s| !s.call.is_some_and(|(name, _, _)| self.exclude_tools.iter().any(|t| t == name)))
            .filter(|s| {
                let at = s.at.message();
                if let ResultAt::Message(_) = s.at {
                    // a result replaced before, by a text: read without writing it out, and
                    // weighed once per text (the repeats of one result share their reference)
                    if let Some(text) = history.replacing_text(at) {
                        let ptr = Arc::as_ptr(text).cast::<u8>();
                        return *weighed.entry(ptr).or_insert_with(|| text_exceeds(text, threshold, counter));
                    }
                    // an unchanged one: weighed by the count counting kept, unread
                    if let Some(known) = history.input_result_exceeds(at, threshold) {
                        return known;
                    }
                }
                s.at.parts(history.message(at)).is_some_and(|parts| exceeds(parts, threshold, counter))
            })
            .copied()
            .collect();
        let mut edits = Vec::new();
        let mut i = 0;
        while i < clear.len() {
            let message = clear[i].at.message();
            let same = clear[i..].iter().take_while(|s| s.at.message() == message).count();
            let detail = match &clear[i..i + same] {
                // most old results, most of which a later step drops: written when read
                [site] if matches!(site.at, ResultAt::Message(_)) => Detail::Cleared,
                sites => Detail::Text(cleared_line(sites.iter().map(ResultSite::key))),
            };
            edits.push(MessageClear { message, detail, sites: i..i + same });
            i += same;
        }
        let calls = if self.clear_inputs {
            clear
                .iter()
                .enumerate()
                .filter_map(|(k, s)| {
                    s.call.map(|(_, message, part)| (k, (message, part, s.key().to_string())))
                })
                .collect()
        } else {
            Vec::new()
        };
        let at = clear.iter().map(|s| s.at).collect();
        (edits, at, calls)
    }

    /// Clears the results of `edits` in order, a message at a time, stopping once the history
    /// is within `budget` when there is one (where a result much bigger than what is left to
    /// free is cut to fit instead). Returns how many of the sites in `at` it went through, and
    /// which of them it cut rather than cleared.
    fn clear(
        &self,
        history: &mut History<'_>,
        edits: Vec<MessageClear>,
        at: &[ResultAt],
        budget: Option<usize>,
    ) -> (usize, Vec<usize>) {
        let placeholder = &self.placeholder;
        let shared_placeholder: Arc<str> = Arc::from(placeholder.as_str());
        let mut cleared = 0;
        let mut cut = Vec::new();
        // oldest first, an original `dedupe` referred to would move into the next copy, which
        // this loop then clears in turn: its references are mended once, where they stop
        history.defer_mends();
        for edit in edits {
            let excess = match budget {
                Some(b) if history.total_tokens() <= b => {
                    // the originals given back may not fit: only a settled count is trusted
                    history.settle_mends();
                    if history.total_tokens() <= b {
                        break;
                    }
                    history.defer_mends();
                    Some(history.total_tokens() - b)
                }
                Some(b) => Some(history.total_tokens() - b),
                None => None,
            };
            let first = edit.sites.start;
            cleared = edit.sites.end;
            let same = &at[edit.sites];
            if let (Some(excess), [site]) = (excess, same) {
                if cut_to_fit(history, *site, excess) {
                    cut.push(first);
                    continue;
                }
            }
            let detail = edit.detail;
            if let [ResultAt::Message(_)] = same {
                // a whole tool message: not copied, the placeholder shared (written out when
                // read, most never are)
                history.replace_result_text_noting(
                    edit.message,
                    ChangeKind::Replaced,
                    detail,
                    Arc::clone(&shared_placeholder),
                );
                continue;
            }
            history.edit_noting(edit.message, ChangeKind::Replaced, detail, |m| {
                for site in same {
                    match *site {
                        ResultAt::Message(_) => {
                            m.parts = vec![Part::Text(TextPart::new(placeholder.as_str()))];
                            m.content_form = ContentForm::Text;
                        }
                        ResultAt::Block(_, p) => {
                            if let Some(Part::ToolResult(r)) = m.parts.get_mut(p) {
                                r.parts = vec![Part::Text(TextPart::new(placeholder.as_str()))];
                                r.content_form = ContentForm::Text;
                            }
                        }
                    }
                }
            });
        }
        history.settle_mends();
        (cleared, cut)
    }
}

/// Cuts the text result at `site` head and tail by `excess` tokens when it keeps at least
/// [`MIN_CUT_KEEPS`] (clearing it would free more than the budget needs); returns whether it
/// did. A result with media or other parts is left to be cleared. Cost: counting the result
/// up to that size, and a cut by tokens when it is bigger.
fn cut_to_fit(history: &mut History<'_>, site: ResultAt, excess: usize) -> bool {
    let mut left = excess + MIN_CUT_KEEPS;
    // the message's count (cached) bounds its result's: a result no bigger than what is
    // left is cleared, not cut, and need not be tokenized (every warm fit would otherwise
    // tokenize every result it clears)
    if history.tokens_of(site.message()..site.message() + 1) <= left {
        return false;
    }
    let message = history.message(site.message());
    let Some(parts) = site.parts(message) else { return false };
    let counter = history.counter().text_counter();
    let mut big = false;
    for part in parts {
        let Part::Text(t) = part else { return false };
        match counter.count_till_limit(&t.text, left) {
            Some(n) => left -= n,
            None => big = true,
        }
    }
    if !big {
        return false;
    }
    let tokens: usize =
        parts.iter().map(|p| if let Part::Text(t) = p { counter.count(&t.text) } else { 0 }).sum();
    let limit = Length::Tokens(tokens - excess);
    let Some(plan) = plan_cut(parts, limit, KeepPart::HeadAndTail, TRUNCATED_MARKER, counter) else {
        return false;
    };
    let detail = format!(
        "tool result {:?} cut to fit the budget instead of cleared ({tokens} tokens, {excess} to free): {}",
        site.label(message),
        plan.detail
    );
    history.edit(site.message(), ChangeKind::Truncated, detail, |m| {
        if let Some(parts) = site.parts_mut(m) {
            plan.apply(parts);
        }
    });
    true
}

/// Replaces the arguments of the calls of cleared results (`calls`: message, part, key) by
/// `{}` (an empty input for a free-form custom tool), one edit per assistant message.
fn clear_inputs(history: &mut History<'_>, calls: Vec<CallAt>) {
    let mut calls: Vec<(usize, usize, &str)> = calls
        .iter()
        .map(|(message, part, key)| (*message, *part, key.as_str()))
        .filter(|(message, part, _)| match &history.message(*message).parts[*part] {
            Part::ToolCall(c) => c.arguments != empty_arguments(c.style),
            _ => false,
        })
        .collect();
    calls.sort_unstable();
    calls.dedup();
    let mut i = 0;
    while i < calls.len() {
        let message = calls[i].0;
        let same: Vec<(usize, usize, &str)> =
            calls[i..].iter().take_while(|c| c.0 == message).copied().collect();
        i += same.len();
        let ids: Vec<&str> = same.iter().map(|c| c.2).collect();
        history.edit(
            message,
            ChangeKind::Replaced,
            format!("cleared the input of tool call(s) {ids:?}"),
            |m| {
                for (_, part, _) in &same {
                    if let Some(Part::ToolCall(c)) = m.parts.get_mut(*part) {
                        c.arguments = empty_arguments(c.style);
                    }
                }
            },
        );
    }
}

fn empty_arguments(style: CallStyle) -> Arguments {
    match style {
        CallStyle::AnthropicToolUse => Arguments::Json(serde_json::Value::Object(Default::default())),
        CallStyle::OpenAiCustom => Arguments::Text(String::new()),
        _ => Arguments::Text("{}".to_string()),
    }
}

/// Every tool result in message order, with the call it answers where there is one (when
/// `with_calls`; else no call is looked up).
fn result_sites<'h>(history: &'h History<'_>, with_calls: bool) -> Vec<ResultSite<'h>> {
    // a result a message that has results, usually (Anthropic's may hold several): made at
    // that size, the list is not grown and copied from empty over a long history
    let mut sites =
        Vec::with_capacity((0..history.len()).filter(|&i| history.shape(i).has_results()).count());
    // the calls of the step, by the key results name them with (the first call of a key)
    let mut calls: foldhash::HashMap<CallKeyRef<'h>, (&'h str, usize, usize)> = Default::default();
    for (u, unit) in history.units().iter().enumerate() {
        // a unit without results has nothing to clear (most user turns and replies): known by
        // the shapes of its messages, without opening them
        if !unit.messages.clone().any(|i| history.shape(i).has_results()) {
            continue;
        }
        calls.clear();
        if with_calls && unit.kind == UnitKind::AssistantStep {
            // the step's assistant messages: one, or the items of one Responses response
            for at in unit.messages.clone().take_while(|&i| history.message(i).role == Role::Assistant) {
                if !history.shape(at).has_calls() {
                    continue;
                }
                for (p, part) in history.message(at).parts.iter().enumerate() {
                    if let Part::ToolCall(c) = part {
                        let key = CallKeyRef::of_call(c.id.as_deref(), &c.name);
                        calls.entry(key).or_insert((c.name.as_str(), at, p));
                    }
                }
            }
        }
        for i in unit.messages.clone().filter(|&i| history.shape(i).has_results()) {
            // a whole tool message is one result under its own key: without calls to look
            // up, the message is not opened here
            if !with_calls && history.shape(i).is_whole_result() {
                sites.push(ResultSite { at: ResultAt::Message(i), unit: u, call: None, key: None });
                continue;
            }
            // a result replaced before (by `dedupe`) is not written out to read its ids
            for (key, at) in result_keys(history.ids_of(i), i) {
                let call = if with_calls { calls.get(&key).copied() } else { None };
                sites.push(ResultSite { at, unit: u, call, key: Some(key) });
            }
        }
    }
    sites
}

/// Whether `text` has more than `threshold` tokens (counted up to it).
fn text_exceeds(text: &str, threshold: usize, counter: &dyn TokenCounter) -> bool {
    counter.count_till_limit_again(text, threshold).is_none()
}

/// Whether `parts` hold more than `threshold` tokens: their text counted (stopping at the
/// threshold), any other part counting as more.
fn exceeds(parts: &[Part], threshold: usize, counter: &dyn TokenCounter) -> bool {
    let mut left = threshold;
    for part in parts {
        match part {
            Part::Text(t) => match counter.count_till_limit_again(&t.text, left) {
                Some(n) => left -= n,
                None => return true,
            },
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::message::Message;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{
        anthropic, assert_valid, counter, openai, run, run_in, texts, total_tokens,
    };
    use crate::tokens::CountCache;
    use crate::validate::validate;

    fn long(word: &str) -> String {
        format!("{word} ").repeat(40)
    }

    /// user, then `n` steps each calling `read` (id r0, r1, ...) with a long result, then
    /// a user turn.
    fn loop_history(n: usize) -> Vec<Message> {
        let mut messages = vec![r#"{"role": "user", "content": "go"}"#.to_string()];
        for i in 0..n {
            messages.push(format!(
                r#"{{"role": "assistant", "content": null, "tool_calls": [
                    {{"id": "r{i}", "type": "function", "function": {{"name": "{}", "arguments": "{{\"path\": \"f{i}\"}}"}}}}]}}"#,
                if i == 0 { "memory" } else { "read" }
            ));
            messages.push(format!(
                r#"{{"role": "tool", "tool_call_id": "r{i}", "content": "{}"}}"#,
                long(&format!("file{i}"))
            ));
        }
        messages.push(r#"{"role": "user", "content": "next"}"#.to_string());
        openai(&format!("[{}]", messages.join(",")))
    }

    fn tool_texts(out: &[Message]) -> Vec<String> {
        out.iter().filter(|m| m.tool_call_id.is_some()).map(|m| m.text_content()).collect()
    }

    #[test]
    fn clears_all_but_the_most_recent_results() {
        let input = loop_history(5);
        let out = run(&ClearToolResults::keeping(2), &input);
        let results = tool_texts(&out);
        assert_eq!(results[..3], [CLEARED_RESULT, CLEARED_RESULT, CLEARED_RESULT]);
        assert_eq!(results[3..], [long("file3"), long("file4")]);
        // the calls are kept as they were
        assert_eq!(out[1], input[1]);
        assert_valid(&out);
        // running again changes nothing, whatever the budget
        let again = run(&ClearToolResults::keeping(2), &out);
        assert_eq!(again, out);
        let cx = StepContext::new(Format::OpenAi).with_budget(10);
        assert_eq!(run_in(&ClearToolResults::keeping(2), &input, cx), out);
    }

    #[test]
    fn until_fits_clears_oldest_first_only_what_the_budget_needs() {
        let input = loop_history(5);
        let step = ClearToolResults { until_fits: true, ..ClearToolResults::keeping(1) };
        // the budgets that clearing the oldest k results meets exactly
        for k in 0..=4 {
            let needed = total_tokens(&run(&ClearToolResults::keeping(5 - k), &input));
            let out = run_in(&step, &input, StepContext::new(Format::OpenAi).with_budget(needed));
            let results = tool_texts(&out);
            let cleared = results.iter().filter(|r| *r == CLEARED_RESULT).count();
            assert_eq!(cleared, k, "budget {needed}");
            assert!(results[..k].iter().all(|r| r == CLEARED_RESULT), "the oldest go first");
            assert_eq!(total_tokens(&out), needed);
            assert_valid(&out);
        }
        // a budget nothing meets: every result but the kept one, as without `until_fits`
        let out = run_in(&step, &input, StepContext::new(Format::OpenAi).with_budget(10));
        assert_eq!(out, run(&ClearToolResults::keeping(1), &input));
        // with its inputs: only the cleared results' calls lose their arguments
        let step = ClearToolResults { clear_inputs: true, ..step };
        let needed = total_tokens(&run(&ClearToolResults::keeping(3), &input));
        let out = run_in(&step, &input, StepContext::new(Format::OpenAi).with_budget(needed));
        let args: Vec<String> =
            out.iter().flat_map(|m| m.tool_calls()).map(|c| c.arguments.to_json_string()).collect();
        assert_eq!(args[..3], ["{}".to_string(), "{}".to_string(), r#"{"path": "f2"}"#.to_string()]);
    }

    #[test]
    fn until_fits_cuts_a_result_far_bigger_than_what_must_go() {
        // the oldest result is a long log; the budget needs a tenth of it gone
        let mut input = loop_history(3);
        let log: String = (0..2000).map(|i| format!("line {i} ok\n")).collect();
        input[2].parts = vec![Part::Text(TextPart::new(log.as_str()))];
        let before = total_tokens(&input);
        let budget = before - 600;
        let step = ClearToolResults { until_fits: true, ..ClearToolResults::keeping(1) };
        let out = run_in(&step, &input, StepContext::new(Format::OpenAi).with_budget(budget));
        let after = total_tokens(&out);
        assert!(after <= budget && after + 50 > budget, "{after} tokens for a budget of {budget}");
        let kept = out[2].text_content();
        assert!(kept.starts_with("line 0 ok\n") && kept.ends_with("line 1999 ok\n"), "head and tail stay");
        assert!(kept.contains(crate::steps::TRUNCATED_MARKER));
        assert_eq!(tool_texts(&out)[1..], tool_texts(&input)[1..], "nothing else goes");
        // a result that would keep less than MIN_CUT_KEEPS tokens is cleared whole, as before
        let log_tokens = before - total_tokens(&run(&ClearToolResults::keeping(2), &input));
        let budget = before - (log_tokens - MIN_CUT_KEEPS + 20);
        let out = run_in(&step, &input, StepContext::new(Format::OpenAi).with_budget(budget));
        assert_eq!(out[2].text_content(), CLEARED_RESULT);
    }

    #[test]
    fn an_original_repeated_down_the_line_moves_once_to_where_clearing_stops() {
        // six reads of one file: dedupe leaves the first and five references to it
        let mut input = loop_history(6);
        for m in input.iter_mut().filter(|m| m.tool_call_id.is_some()) {
            m.parts = vec![Part::Text(TextPart::new(long("same").as_str()))];
        }
        let cx = StepContext::new(Format::OpenAi);
        let mut history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
        history.set_step("dedupe");
        crate::steps::Dedupe::default().apply(&mut history, &cx).unwrap();
        history.set_step("clear_tool_results");
        ClearToolResults::keeping(2).apply(&mut history, &cx).unwrap();
        let results: Vec<String> = (0..history.len())
            .map(|i| history.message(i))
            .filter(|m| m.tool_call_id.is_some())
            .map(|m| m.text_content())
            .collect();
        // the four oldest are cleared (the references among them too); the original is back
        // in the first result kept, and the newest points at it
        assert_eq!(results[..4], [CLEARED_RESULT; 4]);
        assert_eq!(results[4], long("same"));
        assert_eq!(results[5], "[identical to the result of tool call r4 above]");
        // moved once, not into each copy the step went on to clear
        let restores = (0..history.len())
            .flat_map(|i| history.changes(i).iter().map(move |c| (i, c)))
            .filter(|(i, c)| c.detail.render(history.message(*i)).starts_with("restored"))
            .count();
        assert_eq!(restores, 1);
        let rewrites = history.changes(history.len() - 2).len();
        assert_eq!(rewrites, 2, "the newest copy: deduped, then pointed at r4 once");
    }

    #[test]
    fn until_fits_needs_a_budget() {
        let step = ClearToolResults { until_fits: true, ..ClearToolResults::default() };
        let input = loop_history(2);
        let mut history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
        let err = step.apply(&mut history, &StepContext::new(Format::OpenAi)).unwrap_err();
        assert!(err.reason.contains("budget"), "{err}");
    }

    #[test]
    fn exclusions_units_and_sizes_keep_results() {
        let input = loop_history(5);
        let step = ClearToolResults { exclude_tools: vec!["memory".into()], ..ClearToolResults::keeping(0) };
        let results = tool_texts(&run(&step, &input));
        assert_eq!(results[0], long("file0"));
        assert!(results[1..].iter().all(|r| r == CLEARED_RESULT));
        // the last 3 units are the steps of r3 and r4 (each with its result) and the user turn
        let step = ClearToolResults { keep_units: Some(3), ..ClearToolResults::keeping(0) };
        let results = tool_texts(&run(&step, &input));
        assert_eq!(results[2..], [CLEARED_RESULT.to_string(), long("file3"), long("file4")]);
        // no result is bigger than 1000 tokens
        let step = ClearToolResults { min_tokens: 1000, ..ClearToolResults::keeping(0) };
        assert_eq!(run(&step, &input), input);
        // a result smaller than the placeholder is left alone
        let small = openai(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "ok"}]"#,
        );
        assert_eq!(run(&ClearToolResults::keeping(0), &small), small);
    }

    #[test]
    fn clears_inputs_when_asked() {
        let input = loop_history(3);
        let step = ClearToolResults { clear_inputs: true, ..ClearToolResults::keeping(1) };
        let out = run(&step, &input);
        let args: Vec<String> =
            out.iter().flat_map(|m| m.tool_calls()).map(|c| c.arguments.to_json_string()).collect();
        assert_eq!(args, vec!["{}", "{}", r#"{"path": "f2"}"#]);
        assert_valid(&out);
    }

    #[test]
    fn each_anthropic_block_is_a_result() {
        let big = long("page");
        let input = anthropic(&format!(
            r#"[{{"role": "user", "content": "go"}},
                {{"role": "assistant", "content": [
                    {{"type": "tool_use", "id": "a", "name": "fetch", "input": {{"url": "x"}}}},
                    {{"type": "tool_use", "id": "b", "name": "fetch", "input": {{"url": "y"}}}}]}},
                {{"role": "user", "content": [
                    {{"type": "tool_result", "tool_use_id": "a", "content": "{big}", "cache_control": {{"type": "ephemeral"}}}},
                    {{"type": "tool_result", "tool_use_id": "b", "content": [{{"type": "text", "text": "{big}"}}], "is_error": false}}]}},
                {{"role": "assistant", "content": [{{"type": "tool_use", "id": "c", "name": "fetch", "input": {{}}}}]}},
                {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "c", "content": "{big}"}}]}}]"#
        ));
        let step = ClearToolResults { clear_inputs: true, ..ClearToolResults::keeping(1) };
        let out = run_in(&step, &input, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        for (p, part) in out[2].parts.iter().enumerate() {
            let Part::ToolResult(r) = part else { panic!("a result") };
            assert_eq!(r.parts, vec![Part::Text(TextPart::new(CLEARED_RESULT))], "block {p}");
            assert_eq!(r.content_form, ContentForm::Text);
        }
        let Part::ToolResult(first) = &out[2].parts[0] else { panic!("a result") };
        assert!(first.extra.contains_key("cache_control"), "other fields stay");
        let Part::ToolResult(last) = &out[4].parts[0] else { panic!("a result") };
        assert_eq!(last.parts, vec![Part::Text(TextPart::new(big.as_str()))]);
        let inputs: Vec<String> = out[1].tool_calls().map(|c| c.arguments.to_json_string()).collect();
        assert_eq!(inputs, vec!["{}", "{}"]);
        assert_eq!(texts(&out).len(), input.len());
    }

    #[test]
    fn a_blank_placeholder_is_refused() {
        let step = ClearToolResults { placeholder: " ".into(), ..ClearToolResults::default() };
        assert_eq!(step.check().unwrap_err().key, "placeholder");
    }

    #[test]
    fn reads_its_keys() {
        let map = serde_json::json!({"keep_last": 1, "keep_units": 4, "exclude": ["memory"],
            "placeholder": "[gone]", "min_tokens": 50, "clear_tool_inputs": true});
        let mut p = Params::new(map.as_object().unwrap().clone());
        let step = ClearToolResults::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(
            step,
            ClearToolResults {
                keep: 1,
                keep_units: Some(4),
                exclude_tools: vec!["memory".into()],
                placeholder: "[gone]".into(),
                min_tokens: 50,
                clear_inputs: true,
                until_fits: false,
            }
        );
    }
}
