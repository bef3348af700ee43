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
//! provider's prompt cache stays warm. Calls and results are never removed, so the history
//! stays valid. Cost: O(length of the results' text) for character limits; for token limits
//! a tokenization of each result, and a binary search over the ones that are cut.

use super::{ConfigError, Step, StepContext, StepError, StepKind};
use crate::config::{FromParams, Params};
use crate::history::History;
use crate::message::{Message, Part, Role};
use crate::plan::ChangeKind;
use crate::text::{cut, KeepPart, Length};
use crate::tokens::TokenCounter;

/// The marker llmling writes where it cut a text.
pub const TRUNCATED_MARKER: &str = "\n... [truncated]";

/// `truncate_tool_results` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<TruncateToolResults>("truncate_tool_results", &["truncate_tool_outputs"]);

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
}

impl Default for TruncateToolResults {
    fn default() -> TruncateToolResults {
        TruncateToolResults {
            limit: Length::Chars(2000),
            keep: KeepPart::Head,
            marker: TRUNCATED_MARKER.to_string(),
            keep_last: 0,
            exclude_tools: Vec::new(),
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
/// for an Anthropic `tool_result` (`None`: the whole message is the result).
struct ResultRef {
    message: usize,
    block: Option<usize>,
    /// The call id (or the function's name for a legacy `function` message), for the report.
    label: String,
    tool: Option<String>,
}

/// Every tool result of the history, in order.
fn tool_results(history: &History<'_>) -> Vec<ResultRef> {
    let call_names: std::collections::BTreeMap<&str, &str> = history
        .messages()
        .iter()
        .flat_map(|m| m.tool_calls())
        .filter_map(|c| Some((c.id.as_deref()?, c.name.as_str())))
        .collect();
    let name_of = |id: &str| call_names.get(id).map(|n| n.to_string());
    let mut results = Vec::new();
    for (i, m) in history.messages().iter().enumerate() {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let tool = name_of(&id).or_else(|| m.name.clone());
                results.push(ResultRef { message: i, block: None, label: id, tool });
            }
            Role::Function => {
                let name = m.name.clone().unwrap_or_default();
                results.push(ResultRef { message: i, block: None, label: name.clone(), tool: Some(name) });
            }
            _ => {
                for (j, part) in m.parts.iter().enumerate() {
                    if let Part::ToolResult(r) = part {
                        let label = r.tool_use_id.clone();
                        let tool = name_of(&label);
                        results.push(ResultRef { message: i, block: Some(j), label, tool });
                    }
                }
            }
        }
    }
    results
}

/// The planned cut of one result, with its line of the report.
struct ResultCut {
    block: Option<usize>,
    cut: TextCut,
    line: String,
}

/// The parts of a result: the message's, or the block's.
fn result_parts(message: &Message, block: Option<usize>) -> &[Part] {
    match block.map(|j| &message.parts[j]) {
        Some(Part::ToolResult(r)) => &r.parts,
        _ => &message.parts,
    }
}

fn result_parts_mut(message: &mut Message, block: Option<usize>) -> &mut Vec<Part> {
    match block {
        Some(j) => match &mut message.parts[j] {
            Part::ToolResult(r) => &mut r.parts,
            _ => unreachable!("a result block stays a result block"),
        },
        None => &mut message.parts,
    }
}

impl Step for TruncateToolResults {
    fn name(&self) -> &'static str {
        "truncate_tool_results"
    }

    fn check(&self) -> Result<(), ConfigError> {
        check_limit(self.limit, &self.marker, "max_length")
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let results = tool_results(history);
        let cuttable = results.len().saturating_sub(self.keep_last);
        // per message: the cuts of its results, in order
        let mut cuts: Vec<(usize, Vec<ResultCut>)> = Vec::new();
        for r in &results[..cuttable] {
            if r.tool.as_ref().is_some_and(|t| self.exclude_tools.contains(t)) {
                continue;
            }
            let parts = result_parts(history.message(r.message), r.block);
            let counter = history.counter().text_counter();
            let Some(c) = plan_cut(parts, self.limit, self.keep, &self.marker, counter) else {
                continue;
            };
            let line = format!("tool result {:?}: {}", r.label, c.detail);
            let one = ResultCut { block: r.block, cut: c, line };
            match cuts.last_mut() {
                Some((i, list)) if *i == r.message => list.push(one),
                _ => cuts.push((r.message, vec![one])),
            }
        }
        for (i, list) in cuts {
            let detail = list.iter().map(|c| c.line.as_str()).collect::<Vec<_>>().join("; ");
            history.edit(i, ChangeKind::Truncated, detail, |m| {
                for c in &list {
                    c.cut.apply(result_parts_mut(m, c.block));
                }
            });
        }
        Ok(())
    }
}

impl FromParams for TruncateToolResults {
    /// Keys: `max_length` (alias `max_chars`) for a limit in characters or `max_tokens` for
    /// one in tokens, `keep` (`head`, `tail`, `head_and_tail`), `marker` (alias `suffix`),
    /// `keep_last`, `exclude_tools`.
    fn from_params(p: &mut Params) -> Result<TruncateToolResults, ConfigError> {
        let mut step = TruncateToolResults::default();
        step.limit = read_length(p, &["max_length", "max_chars"], &["max_tokens"], step.limit)?;
        if let Some(keep) = read_keep_part(p)? {
            step.keep = keep;
        }
        if let Some(marker) = p.string(&["marker", "suffix"])? {
            step.marker = marker;
        }
        if let Some(n) = p.usize(&["keep_last"])? {
            step.keep_last = n;
        }
        if let Some(tools) = p.strings(&["exclude_tools"])? {
            step.exclude_tools = tools;
        }
        Ok(step)
    }
}

/// Checks that a cut limit leaves room for some text: at least 1, and (in characters, where
/// the marker can be measured without a tokenizer) longer than the marker. `key` names the
/// limit in errors.
pub(crate) fn check_limit(limit: Length, marker: &str, key: &str) -> Result<(), ConfigError> {
    let key = match limit {
        Length::Chars(_) => key,
        Length::Tokens(_) => "max_tokens",
    };
    if limit.value() == 0 {
        return Err(ConfigError::new(key, "must be at least 1"));
    }
    let marker_chars = marker.chars().count();
    if matches!(limit, Length::Chars(n) if marker_chars >= n) {
        return Err(ConfigError::new(
            key,
            format!("must be longer than the marker ({marker_chars} chars), or nothing of the text is left"),
        ));
    }
    Ok(())
}

/// Reads a length in characters (`chars_keys`) or in tokens (`token_keys`); giving both is an
/// error. Absent: `default`.
pub(crate) fn read_length(
    p: &mut Params,
    chars_keys: &[&'static str],
    token_keys: &[&'static str],
    default: Length,
) -> Result<Length, ConfigError> {
    let chars = p.usize(chars_keys)?;
    let tokens = p.usize(token_keys)?;
    match (chars, tokens) {
        (Some(_), Some(_)) => Err(ConfigError::new(
            token_keys[0],
            format!("give a length in characters ({}) or in tokens, not both", chars_keys[0]),
        )),
        (Some(n), None) => Ok(Length::Chars(n)),
        (None, Some(n)) => Ok(Length::Tokens(n)),
        (None, None) => Ok(default),
    }
}

/// Reads `keep`: `head`, `tail` or `head_and_tail`.
pub(crate) fn read_keep_part(p: &mut Params) -> Result<Option<KeepPart>, ConfigError> {
    Ok(p.choice(&["keep"], &["head", "tail", "head_and_tail"])?.map(|keep| match keep.as_str() {
        "tail" => KeepPart::Tail,
        "head_and_tail" => KeepPart::HeadAndTail,
        _ => KeepPart::Head,
    }))
}

/// How to cut the text parts of one message or result: computed from a shared view, applied
/// in [`History::edit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextCut {
    /// (index among the parts, new text; `None`: the part goes), in part order.
    changes: Vec<(usize, Option<String>)>,
    /// What was cut, for the report.
    pub(crate) detail: String,
}

impl TextCut {
    /// Writes the cut into `parts` (the parts it was planned on).
    pub(crate) fn apply(&self, parts: &mut Vec<Part>) {
        for (i, text) in &self.changes {
            if let (Some(text), Some(Part::Text(t))) = (text, parts.get_mut(*i)) {
                t.text.clone_from(text);
            }
        }
        let mut index = 0;
        parts.retain(|_| {
            let gone = self.changes.iter().any(|(i, text)| *i == index && text.is_none());
            index += 1;
            !gone
        });
    }
}

/// Plans the cut of the text parts among `parts` so that together they fit `limit`, the
/// marker included; `None` when they already fit. Other parts are not counted or touched.
///
/// One text part is cut by [`cut`]. With several, the room is split as `keep` says (all to
/// the head, all to the tail, or half each); walking from the front, parts are kept whole
/// while the head room lasts and the first that does not fit keeps its head, followed by the
/// marker; walking from the back the same for the tail; the parts between go. For token
/// limits the texts are measured again after the cut and the room shrunk until the total
/// fits (tokens do not add up exactly where a text is cut).
pub(crate) fn plan_cut(
    parts: &[Part],
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
) -> Option<TextCut> {
    let texts: Vec<(usize, &str)> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Part::Text(t) => Some((i, t.text.as_str())),
            _ => None,
        })
        .collect();
    match texts.as_slice() {
        [] => None,
        [(i, text)] => {
            let c = cut(text, limit, keep, marker, counter)?;
            Some(TextCut { changes: vec![(*i, non_empty(c.text))], detail: c.detail })
        }
        _ => plan_cut_many(&texts, limit, keep, marker, counter),
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn measure(text: &str, limit: Length, counter: &dyn TokenCounter) -> usize {
    match limit {
        Length::Chars(_) => text.chars().count(),
        Length::Tokens(_) => counter.count(text),
    }
}

/// `limit` with another value, in the same unit.
fn same_unit(limit: Length, value: usize) -> Length {
    match limit {
        Length::Chars(_) => Length::Chars(value),
        Length::Tokens(_) => Length::Tokens(value),
    }
}

/// The index of the first size that does not fit in `room` (walking `sizes` in order) and the
/// room left before it; `None` when all fit.
fn crossing(sizes: impl Iterator<Item = usize>, room: usize) -> Option<(usize, usize)> {
    let mut left = room;
    for (k, size) in sizes.enumerate() {
        if size > left {
            return Some((k, left));
        }
        left -= size;
    }
    None
}

fn plan_cut_many(
    texts: &[(usize, &str)],
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
) -> Option<TextCut> {
    let sizes: Vec<usize> = texts.iter().map(|(_, t)| measure(t, limit, counter)).collect();
    let total: usize = sizes.iter().sum();
    if total <= limit.value() {
        return None;
    }
    let unit = match limit {
        Length::Chars(_) => "chars",
        Length::Tokens(_) => "tokens",
    };
    let mut room = limit.value().saturating_sub(measure(marker, limit, counter));
    loop {
        let changes = cut_many_within(texts, &sizes, room, limit, keep, marker, counter);
        let size_of = |k: usize, i: usize| match changes.iter().find(|(j, _)| *j == i) {
            Some((_, new)) => new.as_deref().map_or(0, |t| measure(t, limit, counter)),
            None => sizes[k],
        };
        let kept: usize = texts.iter().enumerate().map(|(k, (i, _))| size_of(k, *i)).sum();
        let over = kept.saturating_sub(limit.value());
        if over == 0 || room == 0 {
            let removed = changes.iter().filter(|(_, t)| t.is_none()).count();
            let detail = format!(
                "{} text parts: kept {kept} of {total} {unit}, cut {}, removed {removed}",
                texts.len(),
                changes.len() - removed
            );
            return Some(TextCut { changes, detail });
        }
        room = room.saturating_sub(over);
    }
}

/// The changes that fit the texts (of `sizes`) into `room` plus the marker.
fn cut_many_within(
    texts: &[(usize, &str)],
    sizes: &[usize],
    room: usize,
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
) -> Vec<(usize, Option<String>)> {
    let (head_room, tail_room) = match keep {
        KeepPart::Head => (room, 0),
        KeepPart::Tail => (0, room),
        KeepPart::HeadAndTail => (room - room / 2, room / 2),
    };
    let n = texts.len();
    // the texts do not fit in `room`, so both walks stop at a text, the head's no later
    let (h, head_left) = crossing(sizes.iter().copied(), head_room).unwrap_or((n - 1, 0));
    let (t, tail_left) =
        crossing(sizes.iter().rev().copied(), tail_room).map_or((h, 0), |(k, left)| (n - 1 - k, left));
    let t = t.max(h);
    let mut changes = Vec::new();
    if h == t {
        let mode = match (head_room, tail_room) {
            (_, 0) => KeepPart::Head,
            (0, _) => KeepPart::Tail,
            _ => KeepPart::HeadAndTail,
        };
        let within = head_left + tail_left + measure(marker, limit, counter).min(limit.value() - room);
        if let Some(c) = cut(texts[h].1, same_unit(limit, within), mode, marker, counter) {
            changes.push((texts[h].0, non_empty(c.text)));
        }
        return changes;
    }
    let keep_of = |text: &str, room: usize, mode: KeepPart| -> String {
        cut(text, same_unit(limit, room), mode, "", counter).map_or_else(|| text.to_string(), |c| c.text)
    };
    let head = keep_of(texts[h].1, head_left, KeepPart::Head) + marker;
    changes.push((texts[h].0, non_empty(head)));
    for (i, _) in &texts[h + 1..t] {
        changes.push((*i, None));
    }
    changes.push((texts[t].0, non_empty(keep_of(texts[t].1, tail_left, KeepPart::Tail))));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::{anthropic, assert_valid, counter, openai, run, run_in};
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

    fn anthropic_cx() -> StepContext<'static> {
        StepContext::new(Format::Anthropic)
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
