//! Counting again without re-tokenizing: a per-message cache keyed by content hash, and a
//! running count for a conversation that only grows.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use xxhash_rust::xxh3::{xxh3_128, xxh3_64, Xxh3};

use super::{ChatCounter, Count};
use crate::format::Format;
use crate::message::{Message, Tool};
use crate::result_text::{one_result, result_text, ResultText};
use crate::shape::Shape;
use crate::units::Unit;

/// A 128-bit content hash of a message (xxh3 over every field, extras included; key order of
/// extra fields does not matter). Costs one pass over the message's bytes, far less than
/// tokenizing them.
///
/// The fields are gathered into a per-thread buffer and hashed in one call: the same value
/// as streaming them into xxh3 one by one (xxh3's streaming and one-shot forms agree), about
/// 1.5× faster, because a message is many small writes (field tags, lengths, short strings).
pub fn message_fingerprint(message: &Message) -> u128 {
    thread_local! {
        static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => {
            buffer.clear();
            message.hash(&mut Gather(&mut buffer));
            let fingerprint = xxh3_128(&buffer);
            // a huge message does not keep its memory on the thread
            if buffer.capacity() > 1 << 20 {
                *buffer = Vec::new();
            }
            fingerprint
        }
        // re-entered (a Hash impl that fingerprints): stream instead
        Err(_) => {
            let mut hasher = Xxh3::new();
            message.hash(&mut hasher);
            hasher.digest128()
        }
    })
}

/// The hasher of maps keyed by fingerprints: a fingerprint is already a hash, so its low 64
/// bits are the map's hash (no SipHash pass over every key on every lookup).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FingerprintHasher(u64);

impl Hasher for FingerprintHasher {
    fn write(&mut self, bytes: &[u8]) {
        // not a fingerprint: fold the bytes in (never used by u128 keys)
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0 ^ u64::from_le_bytes(word)).rotate_left(29).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u128(&mut self, fingerprint: u128) {
        self.0 ^= fingerprint as u64;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A [`Hasher`] that only gathers the bytes written to it.
struct Gather<'b>(&'b mut Vec<u8>);

impl Hasher for Gather<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        // not called by `Hash` impls; answered anyway, as a hash of what was gathered
        xxh3_64(self.0)
    }
}

/// What counting a message of a history learnt of it, kept by position for the next fit of
/// that history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counted {
    /// Its [`message_fingerprint`].
    pub(crate) fingerprint: u128,
    /// Its tokens, framing included.
    pub(crate) tokens: usize,
    /// What kinds of content it holds.
    pub(crate) shape: Shape,
    /// The [`text_hash`](crate::result_text::text_hash) of its one result, when it holds one
    /// result that is all text (a tool message, or one `tool_result` block); 0 when it holds
    /// none such, or when not worked out. Why: `dedupe` compares results by this hash, and
    /// hashing every result's text again is a second read of most of a long agent history's
    /// bytes in each warm fit. 0 only ever means "hash it": no result is ever taken for
    /// another.
    pub(crate) result_text: u128,
    /// The length in bytes of that result's text (in the room the hash's alignment leaves:
    /// the entry stays 48 bytes), so that `dedupe` weighs a repeat against its reference
    /// without opening it.
    pub(crate) result_len: u32,
    /// The tokens of its content by the text counter, when it is one whole result that names
    /// its call (see [`Shape::is_whole_result`]) and all text, and counting tokenized it
    /// (capped at `u16::MAX - 1`); `u16::MAX` when not known. Why: `clear_tool_results`
    /// weighs every old result against its placeholder on every fit, and reading an
    /// unchanged one to count it again is a trip to memory per result in a long history.
    /// In the entry's padding: it stays 48 bytes.
    pub(crate) result_tokens: u16,
}

impl Counted {
    /// The [`ResultText`] of its one result, when it was worked out.
    pub(crate) fn result(&self) -> Option<ResultText> {
        (self.result_text != 0)
            .then_some(ResultText { hash: self.result_text, len: self.result_len as usize })
    }

    /// The tokens of its content, when it is a whole result and they are known (see
    /// [`Counted::result_tokens`]): exact up to `u16::MAX - 2`, "at least" above.
    pub(crate) fn whole_result_tokens(&self) -> Option<usize> {
        (self.result_tokens != u16::MAX).then_some(usize::from(self.result_tokens))
    }

    /// What counting `message`, with these fingerprint and tokens (and `texts`, the tokens
    /// of its content when all text, if counting just tokenized it), learns of it: its shape
    /// and its result's text hash, from one more pass over its parts.
    fn of(message: &Message, fingerprint: u128, (tokens, texts): (usize, Option<usize>)) -> Counted {
        // a text too long for the room is not remembered (hashed again when read)
        let text = one_result(message)
            .and_then(result_text)
            .and_then(|t| Some((t.hash, u32::try_from(t.len).ok()?)));
        let (result_text, result_len) = text.unwrap_or((0, 0));
        let shape = Shape::of(message);
        let result_tokens = match texts {
            Some(n) if shape.is_whole_result() => n.min(usize::from(u16::MAX - 1)) as u16,
            _ => u16::MAX,
        };
        Counted { fingerprint, tokens, shape, result_text, result_len, result_tokens }
    }
}

/// Token counts of messages by content hash, for one [`ChatCounter`].
///
/// Counting a conversation through the cache tokenizes only messages it has not seen, so
/// re-counting a conversation that grew by one message tokenizes one message (and hashes the
/// others). Memory: about 40 bytes per distinct message. Used with another counter, it empties
/// itself first.
#[derive(Debug, Clone, Default)]
pub struct CountCache {
    counter: u64,
    counts: HashMap<u128, usize, BuildHasherDefault<FingerprintHasher>>,
    /// The fingerprint and tokens of the tool schemas counted last (agent loops send the
    /// same tools every turn, and rendering them is the costliest part of a small request).
    tools: Option<(u128, usize)>,
    /// What was learnt of each message of the history counted last
    /// ([`CountCache::count_history`]), by position. Why: a warm fit of the same history, or
    /// of one grown by a turn, finds each message at its place in one sequential read;
    /// probing the table instead costs a cache miss or two per message once the table
    /// outgrows the processor's cache (100,000 messages), a fifth of a warm fit's time.
    /// The shape and the result's text hash ride along so that a message found at its place
    /// is not opened at all (a session passes the fingerprints it took: a warm turn then
    /// reads no message it saw). Memory: 48 bytes per message of that history.
    history: Vec<Counted>,
    /// The versions steps made of input messages in the fit before, with their tokens, in
    /// the order they were made ([`CountCache::changed_tokens`]), and those of the fit under
    /// way. Why: a warm fit changes the same messages the same way again, in the same order
    /// (`dedupe`, then `clear_tool_results`, over most old results); read in that order, a
    /// version costs no random probe of the table. A list by input index was that probe
    /// again once a long history's list outgrew the processor's caches: a step changes a few
    /// messages in each stretch of the history, one cache line each. Memory: 32 bytes per
    /// version made by the last fit.
    versions: Vec<(u128, usize)>,
    next_versions: Vec<(u128, usize)>,
    /// Where in `versions` the next one is looked for.
    versions_read: usize,
    /// The units of a history fitted before, and how many of its first messages the history
    /// counted since still has unchanged at their places ([`CountCache::known_units`]). Why:
    /// grouping opens every message (its role and call ids), a pass over the whole input
    /// that a warm fit of a long history would otherwise make again for nothing. Memory: 48
    /// bytes per unit of that history.
    units: Option<(std::sync::Arc<Vec<Unit>>, usize)>,
    /// The provider whose rules a history fitted before was found to meet, and how many of its
    /// first messages the history counted since still has unchanged
    /// ([`CountCache::known_valid`]). Why: a warm fit checks its input before deciding to
    /// repair it, a pass that opens every call and result id again.
    valid: Option<(Format, usize)>,
}

impl CountCache {
    /// An empty cache.
    pub fn new() -> CountCache {
        CountCache::default()
    }

    /// The number of messages cached.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Forgets every count.
    pub fn clear(&mut self) {
        self.counts.clear();
        self.tools = None;
        self.history.clear();
        self.versions.clear();
        self.next_versions.clear();
        self.units = None;
        self.valid = None;
    }

    /// Makes room for `additional` more messages at once (a history about to be counted),
    /// instead of growing the table step by step.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.counts.reserve(additional);
    }

    /// Empties the cache if it was filled by another counter.
    fn use_counter(&mut self, counter: &ChatCounter) {
        if self.counter != counter.fingerprint() {
            self.clear();
            self.counter = counter.fingerprint();
        }
    }

    /// The tokens of `message`, from the cache or counted and remembered.
    pub fn message_tokens(&mut self, counter: &ChatCounter, message: &Message) -> usize {
        self.fingerprint_and_tokens(counter, message).1
    }

    /// The [`message_fingerprint`] and tokens of `message`, for callers that keep the
    /// fingerprint too (a plan fingerprints its input from them without hashing it again).
    pub fn fingerprint_and_tokens(&mut self, counter: &ChatCounter, message: &Message) -> (u128, usize) {
        self.tokens_of_fingerprinted(counter, message, message_fingerprint(message))
    }

    /// The tokens of `message`, whose [`message_fingerprint`] the caller already took (a
    /// session fingerprints every turn's messages to recognise them): no hashing here.
    pub fn tokens_of_fingerprinted(
        &mut self,
        counter: &ChatCounter,
        message: &Message,
        fingerprint: u128,
    ) -> (u128, usize) {
        self.use_counter(counter);
        (fingerprint, self.lookup(counter, message, fingerprint))
    }

    /// The tokens of `message`, a version of an input message that a step made, as
    /// [`message_tokens`](CountCache::message_tokens) gives them: found where the fit before
    /// made it when it made it too (where its next version was made, or a few after), else
    /// from the table; kept for the next fit in either case.
    pub(crate) fn changed_tokens(&mut self, counter: &ChatCounter, message: &Message) -> usize {
        self.use_counter(counter);
        let fingerprint = message_fingerprint(message);
        self.version_tokens(counter, fingerprint, || (message, fingerprint))
    }

    /// [`changed_tokens`](CountCache::changed_tokens) of the version of the input message
    /// with fingerprint `input` whose whole content is `text` (a tool result replaced), found
    /// by a key made of the two, so that the version need not be written out: `message`
    /// writes it, only when this fit's versions do not hold the key (then it is counted, or
    /// found in the table by its own fingerprint).
    pub(crate) fn replaced_result_tokens<'m>(
        &mut self,
        counter: &ChatCounter,
        input: u128,
        text: &str,
        message: impl FnOnce() -> &'m Message,
    ) -> usize {
        self.use_counter(counter);
        let mut key = Xxh3::new();
        // its own domain: never the fingerprint of a message
        key.update(b"tightfit: a tool result replaced by a text\0");
        key.update(&input.to_le_bytes());
        key.update(text.as_bytes());
        let key = key.digest128();
        self.version_tokens(counter, key, || {
            let message = message();
            (message, message_fingerprint(message))
        })
    }

    /// The tokens of the version known by `key`: where the fit before made it when it made it
    /// too (where its next version was made, or a few after), else from the table by the
    /// fingerprint `message` gives with the message; kept under `key` for the next fit.
    fn version_tokens<'m>(
        &mut self,
        counter: &ChatCounter,
        key: u128,
        message: impl FnOnce() -> (&'m Message, u128),
    ) -> usize {
        // a version no longer made (a result that stopped repeating) is skipped
        const LOOK_AHEAD: usize = 4;
        let end = self.versions.len().min(self.versions_read + LOOK_AHEAD);
        let tokens = match (self.versions_read..end).find(|&k| self.versions[k].0 == key) {
            Some(k) => {
                self.versions_read = k + 1;
                self.versions[k].1
            }
            None => {
                let (message, fingerprint) = message();
                self.lookup(counter, message, fingerprint)
            }
        };
        self.next_versions.push((key, tokens));
        tokens
    }

    /// The tokens of `message` from the table, or counted and remembered (the counter is
    /// the cache's own).
    /// [`lookup`](CountCache::lookup), with the tokens of the message's content when all
    /// text, if it was counted here (not known for one found in the table).
    fn lookup_learning(
        &mut self,
        counter: &ChatCounter,
        message: &Message,
        fingerprint: u128,
    ) -> (usize, Option<usize>) {
        match self.counts.entry(fingerprint) {
            std::collections::hash_map::Entry::Occupied(found) => (*found.get(), None),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let (tokens, texts) = counter.message_and_text_tokens(message);
                slot.insert(tokens);
                (tokens, texts)
            }
        }
    }

    fn lookup(&mut self, counter: &ChatCounter, message: &Message, fingerprint: u128) -> usize {
        *self.counts.entry(fingerprint).or_insert_with(|| counter.message_tokens(message))
    }

    /// The fingerprint, tokens and shape of every message of a history about to be fitted, in
    /// order; `known` are their fingerprints when the caller took them already (one per
    /// message). A message found at its place in the history counted last costs no table
    /// probe, and its shape is the one remembered (with `known`, such a message is not read
    /// at all). The others are looked up, or counted and remembered, and their shape worked
    /// out then, while the message was just read.
    pub(crate) fn count_history(
        &mut self,
        counter: &ChatCounter,
        messages: &[Message],
        known: Option<&[u128]>,
    ) -> &[Counted] {
        self.use_counter(counter);
        let known = known.filter(|k| k.len() == messages.len());
        // a fit begins: the versions the one before made are those it may make again (a
        // fit that made none keeps those of the one before)
        if !self.next_versions.is_empty() {
            // the list of two fits ago is written again, its room kept
            std::mem::swap(&mut self.versions, &mut self.next_versions);
            self.next_versions.clear();
        }
        self.versions_read = 0;
        let previous = std::mem::take(&mut self.history);
        let mut history = Vec::with_capacity(messages.len());
        // the first position whose message is not the one there before
        let mut unchanged = None;
        for (i, message) in messages.iter().enumerate() {
            let fingerprint = match known {
                Some(known) => known[i],
                None => message_fingerprint(message),
            };
            let entry = match previous.get(i) {
                Some(&counted) if counted.fingerprint == fingerprint => counted,
                _ => {
                    unchanged.get_or_insert(i);
                    Counted::of(message, fingerprint, self.lookup_learning(counter, message, fingerprint))
                }
            };
            history.push(entry);
        }
        let unchanged = unchanged.unwrap_or(messages.len().min(previous.len()));
        // what was known of an earlier history now holds for this one's unchanged messages only
        if let Some((_, holds_for)) = &mut self.units {
            *holds_for = (*holds_for).min(unchanged);
        }
        if let Some((_, holds_for)) = &mut self.valid {
            *holds_for = (*holds_for).min(unchanged);
        }
        self.history = history;
        &self.history
    }

    /// The units of a history fitted before ([`CountCache::remember_units`]) and how many of
    /// its first messages are those of the history counted last, unchanged (see
    /// [`units_resuming`](crate::units::units_resuming)).
    pub(crate) fn known_units(&self) -> Option<(&[Unit], usize)> {
        self.units.as_ref().map(|(units, valid)| (units.as_slice(), *valid))
    }

    /// Remembers `units`, those of the history counted last (all of its `len` messages).
    pub(crate) fn remember_units(&mut self, units: std::sync::Arc<Vec<Unit>>, len: usize) {
        debug_assert_eq!(len, self.history.len(), "the units of the history counted last");
        self.units = Some((units, len));
    }

    /// How many first messages of the history counted last are those of a history found to
    /// meet `provider`'s rules ([`CountCache::remember_valid`]), unchanged.
    pub(crate) fn known_valid(&self, provider: Format) -> Option<usize> {
        self.valid.filter(|(p, _)| *p == provider).map(|(_, unchanged)| unchanged)
    }

    /// Remembers whether the history counted last meets `provider`'s rules.
    pub(crate) fn remember_valid(&mut self, provider: Format, valid: bool) {
        self.valid = valid.then_some((provider, self.history.len()));
    }

    /// What the last [`count_history`](CountCache::count_history) learnt of the message at
    /// `position` of that history.
    pub(crate) fn counted(&self, position: usize) -> Option<&Counted> {
        self.history.get(position)
    }

    /// The tokens of tool schemas, from the cache when they are the ones counted last.
    pub fn tools_tokens(&mut self, counter: &ChatCounter, tools: &[Tool]) -> usize {
        self.use_counter(counter);
        let mut hasher = Xxh3::new();
        tools.hash(&mut hasher);
        let fingerprint = hasher.digest128();
        match self.tools {
            Some((cached, tokens)) if cached == fingerprint => tokens,
            _ => {
                let tokens = counter.tools_tokens(tools);
                self.tools = Some((fingerprint, tokens));
                tokens
            }
        }
    }

    /// Counts a conversation, tokenizing only the messages (and tool schemas) not seen before.
    pub fn count(&mut self, counter: &ChatCounter, messages: &[Message], tools: Option<&[Tool]>) -> Count {
        let per_message = messages.iter().map(|m| self.message_tokens(counter, m)).collect();
        let tools = tools.map_or(0, |t| self.tools_tokens(counter, t));
        counter.assemble(per_message, tools)
    }
}

/// The count of a conversation that grows message by message (an agent loop): appending a
/// message costs tokenizing that message only, with no hashing of the rest.
#[derive(Debug, Clone)]
pub struct RunningCount {
    counter: ChatCounter,
    per_message: Vec<usize>,
    tools: usize,
    messages_total: usize,
}

impl RunningCount {
    /// A running count of an empty conversation with these tool schemas.
    pub fn new(counter: ChatCounter, tools: Option<&[Tool]>) -> RunningCount {
        let tools = tools.map_or(0, |t| counter.tools_tokens(t));
        RunningCount { counter, per_message: Vec::new(), tools, messages_total: 0 }
    }

    /// Adds a message; returns its tokens.
    pub fn push(&mut self, message: &Message) -> usize {
        let tokens = self.counter.message_tokens(message);
        self.per_message.push(tokens);
        self.messages_total += tokens;
        tokens
    }

    /// Adds messages in order.
    pub fn extend<'a>(&mut self, messages: impl IntoIterator<Item = &'a Message>) {
        for message in messages {
            self.push(message);
        }
    }

    /// Keeps only the first `len` messages (after the caller dropped the rest).
    pub fn truncate(&mut self, len: usize) {
        for tokens in self.per_message.drain(len.min(self.per_message.len())..) {
            self.messages_total -= tokens;
        }
    }

    /// Tokens of each message so far.
    pub fn per_message(&self) -> &[usize] {
        &self.per_message
    }

    /// The conversation's total: messages, tool schemas and reply priming.
    pub fn total(&self) -> usize {
        self.messages_total + self.tools + self.counter.priming_tokens()
    }

    /// The full count so far.
    pub fn count(&self) -> Count {
        Count {
            per_message: self.per_message.clone(),
            tools: self.tools,
            priming: self.counter.priming_tokens(),
            total: self.total(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use crate::tokens::OpenAiEncoding;

    fn tool(text: &str) -> Message {
        let mut message = Message::text(Role::Tool, text);
        message.tool_call_id = Some("call_1".into());
        message
    }

    #[test]
    fn the_versions_of_changed_messages_count_as_counting_them_does() {
        let o200k = ChatCounter::openai(OpenAiEncoding::O200kBase);
        let cl100k = ChatCounter::openai(OpenAiEncoding::Cl100kBase);
        let versions = [
            tool("a first version of the result"),
            tool("[cleared]"),
            tool("a third, longer version: ".repeat(9).as_str()),
            tool("a fourth"),
            tool("a fifth and last"),
        ];
        let mut cache = CountCache::new();
        // fit after fit, the versions made in the order of the fit before, then with one no
        // longer made and a new one, then in reverse order, then none, then all again: each
        // counted right, from the list of the fit before or from the table
        let rounds: [Vec<usize>; 6] = [
            vec![0, 1, 2, 3],
            vec![0, 1, 2, 3],
            vec![0, 2, 3, 4],
            vec![4, 3, 2, 1, 0],
            vec![],
            vec![0, 1, 2, 3, 4],
        ];
        for (round, order) in rounds.iter().enumerate() {
            cache.count_history(&o200k, &[], None);
            for &v in order {
                let version = &versions[v];
                assert_eq!(
                    cache.changed_tokens(&o200k, version),
                    o200k.message_tokens(version),
                    "round {round}"
                );
            }
        }
        // another counter: its own counts, not the versions remembered for the first
        cache.count_history(&cl100k, &[], None);
        for version in &versions {
            assert_eq!(cache.changed_tokens(&cl100k, version), cl100k.message_tokens(version));
        }
    }
}
