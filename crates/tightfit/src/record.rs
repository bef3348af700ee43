//! The record a history keeps of each message while it is fitted: where it came from and how
//! each step changed it. [`History`](crate::history::History) writes it and
//! [`Plan`](crate::plan::Plan) is made from it; both import this module, and the plan does not
//! need the history.

use std::borrow::Cow;
use std::fmt::Write;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::calls::result_keys;
use crate::message::Message;
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

/// The input messages steps dropped, in the order dropped: each one's index, and the step and
/// reason it was dropped for. A step that drops a hundred thousand messages records its name
/// and reason once: each message is an index and a number, with no reference counts to
/// touch when it is recorded or freed.
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    /// (input index, index into `why`).
    inputs: Vec<(usize, u32)>,
    /// (step, reason), each pair once in a row.
    why: Vec<(Arc<str>, Arc<str>)>,
}

impl Dropped {
    /// How many input messages were dropped.
    pub(crate) fn len(&self) -> usize {
        self.inputs.len()
    }

    /// Room for `more` messages dropped at once.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.inputs.reserve(more);
    }

    /// Records input message `input` dropped by `step` for `reason`.
    pub(crate) fn push(&mut self, input: usize, step: &Arc<str>, reason: &Arc<str>) {
        let same = self.why.last().is_some_and(|(s, r)| Arc::ptr_eq(s, step) && Arc::ptr_eq(r, reason));
        if !same {
            self.why.push((Arc::clone(step), Arc::clone(reason)));
        }
        self.inputs.push((input, (self.why.len() - 1) as u32));
    }

    /// The input indices of the messages dropped after the first `from`, in order.
    pub(crate) fn inputs_since(&self, from: usize) -> impl Iterator<Item = usize> + '_ {
        self.inputs[from.min(self.inputs.len())..].iter().map(|&(input, _)| input)
    }

    /// Every message dropped: (input index, step, reason), in the order dropped.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &Arc<str>, &Arc<str>)> + '_ {
        self.inputs.iter().map(|&(input, why)| {
            let (step, reason) = &self.why[why as usize];
            (input, step, reason)
        })
    }
}

/// One change of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The step that made it (shared: a step that changes a thousand messages names itself
    /// once).
    pub step: Arc<str>,
    /// What kind of change it was.
    pub kind: ChangeKind,
    /// What it did, for a person.
    pub(crate) detail: Detail,
}

/// What a change did, for a person ("content: kept chars 0..1000 and 9000..10000 of 10000").
/// Most are written when the change is made. The two that a warm fit of a long history makes
/// by the ten thousand, a result replaced by a reference to its first copy and a result
/// cleared, are written from the message when read ([`Detail::render`]): a later step drops
/// most of those messages, and their lines were written for nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Written when the change was made.
    Text(String),
    /// The whole result of a tool message repeats the result of this call ([`repeat_line`]).
    RepeatOf(Arc<str>),
    /// The whole result of a tool message was cleared ([`cleared_line`]).
    Cleared,
}

impl Detail {
    /// The line, for `message`: the message the change was made to, as it is now (a later
    /// change keeps its role and ids, which the lines written when read name).
    pub(crate) fn render(&self, message: &Message) -> Cow<'_, str> {
        match self {
            Detail::Text(text) => Cow::Borrowed(text),
            Detail::RepeatOf(first) => Cow::Owned(repeat_line(result_id(message), first)),
            Detail::Cleared => Cow::Owned(cleared_line(result_keys(message, 0).map(|(key, _)| key.as_str()))),
        }
    }
}

impl From<String> for Detail {
    fn from(text: String) -> Detail {
        Detail::Text(text)
    }
}

/// The call id a tool message's result answers (its name for a legacy function result), as
/// `dedupe` names it.
pub(crate) fn result_id(message: &Message) -> &str {
    message.tool_call_id.as_deref().or(message.name.as_deref()).unwrap_or_default()
}

/// `dedupe`'s line for the result of call `id` replaced by a reference to the identical result
/// of call `first`.
pub(crate) fn repeat_line(id: &str, first: &str) -> String {
    format!("the result of {id}: identical to the result of {first}")
}

/// `clear_tool_results`' line for the results of the calls `ids` cleared in one message.
pub(crate) fn cleared_line<'k>(ids: impl Iterator<Item = &'k str>) -> String {
    // the ids as `{:?}` of a list of them writes them, without collecting them first
    let mut line = String::from("cleared the result(s) of tool call(s) [");
    for (k, id) in ids.enumerate() {
        if k > 0 {
            line.push_str(", ");
        }
        let _ = write!(line, "{id:?}");
    }
    line.push(']');
    line
}
