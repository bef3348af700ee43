//! The decision of an epoch: what a compaction did to the messages it saw, kept so that the
//! next turns send those messages again exactly as the compaction left them.
//!
//! A decision covers the first `frozen` messages of the conversation (those the compaction
//! saw), identified by their content fingerprints: the output starts with its entries (input
//! messages kept as they came, messages the compaction rewrote, messages it wrote), and every
//! message after `frozen` follows as it came. Memory: 16 bytes per covered message, plus the
//! messages the compaction rewrote or wrote (a truncated tool result, the trace).
//!
//! Serialized as a JSON checkpoint for a [`Store`](super::Store): `{"tightfit_session": 2,
//! "epoch", "format", "tokens", "fingerprints" (hex, 32 characters per message), "entries"}`
//! (version 1 had no `tokens`; the cost model then takes the aim for it), where an
//! entry is `{"keep": [start, end]}` (a run of input messages), `{"replace": i, "kind",
//! "detail", "message"}` or `{"insert": message, "detail"}`, messages in the wire format.

use std::borrow::Cow;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::fit::Fitted;
use crate::format::{messages_to_value, parse_messages, Format};
use crate::message::Message;
use crate::plan::{ChangeKind, UnitAction};

/// The version of the checkpoint format this build writes (it reads this one and version 1).
pub const CHECKPOINT_VERSION: u64 = 2;

/// One message of a decision's output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// The input message at this index, as it came.
    Keep(usize),
    /// The input message at `input`, sent as `message`.
    Replace { input: usize, message: Message, kind: ChangeKind, detail: String },
    /// A message the compaction wrote (the trace, a synthetic result).
    Insert { message: Message, detail: String },
}

/// What a compaction decided for the messages it saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    /// 0 before the first compaction, one more at each.
    pub(crate) epoch: u64,
    /// The tokens of the compaction's output (0 before the first; `None` from a version-1
    /// checkpoint): what the conversation has grown from since, for the cost model.
    pub(crate) tokens: Option<usize>,
    /// The fingerprints of the input messages the decision covers.
    pub(crate) fingerprints: Vec<u128>,
    /// The output for those messages, in order.
    pub(crate) entries: Vec<Entry>,
}

impl Decision {
    /// The decision before any compaction: nothing covered, everything sent as it comes.
    pub(crate) fn initial() -> Decision {
        Decision { epoch: 0, tokens: Some(0), fingerprints: Vec::new(), entries: Vec::new() }
    }

    /// The number of input messages covered.
    pub(crate) fn frozen(&self) -> usize {
        self.fingerprints.len()
    }

    /// The decision of a compaction's output: `fingerprints` of its whole input, and the
    /// fitted messages with the plan saying where each came from.
    ///
    /// A step at the input's end whose calls have no results yet (a turn sent on the
    /// assistant's call) is not covered: the repair pass answered those calls for this turn
    /// only, and the next turn brings their results. Frozen, its synthetic results would be
    /// sent again beside the real ones; uncovered, the step comes as it came, answered by the
    /// repair pass while its results are missing.
    pub(crate) fn of_compaction(
        epoch: u64,
        mut fingerprints: Vec<u128>,
        fitted: &Fitted<'_>,
        open_step: Option<usize>,
    ) -> Decision {
        // how the plan says each input message's unit was changed
        let mut kinds = vec![ChangeKind::Rewritten; fingerprints.len()];
        for unit in &fitted.plan.units {
            let kind = match unit.action {
                UnitAction::Truncated => ChangeKind::Truncated,
                UnitAction::Replaced => ChangeKind::Replaced,
                _ => ChangeKind::Rewritten,
            };
            for i in unit.messages[0]..unit.messages[1].min(kinds.len()) {
                kinds[i] = kind;
            }
        }
        let mut entries: Vec<Entry> = fitted
            .plan
            .output
            .iter()
            .zip(&fitted.messages)
            .map(|(entry, message)| match (entry.input, &entry.message) {
                (Some(i), None) => Entry::Keep(i),
                (Some(i), Some(_)) => Entry::Replace {
                    input: i,
                    message: message.clone().into_owned(),
                    kind: kinds[i],
                    detail: format!("as the compaction of epoch {epoch} left it"),
                },
                (None, _) => Entry::Insert {
                    message: message.clone().into_owned(),
                    detail: format!("written at the compaction of epoch {epoch}"),
                },
            })
            .collect();
        if let Some(open) = open_step.filter(|&open| open < fingerprints.len()) {
            let first_open = entries
                .iter()
                .position(|e| matches!(e, Entry::Keep(i) | Entry::Replace { input: i, .. } if *i >= open));
            entries.truncate(first_open.unwrap_or(entries.len()));
            fingerprints.truncate(open);
        }
        Decision { epoch, tokens: Some(fitted.report.compressed_token_count), fingerprints, entries }
    }

    /// The part of this decision that still applies to a conversation whose messages have
    /// `fingerprints`: all of it when the conversation starts with the covered messages; when
    /// it starts with only some of them (an edit, a branch, a retry), the decision cut to
    /// those, if what it removed and wrote all lies before the first difference; else `None`.
    pub(crate) fn still_applying(&self, fingerprints: &[u128]) -> Option<Cow<'_, Decision>> {
        let common = self.fingerprints.iter().zip(fingerprints).take_while(|(a, b)| a == b).count();
        if common == self.frozen() {
            return Some(Cow::Borrowed(self));
        }
        // everything the decision changed must lie before `common`
        let mut last_changed = None;
        let mut next_input = 0;
        for entry in &self.entries {
            match entry {
                Entry::Keep(i) => {
                    if *i > next_input {
                        last_changed = Some(i - 1); // inputs next_input..i were removed
                    }
                    next_input = i + 1;
                }
                Entry::Replace { input, .. } => {
                    last_changed = Some(*input);
                    next_input = input + 1;
                }
                Entry::Insert { .. } => last_changed = Some(next_input),
            }
        }
        if last_changed.is_some_and(|changed| changed >= common) {
            return None;
        }
        let entries = self
            .entries
            .iter()
            .filter(|e| match e {
                Entry::Keep(i) | Entry::Replace { input: i, .. } => *i < common,
                Entry::Insert { .. } => true,
            })
            .cloned()
            .collect();
        Some(Cow::Owned(Decision {
            epoch: self.epoch,
            tokens: self.tokens,
            fingerprints: self.fingerprints[..common].to_vec(),
            entries,
        }))
    }

    /// The decision as a checkpoint, in `format`'s wire shape.
    pub(crate) fn to_checkpoint(&self, format: Format) -> Vec<u8> {
        let mut entries: Vec<CheckpointEntry> = Vec::new();
        for entry in &self.entries {
            match entry {
                Entry::Keep(i) => match entries.last_mut() {
                    Some(CheckpointEntry::Keep { keep }) if keep[1] == *i => keep[1] = i + 1,
                    _ => entries.push(CheckpointEntry::Keep { keep: [*i, i + 1] }),
                },
                Entry::Replace { input, message, kind, detail } => entries.push(CheckpointEntry::Replace {
                    replace: *input,
                    kind: *kind,
                    detail: detail.clone(),
                    message: write_one(message, format),
                }),
                Entry::Insert { message, detail } => entries.push(CheckpointEntry::Insert {
                    insert: write_one(message, format),
                    detail: detail.clone(),
                }),
            }
        }
        let mut fingerprints = String::with_capacity(self.fingerprints.len() * 32);
        for f in &self.fingerprints {
            fingerprints.push_str(&format!("{f:032x}"));
        }
        let checkpoint = Checkpoint {
            tightfit_session: CHECKPOINT_VERSION,
            epoch: self.epoch,
            tokens: self.tokens,
            format: format.as_str().to_string(),
            fingerprints,
            entries,
        };
        serde_json::to_vec(&checkpoint).expect("a checkpoint is plain JSON")
    }

    /// Reads a checkpoint written by [`to_checkpoint`](Decision::to_checkpoint); the error
    /// says what is wrong with it.
    pub(crate) fn from_checkpoint(bytes: &[u8]) -> Result<(Decision, Format), CheckpointError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| CheckpointError::Corrupt(e.to_string()))?;
        match value.get("tightfit_session").and_then(Value::as_u64) {
            Some(1 | CHECKPOINT_VERSION) => {}
            Some(v) => return Err(CheckpointError::Version(v)),
            None => return Err(CheckpointError::Corrupt("not a tightfit session checkpoint".into())),
        }
        let checkpoint: Checkpoint =
            serde_json::from_value(value).map_err(|e| CheckpointError::Corrupt(e.to_string()))?;
        let format: Format = checkpoint.format.parse().map_err(CheckpointError::Corrupt)?;
        let hex = checkpoint.fingerprints.as_bytes();
        if hex.len() % 32 != 0 {
            return Err(CheckpointError::Corrupt("fingerprints: not a multiple of 32 hex digits".into()));
        }
        let fingerprints = hex
            .chunks(32)
            .map(|c| {
                std::str::from_utf8(c)
                    .ok()
                    .and_then(|s| u128::from_str_radix(s, 16).ok())
                    .ok_or_else(|| CheckpointError::Corrupt("fingerprints: not hex".into()))
            })
            .collect::<Result<Vec<u128>, _>>()?;
        let read = |value: Value, at: usize| -> Result<Message, CheckpointError> {
            parse_messages(Value::Array(vec![value]), format)
                .map_err(|e| CheckpointError::Corrupt(format!("entries[{at}]: {e}")))?
                .pop()
                .ok_or_else(|| CheckpointError::Corrupt(format!("entries[{at}]: no message")))
        };
        let mut entries = Vec::new();
        for (at, entry) in checkpoint.entries.into_iter().enumerate() {
            match entry {
                CheckpointEntry::Keep { keep: [start, end] } => entries.extend((start..end).map(Entry::Keep)),
                CheckpointEntry::Replace { replace, kind, detail, message } => {
                    entries.push(Entry::Replace { input: replace, message: read(message, at)?, kind, detail })
                }
                CheckpointEntry::Insert { insert, detail } => {
                    entries.push(Entry::Insert { message: read(insert, at)?, detail })
                }
            }
        }
        let covered = fingerprints.len();
        let mut last = None;
        for entry in &entries {
            if let Entry::Keep(i) | Entry::Replace { input: i, .. } = entry {
                if *i >= covered || last.is_some_and(|l| *i <= l) {
                    return Err(CheckpointError::Corrupt(format!(
                        "entries: input {i} out of order or past the {covered} covered messages"
                    )));
                }
                last = Some(*i);
            }
        }
        Ok((Decision { epoch: checkpoint.epoch, tokens: checkpoint.tokens, fingerprints, entries }, format))
    }
}

/// Why a checkpoint could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CheckpointError {
    /// It is not a checkpoint this build can read.
    Corrupt(String),
    /// It was written by a newer tightfit.
    Version(u64),
}

fn write_one(message: &Message, format: Format) -> Value {
    match messages_to_value(std::slice::from_ref(message), format) {
        Value::Array(mut items) => items.pop().unwrap_or(Value::Null),
        other => other,
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Checkpoint {
    tightfit_session: u64,
    epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<usize>,
    format: String,
    fingerprints: String,
    entries: Vec<CheckpointEntry>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum CheckpointEntry {
    Keep { keep: [usize; 2] },
    Replace { replace: usize, kind: ChangeKind, detail: String, message: Value },
    Insert { insert: Value, detail: String },
}

/// Read by the key that names the entry (`keep`, `replace`, `insert`), not as an untagged
/// enum: serde buffers an untagged enum's content, and a number kept as its text (serde_json's
/// `arbitrary_precision`: an integer beyond 64 bits, a float of 400 digits in a message) does
/// not survive that buffer. Costs one look-up of the key per entry.
impl<'de> Deserialize<'de> for CheckpointEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Keep {
            keep: [usize; 2],
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Replace {
            replace: usize,
            kind: ChangeKind,
            detail: String,
            message: Value,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Insert {
            insert: Value,
            detail: String,
        }
        let value = Value::deserialize(deserializer)?;
        let entry = if value.get("keep").is_some() {
            serde_json::from_value::<Keep>(value).map(|Keep { keep }| CheckpointEntry::Keep { keep })
        } else if value.get("replace").is_some() {
            serde_json::from_value::<Replace>(value).map(|Replace { replace, kind, detail, message }| {
                CheckpointEntry::Replace { replace, kind, detail, message }
            })
        } else if value.get("insert").is_some() {
            serde_json::from_value::<Insert>(value)
                .map(|Insert { insert, detail }| CheckpointEntry::Insert { insert, detail })
        } else {
            return Err(D::Error::custom("an entry without `keep`, `replace` or `insert`"));
        };
        entry.map_err(D::Error::custom)
    }
}
