//! `summarize`: replace older messages by a summary (llmling `Summarize`).
//!
//! Summaries come with their own issue (a pluggable summarizer: an OpenAI-compatible or
//! Anthropic endpoint, a Python callable, or the built-in extractive one). Until then the step
//! reads its configuration, so configurations that name it load, and it does nothing while the
//! history has at most `threshold` messages; past that it fails with an error that says no
//! summarizer is configured — it never drops messages silently in place of a summary.

use super::{ConfigError, Step, StepContext, StepError, StepKind};
use crate::history::History;
use crate::params::{FromParams, Params};

/// `summarize` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<Summarize>("summarize", &[]);

/// Summarizes older messages (not available yet: fails once it would have to act).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarize {
    /// The model that writes summaries. Defaults to `openai:gpt-4o-mini` (llmling's default).
    pub model: String,
    /// Messages above which it acts. Defaults to 15.
    pub threshold: usize,
    /// Recent messages left out of the summary. Defaults to 5.
    pub keep_recent: usize,
    /// The prompt, with `{conversation}` where the history goes. Defaults to `None` (the
    /// summarizer's own).
    pub summary_prompt: Option<String>,
}

impl Default for Summarize {
    fn default() -> Summarize {
        Summarize { model: "openai:gpt-4o-mini".into(), threshold: 15, keep_recent: 5, summary_prompt: None }
    }
}

impl FromParams for Summarize {
    /// Keys: `model`, `threshold`, `keep_recent`, `summary_prompt`.
    fn from_params(p: &mut Params) -> Result<Summarize, ConfigError> {
        let mut step = Summarize::default();
        if let Some(model) = p.string(&["model"])? {
            step.model = model;
        }
        if let Some(n) = p.usize(&["threshold"])? {
            step.threshold = n;
        }
        if let Some(n) = p.usize(&["keep_recent"])? {
            step.keep_recent = n;
        }
        step.summary_prompt = p.string(&["summary_prompt"])?;
        Ok(step)
    }
}

impl Step for Summarize {
    fn name(&self) -> &'static str {
        "summarize"
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        if history.len() <= self.threshold {
            return Ok(());
        }
        Err(StepError::new(
            self.name(),
            format!(
                "no summarizer is configured (the history has {} messages, above the threshold of {}); \
                 remove the step or summarize elsewhere",
                history.len(),
                self.threshold
            ),
        ))
    }
}
