//! The messages a session read on its previous call, found again by a hash of the caller's
//! Python data, so that a warm turn copies and parses only the messages that are new.
//!
//! An agent loop hands a session its whole history every turn, often as fresh dicts. Reading
//! them all again (copying every string out of Python, building JSON, parsing) took two
//! thirds of a warm turn at 1,500 messages. A [`ReadMemo`] keeps the engine messages of the
//! previous call under a 128-bit xxh3 hash of each dict's data (type tags, lengths, keys and
//! values, strings hashed in place from Python's UTF-8 buffers: no copy, no allocation); a
//! dict with the same hash is the same JSON, so its message is taken back instead of read
//! again. What it costs: one hashing pass over the caller's data per call, and memory for the
//! messages of the latest call (about the size of the history; a second conversation on the
//! same session replaces them).
//!
//! Reading message by message decides what reading the whole list decides: the format comes
//! from each message's [`message_verdict`] (remembered with the message), the first that
//! decides wins, and a remembered message read in another format is read again.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;
use tightfit::format::{list_verdict, message_verdict, parse_message, Format};
use tightfit::Message;
use xxhash_rust::xxh3::Xxh3;

use crate::convert::{to_value_at, MAX_DEPTH};
use crate::errors::Failure;

/// A message read before: the message, the format it was read in, and what it said about
/// the list's format.
struct Read {
    message: Message,
    format: Format,
    verdict: Option<Format>,
}

/// The messages of a session's previous call, by the hash of their Python data.
#[derive(Default)]
pub(crate) struct ReadMemo {
    /// Identical dicts in one history share a hash: each is taken once.
    by_hash: HashMap<u128, Vec<Read>>,
}

/// One item of this call's list: a message taken from the memo, or the item as JSON.
enum Item {
    Known(Read),
    New { value: Value, verdict: Option<Format> },
}

/// A history read with the help of a memo, ready to parse without the GIL.
pub(crate) struct MemoRead {
    items: Vec<Item>,
    hashes: Vec<u128>,
    format: Format,
}

impl ReadMemo {
    /// Reads `messages` (a list or tuple) as the items of a history in `format` (detected when
    /// `None`; `preferred` where no message decides), taking the messages this memo knows; `Ok(None)` when an item cannot be hashed
    /// (it is not JSON data) or a known message was read in another format: the caller then
    /// reads the list in full, which reports any error. Needs the GIL.
    pub(crate) fn read(
        &mut self,
        messages: &Bound<'_, PyAny>,
        format: Option<Format>,
        preferred: Format,
    ) -> Result<Option<MemoRead>, Failure> {
        let items: Vec<Bound<'_, PyAny>> = if let Ok(list) = messages.cast::<PyList>() {
            list.iter().collect()
        } else if let Ok(tuple) = messages.cast::<PyTuple>() {
            tuple.iter().collect()
        } else {
            return Ok(None);
        };
        let mut hashes = Vec::with_capacity(items.len());
        for item in &items {
            let mut hasher = Xxh3::new();
            // an item of the list sits one level down, as in the full read
            if hash(item, 1, &mut hasher).is_err() {
                return Ok(None);
            }
            hashes.push(hasher.digest128());
        }
        let mut read = Vec::with_capacity(items.len());
        for (i, (item, hash)) in items.iter().zip(&hashes).enumerate() {
            match self.by_hash.get_mut(hash).and_then(Vec::pop) {
                Some(known) => read.push(Item::Known(known)),
                None => {
                    let value = to_value_at(item, 1).map_err(|e| Failure::Format {
                        path: e.path(&format!("messages[{i}]")),
                        reason: e.reason.clone(),
                    })?;
                    let verdict = message_verdict(&value);
                    read.push(Item::New { value, verdict });
                }
            }
        }
        let format = format.unwrap_or_else(|| {
            list_verdict(read.iter().map(|item| match item {
                Item::Known(known) => known.verdict,
                Item::New { verdict, .. } => *verdict,
            }))
            .unwrap_or(preferred)
        });
        if read.iter().any(|item| matches!(item, Item::Known(known) if known.format != format)) {
            return Ok(None);
        }
        Ok(Some(MemoRead { items: read, hashes, format }))
    }

    /// The memo of a call: its `messages`, as the engine read them, and what `recall` kept of
    /// their Python data.
    pub(crate) fn remember(messages: Vec<Message>, recall: Recall) -> ReadMemo {
        let mut by_hash: HashMap<u128, Vec<Read>> = HashMap::with_capacity(messages.len());
        // reversed, so that identical dicts are taken back in their order
        for ((message, hash), verdict) in messages.into_iter().zip(recall.hashes).zip(recall.verdicts).rev() {
            by_hash.entry(hash).or_default().push(Read { message, format: recall.format, verdict });
        }
        ReadMemo { by_hash }
    }
}

/// What a call's messages are remembered by, once the engine is done with them.
pub(crate) struct Recall {
    hashes: Vec<u128>,
    verdicts: Vec<Option<Format>>,
    format: Format,
}

impl MemoRead {
    /// The format the history is read in.
    pub(crate) fn format(&self) -> Format {
        self.format
    }

    /// The messages, known ones taken back and new ones parsed (errors name `messages[i]`),
    /// in the format of the list; and what to remember them by. No GIL needed.
    pub(crate) fn parse(self) -> Result<(Vec<Message>, Recall), Failure> {
        let format = self.format;
        let mut messages = Vec::with_capacity(self.items.len());
        let mut verdicts = Vec::with_capacity(self.items.len());
        for (i, item) in self.items.into_iter().enumerate() {
            match item {
                Item::Known(known) => {
                    messages.push(known.message);
                    verdicts.push(known.verdict);
                }
                Item::New { value, verdict } => {
                    messages.push(parse_message(value, format, i)?);
                    verdicts.push(verdict);
                }
            }
        }
        Ok((messages, Recall { hashes: self.hashes, verdicts, format }))
    }
}

/// Feeds `obj`'s JSON data into `hasher`, tagged and length-prefixed so that two different
/// values never write the same bytes; `Err` for anything that is not JSON data or nests too
/// deep. Checks types in the order [`to_value_at`] does; it lets non-finite floats through,
/// which the conversion of a new message then refuses, naming where they sit.
fn hash(obj: &Bound<'_, PyAny>, depth: usize, hasher: &mut Xxh3) -> Result<(), ()> {
    if depth > MAX_DEPTH {
        return Err(());
    }
    let text = |s: &Bound<'_, PyString>, hasher: &mut Xxh3| -> Result<(), ()> {
        let s = s.to_str().map_err(|_| ())?;
        hasher.update(b"s");
        hasher.update(&(s.len() as u64).to_le_bytes());
        hasher.update(s.as_bytes());
        Ok(())
    };
    if let Ok(s) = obj.cast_exact::<PyString>() {
        return text(s, hasher);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        hasher.update(b"d");
        hasher.update(&(dict.len() as u64).to_le_bytes());
        for (key, value) in dict.iter() {
            let key = key.cast::<PyString>().map_err(|_| ())?;
            text(key, hasher)?;
            hash(&value, depth + 1, hasher)?;
        }
        return Ok(());
    }
    let items = |items: &mut dyn Iterator<Item = Bound<'_, PyAny>>, len: usize, hasher: &mut Xxh3| {
        hasher.update(b"l");
        hasher.update(&(len as u64).to_le_bytes());
        for item in items {
            hash(&item, depth + 1, hasher)?;
        }
        Ok(())
    };
    if let Ok(list) = obj.cast::<PyList>() {
        return items(&mut list.iter(), list.len(), hasher);
    }
    if obj.is_none() {
        hasher.update(b"n");
        return Ok(());
    }
    if let Ok(b) = obj.cast_exact::<PyBool>() {
        hasher.update(if b.is_true() { b"T" } else { b"F" });
        return Ok(());
    }
    if let Ok(int) = obj.cast::<PyInt>() {
        if let Ok(i) = int.extract::<i64>() {
            hasher.update(b"i");
            hasher.update(&i.to_le_bytes());
            return Ok(());
        }
        let u = int.extract::<u64>().map_err(|_| ())?;
        hasher.update(b"u");
        hasher.update(&u.to_le_bytes());
        return Ok(());
    }
    if let Ok(float) = obj.cast::<PyFloat>() {
        hasher.update(b"f");
        hasher.update(&float.value().to_bits().to_le_bytes());
        return Ok(());
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return items(&mut tuple.iter(), tuple.len(), hasher);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return text(s, hasher);
    }
    Err(())
}
