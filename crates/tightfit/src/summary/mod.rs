//! Summaries that keep the facts: the [`Summarizer`] trait, the built-in [`Extractive`]
//! summarizer, and the [`ledger`] of exact facts both it and the fact-retention benchmark use.
//!
//! A summary stands where older messages were removed (the `summarize` step, a session's
//! compaction through [`SummaryTrace`](crate::steps::SummaryTrace)). It is a structured
//! hand-off: the user's requests verbatim, a ledger of exact facts (errors, paths, URLs,
//! identifiers, numbers), the commands run with their outcome, the progress, and the latest
//! state. A summary of a range that holds an earlier summary carries that summary's requests
//! and ledger lines verbatim, never re-worded. The summarizer writes the body; the caller puts
//! the header (which messages, and, with offload, the handle that recalls them) before it.
//!
//! Summarizers are pluggable: the extractive one (the default: deterministic, no network), and
//! any implementation of the trait (a Python callable through the Python package; an LLM
//! endpoint in its own crate, so that the engine keeps no HTTP stack).

mod extractive;
pub mod ledger;

use std::fmt;

pub use extractive::Extractive;

use crate::format::Format;
use crate::message::Message;

/// How the text of a summary message starts: `[tightfit: summary of ` (so tightfit's own
/// traces, summaries included, are recognised by one prefix).
pub const SUMMARY_PREFIX: &str = "[tightfit: summary of ";

/// What a summarizer is asked to summarize.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct SummaryRequest<'a> {
    /// The messages to summarize, in order (earlier summaries among them).
    pub messages: &'a [&'a Message],
    /// For each, its index in the input (`None` for a message a step wrote).
    pub input_indices: &'a [Option<usize>],
    /// The most tokens the body may take.
    pub max_tokens: usize,
    /// Counts the tokens of a text, by the model's tokenizer.
    pub count: &'a dyn Fn(&str) -> usize,
    /// The wire format of the conversation (for a summarizer that hands the messages on).
    pub format: Format,
}

impl fmt::Debug for SummaryRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummaryRequest")
            .field("messages", &self.messages.len())
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl<'a> SummaryRequest<'a> {
    /// A request to summarize `messages` (with their input indices) in at most `max_tokens`
    /// tokens as `count` measures them.
    pub fn new(
        messages: &'a [&'a Message],
        input_indices: &'a [Option<usize>],
        max_tokens: usize,
        count: &'a dyn Fn(&str) -> usize,
    ) -> SummaryRequest<'a> {
        SummaryRequest { messages, input_indices, max_tokens, count, format: Format::OpenAi }
    }

    /// The same request for a conversation in `format`.
    pub fn in_format(self, format: Format) -> SummaryRequest<'a> {
        SummaryRequest { format, ..self }
    }
}

/// Why a summary could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("summarizer {summarizer}: {reason}")]
pub struct SummaryError {
    /// The summarizer.
    pub summarizer: String,
    /// What went wrong.
    pub reason: String,
}

/// Writes the body of a summary. Implementations must be deterministic for the same request
/// where they can (a provider's prompt cache keeps a summary only while its bytes stay the
/// same); the session replays a compaction's summary, so a summarizer runs once per
/// compaction, not per turn.
pub trait Summarizer: Send + Sync + fmt::Debug {
    /// Its name in reports. Two summarizers of one name are taken to write the same summaries
    /// (the `summarize` step caches summaries by it): a name should say what makes the
    /// summaries differ (the endpoint and model, say).
    fn name(&self) -> &str;

    /// What tells two summarizers of one name apart where the name cannot (a Python callable's
    /// identity); with the name, the key of the `summarize` step's cache. Defaults to 0.
    fn identity(&self) -> u64 {
        0
    }

    /// The body of the summary of `request.messages`, within `request.max_tokens`.
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String, SummaryError>;
}

/// The header line of a summary of `count` messages spanning input messages `span`.
pub fn header(count: usize, span: Option<(usize, usize)>) -> String {
    let which = span.map_or("earlier messages".to_string(), |(a, b)| crate::text::message_span(a, b));
    let plural = if count == 1 { "message was" } else { "messages were" };
    format!("{SUMMARY_PREFIX}{which}: {count} {plural} removed here to fit the context window]")
}
