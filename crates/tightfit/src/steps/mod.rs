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
//! | select | [`KeepLast`], [`KeepFirst`], [`HeadAndTail`], [`TokenBudget`], [`MiddleOut`], [`TaskTruncation`], [`Compact`] (a session's cut) |
//! | rewrite | [`ContentName`] |
//! | compress | [`Summarize`], [`CompressText`] |
//! | control | [`When`] |
//!
//! Each step declares its configuration name and aliases as a [`StepKind`] beside its type;
//! [`CATALOGUE`] lists them. The peers' emulations (AG2, autogen-core, LangChain, swarms) are
//! not here: they live in `compat` (feature `compat`) and use these steps, never the reverse.

use std::fmt;

use serde_json::{Map, Value};

use crate::format::Format;
use crate::history::History;
pub use crate::params::ConfigError;
use crate::params::{FromParams, Params};
use crate::summary::Summarizer;

mod clear_tool_results;
mod compact;
mod compress_text;
mod content_name;
mod dedupe;
mod drop_binary;
mod drop_empty;
mod drop_retry_prompts;
mod drop_thinking;
mod drop_tool_calls;
mod head_and_tail;
mod keep_first;
mod keep_last;
mod key_doc;
mod middle_out;
pub(crate) mod shared;
mod summarize;
mod task_truncation;
#[cfg(test)]
pub(crate) mod test_support;
mod token_budget;
mod truncate_text;
mod truncate_tool_results;
mod when;

pub use clear_tool_results::{ClearToolResults, MIN_CUT_KEEPS};
pub use compact::Compact;
pub use compress_text::{CompressText, CompressTo, Compressed, Scorer, SelfInformation};
pub use content_name::{ContentName, NamePosition};
pub use dedupe::Dedupe;
pub use drop_binary::DropBinary;
pub use drop_empty::DropEmpty;
pub use drop_retry_prompts::{DropRetryPrompts, TextPattern};
pub use drop_thinking::DropThinking;
pub use drop_tool_calls::DropToolCalls;
pub use head_and_tail::{HeadAndTail, AUTOGEN_PLACEHOLDER};
pub use keep_first::KeepFirst;
pub use keep_last::KeepLast;
pub use key_doc::{KeyDoc, KeyUnit};
pub(crate) use key_doc::{EXCLUDE_FILTER, FILTER_DICT, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM};
pub use middle_out::{MiddleOut, MIDDLE_CUT_MARKER};
pub use shared::cut::TRUNCATED_MARKER;
pub use shared::filter::MessageFilter;
pub use shared::select::Measure;
pub use shared::trace::{CountTrace, Removed, Trace, TRACE_PREFIX};
pub use summarize::{Summarize, SummaryTrace, DEFAULT_SUMMARY_TOKENS};
pub use task_truncation::{TaskScope, TaskTruncation};
pub use token_budget::TokenBudget;
pub use truncate_text::TruncateText;
pub use truncate_tool_results::TruncateToolResults;
pub use when::{Condition, When};

/// Where a step runs: the budget and window of the call, the provider's rules, and (from the
/// summaries and sessions work on) the services the caller lends the run, such as a summarizer
/// or an offload store, as references that live as long as `'a`.
///
/// Built with [`StepContext::new`] and the `with_*` setters, so that a new field is not a
/// breaking change.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StepContext<'a> {
    /// The token budget of the call, if it has one (`fit` always does).
    pub budget: Option<usize>,
    /// The model's context window, if known (for conditions on a fraction of it).
    pub window: Option<usize>,
    /// The provider the history is fitted for.
    pub provider: Format,
    /// What a compaction leaves where it removed messages; [`CountTrace`] when `None`.
    pub trace: Option<&'a dyn Trace>,
    /// What writes summaries (the `summarize` step); the built-in extractive one when `None`.
    pub summarizer: Option<&'a dyn Summarizer>,
    /// What scores words for `compress_text`; the step's own scorer when `None`.
    pub scorer: Option<&'a dyn Scorer>,
}

impl StepContext<'_> {
    /// A context for `provider`'s rules, with no budget and no known window.
    pub fn new(provider: Format) -> StepContext<'static> {
        StepContext { budget: None, window: None, provider, trace: None, summarizer: None, scorer: None }
    }
}

impl<'a> StepContext<'a> {
    /// The same context with a budget (`None`: the steps' own limits decide).
    pub fn with_budget(self, budget: impl Into<Option<usize>>) -> StepContext<'a> {
        StepContext { budget: budget.into(), ..self }
    }

    /// The same context with the model's window (`None`: unknown).
    pub fn with_window(self, window: impl Into<Option<usize>>) -> StepContext<'a> {
        StepContext { window: window.into(), ..self }
    }

    /// The same context with `trace` lent to compactions (a summarizer, an offload store).
    pub fn with_trace<'b>(self, trace: &'b dyn Trace) -> StepContext<'b>
    where
        'a: 'b,
    {
        StepContext { trace: Some(trace), ..self }
    }

    /// The same context with `scorer` lent to the `compress_text` step.
    pub fn with_scorer<'b>(self, scorer: &'b dyn Scorer) -> StepContext<'b>
    where
        'a: 'b,
    {
        StepContext { scorer: Some(scorer), ..self }
    }

    /// The same context with `summarizer` lent to the `summarize` step.
    pub fn with_summarizer<'b>(self, summarizer: &'b dyn Summarizer) -> StepContext<'b>
    where
        'a: 'b,
    {
        StepContext { summarizer: Some(summarizer), ..self }
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
    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError>;

    /// The step as configuration: the map (its `type` included) that
    /// [`config::step_from_value`](crate::config::step_from_value) builds an equal step from,
    /// every key under its own name and `null` for a setting left unset
    /// ([`config::step_to_value`](crate::config::step_to_value) leaves out what is default).
    /// What is lent at run time (a summarizer, a scorer) is not configuration and not written.
    /// The default is `None`: a step configuration cannot express (a step of your own, or
    /// settings only code can give).
    fn to_config(&self) -> Option<Map<String, Value>> {
        None
    }
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

/// Builds one step from configuration: reads its keys from `params`, and builds a step it
/// wraps (a `when` guard's `step:`) with `nested`.
pub type BuildStep =
    fn(params: &mut Params, nested: &dyn Fn(Value) -> Result<Box<dyn Step>, ConfigError>) -> BuiltStep;

/// What [`BuildStep`] returns.
pub type BuiltStep = Result<Box<dyn Step>, ConfigError>;

/// A step as configuration knows it: its name, the peers' names for it, what it does, its
/// keys' units and meanings, and how to build it.
///
/// Each step declares its own `KIND` next to its type; [`CATALOGUE`] lists them, and the
/// configuration loader, the presets, the documentation (`config::step_table`) and the Python
/// package's schema all read that one table.
#[derive(Clone, Copy)]
pub struct StepKind {
    /// Its name in configuration and reports (`keep_last`).
    pub name: &'static str,
    /// Other names configuration accepts for it (the peers': `keep_last_messages`, `buffered`).
    pub aliases: &'static [&'static str],
    /// What it does, in a sentence.
    pub summary: &'static str,
    /// Its keys' units and meanings, in the order its builder reads them.
    pub keys: &'static [KeyDoc],
    /// Builds it from its keys.
    pub build: BuildStep,
}

impl StepKind {
    /// The kind of a step read by its [`FromParams`], documented by [`StepKind::documented`].
    pub const fn of<S: FromParams + Step + 'static>(
        name: &'static str,
        aliases: &'static [&'static str],
    ) -> StepKind {
        StepKind::built_by(name, aliases, |params, _| Ok(Box::new(S::from_params(params)?)))
    }

    /// The kind of a step `build` makes, documented by [`StepKind::documented`].
    pub const fn built_by(
        name: &'static str,
        aliases: &'static [&'static str],
        build: BuildStep,
    ) -> StepKind {
        StepKind { name, aliases, summary: "", keys: &[], build }
    }

    /// The same kind with what it does and its keys' documentation.
    pub const fn documented(self, summary: &'static str, keys: &'static [KeyDoc]) -> StepKind {
        StepKind { summary, keys, ..self }
    }

    /// Whether configuration may call it `name`.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

impl fmt::Debug for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepKind").field("name", &self.name).field("aliases", &self.aliases).finish()
    }
}

/// tightfit's own steps, in the order configuration lists them; a new step is one line here.
/// The peers' emulations follow in `compat::STEPS` (feature `compat`).
pub const CATALOGUE: &[StepKind] = &[
    drop_thinking::KIND,
    drop_binary::KIND,
    drop_retry_prompts::KIND,
    drop_tool_calls::KIND,
    drop_empty::KIND,
    clear_tool_results::KIND,
    dedupe::KIND,
    truncate_tool_results::KIND,
    truncate_text::KIND,
    token_budget::KIND,
    content_name::KIND,
    keep_last::KIND,
    keep_first::KIND,
    head_and_tail::KIND,
    middle_out::KIND,
    compact::KIND,
    task_truncation::KIND,
    summarize::KIND,
    compress_text::KIND,
    when::KIND,
];
