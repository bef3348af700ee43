//! Token accounting: tokenizers behind one small trait, and on top of them the framing
//! model of each provider family (per-message overhead, names, tool calls, tool schemas,
//! images, reply priming), with per-message caching.
//!
//! - [`TokenCounter`]: counts the tokens of a text. Backends: [`OpenAiEncoding`] (exact BPE,
//!   vocabularies embedded in the binary), [`Estimate`] (for models without a public
//!   tokenizer, such as Claude), [`Calibrated`] (an estimate corrected from a provider's
//!   reported `usage`), [`OpenTokenizer`] (exact BPE for Llama 3, Qwen, DeepSeek and Mistral
//!   tekken: see the `open` module), and `HfTokenizer` (a HuggingFace `tokenizer.json`,
//!   feature `hf`).
//! - [`ChatCounter`]: counts messages and conversations the way a provider bills them.
//! - [`CountCache`] and [`RunningCount`]: counting a conversation again after it changed
//!   re-tokenizes only the messages that changed.

mod bpe;
mod cache;
mod chat;
mod estimate;
#[cfg(feature = "hf")]
mod hf;
pub mod image;
mod open;
mod openai_tables;
mod schema;
mod templates;

pub use cache::{message_fingerprint, CountCache, RunningCount};
pub use chat::{ChatCounter, Count, Framing, DEFAULT_FILE_TOKENS};
pub use estimate::{Calibrated, Estimate};
#[cfg(feature = "hf")]
pub use hf::HfTokenizer;
pub use open::{
    llama3, llama3_candidates, recognize_file, set_llama3_search_path, OpenFamily, OpenTokenizer,
    LLAMA3_NOT_FOUND,
};
pub use openai_tables::OpenAiEncoding;

/// Counts the tokens of a text for one tokenizer.
///
/// Only [`count`](TokenCounter::count) is required; fast backends override
/// [`count_till_limit`](TokenCounter::count_till_limit), which may stop early.
pub trait TokenCounter: Send + Sync {
    /// A stable name for the tokenizer (`o200k_base`), part of every cache key.
    fn name(&self) -> &str;

    /// The number of tokens of `text`. Special-token text (`<|endoftext|>`) is counted as
    /// ordinary text, as a provider counts user content.
    fn count(&self, text: &str) -> usize;

    /// The number of tokens of `text` if it is at most `limit`, else `None`. The default
    /// counts everything; backends that can stop early do.
    fn count_till_limit(&self, text: &str, limit: usize) -> Option<usize> {
        let n = self.count(text);
        (n <= limit).then_some(n)
    }

    /// [`count_till_limit`](TokenCounter::count_till_limit) for a question asked again of
    /// the same text on every fit (a step's `min_tokens` check of every old tool result of
    /// a growing history): a backend may remember the answer. The default does not.
    fn count_till_limit_again(&self, text: &str, limit: usize) -> Option<usize> {
        self.count_till_limit(text, limit)
    }

    /// The most tokens any text of `bytes` bytes can have, when the tokenizer knows it
    /// without reading the text; `None` (the default) when it does not. A caller that only
    /// asks whether a text is over some number skips counting texts too short to be.
    fn max_tokens_of_len(&self, bytes: usize) -> Option<usize> {
        let _ = bytes;
        None
    }

    /// The most bytes any text of `tokens` tokens can have, when the tokenizer knows it (no
    /// token of its vocabulary is longer than some length); `None` (the default) when it
    /// does not. A caller that knows a text's count but has not read the text bounds its
    /// length without reading it.
    fn max_len_of_tokens(&self, tokens: usize) -> Option<usize> {
        let _ = tokens;
        None
    }

    /// Why counts are an estimate rather than the model's own tokenizer's, or `None` (the
    /// default) when they are exact. Shown beside counts (`tightfit count` says "estimated:
    /// …").
    fn estimate_reason(&self) -> Option<&str> {
        None
    }

    /// The total tokens of several texts counted separately.
    fn count_many(&self, texts: &[&str]) -> usize {
        texts.iter().map(|t| self.count(t)).sum()
    }
}

/// An error loading a tokenizer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    /// A tokenizer file could not be read or parsed.
    #[error("cannot load tokenizer {path}: {reason}")]
    Load {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A calibration was given numbers it cannot use.
    #[error("cannot calibrate: {0}")]
    Calibration(String),
}
