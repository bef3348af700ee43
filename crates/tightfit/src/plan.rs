//! The plan: what happened to every unit of the input, and how to rebuild the output.
//!
//! A plan is serializable (JSON) and replayable: [`Plan::replay`] on the same input gives the
//! same messages, so writing them gives identical bytes. Messages a step changed or wrote are
//! stored whole, in the wire format of the conversation; kept messages are stored as their
//! input index only. A fingerprint of the input guards against replaying on another history.

use std::borrow::Cow;
use std::fmt::Write;
use std::hash::Hash;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

use crate::format::{messages_to_value, parse_messages, Format};
use crate::history_message::HistoryMessage;
use crate::message::Message;
pub use crate::record::{Change, ChangeKind};
use crate::record::{Dropped, Meta, Origin};
use crate::tokens::message_fingerprint;
use crate::units::{Unit, UnitKind};

/// What happened to a unit of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitAction {
    /// Sent as it came.
    Kept,
    /// Not sent.
    Dropped,
    /// Sent with part of its content cut.
    Truncated,
    /// Sent with content replaced by a placeholder or reference.
    Replaced,
    /// Sent with other changes (parts removed, text rewritten, some of its messages dropped).
    Edited,
}

/// The fate of one unit of the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitPlan {
    /// What the unit is: `instruction`, `user_turn`, `assistant_step`, `orphan_results`
    /// (one of four names, not a copy per unit: a long history has tens of thousands).
    pub kind: Cow<'static, str>,
    /// The input messages it spans, `[start, end)`.
    pub messages: [usize; 2],
    /// What happened to it.
    pub action: UnitAction,
    /// The steps that acted on it, in order (shared with the history's record of changes).
    pub steps: Vec<Arc<str>>,
    /// What they did, one line each ("messages[4]: dropped by keep_last: ...").
    pub details: Vec<String>,
}

/// One message of the output: an input message as it came, an input message as a step left
/// it, or a message a step wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputEntry {
    /// The input message it comes from, if any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub input: Option<usize>,
    /// The message as sent, when it is not the input message unchanged (wire format).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub message: Option<Value>,
    /// For a message a step wrote (no `input`): the steps that acted on it, the one that
    /// wrote it first (for a person: the inspect page labels it; replay does not read it).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub steps: Vec<String>,
    /// For a message a step wrote: what they did, one line each ("written by summarize:
    /// summary of the 12 messages removed", then any later cut).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub details: Vec<String>,
}

/// What a run did to a history: the fate of every input unit and the output, replayable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The wire format the stored messages are written in.
    pub format: String,
    /// The number of input messages.
    pub input_messages: usize,
    /// A hash of the input messages (xxh3-128 of their content, hex).
    pub input_fingerprint: String,
    /// Every unit of the input, in order.
    pub units: Vec<UnitPlan>,
    /// The output, message by message.
    pub output: Vec<OutputEntry>,
}

/// Why a plan cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The plan was made for another history.
    #[error("{}", other_input(*expected, fingerprint, *found, found_fingerprint))]
    OtherInput {
        /// The number of messages the plan expects.
        expected: usize,
        /// The fingerprint the plan expects.
        fingerprint: String,
        /// The number of messages given.
        found: usize,
        /// The fingerprint of the messages given.
        found_fingerprint: String,
    },
    /// An entry of the plan is malformed.
    #[error("output[{index}]: {reason}")]
    Entry {
        /// The index of the output entry.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

/// What differs between the history a plan was made for and the one given: the number of
/// messages, else their content.
fn other_input(expected: usize, fingerprint: &str, found: usize, found_fingerprint: &str) -> String {
    if expected == found {
        format!(
            "the plan was made for another history: the same number of messages ({expected}), \
             but their content differs (fingerprint {fingerprint} in the plan, {found_fingerprint} here)"
        )
    } else {
        format!("the plan was made for a history of {expected} messages; this one has {found}")
    }
}

/// The fingerprint of an input, from its messages' fingerprints
/// ([`message_fingerprint`]): `History` has them from counting, so recording a plan does not
/// hash the input again.
pub(crate) fn input_fingerprint(messages: impl ExactSizeIterator<Item = u128>) -> String {
    let mut hasher = Xxh3::new();
    messages.len().hash(&mut hasher);
    for message in messages {
        message.hash(&mut hasher);
    }
    format!("{:032x}", hasher.digest128())
}

fn fingerprint(input: &[Message]) -> String {
    input_fingerprint(input.iter().map(message_fingerprint))
}

fn kind_name(kind: UnitKind) -> &'static str {
    match kind {
        UnitKind::Instruction => "instruction",
        UnitKind::UserTurn => "user_turn",
        UnitKind::AssistantStep => "assistant_step",
        _ => "orphan_results",
    }
}

fn write_one(message: &Message, format: Format) -> Value {
    match messages_to_value(std::slice::from_ref(message), format) {
        Value::Array(mut items) => items.pop().unwrap_or(Value::Null),
        other => other,
    }
}

impl Plan {
    /// The plan of a fitted history: `input` and its units and fingerprint as they came,
    /// `output` with one `meta` per message, and the input messages `dropped`.
    pub(crate) fn record(
        (input, input_units, input_fingerprint): (&[Message], &[Unit], String),
        format: Format,
        output: &[HistoryMessage<'_>],
        meta: &[Meta],
        dropped: &Dropped,
    ) -> Plan {
        // per input message: ("dropped" step and reason) or the changes it went through
        let mut fate: Vec<Option<(&Arc<str>, &Arc<str>)>> = vec![None; input.len()];
        for (i, step, reason) in dropped.iter() {
            fate[i] = Some((step, reason));
        }
        // with the message it is now, which the lines written when read are written from
        let mut changes: Vec<Option<(&[Change], &Message)>> = vec![None; input.len()];
        for (m, message) in meta.iter().zip(output) {
            if let Origin::Input(i) = m.origin {
                changes[i] = Some((&m.changes, message));
            }
        }
        let mut plans = Vec::with_capacity(input_units.len());
        for unit in input_units {
            let range = unit.messages.clone();
            // made at their size: most units of a long history get one line a message from
            // one step (dropped), and a list grown from empty reserves room for four
            let lines: usize = range
                .clone()
                .map(|i| changes[i].map_or(0, |(c, _)| c.len()) + usize::from(fate[i].is_some()))
                .sum();
            let mut steps: Vec<Arc<str>> = Vec::with_capacity(lines.min(1));
            let mut details = Vec::with_capacity(lines);
            let mut all_dropped = true;
            let mut any_dropped = false;
            // which kinds of change the unit's messages went through
            let (mut changed, mut truncated, mut replaced) = (false, false, false);
            for i in range.clone() {
                let mut note = |step: &Arc<str>, line: String| {
                    if !steps.iter().any(|s| s == step) {
                        steps.push(Arc::clone(step));
                    }
                    details.push(line);
                };
                let (changes, message) = changes[i].unwrap_or((&[], &input[i]));
                for change in changes {
                    changed = true;
                    truncated |= change.kind == ChangeKind::Truncated;
                    replaced |= change.kind == ChangeKind::Replaced;
                    let why = change.detail.render(message);
                    note(&change.step, detail_line(i, kind_word(change.kind), &change.step, &why));
                }
                match fate[i] {
                    Some((step, reason)) => {
                        any_dropped = true;
                        note(step, detail_line(i, "dropped", step, reason));
                    }
                    None => all_dropped = false,
                }
            }
            let action = if all_dropped {
                UnitAction::Dropped
            } else if any_dropped {
                UnitAction::Edited
            } else if truncated {
                UnitAction::Truncated
            } else if replaced {
                UnitAction::Replaced
            } else if !changed {
                UnitAction::Kept
            } else {
                UnitAction::Edited
            };
            plans.push(UnitPlan {
                kind: Cow::Borrowed(kind_name(unit.kind)),
                messages: [range.start, range.end],
                action,
                steps,
                details,
            });
        }
        let output = output
            .iter()
            .zip(meta)
            .map(|(message, meta)| {
                let (input, message) = match (meta.origin, message) {
                    (Origin::Input(i), m) if m.is_input() || **m == input[i] => (Some(i), None),
                    (Origin::Input(i), m) => (Some(i), Some(write_one(m, format))),
                    (Origin::Inserted, m) => {
                        // the first change of a written message is its writing
                        let mut steps: Vec<String> = Vec::new();
                        let mut details = Vec::new();
                        for (n, change) in meta.changes.iter().enumerate() {
                            if !steps.iter().any(|s| **s == *change.step) {
                                steps.push(change.step.to_string());
                            }
                            let what = if n == 0 { "written" } else { kind_word(change.kind) };
                            details.push(format!("{what} by {}: {}", change.step, change.detail.render(m)));
                        }
                        return OutputEntry {
                            input: None,
                            message: Some(write_one(m, format)),
                            steps,
                            details,
                        };
                    }
                };
                OutputEntry { input, message, steps: Vec::new(), details: Vec::new() }
            })
            .collect();
        Plan {
            format: format.as_str().to_string(),
            input_messages: input.len(),
            input_fingerprint,
            units: plans,
            output,
        }
    }

    /// Appends the input messages from `from` on, grouped in `units` (their indices counted
    /// from `from`), that no step touched, as [`Plan::record`] records such messages: each
    /// unit kept, each message sent as it came. `fingerprints` are those of the whole input
    /// now. (A session extending its previous turn with the messages added since.)
    pub(crate) fn extend_as_it_came(&mut self, units: &[Unit], from: usize, fingerprints: &[u128]) {
        self.input_messages = fingerprints.len();
        self.input_fingerprint = input_fingerprint(fingerprints.iter().copied());
        self.units.extend(units.iter().map(|unit| UnitPlan {
            kind: Cow::Borrowed(kind_name(unit.kind)),
            messages: [unit.messages.start + from, unit.messages.end + from],
            action: UnitAction::Kept,
            steps: Vec::new(),
            details: Vec::new(),
        }));
        self.output.extend((from..fingerprints.len()).map(|i| OutputEntry {
            input: Some(i),
            message: None,
            steps: Vec::new(),
            details: Vec::new(),
        }));
    }

    /// Whether the plan changes anything.
    pub fn changes_anything(&self) -> bool {
        self.output.len() != self.input_messages
            || self.output.iter().enumerate().any(|(i, e)| e.message.is_some() || e.input != Some(i))
    }

    /// Rebuilds the output from the same input. Messages the plan keeps are borrowed from
    /// `input`; changed and written ones are read back from the plan.
    pub fn replay<'a>(&self, input: &'a [Message]) -> Result<Vec<Cow<'a, Message>>, PlanError> {
        let found_fingerprint = fingerprint(input);
        if input.len() != self.input_messages || found_fingerprint != self.input_fingerprint {
            return Err(PlanError::OtherInput {
                expected: self.input_messages,
                fingerprint: self.input_fingerprint.clone(),
                found: input.len(),
                found_fingerprint,
            });
        }
        let format: Format = self
            .format
            .parse()
            .map_err(|reason| PlanError::Entry { index: 0, reason: format!("format: {reason}") })?;
        self.output
            .iter()
            .enumerate()
            .map(|(index, entry)| match (&entry.message, entry.input) {
                (Some(value), _) => parse_messages(Value::Array(vec![value.clone()]), format)
                    .map_err(|e| PlanError::Entry { index, reason: e.to_string() })?
                    .pop()
                    .map(Cow::Owned)
                    .ok_or_else(|| PlanError::Entry { index, reason: "no message".into() }),
                (None, Some(i)) if i < input.len() => Ok(Cow::Borrowed(&input[i])),
                (None, Some(i)) => {
                    Err(PlanError::Entry { index, reason: format!("input {i} is past the end of the input") })
                }
                (None, None) => {
                    Err(PlanError::Entry { index, reason: "neither an input index nor a message".into() })
                }
            })
            .collect()
    }
}

/// `messages[{index}]: {what} by {step}: {why}`. Written piece by piece into a string of
/// the right size: a session's warm turn writes one line per message its epoch removed
/// (1,400 at 1,500 messages), where `format!` took an eighth of the turn.
fn detail_line(index: usize, what: &str, step: &str, why: &str) -> String {
    let mut line = String::with_capacity(32 + what.len() + step.len() + why.len());
    line.push_str("messages[");
    // an integer's Display writes without allocating
    let _ = write!(line, "{index}");
    for piece in ["]: ", what, " by ", step, ": ", why] {
        line.push_str(piece);
    }
    line
}

fn kind_word(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Truncated => "truncated",
        ChangeKind::Replaced => "replaced",
        ChangeKind::Removed => "parts removed",
        ChangeKind::Rewritten => "rewritten",
    }
}
