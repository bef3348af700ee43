//! `truncate_tool_results`: cut long tool outputs to a fixed length (llmling
//! `TruncateToolOutputs`).
//!
//! A tool result is an OpenAI `tool` (or legacy `function`) message, or an Anthropic
//! `tool_result` block inside a user message. Its text parts are cut with
//! [`crate::text::cut`]: the head (the default, as llmling), the tail, or both, with a marker
//! where the cut is, never splitting a character or a grapheme. Media and other parts of a
//! result are left alone. A result with several text parts is cut as a whole: the limit applies
//! to their sum, parts are cut in order (the head from the first parts, the tail from the last
//! ones), parts that fall entirely in the cut go, and the marker is written once, where the
//! kept head ends.
//!
//! The cut length depends only on the configuration and the result, never on how far the
//! history is over its budget, so the same result is cut the same way on every call and the
//! provider's prompt cache stays warm. With `until_fits` (the default ladder's setting) only
//! as many results are cut as the budget needs: oldest first, a message at a time, stopping
//! once the history is within the call's budget. Calls and results are never removed, so the history
//! stays valid. Cost: O(length of the results' text) for character limits; for token limits
//! a tokenization of each result, and a binary search over the ones that are cut.

use super::shared::cut::{
    check_limit, fits_by_count, keep_part_word, plan_cut, read_keep_part, read_length, until_fits_budget,
    TextCut, TRUNCATED_MARKER,
};
use super::shared::written::Written;
use super::{ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};
use crate::calls::ResultAt;
use crate::history::History;
use crate::message::{Part, Role};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::shape::Shape;
use crate::text::{KeepPart, Length};

/// `truncate_tool_results` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<TruncateToolResults>("truncate_tool_results", &["truncate_tool_outputs"]).documented(
        "Cut long tool outputs (head, tail, or head and tail with a marker between).",
        &[
            KeyDoc::new(
                "max_length",
                KeyUnit::Characters,
                "the longest a result's text may be, the marker included",
            ),
            KeyDoc::new("max_tokens", KeyUnit::Tokens, "the same limit in tokens, instead of `max_length`"),
            KeyDoc::new(
                "keep",
                KeyUnit::Choice,
                "which part of a long result stays: `head`, `tail` or `head_and_tail`",
            ),
            KeyDoc::new("marker", KeyUnit::Text, "what is written where the text was cut"),
            KeyDoc::new(
                "keep_last",
                KeyUnit::Count("tool results"),
                "the newest results left whole, whatever their length",
            ),
            KeyDoc::new("exclude_tools", KeyUnit::Names, "tools whose results are never cut"),
            KeyDoc::new(
                "until_fits",
                KeyUnit::Flag,
                "cut oldest first only until the history fits the call's budget",
            ),
        ],
    );

/// Cuts long tool outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncateToolResults {
    /// The longest a result's text may be, the marker included. Defaults to 2000 characters
    /// (llmling's `max_length`). Must be at least 1.
    pub limit: Length,
    /// Which part of a long result is kept. Defaults to the head, as llmling.
    pub keep: KeepPart,
    /// What is written where the text was cut. Defaults to [`TRUNCATED_MARKER`].
    pub marker: String,
    /// How many of the newest results are left whole, whatever their length (the model is
    /// most likely to need them); each Anthropic `tool_result` block counts as one. Defaults
    /// to 0.
    pub keep_last: usize,
    /// Tools whose results are never cut. Defaults to none.
    pub exclude_tools: Vec<String>,
    /// Cut oldest first and stop once the history is within the call's budget (which the
    /// step then needs), instead of cutting every long result. Defaults to false.
    pub until_fits: bool,
}

impl Default for TruncateToolResults {
    fn default() -> TruncateToolResults {
        TruncateToolResults {
            limit: Length::Chars(2000),
            keep: KeepPart::Head,
            marker: TRUNCATED_MARKER.to_string(),
            keep_last: 0,
            exclude_tools: Vec::new(),
            until_fits: false,
        }
    }
}

impl TruncateToolResults {
    /// Cuts results longer than `limit` characters, keeping their head.
    pub fn chars(limit: usize) -> TruncateToolResults {
        TruncateToolResults { limit: Length::Chars(limit), ..TruncateToolResults::default() }
    }

    /// Cuts results longer than `limit` tokens, keeping their head.
    pub fn tokens(limit: usize) -> TruncateToolResults {
        TruncateToolResults { limit: Length::Tokens(limit), ..TruncateToolResults::default() }
    }
}

/// One tool result of a history: the message it is in, and the block within the message
/// for an Anthropic `tool_result` (`None`: the whole message is the result). Borrowed from the
/// history: with 80,000 results, owning the tool names cost an allocation per result.
struct ResultRef<'h> {
    at: ResultAt,
    tool: Option<&'h str>,
}

/// Every tool result of the history, in order, with the names of their tools when `named`
/// (only excluded tools need them). Only the messages whose shape says they hold results
/// are opened, and, when `named`, those that make calls.
fn tool_results<'h>(history: &'h History<'_>, named: bool) -> Vec<ResultRef<'h>> {
    let messages = history.messages();
    let with = |has: fn(Shape) -> bool| (0..messages.len()).filter(move |&i| has(history.shape(i)));
    // a hash map, not an ordered one: only looked up, and the ids of 80,000 parallel calls
    // made an ordered map's comparisons a visible part of the step; a repeated id keeps the
    // name of its last call, as before
    let call_names: foldhash::HashMap<&str, &str> = match named {
        true => with(Shape::has_calls)
            .flat_map(|i| messages[i].tool_calls())
            .filter_map(|c| Some((c.id.as_deref()?, c.name.as_str())))
            .collect(),
        false => Default::default(),
    };
    let name_of = |id: &str| call_names.get(id).copied();
    let mut results = Vec::new();
    for i in with(Shape::has_results) {
        // a tool message naming its call is one result: without a tool to exclude, its name
        // is not needed, and the message is not opened (it is, below, only if its result may
        // be cut)
        if !named && history.shape(i).is_whole_result() {
            results.push(ResultRef { at: ResultAt::Message(i), tool: None });
            continue;
        }
        // (a result replaced by a text has its role and ids from its input message)
        let m = history.ids_of(i);
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                let tool = name_of(id).or(m.name.as_deref());
                results.push(ResultRef { at: ResultAt::Message(i), tool });
            }
            Role::Function => {
                let name = m.name.as_deref().unwrap_or_default();
                results.push(ResultRef { at: ResultAt::Message(i), tool: Some(name) });
            }
            _ => {
                for (j, part) in m.parts.iter().enumerate() {
                    if let Part::ToolResult(r) = part {
                        let tool = name_of(r.tool_use_id.as_str());
                        results.push(ResultRef { at: ResultAt::Block(i, j), tool });
                    }
                }
            }
        }
    }
    results
}

/// The planned cut of one result, with its line of the report.
struct ResultCut {
    at: ResultAt,
    cut: TextCut,
    line: String,
}

impl Step for TruncateToolResults {
    fn name(&self) -> &'static str {
        "truncate_tool_results"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("truncate_tool_results")
            .length("max_length", "max_tokens", self.limit)
            .key("keep", keep_part_word(self.keep))
            .key("marker", self.marker.as_str())
            .key("keep_last", self.keep_last)
            .key("exclude_tools", self.exclude_tools.clone())
            .key("until_fits", self.until_fits)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        check_limit(self.limit, &self.marker, "max_length")
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        let budget = until_fits_budget(self.name(), self.until_fits, cx)?;
        let fits = |history: &History<'_>| budget.is_some_and(|b| history.total_tokens() <= b);
        if fits(history) {
            return Ok(());
        }
        // the results to cut, worked out before the first cut, which moves
        // nothing; the excluded tools' and the pinned messages' (a compaction's head) left out
        let all = tool_results(history, !self.exclude_tools.is_empty());
        let cuttable = all.len().saturating_sub(self.keep_last);
        let results: Vec<ResultAt> = all[..cuttable]
            .iter()
            .filter(|r| !r.tool.is_some_and(|t| self.exclude_tools.iter().any(|e| e == t)))
            .filter(|r| !history.is_pinned(r.at.message()))
            .map(|r| r.at)
            .collect();
        let mut next = 0;
        while next < results.len() {
            let message = results[next].message();
            let same = results[next..].iter().take_while(|r| r.message() == message).count();
            let sites = &results[next..next + same];
            next += same;
            // a message whose count bounds its texts within the limit has no result to cut,
            // known from its count without reading it: a long history's old results, most of
            // them cleared by the rung before, are not opened again
            if fits_by_count(history.counter(), history.tokens(message), self.limit) {
                continue;
            }
            // a result replaced by a text (cleared, or a repeat's reference) not written out:
            // that text is all it holds, and within a limit of characters by its length
            if let (Length::Chars(limit), Some(text)) = (self.limit, history.replacing_text(message)) {
                if text.len() <= limit {
                    continue;
                }
            }
            let mut list = Vec::new();
            for &at in sites {
                let m = history.message(message);
                let counter = history.counter().text_counter();
                let Some(parts) = at.parts(m) else { continue };
                if let Some(c) = plan_cut(parts, self.limit, self.keep, &self.marker, counter) {
                    let line = format!("tool result {:?}: {}", at.label(m), c.detail);
                    list.push(ResultCut { at, cut: c, line });
                }
            }
            if list.is_empty() {
                continue;
            }
            let detail = list.iter().map(|c| c.line.as_str()).collect::<Vec<_>>().join("; ");
            history.edit(message, ChangeKind::Truncated, detail, |m| {
                for c in &list {
                    if let Some(parts) = c.at.parts_mut(m) {
                        c.cut.apply(parts);
                    }
                }
            });
            if fits(history) {
                break;
            }
        }
        Ok(())
    }
}

impl FromParams for TruncateToolResults {
    /// Keys: `max_length` (alias `max_chars`) for a limit in characters or `max_tokens` for
    /// one in tokens, `keep` (`head`, `tail`, `head_and_tail`), `marker` (alias `suffix`),
    /// `keep_last`, `exclude_tools`, `until_fits` (alias `only_as_needed`).
    fn from_params(p: &mut Params) -> Result<TruncateToolResults, ConfigError> {
        let mut step = TruncateToolResults::default();
        step.limit = read_length(p, &["max_length", "max_chars"], &["max_tokens"], step.limit)?;
        step.keep = read_keep_part(p, step.keep)?;
        step.marker = p.string_or(&["marker", "suffix"], &step.marker)?;
        step.keep_last = p.usize_or(&["keep_last"], step.keep_last)?;
        step.exclude_tools = p.strings_or(&["exclude_tools"], &step.exclude_tools)?;
        step.until_fits = p.bool_or(&["until_fits", "only_as_needed"], step.until_fits)?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::message::Message;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, counter, openai, run, run_in, total_tokens};
    use crate::tokens::CountCache;
    use crate::validate::validate;
    use serde_json::json;

    const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz";

    fn marked(limit: usize) -> TruncateToolResults {
        TruncateToolResults { marker: "[cut]".into(), ..TruncateToolResults::chars(limit) }
    }

    fn parallel_openai() -> Vec<Message> {
        openai(&format!(
            r#"[{{"role": "system", "content": "be brief"}},
                {{"role": "user", "content": "look it up"}},
                {{"role": "assistant", "content": null, "tool_calls": [
                    {{"id": "a", "type": "function", "function": {{"name": "lookup", "arguments": "{{}}"}}}},
                    {{"id": "b", "type": "function", "function": {{"name": "search", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "b", "content": "{ALPHABET}"}},
                {{"role": "tool", "tool_call_id": "a", "content": "short"}},
                {{"role": "user", "content": "{ALPHABET}"}}]"#
        ))
    }

    #[test]
    fn cuts_long_openai_results_only() {
        let input = parallel_openai();
        let out = run(&marked(10), &input);
        assert_eq!(out[3].text_content(), "abcde[cut]");
        assert_eq!(out[4], input[4], "a short result is left alone");
        assert_eq!(out[5], input[5], "user text is not a tool result");
        assert_eq!(out[3].tool_call_id.as_deref(), Some("b"));
        assert_valid(&out);
    }

    /// A user turn, then `n` steps each reading a long file, then a user turn.
    fn reads(n: usize) -> Vec<Message> {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for i in 0..n {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("r{i}"), "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": format!("r{i}"), "content": (0..60).map(|k| k.to_string()).collect::<Vec<_>>().join(" ")}));
        }
        messages.push(json!({"role": "user", "content": "next"}));
        openai(&serde_json::Value::Array(messages).to_string())
    }

    #[test]
    fn until_fits_cuts_oldest_first_only_what_the_budget_needs() {
        let input = reads(4);
        let step = TruncateToolResults { until_fits: true, ..marked(10) };
        for k in 0..=4 {
            let needed = total_tokens(&run(&TruncateToolResults { keep_last: 4 - k, ..marked(10) }, &input));
            let out = run_in(&step, &input, StepContext::new(Format::OpenAi).with_budget(needed));
            let cut: Vec<bool> = out
                .iter()
                .filter(|m| m.role == Role::Tool)
                .map(|m| m.text_content().ends_with("[cut]"))
                .collect();
            assert_eq!(cut, (0..4).map(|i| i < k).collect::<Vec<_>>(), "budget {needed}");
            assert_eq!(total_tokens(&out), needed);
        }
        // the cut length never depends on the budget: a budget nothing meets cuts them all alike
        let out = run_in(&step, &input, StepContext::new(Format::OpenAi).with_budget(1));
        assert_eq!(out, run(&marked(10), &input));
        let mut history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
        let err = step.apply(&mut history, &StepContext::new(Format::OpenAi)).unwrap_err();
        assert!(err.reason.contains("budget"), "{err}");
    }

    #[test]
    fn keeps_the_tail_or_both_ends() {
        let input = parallel_openai();
        let tail = TruncateToolResults { keep: KeepPart::Tail, ..marked(10) };
        assert_eq!(run(&tail, &input)[3].text_content(), "[cut]vwxyz");
        let both = TruncateToolResults { keep: KeepPart::HeadAndTail, ..marked(11) };
        assert_eq!(run(&both, &input)[3].text_content(), "abc[cut]xyz");
    }

    #[test]
    fn the_default_is_llmlings() {
        let long = "x".repeat(2500);
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "go"}},
                {{"role": "assistant", "tool_calls": [{{"id": "a", "type": "function", "function": {{"name": "f", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": "{long}"}}]"#
        ));
        let out = run(&TruncateToolResults::default(), &input);
        let text = out[2].text_content();
        assert_eq!(text.chars().count(), 2000);
        assert_eq!(text, format!("{}{TRUNCATED_MARKER}", "x".repeat(2000 - TRUNCATED_MARKER.len())));
    }

    #[test]
    fn pinned_messages_stay_whole() {
        // a compaction pins its head: the results in it stay as the provider cached them
        let input = reads(4);
        let mut history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
        let first_result = (0..history.len()).find(|&i| history.message(i).tool_call_id.is_some()).unwrap();
        history.pin_inputs_before(first_result + 1);
        history.set_step("truncate_tool_results");
        marked(10).apply(&mut history, &StepContext::new(Format::OpenAi)).unwrap();
        assert_eq!(history.message(first_result), &input[first_result], "the pinned result stays");
        let cut = (first_result + 1..history.len())
            .filter(|&i| history.message(i).tool_call_id.is_some() && history.message(i) != &input[i])
            .count();
        assert!(cut > 0, "the others are cut");
        history.set_step("clear_tool_results");
        crate::steps::ClearToolResults::keeping(0)
            .apply(&mut history, &StepContext::new(Format::OpenAi))
            .unwrap();
        assert_eq!(history.message(first_result), &input[first_result], "and is not cleared either");
    }

    #[test]
    fn keep_last_and_excluded_tools_stay_whole() {
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "go"}},
                {{"role": "assistant", "tool_calls": [
                    {{"id": "a", "type": "function", "function": {{"name": "read", "arguments": "{{}}"}}}},
                    {{"id": "b", "type": "function", "function": {{"name": "grep", "arguments": "{{}}"}}}},
                    {{"id": "c", "type": "function", "function": {{"name": "grep", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": "{ALPHABET}"}},
                {{"role": "tool", "tool_call_id": "b", "content": "{ALPHABET}"}},
                {{"role": "tool", "tool_call_id": "c", "content": "{ALPHABET}"}}]"#
        ));
        let step = TruncateToolResults { keep_last: 1, ..marked(10) };
        let out = run(&step, &input);
        assert_eq!(texts(&out[2..]), vec!["abcde[cut]", "abcde[cut]", ALPHABET]);
        let step = TruncateToolResults { exclude_tools: vec!["read".into()], ..marked(10) };
        let out = run(&step, &input);
        assert_eq!(texts(&out[2..]), vec![ALPHABET, "abcde[cut]", "abcde[cut]"]);
        assert_valid(&out);
    }

    fn texts(messages: &[Message]) -> Vec<String> {
        messages.iter().map(Message::text_content).collect()
    }

    #[test]
    fn legacy_function_results_are_cut() {
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "go"}},
                {{"role": "assistant", "content": null, "function_call": {{"name": "f", "arguments": "{{}}"}}}},
                {{"role": "function", "name": "f", "content": "{ALPHABET}"}}]"#
        ));
        let out = run(&marked(8), &input);
        assert_eq!(out[2].text_content(), "abc[cut]");
        let out = run(&TruncateToolResults { exclude_tools: vec!["f".into()], ..marked(8) }, &input);
        assert_eq!(out[2], input[2]);
    }

    fn anthropic_results() -> Vec<Message> {
        anthropic(&format!(
            r#"[{{"role": "user", "content": "look"}},
                {{"role": "assistant", "content": [
                    {{"type": "tool_use", "id": "t1", "name": "read", "input": {{}}}},
                    {{"type": "tool_use", "id": "t2", "name": "shot", "input": {{}}}}]}},
                {{"role": "user", "content": [
                    {{"type": "tool_result", "tool_use_id": "t1", "content": "{ALPHABET}"}},
                    {{"type": "tool_result", "tool_use_id": "t2", "content": [
                        {{"type": "text", "text": "0123456789"}},
                        {{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}}},
                        {{"type": "text", "text": "ABCDEFGHIJ"}},
                        {{"type": "text", "text": "klmnopqrst"}}]}},
                    {{"type": "text", "text": "{ALPHABET}"}}]}}]"#
        ))
    }

    fn block_texts(message: &Message, block: usize) -> Vec<String> {
        match &message.parts[block] {
            Part::ToolResult(r) => r
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => t.text.clone(),
                    Part::Image(_) => "<image>".into(),
                    _ => "<other>".into(),
                })
                .collect(),
            _ => panic!("not a result"),
        }
    }

    #[test]
    fn cuts_anthropic_result_blocks_as_a_whole() {
        let input = anthropic_results();
        let out = run_in(&marked(17), &input, anthropic_cx());
        assert_eq!(block_texts(&out[2], 0), vec!["abcdefghijkl[cut]"]);
        // 30 chars in three parts: the first whole, 2 of the second, then the marker; the
        // third goes; the image stays
        assert_eq!(block_texts(&out[2], 1), vec!["0123456789", "<image>", "AB[cut]"]);
        assert_eq!(out[2].parts[2], input[2].parts[2], "the user's words are not a result");
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn multi_part_tails_and_both_ends() {
        let input = anthropic_results();
        let tail = TruncateToolResults { keep: KeepPart::Tail, ..marked(17) };
        let out = run_in(&tail, &input, anthropic_cx());
        assert_eq!(block_texts(&out[2], 1), vec!["[cut]", "<image>", "IJ", "klmnopqrst"]);
        let both = TruncateToolResults { keep: KeepPart::HeadAndTail, ..marked(17) };
        let out = run_in(&both, &input, anthropic_cx());
        // 12 of room: 6 from the front, 6 from the back; the middle part goes
        assert_eq!(block_texts(&out[2], 1), vec!["012345[cut]", "<image>", "opqrst"]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn never_splits_a_character_or_grapheme() {
        let text = "ab👨‍👩‍👧‍👦cdé\u{301}fgh";
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "go"}},
                {{"role": "assistant", "tool_calls": [{{"id": "a", "type": "function", "function": {{"name": "f", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": "{text}"}}]"#
        ));
        // 3 chars of room end inside the family emoji: it goes whole
        assert_eq!(run(&marked(8), &input)[2].text_content(), "ab[cut]");
        // e + combining accent stays together
        let tail = TruncateToolResults { keep: KeepPart::Tail, ..marked(9) };
        assert_eq!(run(&tail, &input)[2].text_content(), "[cut]fgh");
        let tail = TruncateToolResults { keep: KeepPart::Tail, ..marked(10) };
        assert_eq!(run(&tail, &input)[2].text_content(), "[cut]é\u{301}fgh");
    }

    #[test]
    fn token_limits_fit_and_do_not_depend_on_the_budget() {
        let long = "The quick brown fox jumps over the lazy dog. ".repeat(40);
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "go"}},
                {{"role": "assistant", "tool_calls": [{{"id": "a", "type": "function", "function": {{"name": "f", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": "{long}"}}]"#
        ));
        let step = TruncateToolResults::tokens(50);
        let out = run(&step, &input);
        let text = out[2].text_content();
        let tokens = counter().text_counter().count(&text);
        assert!((45..=50).contains(&tokens), "{tokens} tokens");
        assert!(text.starts_with("The quick brown fox") && text.ends_with(TRUNCATED_MARKER));
        for budget in [10, 100, 10_000] {
            let cx = StepContext::new(Format::OpenAi).with_budget(budget);
            assert_eq!(run_in(&step, &input, cx), out, "the cut is the same whatever the budget");
        }
    }

    #[test]
    fn token_limits_apply_to_all_text_parts_of_a_result() {
        let part = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(5);
        let input = anthropic(&format!(
            r#"[{{"role": "user", "content": "look"}},
                {{"role": "assistant", "content": [{{"type": "tool_use", "id": "t1", "name": "read", "input": {{}}}}]}},
                {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t1", "content": [
                    {{"type": "text", "text": "{part}"}}, {{"type": "text", "text": "{part}"}}, {{"type": "text", "text": "{part}"}}]}}]}}]"#
        ));
        let counter = counter();
        let tokens = |m: &Message| -> Vec<usize> {
            block_texts(m, 0).iter().map(|t| counter.text_counter().count(t)).collect()
        };
        let before = tokens(&input[2]);
        assert!(before[0] > 40, "{before:?}");
        for keep in [KeepPart::Head, KeepPart::Tail, KeepPart::HeadAndTail] {
            let step = TruncateToolResults { keep, ..TruncateToolResults::tokens(60) };
            let out = run_in(&step, &input, anthropic_cx());
            let after = tokens(&out[2]);
            let total: usize = after.iter().sum();
            assert!((50..=60).contains(&total), "{keep:?}: {after:?}");
            assert_eq!(validate(&out, Format::Anthropic), vec![]);
        }
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        assert_eq!(run(&marked(8), &[]), vec![]);
        let input = openai(&format!(
            r#"[{{"role": "tool", "content": "{ALPHABET}"}}, {{"role": "tool", "content": null}}]"#
        ));
        assert_eq!(texts(&run(&marked(8), &input)), vec!["abc[cut]", ""]);
        let input =
            anthropic(r#"[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}]"#);
        assert_eq!(run_in(&marked(8), &input, anthropic_cx()), input);
    }

    #[test]
    fn records_the_cut() {
        let input = parallel_openai();
        let c = counter();
        let mut history = History::new(&input, None, &c, CountCache::new(), Format::OpenAi);
        history.set_step("truncate_tool_results");
        marked(10).apply(&mut history, &StepContext::new(Format::OpenAi).with_budget(1)).unwrap();
        let (_, plan, _) = history.finish(&input);
        assert_eq!(
            plan.units[2].details,
            vec!["messages[3]: truncated by truncate_tool_results: tool result \"b\": kept chars 0..5 of 26"]
        );
    }

    #[test]
    fn reads_params() {
        let mut p = Params::new(
            json!({"max_chars": 100, "keep": "tail", "suffix": "…", "keep_last": 2, "exclude_tools": "read"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let step = TruncateToolResults::from_params(&mut p).unwrap();
        assert_eq!(
            step,
            TruncateToolResults {
                limit: Length::Chars(100),
                keep: KeepPart::Tail,
                marker: "…".into(),
                keep_last: 2,
                exclude_tools: vec!["read".into()],
                until_fits: false,
            }
        );
        p.finish().unwrap();
        let mut p = Params::new(json!({"max_tokens": 30}).as_object().unwrap().clone());
        assert_eq!(TruncateToolResults::from_params(&mut p).unwrap().limit, Length::Tokens(30));
        let mut p = Params::new(json!({"max_length": 3, "max_tokens": 3}).as_object().unwrap().clone());
        assert_eq!(TruncateToolResults::from_params(&mut p).unwrap_err().key, "max_tokens");
        let mut p = Params::new(json!({"keep": "middle"}).as_object().unwrap().clone());
        assert_eq!(TruncateToolResults::from_params(&mut p).unwrap_err().key, "keep");
    }

    #[test]
    fn checks_the_limit() {
        assert_eq!(TruncateToolResults::chars(0).check().unwrap_err().key, "max_length");
        assert_eq!(TruncateToolResults::tokens(0).check().unwrap_err().key, "max_tokens");
        assert!(TruncateToolResults::chars(16).check().is_err(), "the default marker is 16 chars");
        assert!(TruncateToolResults::chars(17).check().is_ok());
    }
}
