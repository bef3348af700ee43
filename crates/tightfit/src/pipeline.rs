//! Pipelines: an ordered list of steps, each optionally guarded by a condition, built and
//! checked once, then reused across calls and threads.
//!
//! ```
//! use tightfit::pipeline::Pipeline;
//! use tightfit::steps::{Condition, DropThinking, KeepLast};
//!
//! let pipeline = Pipeline::builder()
//!     .step(DropThinking::default())
//!     .when(Condition::MessagesAbove(20), KeepLast::messages(10))
//!     .build()?;
//! assert_eq!(pipeline.len(), 2);
//! # Ok::<(), tightfit::steps::ConfigError>(())
//! ```

use crate::history::History;
use crate::repair;
use crate::report::StepLog;
use crate::steps::{Condition, ConfigError, Step, StepContext, StepError, When};

/// An immutable, checked list of steps; `Send + Sync`, so one pipeline serves every call.
#[derive(Debug)]
pub struct Pipeline {
    steps: Vec<Box<dyn Step>>,
}

impl Pipeline {
    /// A builder for a pipeline.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder::default()
    }

    /// The number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the pipeline has no step.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// A builder holding this pipeline's steps, to add more.
    pub fn into_builder(self) -> PipelineBuilder {
        PipelineBuilder { steps: self.steps }
    }

    /// The steps, in order.
    pub fn steps(&self) -> impl Iterator<Item = &dyn Step> {
        self.steps.iter().map(|s| s.as_ref())
    }

    /// Runs every step on `history` in order and returns one log entry per step that changed
    /// something. After each step the history is put back in the provider's shape (for
    /// Anthropic: turns that a selection left next to a turn of the same role are merged).
    pub fn run(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<Vec<StepLog>, StepError> {
        let mut logs = Vec::new();
        for step in &self.steps {
            history.set_step(step.name());
            let before = (history.len(), history.total_tokens(), history.revision(), history.dropped_count());
            let notes = history.notes_count();
            step.apply(history, cx)?;
            // a step that deferred its mends and returned early still leaves them true
            history.settle_mends();
            repair::normalize(history);
            // the shapes steps skip messages by must say what the messages now hold (every
            // test build checks, after every step of every pipeline the tests run)
            debug_assert_eq!(history.stale_shape(), None, "a stale shape after step {}", step.name());
            // and the units kept across changes that keep them must be the messages' own
            debug_assert!(!history.stale_units(), "stale units after step {}", step.name());
            if history.revision() != before.2 {
                let mut log =
                    StepLog::new(step.name(), before.0, history.len(), before.1, history.total_tokens());
                log.removed = history.dropped_since(before.3);
                log.changed = history.changed_by(step.name());
                log.notes = history.notes_since(notes);
                logs.push(log);
            }
        }
        Ok(logs)
    }
}

/// Composes steps into a [`Pipeline`].
#[derive(Debug, Default)]
pub struct PipelineBuilder {
    steps: Vec<Box<dyn Step>>,
}

impl PipelineBuilder {
    /// Appends `step`.
    pub fn step(mut self, step: impl Step + 'static) -> PipelineBuilder {
        self.steps.push(Box::new(step));
        self
    }

    /// Appends a step already boxed (from configuration).
    pub fn boxed(mut self, step: Box<dyn Step>) -> PipelineBuilder {
        self.steps.push(step);
        self
    }

    /// Appends `step`, run only when `condition` holds.
    pub fn when(self, condition: Condition, step: impl Step + 'static) -> PipelineBuilder {
        self.step(When::new(condition, step))
    }

    /// Checks every step's configuration and returns the pipeline; an error names the step
    /// (`steps[2].max_length: must be at least 1`).
    pub fn build(self) -> Result<Pipeline, ConfigError> {
        for (i, step) in self.steps.iter().enumerate() {
            step.check().map_err(|e| e.within(&format!("steps[{i}]")))?;
        }
        Ok(Pipeline { steps: self.steps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Pipeline>();
    }
}
