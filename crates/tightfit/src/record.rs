//! The record a history keeps of each message while it is fitted: where it came from and how
//! each step changed it. [`History`](crate::history::History) writes it and
//! [`Plan`](crate::plan::Plan) is made from it; both import this module, and the plan does not
//! need the history.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::shape::Shape;

/// Where a message of the working history came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The input message at this index (changed or not).
    Input(usize),
    /// Written by a step (a placeholder, a synthetic result, a summary).
    Inserted,
}

/// What tightfit knows about one message of the working history.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) origin: Origin,
    pub(crate) tokens: usize,
    pub(crate) changes: Vec<Change>,
    /// What kinds of content the message holds now (worked out again after each change).
    pub(crate) shape: Shape,
}

/// How a step changed a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// Part of its content was cut (the detail says which range).
    Truncated,
    /// Content was replaced by a placeholder or a reference.
    Replaced,
    /// Parts were removed (thinking, images, tool calls).
    Removed,
    /// Content was rewritten (a name written into the text, turns merged, a repair).
    Rewritten,
}

/// An input message a step dropped: its index, the step, and why.
pub(crate) type Dropped = (usize, Arc<str>, Arc<str>);

/// One change of one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The step that made it (shared: a step that changes a thousand messages names itself
    /// once).
    pub step: Arc<str>,
    /// What kind of change it was.
    pub kind: ChangeKind,
    /// What it did, for a person ("content: kept chars 0..1000 and 9000..10000 of 10000").
    pub detail: String,
}
