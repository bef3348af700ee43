//! Tool calls and the results that answer them: the one index every part of the engine uses
//! to keep a call with its results (units, the validator, the steps that remove calls), and,
//! through [`CallView`] and [`CallSource`], the peers' selections over their own message
//! models.
//!
//! A result names the call it answers by the call's id (OpenAI `tool_call_id`, Anthropic
//! `tool_use_id`), or, for a legacy OpenAI `function_call` that has no id, by the function's
//! name ([`CallKey`]). Calls are answered in any order, several results may sit in one message
//! (Anthropic `tool_result` blocks), and an input may repeat an id: [`OpenCalls`] answers "the
//! first call still open under this key" in O(1), so that a step with 80,000 parallel calls
//! costs 80,000 lookups, not 80,000².

use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::ops::Range;

use foldhash::{HashMap, HashSet};

use crate::message::{Message, Part, Role};

/// How a result names the call it answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallKey {
    /// By the call's id (OpenAI `tool_call_id`, Anthropic `tool_use_id`).
    Id(String),
    /// A legacy OpenAI `function_call`, answered by a `function` message of the same name.
    Legacy(String),
}

impl CallKey {
    /// The id, or the function's name for a legacy call: what a report or a reference shows.
    pub fn as_str(&self) -> &str {
        match self {
            CallKey::Id(s) | CallKey::Legacy(s) => s,
        }
    }
}

/// Where one result of a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultAt {
    /// A whole `tool` or `function` message.
    Message(usize),
    /// A `tool_result` block: the message and the index of the part.
    Block(usize, usize),
}

impl ResultAt {
    /// The message that holds the result.
    pub fn message(self) -> usize {
        match self {
            ResultAt::Message(i) | ResultAt::Block(i, _) => i,
        }
    }

    /// The result's content in `message` (the message it is in): the message's parts, or the
    /// block's; `None` when the block is not a result.
    pub fn parts(self, message: &Message) -> Option<&[Part]> {
        match self {
            ResultAt::Message(_) => Some(&message.parts),
            ResultAt::Block(_, p) => match message.parts.get(p) {
                Some(Part::ToolResult(r)) => Some(&r.parts),
                _ => None,
            },
        }
    }

    /// [`parts`](ResultAt::parts), to change.
    pub fn parts_mut(self, message: &mut Message) -> Option<&mut Vec<Part>> {
        match self {
            ResultAt::Message(_) => Some(&mut message.parts),
            ResultAt::Block(_, p) => match message.parts.get_mut(p) {
                Some(Part::ToolResult(r)) => Some(&mut r.parts),
                _ => None,
            },
        }
    }

    /// What a report calls the result: its call id, or the function's name for a legacy
    /// `function` message.
    pub fn label(self, message: &Message) -> &str {
        match (self, message.role) {
            (ResultAt::Block(_, p), _) => match message.parts.get(p) {
                Some(Part::ToolResult(r)) => r.tool_use_id.as_str(),
                _ => "",
            },
            (ResultAt::Message(_), Role::Function) => message.name.as_deref().unwrap_or_default(),
            (ResultAt::Message(_), _) => message.tool_call_id.as_deref().unwrap_or_default(),
        }
    }
}

/// The calls `message` makes: (index of the part, key its results name it by, tool name).
pub fn calls_of(message: &Message) -> impl Iterator<Item = (usize, CallKey, &str)> {
    message.parts.iter().enumerate().filter_map(|(part, p)| match p {
        Part::ToolCall(call) => {
            let key = match &call.id {
                Some(id) => CallKey::Id(id.clone()),
                None => CallKey::Legacy(call.name.clone()),
            };
            Some((part, key, call.name.as_str()))
        }
        _ => None,
    })
}

/// The results message `index` carries, with the call each answers: a `tool` message answers
/// its `tool_call_id`, a legacy `function` message its id or else its name, any other message
/// the ids of its `tool_result` blocks.
pub fn results_of(message: &Message, index: usize) -> Vec<(CallKey, ResultAt)> {
    result_keys(message, index).map(|(key, at)| (key.to_owned(), at)).collect()
}

/// A [`CallKey`] borrowed from the message that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CallKeyRef<'m> {
    /// By the call's id.
    Id(&'m str),
    /// A legacy `function_call`, by the function's name.
    Legacy(&'m str),
}

impl<'m> CallKeyRef<'m> {
    /// The key of a call: its id, or its name for a legacy call without one.
    pub(crate) fn of_call(id: Option<&'m str>, name: &'m str) -> CallKeyRef<'m> {
        match id {
            Some(id) => CallKeyRef::Id(id),
            None => CallKeyRef::Legacy(name),
        }
    }

    /// The id, or the function's name for a legacy call.
    pub(crate) fn as_str(self) -> &'m str {
        match self {
            CallKeyRef::Id(s) | CallKeyRef::Legacy(s) => s,
        }
    }

    fn to_owned(self) -> CallKey {
        match self {
            CallKeyRef::Id(s) => CallKey::Id(s.to_string()),
            CallKeyRef::Legacy(s) => CallKey::Legacy(s.to_string()),
        }
    }
}

/// [`results_of`] without copying the keys or collecting them: a step that walks 80,000
/// results allocates nothing per result.
pub(crate) fn result_keys(
    message: &Message,
    index: usize,
) -> impl Iterator<Item = (CallKeyRef<'_>, ResultAt)> {
    // a `tool` or `function` message is one result; any other holds `tool_result` blocks
    let (whole, blocks) = match message.role {
        Role::Tool => (message.tool_call_id.as_deref().map(CallKeyRef::Id), &[][..]),
        Role::Function => {
            let name = message.name.as_deref().unwrap_or_default();
            (Some(CallKeyRef::of_call(message.tool_call_id.as_deref(), name)), &[][..])
        }
        _ => (None, message.parts.as_slice()),
    };
    let blocks = blocks.iter().enumerate().filter_map(move |(p, part)| match part {
        Part::ToolResult(r) => Some((CallKeyRef::Id(r.tool_use_id.as_str()), ResultAt::Block(index, p))),
        _ => None,
    });
    whole.map(|key| (key, ResultAt::Message(index))).into_iter().chain(blocks)
}

/// Up to this many calls, a step's open calls are found by scanning them.
pub(crate) const SCANNED: usize = 8;

/// The calls of one step still waiting for results, in call order, looked up by key in O(1)
/// (a scan of at most [`SCANNED`] slots for a step of a few calls).
///
/// Each call has a slot; [`first_open`](OpenCalls::first_open) finds the earliest open slot
/// under a key (a repeated id is answered call by call, in order) and
/// [`close`](OpenCalls::close) marks one answered. Memory: a slot, a chain link and (per
/// distinct key) a map entry per call; no allocation per key, so 80,000 calls cost three
/// vectors and one map.
#[derive(Debug, Clone)]
pub struct OpenCalls<K> {
    // up to `SCANNED` calls (nearly every step) the slots are scanned and the maps stay
    // empty: building two hash maps cost more than the lookups they save
    keys: Vec<K>,
    open: Vec<bool>,
    /// The earliest open slot of each key that has one.
    first: HashMap<K, usize>,
    /// The next slot with the same key, in call order.
    next_same: Vec<Option<usize>>,
    left: usize,
}

impl<K: Hash + Eq + Clone> OpenCalls<K> {
    /// Every call open, in the order given.
    pub fn new(keys: impl IntoIterator<Item = K>) -> OpenCalls<K> {
        let mut open = OpenCalls {
            keys: Vec::new(),
            open: Vec::new(),
            first: HashMap::default(),
            next_same: Vec::new(),
            left: 0,
        };
        open.refill(keys);
        open
    }

    /// Every call of `keys` open, in the order given, in place of the calls held before. The
    /// lists keep their room: a pass that goes through a long history's steps one by one
    /// (grouping, validation) allocates them once instead of three times a step.
    pub fn refill(&mut self, keys: impl IntoIterator<Item = K>) {
        self.keys.clear();
        self.keys.extend(keys);
        self.open.clear();
        self.open.resize(self.keys.len(), true);
        self.left = self.keys.len();
        self.first.clear();
        self.next_same.clear();
        if self.keys.len() <= SCANNED {
            return;
        }
        self.first.reserve(self.keys.len());
        self.next_same.resize(self.keys.len(), None);
        let mut last: HashMap<&K, usize> = HashMap::default();
        for (slot, key) in self.keys.iter().enumerate() {
            match last.insert(key, slot) {
                Some(previous) => self.next_same[previous] = Some(slot),
                None => {
                    self.first.insert(key.clone(), slot);
                }
            }
        }
    }

    /// Whether every call is answered.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// The earliest open call under `key`, if any.
    pub fn first_open(&self, key: &K) -> Option<usize> {
        if self.keys.len() <= SCANNED {
            return (0..self.keys.len()).find(|&slot| self.open[slot] && self.keys[slot] == *key);
        }
        self.first.get(key).copied()
    }

    /// Marks the call in `slot` answered. O(1), amortized over the calls of its key (a key's
    /// first open slot moves past the slots closed out of order).
    pub fn close(&mut self, slot: usize) {
        if !std::mem::replace(&mut self.open[slot], false) {
            return;
        }
        self.left -= 1;
        if self.keys.len() <= SCANNED {
            return;
        }
        if let Entry::Occupied(mut head) = self.first.entry(self.keys[slot].clone()) {
            if *head.get() == slot {
                // the next open slot of the key becomes its first
                let mut next = self.next_same[slot];
                while let Some(n) = next.filter(|&n| !self.open[n]) {
                    next = self.next_same[n];
                }
                match next {
                    Some(n) => *head.get_mut() = n,
                    None => {
                        head.remove();
                    }
                }
            }
        }
    }

    /// The calls still open, in call order.
    pub fn remaining(&self) -> impl Iterator<Item = &K> {
        self.keys.iter().zip(&self.open).filter(|(_, open)| **open).map(|(key, _)| key)
    }
}

/// What the call index needs of one message, in whatever model holds it: the engine's
/// [`Message`], or a peer's view of its own messages (AG2's dicts, autogen's messages,
/// LangChain's message objects).
pub trait CallView {
    /// The ids of the calls it makes.
    fn call_ids(&self) -> impl Iterator<Item = &str>;
    /// The ids of the calls its results answer.
    fn answered_ids(&self) -> impl Iterator<Item = &str>;
    /// Whether it carries tool results.
    fn is_result(&self) -> bool;
}

impl CallView for Message {
    fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_calls().filter_map(|c| c.id.as_deref())
    }

    fn answered_ids(&self) -> impl Iterator<Item = &str> {
        self.answered_call_ids()
    }

    fn is_result(&self) -> bool {
        self.role == Role::Tool || self.parts.iter().any(|p| matches!(p, Part::ToolResult(_)))
    }
}

/// Messages read on demand, so that a selection over a caller's list (the Python package's)
/// reads only the messages it looks at.
pub trait CallSource {
    /// A message as the index sees it.
    type View: CallView;
    /// Why a message could not be read.
    type Error;
    /// How many messages there are.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Message `i`.
    fn view(&mut self, i: usize) -> Result<&Self::View, Self::Error>;
}

/// A slice of messages as a [`CallSource`] that never fails.
pub struct Slice<'s, V>(pub &'s [V]);

impl<V: CallView> CallSource for Slice<'_, V> {
    type View = V;
    type Error = std::convert::Infallible;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn view(&mut self, i: usize) -> Result<&V, Self::Error> {
        Ok(&self.0[i])
    }
}

/// The ids of the calls message `i` makes, owned (the source is read again after).
fn call_set<S: CallSource>(source: &mut S, i: usize) -> Result<HashSet<String>, S::Error> {
    Ok(source.view(i)?.call_ids().map(str::to_string).collect())
}

/// The message whose call the results message `result` answers: the message before the run of
/// results `result` is in, when it makes a call that one of `result`'s results answers.
/// Reads back over the run: O(run).
pub fn caller_of<S: CallSource>(source: &mut S, result: usize) -> Result<Option<usize>, S::Error> {
    let answers: Vec<String> = source.view(result)?.answered_ids().map(str::to_string).collect();
    let mut i = result;
    while i > 0 {
        i -= 1;
        let view = source.view(i)?;
        if !view.is_result() {
            let makes = view.call_ids().any(|id| answers.iter().any(|a| a == id));
            return Ok(makes.then_some(i));
        }
    }
    Ok(None)
}

/// The results of the calls message `call` makes: the messages of the run of results right
/// after it that answer one of its calls (a result of the run that answers none is passed
/// over). O(run) with the call ids in a hash set.
pub fn results_of_call<S: CallSource>(source: &mut S, call: usize) -> Result<Vec<usize>, S::Error> {
    let calls = call_set(source, call)?;
    let mut out = Vec::new();
    for i in call + 1..source.len() {
        let view = source.view(i)?;
        if !view.is_result() {
            break;
        }
        if view.answered_ids().any(|id| calls.contains(id)) {
            out.push(i);
        }
    }
    Ok(out)
}

/// The tool step message `i` belongs to, when it has results to cut from: the calls message
/// at or before `i` (back over a run of results) and the results messages right after it
/// that each answer one of its calls, up to the first that answers none. `None` for a message
/// outside such a step. O(size of the step).
pub fn step_around<S: CallSource>(source: &mut S, i: usize) -> Result<Option<Range<usize>>, S::Error> {
    let mut start = i;
    while start > 0 && source.view(start)?.is_result() {
        start -= 1;
    }
    let calls = call_set(source, start)?;
    let mut end = start + 1;
    while end < source.len() {
        let view = source.view(end)?;
        if !(view.is_result() && view.answered_ids().any(|id| calls.contains(id))) {
            break;
        }
        end += 1;
    }
    Ok((end > start + 1 && i < end).then_some(start..end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, FormatHint};

    fn messages(json: &str) -> Vec<Message> {
        parse_str(json, FormatHint::Auto).unwrap().messages
    }

    #[test]
    fn open_calls_answer_in_any_order_and_a_repeated_id_call_by_call() {
        // a few calls are scanned, many are looked up in the maps: both answer alike
        let padding = ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"];
        for extra in [&[][..], &padding[..]] {
            let mut open = OpenCalls::new(["a", "b", "a", "c"].into_iter().chain(extra.iter().copied()));
            assert_eq!(open.first_open(&"c"), Some(3));
            open.close(3);
            assert_eq!(open.first_open(&"a"), Some(0));
            open.close(0);
            // the second call with the same id is the next one answered
            assert_eq!(open.first_open(&"a"), Some(2));
            open.close(2);
            assert_eq!(open.first_open(&"a"), None);
            for slot in 4..4 + extra.len() {
                assert_eq!(open.first_open(&extra[slot - 4]), Some(slot));
                open.close(slot);
            }
            assert_eq!(open.remaining().copied().collect::<Vec<_>>(), ["b"]);
            assert!(!open.is_empty());
            open.close(1);
            open.close(1);
            assert!(open.is_empty());
        }
    }

    #[test]
    fn results_name_their_calls_by_id_by_block_and_by_legacy_name() {
        let history = messages(
            r#"[{"role": "assistant", "content": null, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                   {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c2", "content": "2"},
                {"role": "tool", "tool_call_id": "c1", "content": "1"},
                {"role": "assistant", "content": null, "function_call": {"name": "old", "arguments": "{}"}},
                {"role": "function", "name": "old", "content": "x"}]"#,
        );
        let calls: Vec<(usize, CallKey, &str)> = calls_of(&history[0]).collect();
        assert_eq!(calls, [(0, CallKey::Id("c1".into()), "f"), (1, CallKey::Id("c2".into()), "g")]);
        assert_eq!(results_of(&history[1], 1), [(CallKey::Id("c2".into()), ResultAt::Message(1))]);
        let legacy: Vec<CallKey> = calls_of(&history[3]).map(|(_, key, _)| key).collect();
        assert_eq!(legacy, [CallKey::Legacy("old".into())]);
        assert_eq!(results_of(&history[4], 4), [(CallKey::Legacy("old".into()), ResultAt::Message(4))]);
        let anthropic = messages(
            r#"{"messages": [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "text", "text": "and"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]}"#,
        );
        assert_eq!(results_of(&anthropic[2], 2), [(CallKey::Id("t1".into()), ResultAt::Block(2, 1))]);
    }

    #[test]
    fn a_step_is_its_call_and_the_run_of_results_after_it() {
        let history = messages(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                   {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c2", "content": "2"},
                {"role": "tool", "tool_call_id": "zz", "content": "answers nothing here"},
                {"role": "tool", "tool_call_id": "c1", "content": "1"},
                {"role": "assistant", "content": "done"},
                {"role": "tool", "tool_call_id": "c1", "content": "late"}]"#,
        );
        let source = &mut Slice(history.as_slice());
        // results are read across a result that answers none of the calls
        assert_eq!(results_of_call(source, 1), Ok(vec![2, 4]));
        assert_eq!(caller_of(source, 4), Ok(Some(1)));
        assert_eq!(caller_of(source, 3), Ok(None));
        // a result after a message that is not the caller has none
        assert_eq!(caller_of(source, 6), Ok(None));
        // the step around a message ends at the first result that answers none of its calls
        assert_eq!(step_around(source, 2), Ok(Some(1..3)));
        assert_eq!(step_around(source, 1), Ok(Some(1..3)));
        assert_eq!(step_around(source, 0), Ok(None));
        assert_eq!(step_around(source, 5), Ok(None));
    }
}
