//! The catalogue of steps: each one a pure transformation of a [`History`] that records what
//! it did.
//!
//! One step per file, with its configuration, documented defaults and tests. Every step keeps
//! system messages and the newest user turn unless its configuration says otherwise, selects
//! whole [units](crate::units) so tool calls stay with their results, never mutates the input
//! (the history copies a message on its first change), and is deterministic.
//!
//! | group | steps |
//! | --- | --- |
//! | filter | [`DropThinking`], [`DropBinary`], [`DropRetryPrompts`], [`DropToolCalls`], [`DropEmpty`], [`ClearToolResults`], [`Dedupe`] |
//! | truncate | [`TruncateToolResults`], [`TruncateText`] |
//! | select | [`KeepLast`], [`KeepFirst`], [`HeadAndTail`], [`TokenBudget`], [`MiddleOut`], [`TaskTruncation`], [`LangchainTrim`] |
//! | rewrite | [`ContentName`] |
//! | peers, result for result | [`Ag2HistoryLimiter`], [`Ag2TokenLimiter`] (AG2's transforms, quirks included) |
//! | compress | [`Summarize`] (configuration only until summarizers land) |
//! | control | [`When`] |
//! | peers | [`AutogenContext`] (autogen-core's contexts, exactly, kept valid) |

use std::fmt;

use crate::format::Format;
use crate::history::History;

mod ag2_history_limiter;
pub mod ag2_select;
mod ag2_token_limiter;
mod autogen_context;
mod autogen_message;
mod clear_tool_results;
mod content_name;
mod dedupe;
mod drop_binary;
mod drop_empty;
mod drop_retry_prompts;
mod drop_thinking;
mod drop_tool_calls;
mod filter;
mod head_and_tail;
mod keep_first;
mod keep_last;
mod langchain_trim;
mod middle_out;
mod select;
mod summarize;
mod task_truncation;
#[cfg(test)]
pub(crate) mod test_support;
mod token_budget;
mod truncate_text;
mod truncate_tool_results;
mod when;

pub use ag2_history_limiter::Ag2HistoryLimiter;
pub use ag2_token_limiter::{
    ag2_token_limit, string_tokens, text_tokens, Ag2Error, Ag2Kept, Ag2TokenLimiter, AG2_DEFAULT_MODEL,
};
pub use autogen_context::{
    autogen_skipped_text, buffered as autogen_buffered, head_and_tail as autogen_head_and_tail,
    token_limited as autogen_token_limited, token_limited_with as autogen_token_limited_with, AutogenContext,
    AutogenPolicy, AutogenView, InputBreakage, ViewPart,
};
pub use autogen_message::{AutogenCall, AutogenFormatError, AutogenMessage, AutogenPart, AutogenResult};
pub use clear_tool_results::ClearToolResults;
pub use content_name::{ContentName, NamePosition};
pub use dedupe::Dedupe;
pub use drop_binary::DropBinary;
pub use drop_empty::DropEmpty;
pub use drop_retry_prompts::{DropRetryPrompts, TextPattern};
pub use drop_thinking::DropThinking;
pub use drop_tool_calls::DropToolCalls;
pub use filter::MessageFilter;
pub use head_and_tail::{HeadAndTail, AUTOGEN_PLACEHOLDER};
pub use keep_first::KeepFirst;
pub use keep_last::KeepLast;
pub use langchain_trim::{
    item_message, Item, Kept, LangchainTrim, Lines, ListCounter, MessageCount, ModelCount, PartialContent,
    Source, Strategy, TextSplitter, TrimCounter,
};
pub use middle_out::{MiddleOut, MIDDLE_CUT_MARKER};
pub use select::Measure;
pub use summarize::Summarize;
pub use task_truncation::{TaskScope, TaskTruncation};
pub use token_budget::TokenBudget;
pub use truncate_text::TruncateText;
pub use truncate_tool_results::{TruncateToolResults, TRUNCATED_MARKER};
pub use when::{Condition, When};

/// Where a step runs: the budget and window of the call, and the provider's rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepContext {
    /// The token budget of the call, if it has one (`fit` always does).
    pub budget: Option<usize>,
    /// The model's context window, if known (for conditions on a fraction of it).
    pub window: Option<usize>,
    /// The provider the history is fitted for.
    pub provider: Format,
}

impl StepContext {
    /// A context with a budget and no known window.
    pub fn with_budget(budget: usize, provider: Format) -> StepContext {
        StepContext { budget: Some(budget), window: None, provider }
    }
}

/// A step of a pipeline.
///
/// `apply` changes the history only through [`History`]'s methods, which record every change
/// under the step's name. A step that has nothing to do leaves the history alone.
pub trait Step: Send + Sync + fmt::Debug {
    /// The step's name in configuration and reports (`keep_last`).
    fn name(&self) -> &'static str;

    /// Checks the configuration once, when the pipeline is built. The default accepts it.
    fn check(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// Transforms `history`.
    fn apply(&self, history: &mut History<'_>, cx: &StepContext) -> Result<(), StepError>;
}

/// A step could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{step}: {reason}")]
pub struct StepError {
    /// The step.
    pub step: String,
    /// Why.
    pub reason: String,
}

impl StepError {
    /// An error of `step`.
    pub fn new(step: &str, reason: impl Into<String>) -> StepError {
        StepError { step: step.to_string(), reason: reason.into() }
    }
}

/// A configuration error, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: `steps[2].max_length`, or a step's parameter name.
    pub key: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.key, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// An error at `key`.
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
        ConfigError { key: key.into(), reason: reason.into() }
    }

    /// The same error under a parent key (`steps[2]` + `max_length`).
    pub fn within(self, parent: &str) -> ConfigError {
        let key = if self.key.is_empty() {
            parent.to_string()
        } else if self.key.starts_with('[') {
            format!("{parent}{}", self.key)
        } else {
            format!("{parent}.{}", self.key)
        };
        ConfigError { key, reason: self.reason }
    }
}
