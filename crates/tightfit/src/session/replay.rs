//! The step that sends an epoch's decision again: the messages the compaction kept, rewrote
//! and wrote, then everything that came after it as it came.
//!
//! It runs through the one run path ([`Fitter::run`](crate::fit::Fitter::run)) like any
//! pipeline, so a replayed turn is counted, held to the budget and validated like a fit.
//! Cost: one pass over the history, plus counting the messages the decision rewrote (through
//! the count cache: hashing them, not tokenizing).

use std::sync::Arc;

use super::decision::{Decision, Entry};
use crate::history::{History, Origin};
use crate::steps::{Step, StepContext, StepError};

/// Applies a [`Decision`] to the messages it covers.
#[derive(Debug)]
pub(crate) struct Replay {
    pub(crate) decision: Arc<Decision>,
}

/// The step's name in reports.
pub(crate) const NAME: &str = "session";

impl Step for Replay {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let decision = &self.decision;
        let frozen = decision.frozen();
        if frozen == 0 {
            return Ok(());
        }
        // the covered messages must be there as they came (a repair of a broken input may have
        // changed them: then the caller compacts afresh)
        if history.len() < frozen || (0..frozen).any(|i| history.origin(i) != Origin::Input(i)) {
            return Err(StepError::new(
                NAME,
                "the messages the decision covers were changed by the repair pass",
            ));
        }
        let mut keep = vec![true; history.len()];
        keep[..frozen].fill(false);
        for entry in &decision.entries {
            if let Entry::Keep(i) | Entry::Replace { input: i, .. } = entry {
                keep[*i] = true;
            }
        }
        history.retain(|i, _| keep[i], &format!("removed at the compaction of epoch {}", decision.epoch));
        for (at, entry) in decision.entries.iter().enumerate() {
            match entry {
                Entry::Keep(_) => {}
                Entry::Replace { message, kind, detail, .. } => {
                    history.replace(at, *kind, detail.clone(), message.clone());
                }
                Entry::Insert { message, detail } => history.insert(at, message.clone(), detail.clone()),
            }
        }
        Ok(())
    }
}
