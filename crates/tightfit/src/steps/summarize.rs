//! `summarize`: replace older units by one summary message (llmling `Summarize`), and
//! [`SummaryTrace`], the same summary as what a session's compaction leaves.
//!
//! Past `threshold` messages, every unit before the newest `keep_recent` messages (whole units:
//! a tool call keeps its results) goes, but for what is always kept (system messages, the
//! newest user turn), and one user message takes the place of the first: a header saying which
//! messages went, then the summarizer's body (by default the [extractive](crate::summary::Extractive)
//! one: the user's requests verbatim, the ledger of exact facts, commands and outcomes,
//! progress). An earlier summary in the range is summarized with the rest, its requests and
//! ledger lines carried verbatim. With offload on, the handle recalling the originals is added
//! to the header. Cost: the summarizer's (the extractive one: a pass over the removed messages
//! and a token count per line) plus O(units).

use super::shared::written::Written;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use xxhash_rust::xxh3::Xxh3;

use super::shared::trace::{Removed, Trace};
use super::{ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};
use crate::history::{History, Keep, Origin};
use crate::message::{Message, Role};
use crate::params::{FromParams, Params};
use crate::summary::{self, Extractive, Summarizer, SummaryError, SummaryRequest};
use crate::tokens::message_fingerprint;
use crate::units::UnitKind;

/// `summarize` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<Summarize>("summarize", &[]).documented(
    "Replace older units by one structured summary (the built-in extractive summarizer unless one is lent).",
    &[
        KeyDoc::new(
            "model",
            KeyUnit::Text,
            "llmling's key, read so its configurations load; the summarizer lent to the run decides",
        ),
        KeyDoc::new("threshold", KeyUnit::Messages, "the step acts only above this many messages"),
        KeyDoc::new(
            "keep_recent",
            KeyUnit::Messages,
            "recent messages left out of the summary, rounded out to whole units",
        ),
        KeyDoc::new("max_tokens", KeyUnit::Tokens, "the most the summary may take"),
        KeyDoc::new("summary_prompt", KeyUnit::Text, "llmling's prompt key, read so its configurations load"),
    ],
);

/// The tokens a summary may take unless configured.
pub const DEFAULT_SUMMARY_TOKENS: usize = 1_000;

/// The tokens of a summary's budget left for the handle offload adds to its header
/// (`; recall("tf-…") returns them`).
const HANDLE_NOTE_TOKENS: usize = 24;

/// The fewest tokens a summary may be given: its header, the handle's room, a few lines.
const MIN_SUMMARY_TOKENS: usize = 64;

/// Summarizes older units into one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarize {
    /// llmling's key for the model that writes summaries, read so that its configurations load;
    /// the summarizer lent to the run decides (an HTTP summarizer takes its own model), the
    /// built-in extractive one needs none. Defaults to `openai:gpt-4o-mini`.
    pub model: String,
    /// Messages above which it acts. Defaults to 15.
    pub threshold: usize,
    /// Recent messages left out of the summary (rounded out to whole units). Defaults to 5.
    pub keep_recent: usize,
    /// llmling's prompt key, read so that its configurations load; an HTTP summarizer takes its
    /// prompt from its own settings. Defaults to `None`.
    pub summary_prompt: Option<String>,
    /// The most tokens the summary may take. Defaults to [`DEFAULT_SUMMARY_TOKENS`].
    pub max_tokens: usize,
    /// The summaries it wrote, so that fitting the same history again (an agent loop calling a
    /// stateless fit every turn) does not call the summarizer again for the same messages.
    /// Not configuration: a copy of the step starts empty.
    pub cache: SummaryCache,
}

impl Default for Summarize {
    fn default() -> Summarize {
        Summarize {
            model: "openai:gpt-4o-mini".into(),
            threshold: 15,
            keep_recent: 5,
            summary_prompt: None,
            max_tokens: DEFAULT_SUMMARY_TOKENS,
            cache: SummaryCache::default(),
        }
    }
}

impl FromParams for Summarize {
    /// Keys: `model`, `threshold`, `keep_recent`, `summary_prompt`, `max_tokens` (alias
    /// `max_summary_tokens`).
    fn from_params(p: &mut Params) -> Result<Summarize, ConfigError> {
        let mut step = Summarize::default();
        step.model = p.string_or(&["model"], &step.model)?;
        step.threshold = p.usize_or(&["threshold"], step.threshold)?;
        step.keep_recent = p.usize_or(&["keep_recent"], step.keep_recent)?;
        step.max_tokens = p.usize_or(&["max_tokens", "max_summary_tokens"], step.max_tokens)?;
        step.summary_prompt = p.string(&["summary_prompt"])?;
        Ok(step)
    }
}

impl Step for Summarize {
    fn name(&self) -> &'static str {
        KIND.name
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("summarize")
            .key("model", self.model.as_str())
            .key("threshold", self.threshold)
            .key("keep_recent", self.keep_recent)
            .key("max_tokens", self.max_tokens)
            .key("summary_prompt", self.summary_prompt.clone())
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.max_tokens < MIN_SUMMARY_TOKENS {
            return Err(ConfigError::new(
                "max_tokens",
                format!("must be at least {MIN_SUMMARY_TOKENS} (the header and the room for a recall handle take that)"),
            ));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        if history.len() <= self.threshold {
            return Ok(());
        }
        let units = history.units();
        let protected = history.protected_units(Keep::default());
        let recent_from = history.len().saturating_sub(self.keep_recent);
        // whole units before the recent ones, after the leading system messages
        let drop: Vec<bool> = units
            .iter()
            .enumerate()
            .map(|(i, u)| !protected[i] && u.kind != UnitKind::Instruction && u.messages.end <= recent_from)
            .collect();
        let Some(first) = drop.iter().position(|d| *d) else { return Ok(()) };
        let positions: Vec<usize> =
            units.iter().zip(&drop).filter(|(_, d)| **d).flat_map(|(u, _)| u.messages.clone()).collect();
        let removed = Removed {
            messages: positions.iter().map(|&p| history.message(p)).collect(),
            input_indices: positions
                .iter()
                .map(|&p| match history.origin(p) {
                    Origin::Input(i) => Some(i),
                    Origin::Inserted => None,
                })
                .collect(),
            provider: cx.provider,
            counter: history.counter(),
        };
        let extractive = Extractive::default();
        let summarizer: &dyn Summarizer = cx.summarizer.unwrap_or(&extractive);
        let (message, failed) = self.cache.get_or_write(summarizer, &removed, self.max_tokens);
        let at = units[first].messages.start;
        if let Some(failed) = failed {
            history.note(failed);
        }
        let count = history.drop_units(&drop, "summarized");
        let at = crate::validate::note_position(history.messages(), at, history.provider());
        history.insert(at, message, format!("summary of the {count} messages removed"));
        Ok(())
    }
}

/// The summary of `removed` by `summarizer` in at most `max_tokens`, as a user message, and
/// when the summarizer failed, the line for the report saying so. A summarizer that fails (or
/// answers over the budget) never fails the run: the extractive one stands in, its first line
/// saying why, and if even it has nothing that fits, the header alone says what went.
fn summary_message(
    summarizer: &dyn Summarizer,
    removed: &Removed<'_>,
    max_tokens: usize,
) -> (Message, Option<String>) {
    // room for the recall handle offload adds to the header
    let max_tokens = max_tokens.saturating_sub(HANDLE_NOTE_TOKENS);
    let header = summary::header(removed.messages.len(), removed.input_span());
    let count = |text: &str| removed.counter.text_counter().count(text);
    let fits = |body: &str| count(&format!("{header}\n{body}")) <= max_tokens;
    let room = max_tokens.saturating_sub(count(&header) + 1);
    let request = SummaryRequest::new(&removed.messages, &removed.input_indices, room, &count)
        .in_format(removed.provider);
    let written = summarizer.summarize(&request).and_then(|body| {
        if fits(&body) {
            Ok(body)
        } else {
            Err(SummaryError {
                summarizer: summarizer.name().to_string(),
                reason: format!("the summary has {} tokens, over its budget of {room}", count(&body)),
            })
        }
    });
    let (body, failed) = match written {
        Ok(body) => (Some(body), None),
        Err(failed) => {
            let extractive = Extractive::default();
            let instead = (summarizer.name() != extractive.name())
                .then(|| extractive.summarize(&request).ok())
                .flatten()
                .map(|body| format!("({failed}; the extractive summary instead)\n{body}"));
            let line = match instead {
                Some(_) => format!("{failed}; the extractive summary stands in"),
                None => format!("{failed}; only the header says what went"),
            };
            (instead, Some(line))
        }
    };
    let message = match body {
        Some(mut body) if !body.is_empty() => {
            // the extractive body within the budget with the line saying why it stands in
            while !body.is_empty() && !fits(&body) {
                body.truncate(body.rfind('\n').unwrap_or(0));
            }
            if body.is_empty() {
                Message::text(Role::User, header)
            } else {
                Message::text(Role::User, format!("{header}\n{body}"))
            }
        }
        _ => Message::text(Role::User, header),
    };
    (message, failed)
}

/// The summaries a step or trace wrote, by what they summarize (the summarizer, the budget,
/// the provider, the messages' content and input indices): at most [`SummaryCache::ENTRIES`],
/// the oldest forgotten first. Cost: hashing the summarized messages (no tokenizing).
#[derive(Default)]
pub struct SummaryCache {
    entries: Mutex<(HashMap<u128, Message>, VecDeque<u128>)>,
}

impl SummaryCache {
    /// The most summaries kept.
    pub const ENTRIES: usize = 64;

    /// The summary of `removed`, written by `summarizer` unless written before.
    /// The summary (from the cache, or written and kept), and the report's line when the
    /// summarizer failed (a failed summary is not kept: the next fit asks again).
    fn get_or_write(
        &self,
        summarizer: &dyn Summarizer,
        removed: &Removed<'_>,
        max_tokens: usize,
    ) -> (Message, Option<String>) {
        let mut hasher = Xxh3::new();
        summarizer.name().hash(&mut hasher);
        summarizer.identity().hash(&mut hasher);
        max_tokens.hash(&mut hasher);
        removed.provider.as_str().hash(&mut hasher);
        for (message, index) in removed.messages.iter().zip(&removed.input_indices) {
            message_fingerprint(message).hash(&mut hasher);
            index.hash(&mut hasher);
        }
        let key = hasher.digest128();
        if let Some(message) = self.lock().0.get(&key) {
            return (message.clone(), None);
        }
        // written without the lock: a summarizer may take seconds
        let (message, failed) = summary_message(summarizer, removed, max_tokens);
        if failed.is_some() {
            return (message, failed); // not kept: the next fit asks the summarizer again
        }
        let mut entries = self.lock();
        if entries.0.insert(key, message.clone()).is_none() {
            entries.1.push_back(key);
            if entries.1.len() > Self::ENTRIES {
                if let Some(oldest) = entries.1.pop_front() {
                    entries.0.remove(&oldest);
                }
            }
        }
        (message, None)
    }

    /// The number of summaries kept.
    pub fn len(&self) -> usize {
        self.lock().0.len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<u128, Message>, VecDeque<u128>)> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Clone for SummaryCache {
    /// An empty cache: a copy of a step writes its own summaries.
    fn clone(&self) -> SummaryCache {
        SummaryCache::default()
    }
}

impl PartialEq for SummaryCache {
    /// Always: what a step has cached is not part of its configuration.
    fn eq(&self, _: &SummaryCache) -> bool {
        true
    }
}

impl Eq for SummaryCache {}

impl std::fmt::Debug for SummaryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SummaryCache({} summaries)", self.len())
    }
}

/// A compaction's trace that is a summary of what it removed (for a session: its compactions
/// then leave a structured hand-off instead of a line saying how many messages went).
#[derive(Debug)]
pub struct SummaryTrace {
    summarizer: Arc<dyn Summarizer>,
    max_tokens: usize,
    cache: SummaryCache,
}

impl SummaryTrace {
    /// Summaries by `summarizer`, at most `max_tokens` each.
    pub fn new(summarizer: Arc<dyn Summarizer>, max_tokens: usize) -> SummaryTrace {
        SummaryTrace { summarizer, max_tokens, cache: SummaryCache::default() }
    }

    /// The extractive summarizer's, at most [`DEFAULT_SUMMARY_TOKENS`] each.
    pub fn extractive() -> SummaryTrace {
        SummaryTrace::new(Arc::new(Extractive::default()), DEFAULT_SUMMARY_TOKENS)
    }
}

impl Trace for SummaryTrace {
    fn trace(&self, removed: &Removed<'_>) -> Result<Option<Message>, StepError> {
        Ok(self.trace_noted(removed)?.0)
    }

    fn trace_noted(&self, removed: &Removed<'_>) -> Result<(Option<Message>, Option<String>), StepError> {
        if removed.messages.is_empty() {
            return Ok((None, None));
        }
        let (message, failed) = self.cache.get_or_write(self.summarizer.as_ref(), removed, self.max_tokens);
        Ok((Some(message), failed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, Format, FormatHint};
    use crate::steps::test_support::{counter, run_in};
    use crate::steps::TRACE_PREFIX;

    fn agent_run(steps: usize) -> Vec<Message> {
        let mut json = vec![
            serde_json::json!({"role": "system", "content": "You are a coding agent."}),
            serde_json::json!({"role": "user", "content": "Fix the failing test in tests/test_date.py; the parser is src/date.py."}),
        ];
        for i in 0..steps {
            json.push(serde_json::json!({"role": "assistant", "content": format!("Step {i}: running the tests."), "tool_calls": [
                {"id": format!("c{i}"), "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\": \"pytest -k case_{i}\"}}")}}]}));
            json.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("FAILED case_{i}: ValueError: bad day {}", 1000 + i)}));
        }
        parse_str(&serde_json::Value::Array(json).to_string(), FormatHint::Auto).unwrap().messages
    }

    #[test]
    fn older_units_become_one_summary_that_keeps_the_facts() {
        let input = agent_run(12);
        let step = Summarize { threshold: 10, keep_recent: 4, ..Summarize::default() };
        let out = run_in(&step, &input, StepContext::new(Format::OpenAi));
        assert_eq!(out[0], input[0], "system stays");
        assert_eq!(out[1], input[1], "the task (the newest user turn) stays");
        let summary = out[2].text_content();
        assert!(
            summary.starts_with(summary::SUMMARY_PREFIX) && summary.starts_with(TRACE_PREFIX),
            "{summary}"
        );
        assert!(summary.contains("messages 2-21: 20 messages were removed"), "{summary}");
        for fact in ["case_0", "ValueError: bad day 1000", "1009"] {
            assert!(summary.contains(fact), "{fact} in {summary}");
        }
        assert_eq!(&out[3..], &input[input.len() - 4..], "the recent messages stay, whole steps");
        assert_eq!(crate::validate::validate(&out, Format::OpenAi), vec![]);
    }

    #[test]
    fn the_same_messages_are_summarized_once() {
        #[derive(Debug, Default)]
        struct Counting(std::sync::atomic::AtomicUsize);
        impl Summarizer for Counting {
            fn name(&self) -> &str {
                "counting"
            }
            fn summarize(&self, _: &SummaryRequest<'_>) -> Result<String, crate::summary::SummaryError> {
                let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                Ok(format!("summary number {n}"))
            }
        }
        let counting = Counting::default();
        let step = Summarize { threshold: 10, keep_recent: 4, ..Summarize::default() };
        let cx = StepContext::new(Format::OpenAi).with_summarizer(&counting);
        let first = run_in(&step, &agent_run(12), cx);
        let again = run_in(&step, &agent_run(12), cx);
        assert_eq!(first, again, "the same summary, from the cache");
        assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(step.cache.len(), 1);
        // other messages: a new summary
        run_in(&step, &agent_run(13), cx);
        assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(step.clone().cache.len(), 0, "a copy starts empty");
    }

    #[test]
    fn an_answer_over_the_budget_gives_way_to_the_extractive_summary_and_is_not_cached() {
        #[derive(Debug)]
        struct Wordy;
        impl Summarizer for Wordy {
            fn name(&self) -> &str {
                "wordy"
            }
            fn summarize(&self, _: &SummaryRequest<'_>) -> Result<String, SummaryError> {
                Ok("all work and no play ".repeat(500)) // one line, far over the budget
            }
        }
        let step = Summarize { threshold: 10, keep_recent: 4, max_tokens: 300, ..Summarize::default() };
        let out = run_in(&step, &agent_run(12), StepContext::new(Format::OpenAi).with_summarizer(&Wordy));
        let summary = out[2].text_content();
        assert!(
            summary.contains("summarizer wordy: the summary has") && summary.contains("over its budget"),
            "{summary}"
        );
        assert!(
            summary.contains("the extractive summary instead") && summary.contains("Commands:"),
            "{summary}"
        );
        assert!(counter().count(&out[2..3], None).total <= 300 + 8);
        assert!(step.cache.is_empty(), "a failed summary is not kept");
    }

    #[test]
    fn under_the_threshold_nothing_happens_and_the_summary_keeps_its_budget() {
        let input = agent_run(3);
        assert_eq!(run_in(&Summarize::default(), &input, StepContext::new(Format::OpenAi)), input);
        let input = agent_run(200);
        let step = Summarize { threshold: 10, keep_recent: 2, max_tokens: 300, ..Summarize::default() };
        let out = run_in(&step, &input, StepContext::new(Format::OpenAi));
        let tokens = counter().count(&out[2..3], None).total;
        assert!(tokens <= 300 + 10, "{tokens}");
        assert!(Summarize { max_tokens: 40, ..Summarize::default() }.check().is_err());
    }
}
