//! The built-in summarizer: extracts, never paraphrases. Deterministic, no network.
//!
//! The body has five sections, written in this order of priority until the token budget is
//! spent (a section that does not fit whole is cut at a line):
//!
//! 1. **Requests (verbatim)**: every user message's own words (not tool results), cut at
//!    `request_chars` with `…`; the requests carried from an earlier summary first;
//! 2. **Facts**: the [ledger](super::ledger) of the messages, one line per kind (errors, paths,
//!    URLs, identifiers, numbers), at most 60% of the budget left: an earlier summary's facts
//!    first (verbatim), then those of the user's words, the tool calls, the tool results and
//!    the assistant's words, each in order of first appearance, the kinds taking turns;
//! 3. **Commands**: each tool call (name and the start of its arguments) with the first line of
//!    its result;
//! 4. **Progress**: the first sentence of each assistant message's text;
//! 5. **Last**: the newest assistant text, whole up to `request_chars`.
//!
//! Cost: one pass over the messages, the ledger's regular expressions, and one token count per
//! line written and per fact taken.

use std::collections::HashMap;

use super::ledger::{self, FactKind};
use super::{Summarizer, SummaryError, SummaryRequest, SUMMARY_PREFIX};
use crate::message::{Message, Part, Role};

/// The extractive summarizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extractive {
    /// A user request or the last state longer than this many characters is cut. Defaults to
    /// 600.
    pub request_chars: usize,
    /// A command or progress line longer than this many characters is cut. Defaults to 160.
    pub line_chars: usize,
}

impl Default for Extractive {
    fn default() -> Extractive {
        Extractive { request_chars: 600, line_chars: 160 }
    }
}

/// The share of the budget left after the requests that the ledger may take, in percent.
const LEDGER_SHARE: usize = 60;

const REQUESTS: &str = "Requests (verbatim):";
const FACTS: &str = "Facts:";
const COMMANDS: &str = "Commands:";
const PROGRESS: &str = "Progress:";
const LAST: &str = "Last:";

impl Summarizer for Extractive {
    fn name(&self) -> &str {
        "extractive"
    }

    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        let mut body = Body { text: String::new(), tokens: 0, max: request.max_tokens, count: request.count };
        let at = |i: usize| {
            request.input_indices.get(i).copied().flatten().map_or(String::new(), |n| format!("[{n}] "))
        };

        // what earlier summaries in the range said, carried verbatim
        let mut carried_requests = Vec::new();
        let mut carried_facts: HashMap<String, Vec<String>> = HashMap::new();
        for message in request.messages {
            for text in ledger::texts(message) {
                if let Some(start) = text.find(SUMMARY_PREFIX) {
                    carry(&text[start..], &mut carried_requests, &mut carried_facts);
                }
            }
        }

        // 1. the user's own words
        let mut requests = carried_requests;
        for (i, message) in request.messages.iter().enumerate() {
            if message.role != Role::User {
                continue;
            }
            let own = own_text(message);
            if own.trim().is_empty() || own.contains(SUMMARY_PREFIX) || own.starts_with("[tightfit: ") {
                continue;
            }
            requests.push(format!("- {}\"{}\"", at(i), cut(own.trim(), self.request_chars)));
        }
        body.section(REQUESTS, requests);

        // 2. the ledger: earlier summaries' facts first, then the user's, the calls', the
        //    results', the assistant's; each kind gets its turn, so one kind cannot starve the rest
        let mut queues: Vec<(FactKind, Vec<String>)> = FactKind::ALL
            .iter()
            .map(|kind| (*kind, carried_facts.remove(kind.as_str()).unwrap_or_default()))
            .collect();
        let fresh = request.messages.iter().copied().filter(|m| !is_summary(m));
        let by_source: [Vec<&Message>; 3] = [
            fresh.clone().filter(|m| m.role == Role::User && !m.is_tool_result()).collect(),
            fresh.clone().filter(|m| m.role == Role::Assistant).collect(),
            fresh.filter(|m| m.role == Role::Tool || m.is_tool_result()).collect(),
        ];
        for messages in by_source {
            for fact in ledger::facts_of_messages(messages) {
                let queue = &mut queues.iter_mut().find(|(k, _)| *k == fact.kind).expect("every kind").1;
                if !queue.contains(&fact.text) {
                    queue.push(fact.text);
                }
            }
        }
        body.facts(queues);

        // 3. the commands and what they gave
        let mut results: HashMap<&str, String> = HashMap::new();
        for message in request.messages {
            if let (Role::Tool, Some(id)) = (message.role, message.tool_call_id.as_deref()) {
                results.insert(id, first_line(&message.text_content()));
            }
            for part in &message.parts {
                if let Part::ToolResult(r) = part {
                    let text: String = r
                        .parts
                        .iter()
                        .filter_map(|p| match p {
                            Part::Text(t) => Some(t.text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    results.insert(r.tool_use_id.as_str(), first_line(&text));
                }
            }
        }
        let mut commands = Vec::new();
        for (i, message) in request.messages.iter().enumerate() {
            for call in message.tool_calls() {
                let outcome = call
                    .id
                    .as_deref()
                    .and_then(|id| results.get(id))
                    .map_or(String::new(), |r| format!(" -> {r}"));
                let line = format!("{} {}{outcome}", call.name, call.arguments.to_json_string());
                commands.push(format!("- {}{}", at(i), cut(&line, self.line_chars)));
            }
        }
        body.section(COMMANDS, commands);

        // 4. progress: what the assistant said it did, a sentence each
        let mut progress = Vec::new();
        let mut last = None;
        for (i, message) in request.messages.iter().enumerate() {
            if message.role != Role::Assistant {
                continue;
            }
            let text = own_text(message);
            if text.trim().is_empty() {
                continue;
            }
            progress.push(format!("- {}{}", at(i), cut(first_sentence(&text), self.line_chars)));
            last = Some((i, text));
        }
        if let Some((i, text)) = last {
            progress.pop();
            body.section(PROGRESS, progress);
            body.section(LAST, vec![format!("- {}{}", at(i), cut(text.trim(), self.request_chars))]);
        }
        if body.text.is_empty()
            && !request.messages.iter().all(|m| ledger::texts(m).iter().all(|t| t.trim().is_empty()))
        {
            return Err(SummaryError {
                summarizer: self.name().into(),
                reason: format!("not even the first line fits in {} tokens", request.max_tokens),
            });
        }
        // (messages without text leave an empty body: the header says what went)
        Ok(body.finish())
    }
}

/// The body being written, line by line within its budget.
struct Body<'a> {
    text: String,
    tokens: usize,
    max: usize,
    count: &'a dyn Fn(&str) -> usize,
}

impl Body<'_> {
    /// Adds `line` if it fits; returns whether it did.
    fn line(&mut self, line: &str) -> bool {
        let tokens = (self.count)(line) + 1;
        if self.tokens + tokens > self.max {
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.tokens += tokens;
        true
    }

    /// A titled section of `lines`, as many as fit.
    fn section(&mut self, title: &str, lines: Vec<String>) {
        if lines.is_empty() || !self.line(title) {
            return;
        }
        for line in lines {
            if !self.line(&line) {
                break;
            }
        }
    }

    /// The ledger: a line per kind; facts taken a kind at a time, in turn, while they fit.
    fn facts(&mut self, queues: Vec<(FactKind, Vec<String>)>) {
        if queues.iter().all(|(_, q)| q.is_empty()) || !self.line(FACTS) {
            return;
        }
        // each line costs its prefix; each fact its tokens and a separator (an estimate the
        // final trim in `finish` makes exact)
        // (at most `LEDGER_SHARE` of what is left: the commands, progress and last state follow)
        let mut room = self.max.saturating_sub(self.tokens) * LEDGER_SHARE / 100;
        let mut taken: Vec<Vec<&str>> = vec![Vec::new(); queues.len()];
        let mut next = vec![0; queues.len()];
        loop {
            let mut progress = false;
            for (k, (kind, queue)) in queues.iter().enumerate() {
                let Some(fact) = queue.get(next[k]) else { continue };
                let prefix =
                    if taken[k].is_empty() { (self.count)(&format!("- {}: ", kind.as_str())) + 1 } else { 0 };
                let cost = prefix + (self.count)(fact) + 1;
                if cost <= room {
                    room -= cost;
                    taken[k].push(fact);
                    next[k] += 1;
                    progress = true;
                } else {
                    // a kind whose next fact does not fit is done (its later facts are not
                    // tokenized one by one: thousands, at a large compaction)
                    next[k] = queue.len();
                }
            }
            if !progress {
                break;
            }
        }
        for ((kind, _), facts) in queues.iter().zip(taken) {
            if !facts.is_empty() {
                let line = format!("- {}: {}", kind.as_str(), facts.join("; "));
                self.text.push_str(&line);
                self.text.push('\n');
                self.tokens += (self.count)(&line) + 1;
            }
        }
    }

    /// The body, its lines dropped from the end while the whole is over the budget (the
    /// line-by-line counts are close, not exact: tokens can merge across a line break).
    fn finish(mut self) -> String {
        let mut text = self.text.trim_end().to_string();
        while !text.is_empty() && (self.count)(&text) > self.max {
            text.truncate(text.rfind('\n').unwrap_or(0));
        }
        self.text = text;
        self.text
    }
}

/// Whether a message is (or carries) one of tightfit's summaries.
fn is_summary(message: &Message) -> bool {
    ledger::texts(message).iter().any(|t| t.contains(SUMMARY_PREFIX))
}

/// Reads an earlier summary's requests and ledger lines.
fn carry(summary: &str, requests: &mut Vec<String>, facts: &mut HashMap<String, Vec<String>>) {
    let mut section = "";
    for line in summary.lines() {
        if [REQUESTS, FACTS, COMMANDS, PROGRESS, LAST].contains(&line) {
            section = line;
            continue;
        }
        match section {
            REQUESTS if line.starts_with("- ") => requests.push(line.to_string()),
            FACTS => {
                if let Some((kind, list)) = line.strip_prefix("- ").and_then(|l| l.split_once(": ")) {
                    let entry = facts.entry(kind.to_string()).or_default();
                    for fact in list.split("; ") {
                        if !entry.iter().any(|f| f == fact) {
                            entry.push(fact.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// A message's own words: its text parts (not tool results, not thinking).
fn own_text(message: &Message) -> String {
    if message.role == Role::Tool {
        return String::new();
    }
    message.text_content()
}

fn first_line(text: &str) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_string()
}

fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '!' | '?' | '\n') && text[i + c.len_utf8()..].starts_with([' ', '\n'])
        })
        .map_or(text.len(), |(i, c)| i + c.len_utf8());
    text[..end].trim()
}

/// `text` up to `chars` characters, with `…` where it was cut; line breaks as spaces.
fn cut(text: &str, chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= chars {
        return flat;
    }
    let mut out: String = flat.chars().take(chars).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, FormatHint};

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    fn summarize(messages: &[Message], max_tokens: usize) -> String {
        let refs: Vec<&Message> = messages.iter().collect();
        let indices: Vec<Option<usize>> = (0..messages.len()).map(Some).collect();
        Extractive::default().summarize(&SummaryRequest::new(&refs, &indices, max_tokens, &words)).unwrap()
    }

    fn agent_run() -> Vec<Message> {
        parse_str(
            r#"[{"role": "user", "content": "The date parser rejects 2024-02-29. Find out why; the code is in src/date.py."},
                {"role": "assistant", "content": "I'll run the tests first. Then I read the parser.", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pytest tests/test_date.py -x\"}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "FAILED tests/test_date.py::test_leap - ValueError: day is out of range for month\n1 failed in 0.31s"},
                {"role": "assistant", "content": "The leap-year check uses year % 100 only. I will fix is_leap_year in src/date.py."}]"#,
            FormatHint::Auto,
        )
        .unwrap()
        .messages
    }

    #[test]
    fn the_summary_keeps_the_requests_verbatim_and_the_facts_exactly() {
        let summary = summarize(&agent_run(), 400);
        assert!(
            summary.contains(
                "- [0] \"The date parser rejects 2024-02-29. Find out why; the code is in src/date.py.\""
            ),
            "{summary}"
        );
        assert!(summary.contains("ValueError: day is out of range for month"), "{summary}");
        assert!(summary.contains("src/date.py") && summary.contains("tests/test_date.py"), "{summary}");
        assert!(summary.contains("is_leap_year"), "{summary}");
        assert!(
            summary.contains("- [1] bash {\"command\": \"pytest tests/test_date.py -x\"} -> FAILED"),
            "{summary}"
        );
        assert!(summary.contains("Last:\n- [3] The leap-year check"), "{summary}");
    }

    #[test]
    fn the_summary_stays_within_its_budget_and_is_deterministic() {
        for max in [12, 30, 60, 400] {
            let summary = summarize(&agent_run(), max);
            let used: usize = summary.lines().map(|l| words(l) + 1).sum();
            assert!(used <= max, "{used} > {max}: {summary}");
            assert_eq!(summary, summarize(&agent_run(), max));
        }
    }

    #[test]
    fn a_second_summary_carries_the_first_ones_lines_verbatim() {
        let run = agent_run();
        let first = format!("{}\n{}", super::super::header(4, Some((0, 3))), summarize(&run, 400));
        let mut later = vec![Message::text(Role::User, first.clone())];
        later.extend(parse_str(r#"[{"role": "assistant", "content": "Fixed it; see https://bugs.python.org/issue12345 for the rule."}]"#, FormatHint::Auto).unwrap().messages);
        let second = summarize(&later, 400);
        for line in first.lines().filter(|l| l.starts_with("- [0]")) {
            assert!(second.contains(line), "request line carried: {line}\n{second}");
        }
        assert!(
            second.contains("src/date.py") && second.contains("ValueError: day is out of range for month"),
            "{second}"
        );
        assert!(second.contains("https://bugs.python.org/issue12345"), "{second}");
    }
}
