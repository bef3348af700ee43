//! The step that sends an epoch's decision again: the messages the compaction kept, rewrote
//! and wrote, then everything that came after it as it came. It reads the history after the
//! repair pass, so a broken input (two user turns in a row for Anthropic, an orphan result) is
//! replayed like a valid one.
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
        // the covered input messages the decision sends (as they are now, or as it rewrote them)
        let mut sent = vec![false; frozen];
        for entry in &decision.entries {
            if let Entry::Keep(i) | Entry::Replace { input: i, .. } = entry {
                sent[*i] = true;
            }
        }
        // The covered part of the history: up to the first message the decision does not cover.
        // The repair pass ran before this step and does to the covered messages what it did
        // when the compaction saw them (it reads the same prefix): messages it merged away or
        // dropped are gone again, messages it wrote there (a synthetic result, a placeholder
        // turn) are in the decision's own entries and go here.
        let covered = (0..history.len())
            .find(|&p| matches!(history.origin(p), Origin::Input(i) if i >= frozen))
            .unwrap_or(history.len());
        let present =
            (0..covered).filter(|&p| matches!(history.origin(p), Origin::Input(i) if sent[i])).count();
        // the first message after the covered ones must be there: the repair pass merges a
        // message into the one before it, and a new message merged into a covered one would be
        // lost under the decision's copy
        let next_is_there = frozen >= history.input_len()
            || (covered < history.len() && history.origin(covered) == Origin::Input(frozen));
        if !next_is_there || present != sent.iter().filter(|s| **s).count() {
            return Err(StepError::new(
                NAME,
                "the repair pass changed the messages the decision covers; the history is decided afresh",
            ));
        }
        let keep: Vec<bool> = (0..history.len())
            .map(|p| p >= covered || matches!(history.origin(p), Origin::Input(i) if sent[i]))
            .collect();
        history.retain(|p, _| keep[p], &format!("removed at the compaction of epoch {}", decision.epoch));
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
