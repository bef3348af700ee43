//! The working history a pipeline transforms.
//!
//! Messages stay borrowed from the caller's input until a step changes one (copy on write), so
//! the input is never mutated and an untouched message is written back byte for byte. Beside
//! each message the history keeps its token count (counted once, through a [`CountCache`], and
//! again only for a message a step changed), where it came from, and what each step did to it;
//! [`History::finish`] turns that record into the [`Plan`].
//!
//! Steps change the history only through its methods, so the record is always complete:
//! [`edit`](History::edit), [`remove`](History::remove), [`retain`](History::retain),
//! [`drop_units`](History::drop_units) and [`insert`](History::insert). Those methods also keep
//! the references a step wrote (`dedupe`'s) true: see [`references`].

pub(crate) mod references;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::format::Format;
pub use crate::history_message::HistoryMessage;
use crate::message::{ContentForm, Message, Part, Role, Tool};
use crate::plan::{input_fingerprint, Plan};
pub use crate::record::Origin;
use crate::record::{Change, ChangeKind, Detail, Dropped, Meta};
use crate::result_text::{one_result, result_text, ResultText};
use crate::shape::Shape;
use crate::tokens::{ChatCounter, CountCache};
use crate::units::{units, units_knowing, units_resuming, CallsAndResults, Unit, UnitKind};
use references::{holds_in, Reference};

/// Room kept past the input in a history's vectors for messages steps insert.
const INSERT_ROOM: usize = 8;

/// A history being fitted: messages, their tokens, and the record of every change.
#[derive(Debug)]
pub struct History<'a> {
    messages: Vec<HistoryMessage<'a>>,
    meta: Vec<Meta>,
    /// What each dropped input message was dropped by: (input index, step, reason). Shared
    /// strings: a step that drops a thousand messages records one step name and one reason.
    dropped: Dropped,
    /// What the steps had to say beyond their numbers (a summarizer that failed and the
    /// extractive summary that stood in), in order, for the report.
    notes: Vec<String>,
    counter: ChatCounter,
    cache: CountCache,
    /// Tool schemas and reply priming: part of every count, changed by no step.
    fixed_tokens: usize,
    message_tokens: usize,
    provider: Format,
    input_len: usize,
    step: Arc<str>,
    /// Shared, so that a step can hold them while it changes the history, and the input's
    /// can be kept for the plan, without copying a list as long as the history.
    units: OnceLock<Arc<Vec<Unit>>>,
    /// The units of the input, when they were worked out before the first change (kept for
    /// the plan, which describes the input by its units).
    input_units: Option<Arc<Vec<Unit>>>,
    /// The input's fingerprint for the plan, from the message fingerprints counting gave.
    input_fingerprint: String,
    revision: u64,
    /// The references steps wrote, in the order they were written (message order). One that
    /// stops being true stays here, out of `referrers_of`: indices into this list stay put.
    references: Vec<Reference<'a>>,
    /// Per input index of a message holding an original: the references to it still kept
    /// true (indices into `references`, in the order written). A mend reads only the lists
    /// of the messages it was told changed, never the whole list.
    referrers_of: foldhash::HashMap<usize, Vec<usize>>,
    /// While a step mends in one go ([`History::defer_mends`]): the input indices of the
    /// changed or removed originals, mended by [`History::settle_mends`].
    deferred_mends: Option<Vec<usize>>,
    /// Where each input message stands now, built when references are first mended and kept
    /// until a message is inserted or removed: steps that edit many referenced originals one
    /// by one (clearing, truncating) would otherwise map the whole history once per edit.
    positions: Option<Positions>,
    /// Input messages before this index are pinned ([`History::pin_inputs_before`]).
    pinned_before: usize,
}

impl<'a> History<'a> {
    /// A history over `messages`, counted with `counter` (through `cache`, so a history seen
    /// before is not tokenized again), with `tools` sent beside it.
    pub fn new(
        messages: &'a [Message],
        tools: Option<&[Tool]>,
        counter: &ChatCounter,
        cache: CountCache,
        provider: Format,
    ) -> History<'a> {
        History::fingerprinted(messages, None, tools, counter, cache, provider)
    }

    /// [`History::new`] for a caller that already took the messages'
    /// [`message_fingerprint`](crate::tokens::message_fingerprint)s (one per message, in
    /// order): they are not hashed again.
    pub(crate) fn fingerprinted(
        messages: &'a [Message],
        known: Option<&[u128]>,
        tools: Option<&[Tool]>,
        counter: &ChatCounter,
        mut cache: CountCache,
        provider: Format,
    ) -> History<'a> {
        cache.reserve(messages.len());
        // room for the few messages steps insert (a trace, a synthetic result) without
        // moving the whole history to a new allocation
        let capacity = messages.len() + INSERT_ROOM;
        let counted = cache.count_history(counter, messages, known);
        let mut meta = Vec::with_capacity(capacity);
        meta.extend(counted.iter().enumerate().map(|(i, counted)| Meta {
            origin: Origin::Input(i),
            tokens: counted.tokens,
            changes: Vec::new(),
            shape: counted.shape,
        }));
        let input_fingerprint = input_fingerprint(counted.iter().map(|counted| counted.fingerprint));
        let tools_tokens = tools.map_or(0, |t| cache.tools_tokens(counter, t));
        let message_tokens = meta.iter().map(|m| m.tokens).sum();
        let mut borrowed = Vec::with_capacity(capacity);
        borrowed.extend(messages.iter().map(HistoryMessage::input));
        let history = History {
            messages: borrowed,
            meta,
            dropped: Dropped::default(),
            notes: Vec::new(),
            fixed_tokens: tools_tokens + counter.priming_tokens(),
            counter: counter.clone(),
            cache,
            message_tokens,
            provider,
            input_len: messages.len(),
            step: Arc::from("input"),
            units: OnceLock::new(),
            input_units: None,
            input_fingerprint,
            revision: 0,
            references: Vec::new(),
            referrers_of: Default::default(),
            deferred_mends: None,
            positions: None,
            pinned_before: 0,
        };
        // the shapes remembered by the count cache must be the messages' own (a debug check)
        debug_assert_eq!(history.stale_shape(), None, "a remembered shape is not its message's");
        debug_assert_eq!(history.stale_result_text(), None, "a remembered result hash is not its message's");
        history
    }

    /// The provider the history is fitted for.
    pub fn provider(&self) -> Format {
        self.provider
    }

    /// The counter every count uses.
    pub fn counter(&self) -> &ChatCounter {
        &self.counter
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether no message is left.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[HistoryMessage<'a>] {
        &self.messages
    }

    /// The message at `index`.
    pub fn message(&self, index: usize) -> &Message {
        &self.messages[index]
    }

    /// The message at `index` to read its role, name and ids from: itself, or for a tool
    /// result whose content a step replaced by a text, the input message it has them from
    /// (reading them there does not write the new message out; see [`HistoryMessage`]).
    pub(crate) fn ids_of(&self, index: usize) -> &Message {
        match self.messages[index].input_with_same_ids() {
            Some(input) => input,
            None => &self.messages[index],
        }
    }

    /// The text that replaced the whole content of the tool result at `index`, when the
    /// new message is not written out yet (`None` for any other message): what it holds,
    /// read without writing it out.
    pub(crate) fn replacing_text(&self, index: usize) -> Option<&Arc<str>> {
        self.messages[index].replacing_text()
    }

    /// The message at `index` as the input holds it, if no step changed it: borrowed for as
    /// long as the input is, so that what a step keeps of it (an original a reference
    /// replaced) need not be copied.
    pub(crate) fn unchanged_input(&self, index: usize) -> Option<&'a Message> {
        self.messages[index].as_input()
    }

    /// The [`ResultText`] of the one result of the message at `index` (see [`one_result`])
    /// as counting the input found it, when no step changed the message: `dedupe` then need
    /// not read the result's text again. `None` where it must be worked out (a changed
    /// message, none known).
    pub(crate) fn input_result_text(&self, index: usize) -> Option<ResultText> {
        let Origin::Input(input) = self.meta[index].origin else { return None };
        self.messages[index].as_input()?;
        self.cache.counted(input)?.result()
    }

    /// Whether the content of the unchanged input message at `index`, one whole tool result
    /// all text, has more than `limit` tokens by the text counter, as counting it found
    /// (without reading it again); `None` where that is not known (a changed message, one
    /// counted from the table, a count too big to say).
    pub(crate) fn input_result_exceeds(&self, index: usize, limit: usize) -> Option<bool> {
        let Origin::Input(input) = self.meta[index].origin else { return None };
        self.messages[index].as_input()?;
        let tokens = self.cache.counted(input)?.whole_result_tokens()?;
        // the largest count kept means "at least that many"
        (tokens < usize::from(u16::MAX - 1) || limit < tokens).then_some(tokens > limit)
    }

    /// Where the message at `index` came from.
    pub fn origin(&self, index: usize) -> Origin {
        self.meta[index].origin
    }

    /// Pins the input messages before `input` (an input index): the steps that shorten
    /// messages (`truncate_tool_results`, `clear_tool_results`) leave them as they are. A
    /// session's compaction pins its head, the part the provider caches from one compaction
    /// to the next: cut there, the head would differ between compactions (cut when the cut
    /// alone left the history over its mark, whole when not), and every request after it
    /// would miss the cache from that message on.
    pub(crate) fn pin_inputs_before(&mut self, input: usize) {
        self.pinned_before = self.pinned_before.max(input);
    }

    /// Whether the message at `index` is pinned (see
    /// [`pin_inputs_before`](History::pin_inputs_before)).
    pub fn is_pinned(&self, index: usize) -> bool {
        matches!(self.meta[index].origin, Origin::Input(i) if i < self.pinned_before)
    }

    /// What kinds of content the message at `index` holds (see [`Shape`]): a step skips
    /// the messages without what it works on, without opening them.
    pub(crate) fn shape(&self, index: usize) -> Shape {
        self.meta[index].shape
    }

    /// The first message whose kept shape is not what it holds (`None`: every shape is
    /// current); a check for debug builds.
    pub(crate) fn stale_shape(&self) -> Option<usize> {
        (0..self.len()).find(|&i| self.meta[i].shape != Shape::of(&self.messages[i]))
    }

    /// The first message whose result hash and length, as counting remembered them, are not
    /// its own; a check for debug builds, of a history no step has changed yet.
    pub(crate) fn stale_result_text(&self) -> Option<usize> {
        let text_counter = self.counter.text_counter();
        (0..self.len()).find(|&i| {
            let message = &self.messages[i];
            let stale_text = self
                .input_result_text(i)
                .is_some_and(|known| one_result(message).and_then(result_text) != Some(known));
            let Origin::Input(input) = self.meta[i].origin else { return stale_text };
            let tokens = self.cache.counted(input).and_then(|c| c.whole_result_tokens());
            // known only for all text: any other part would make the count differ
            let counted = || {
                let texts = message.parts.iter().map(|p| match p {
                    Part::Text(t) => text_counter.count(&t.text),
                    _ => usize::MAX,
                });
                texts.fold(0, usize::saturating_add).min(usize::from(u16::MAX - 1))
            };
            stale_text || tokens.is_some_and(|t| t != counted())
        })
    }

    /// Whether the units kept from before the last changes are not those of the messages now
    /// (false when none are kept); a check for debug builds of the changes that keep them.
    pub(crate) fn stale_units(&self) -> bool {
        self.units.get().is_some_and(|kept| **kept != units(&self.messages))
    }

    /// The tokens of the message at `index`, framing included.
    pub fn tokens(&self, index: usize) -> usize {
        self.meta[index].tokens
    }

    /// The tokens of the messages in `range`.
    pub fn tokens_of(&self, range: std::ops::Range<usize>) -> usize {
        self.meta[range].iter().map(|m| m.tokens).sum()
    }

    /// The tokens of the whole request: every message, the tool schemas and reply priming.
    pub fn total_tokens(&self) -> usize {
        self.message_tokens + self.fixed_tokens
    }

    /// The tokens no step can remove: tool schemas and reply priming.
    pub fn fixed_tokens(&self) -> usize {
        self.fixed_tokens
    }

    /// The number of input messages.
    pub fn input_len(&self) -> usize {
        self.input_len
    }

    /// The units of the current messages (computed once after each change).
    pub fn units(&self) -> &[Unit] {
        self.shared_units_ref()
    }

    /// [`units`](History::units), to hold while the history changes.
    pub(crate) fn shared_units(&self) -> Arc<Vec<Unit>> {
        Arc::clone(self.shared_units_ref())
    }

    fn shared_units_ref(&self) -> &Arc<Vec<Unit>> {
        self.units.get_or_init(|| {
            let holds = |i: usize| self.meta[i].shape.into();
            match self.cache.known_units() {
                // still the input: the units of the one fitted before hold for what is unchanged
                Some((known, unchanged)) if self.revision == 0 => {
                    Arc::new(units_resuming(&self.messages, holds, known, unchanged))
                }
                _ => Arc::new(units_knowing(&self.messages, holds)),
            }
        })
    }

    /// Whether `input`, the messages this history was made from, meets `provider`'s rules;
    /// what a fit before found valid and is unchanged is not checked again
    /// ([`validate::is_valid_knowing`](crate::validate::is_valid_knowing)).
    pub(crate) fn input_is_valid(&mut self, input: &[Message], provider: Format) -> bool {
        let valid = crate::validate::is_valid_knowing(input, provider, self.cache.known_valid(provider));
        self.cache.remember_valid(provider, valid);
        valid
    }

    /// The units of `input`, the messages this history was made from, grouped again only
    /// after what is unchanged since the history fitted before.
    fn input_units_of(&self, input: &[Message]) -> Vec<Unit> {
        // the shapes counting took of the input, by position: no message opened for them
        let holds = |i: usize| {
            self.cache.counted(i).map_or_else(|| CallsAndResults::of(&input[i]), |c| c.shape.into())
        };
        match self.cache.known_units() {
            Some((known, unchanged)) => units_resuming(input, holds, known, unchanged),
            None => units_knowing(input, holds),
        }
    }

    /// The index of the newest user turn among [`units`](History::units): the last user
    /// message, or the last assistant step whose results message also carries user words.
    pub fn newest_user_unit(&self) -> Option<usize> {
        self.units().iter().rposition(|u| {
            (u.kind == UnitKind::UserTurn && self.messages[u.messages.start].role == Role::User)
                || (u.kind == UnitKind::AssistantStep && u.has_user_text)
        })
    }

    /// For each unit, whether a step must keep it under `keep`: instructions when
    /// `keep.system`, the newest user turn when `keep.newest_user_turn` — and with it, for
    /// Anthropic, the first assistant step after it when the history ends inside a tool loop
    /// (the API checks that this step still starts with its thinking, so the turn's start
    /// must not move).
    pub fn protected_units(&self, keep: Keep) -> Vec<bool> {
        let newest = if keep.newest_user_turn { self.newest_user_unit() } else { None };
        let units = self.units();
        let mut mask: Vec<bool> = units
            .iter()
            .enumerate()
            .map(|(i, u)| (keep.system && u.kind == UnitKind::Instruction) || Some(i) == newest)
            .collect();
        if keep.newest_user_turn && self.provider == Format::Anthropic && self.ends_in_tool_loop() {
            let from = newest.map_or(0, |n| n + 1);
            if let Some(first) = (from..units.len()).find(|&i| units[i].kind == UnitKind::AssistantStep) {
                mask[first] = true;
            }
        }
        mask
    }

    /// Whether the last message holds only tool results (the model is mid tool loop).
    fn ends_in_tool_loop(&self) -> bool {
        self.messages.last().is_some_and(|m| {
            matches!(m.role, Role::Tool | Role::Function)
                || (!m.parts.is_empty()
                    && m.parts.iter().all(|p| matches!(p, crate::message::Part::ToolResult(_))))
        })
    }

    /// The name of the step now running, recorded with every change.
    pub fn step(&self) -> &str {
        &self.step
    }

    /// Records a line for the report's entry of the running step (what its numbers do not
    /// say: a summarizer that failed, and what stood in).
    pub fn note(&mut self, line: impl Into<String>) {
        self.notes.push(line.into());
    }

    /// How many notes the steps have made; with [`notes_since`](History::notes_since), a
    /// step's own.
    pub(crate) fn notes_count(&self) -> usize {
        self.notes.len()
    }

    /// The notes made after the first `count`.
    pub(crate) fn notes_since(&self, count: usize) -> Vec<String> {
        self.notes[count.min(self.notes.len())..].to_vec()
    }

    /// How many input messages have been dropped so far.
    pub(crate) fn dropped_count(&self) -> usize {
        self.dropped.len()
    }

    /// The input indices of the messages dropped since `dropped_count` was `from`, in order.
    pub(crate) fn dropped_since(&self, from: usize) -> Vec<usize> {
        let mut indices: Vec<usize> = self.dropped.inputs_since(from).collect();
        indices.sort_unstable();
        indices
    }

    /// Every input message dropped so far: (input index, step, reason), in the order dropped.
    pub(crate) fn dropped(&self) -> impl Iterator<Item = (usize, &Arc<str>, &Arc<str>)> + '_ {
        self.dropped.iter()
    }

    /// What the steps did to the message at `index`, in order.
    pub(crate) fn changes(&self, index: usize) -> &[Change] {
        &self.meta[index].changes
    }

    /// Gives back the count cache of a history that is thrown away (a run tried again).
    pub(crate) fn into_cache(self) -> CountCache {
        self.cache
    }

    /// The input indices of the messages still here that `step` changed, in order.
    pub(crate) fn changed_by(&self, step: &str) -> Vec<usize> {
        self.meta
            .iter()
            .filter(|m| m.changes.iter().any(|c| &*c.step == step))
            .filter_map(|m| match m.origin {
                Origin::Input(i) => Some(i),
                Origin::Inserted => None,
            })
            .collect()
    }

    pub(crate) fn set_step(&mut self, name: &str) {
        if *self.step != *name {
            self.step = Arc::from(name);
        }
    }

    fn changed(&mut self) {
        let units = self.units.take();
        if self.revision == 0 {
            self.input_units = units;
        }
        self.revision += 1;
    }

    /// Records a change that leaves the units as they were (the content of a `tool` or
    /// `function` message, which units never read): they are not worked out again, which
    /// over 80,000 parallel results costs as much as the change itself.
    fn changed_within_units(&mut self) {
        if self.revision == 0 {
            self.input_units = self.units.get().cloned();
        }
        self.revision += 1;
    }

    /// A number that grows with every change, to tell whether a step changed anything.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Changes the message at `index` with `edit` and records the change: its `kind` and a
    /// `detail` for people ("content: kept chars 0..1000 and 9000..10000 of 10000") under the
    /// running step. The message is copied the first time
    /// it is changed and counted again (through the cache). Returns the tokens saved (negative
    /// if it grew).
    pub fn edit(
        &mut self,
        index: usize,
        kind: ChangeKind,
        detail: impl Into<String>,
        edit: impl FnOnce(&mut Message),
    ) -> isize {
        let saved = self.edit_unmended(index, kind, Detail::Text(detail.into()), edit, Units::Changed);
        self.mend_edited(index);
        saved
    }

    /// [`edit`](History::edit) with a line that may be written only when read ([`Detail`]).
    pub(crate) fn edit_noting(
        &mut self,
        index: usize,
        kind: ChangeKind,
        detail: Detail,
        edit: impl FnOnce(&mut Message),
    ) -> isize {
        let saved = self.edit_unmended(index, kind, detail, edit, Units::Changed);
        self.mend_edited(index);
        saved
    }

    /// [`edit`](History::edit) without checking the references to the message; `units` says
    /// whether the edit may change them.
    fn edit_unmended(
        &mut self,
        index: usize,
        kind: ChangeKind,
        detail: Detail,
        edit: impl FnOnce(&mut Message),
        units: Units,
    ) -> isize {
        edit(self.messages[index].to_mut());
        let saved = self.recount(index, kind, detail);
        match units {
            Units::Changed => self.changed(),
            Units::Kept => self.changed_within_units(),
        }
        saved
    }

    /// Counts the message at `index` again after a change and records the change; returns the
    /// tokens saved.
    fn recount(&mut self, index: usize, kind: ChangeKind, detail: Detail) -> isize {
        let tokens = match self.meta[index].origin {
            Origin::Input(_) => self.cache.changed_tokens(&self.counter, &self.messages[index]),
            Origin::Inserted => self.cache.message_tokens(&self.counter, &self.messages[index]),
        };
        let shape = Shape::of(&self.messages[index]);
        self.record_change(index, tokens, shape, kind, detail)
    }

    /// Records a change of the message at `index`, which now has `tokens` and `shape`, under
    /// the running step; returns the tokens saved.
    fn record_change(
        &mut self,
        index: usize,
        tokens: usize,
        shape: Shape,
        kind: ChangeKind,
        detail: Detail,
    ) -> isize {
        let meta = &mut self.meta[index];
        let saved = meta.tokens as isize - tokens as isize;
        self.message_tokens = self.message_tokens + tokens - meta.tokens;
        meta.tokens = tokens;
        meta.shape = shape;
        // most changed messages change once: room for one, not the four a push from empty
        // reserves (a change is 48 bytes, and a long history has thousands of them)
        if meta.changes.capacity() == 0 {
            meta.changes.reserve_exact(1);
        }
        meta.changes.push(Change { step: Arc::clone(&self.step), kind, detail });
        saved
    }

    /// Replaces the whole content of the message at `index` with `parts` written in `form`,
    /// like [`edit`](History::edit) but without copying the content it replaces: clearing or
    /// deduplicating a 100 kB tool result copies its role and ids, not its text.
    pub fn replace_parts(
        &mut self,
        index: usize,
        kind: ChangeKind,
        detail: impl Into<String>,
        parts: Vec<Part>,
        form: ContentForm,
    ) -> isize {
        self.replace_parts_noting(index, kind, Detail::Text(detail.into()), parts, form)
    }

    /// [`replace_parts`](History::replace_parts) with a line that may be written only when
    /// read ([`Detail`]).
    pub(crate) fn replace_parts_noting(
        &mut self,
        index: usize,
        kind: ChangeKind,
        detail: Detail,
        parts: Vec<Part>,
        form: ContentForm,
    ) -> isize {
        match self.messages[index].as_input() {
            Some(message) => {
                self.messages[index] = HistoryMessage::changed(message.with_content(parts, form));
            }
            None => {
                // already the history's own copy: changed where it is
                let message = self.messages[index].to_mut();
                message.parts = parts;
                message.content_form = form;
            }
        }
        let saved = self.recount(index, kind, detail);
        // units read a result message's role and ids, never its content
        if matches!(self.messages[index].role, Role::Tool | Role::Function) {
            self.changed_within_units();
        } else {
            self.changed();
        }
        self.mend_edited(index);
        saved
    }

    /// Replaces the whole content of the tool result at `index` (a `tool` or `function`
    /// message) by the one text `text`, like [`replace_parts`](History::replace_parts) with
    /// that text, recording `detail`. An input message that is one result naming its call
    /// ([`Shape::is_whole_result`]), or one only replaced so before, is not copied: the
    /// history holds the input message and the text, and writes the new message out only
    /// when it is read (see [`HistoryMessage`]); its count is found by the input's
    /// fingerprint and the text. Any other message is changed as `replace_parts` does.
    /// Returns the tokens saved.
    pub(crate) fn replace_result_text_noting(
        &mut self,
        index: usize,
        kind: ChangeKind,
        detail: Detail,
        text: Arc<str>,
    ) -> isize {
        // held only with the input's fingerprint to key its count by (always, once counted)
        let held = match (self.meta[index].origin, self.messages[index].input_with_same_ids()) {
            (Origin::Input(position), Some(input)) if self.meta[index].shape.is_whole_result() => {
                self.cache.counted(position).map(|counted| (counted.fingerprint, input))
            }
            _ => None,
        };
        let Some((fingerprint, input)) = held else {
            let parts = vec![Part::Text(crate::message::TextPart::new(&*text))];
            return self.replace_parts_noting(index, kind, detail, parts, ContentForm::Text);
        };
        let shape = Shape::of_whole_result_text(&text);
        if !self.messages[index].replace_text(Arc::clone(&text)) {
            self.messages[index] = HistoryMessage::replaced(input, Arc::clone(&text));
        }
        let message = &self.messages[index];
        let tokens = self.cache.replaced_result_tokens(&self.counter, fingerprint, &text, || message);
        let saved = self.record_change(index, tokens, shape, kind, detail);
        // units read a result message's role and ids, never its content
        self.changed_within_units();
        self.mend_edited(index);
        saved
    }

    /// Replaces the message at `index` by `message` and records the change, without copying
    /// the message it replaces (a session replaying a decision puts back the messages its
    /// compaction wrote).
    pub fn replace(
        &mut self,
        index: usize,
        kind: ChangeKind,
        detail: impl Into<String>,
        message: Message,
    ) -> isize {
        self.messages[index] = HistoryMessage::changed(message);
        self.edit(index, kind, detail, |_| {})
    }

    /// Removes the message at `index`, recording `reason` under the running step.
    pub fn remove(&mut self, index: usize, reason: &str) {
        let message = self.messages.remove(index);
        let meta = self.meta.remove(index);
        self.positions = None;
        drop(message);
        self.message_tokens -= meta.tokens;
        if let Origin::Input(input) = meta.origin {
            self.dropped.push(input, &self.step, &Arc::from(reason));
            self.mend(&[input]);
        }
        self.changed();
    }

    /// Keeps the messages for which `keep(index, message)` is true, in one pass; the others
    /// are recorded as dropped for `reason`. Returns how many were dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(usize, &Message) -> bool, reason: &str) -> usize {
        let flags: Vec<bool> = self.messages.iter().enumerate().map(|(i, m)| keep(i, m)).collect();
        self.retain_flags(&flags, reason)
    }

    /// Drops every unit whose flag in `drop` is true (one flag per [`units`](History::units)
    /// entry). Returns how many messages were dropped.
    pub fn drop_units(&mut self, drop: &[bool], reason: &str) -> usize {
        assert_eq!(drop.len(), self.units().len(), "one flag per unit");
        let mut keep = vec![true; self.messages.len()];
        for (unit, _) in self.units().iter().zip(drop).filter(|(_, d)| **d) {
            keep[unit.messages.clone()].fill(false);
        }
        self.retain_flags(&keep, reason)
    }

    fn retain_flags(&mut self, keep: &[bool], reason: &str) -> usize {
        let dropped = keep.iter().filter(|k| !**k).count();
        if dropped == 0 {
            return 0;
        }
        let reason: Arc<str> = Arc::from(reason);
        // the kept ones go into vectors of their final size: growing them from empty moves
        // the history several times, into fresh pages the kernel zeroes first
        let capacity = keep.len() - dropped + INSERT_ROOM;
        let messages = std::mem::replace(&mut self.messages, Vec::with_capacity(capacity));
        let meta = std::mem::replace(&mut self.meta, Vec::with_capacity(capacity));
        self.positions = None;
        let first_dropped = self.dropped.len();
        self.dropped.reserve(dropped);
        for ((message, meta), keep) in messages.into_iter().zip(meta).zip(keep) {
            if *keep {
                self.messages.push(message);
                self.meta.push(meta);
            } else {
                self.message_tokens -= meta.tokens;
                if let Origin::Input(input) = meta.origin {
                    self.dropped.push(input, &self.step, &reason);
                }
            }
        }
        self.changed();
        if !self.referrers_of.is_empty() {
            let gone: Vec<usize> = self.dropped.inputs_since(first_dropped).collect();
            self.mend(&gone);
        }
        dropped
    }

    /// Records a reference a step wrote into a message, so that it is kept true.
    pub(crate) fn refer(&mut self, reference: Reference<'a>) {
        self.referrers_of.entry(reference.target).or_default().push(self.references.len());
        self.references.push(reference);
    }

    /// Checks the references to the message at `index` after it changed.
    fn mend_edited(&mut self, index: usize) {
        if self.referrers_of.is_empty() {
            return;
        }
        if let Origin::Input(input) = self.meta[index].origin {
            if self.referrers_of.contains_key(&input) {
                self.mend(&[input]);
            }
        }
    }

    /// Until [`settle_mends`](History::settle_mends), references to a changed or removed
    /// original are mended once, together, rather than after each change. For a step that
    /// changes many messages in a row (clearing old results oldest first): mended one by
    /// one, an original would move into the next copy, which the step then clears in turn,
    /// and every other reference would be rewritten at each move, quadratic in the copies.
    /// The tokens the mend gives back are not in [`total_tokens`](History::total_tokens)
    /// until then: a step that stops on the budget settles before it trusts it.
    pub(crate) fn defer_mends(&mut self) {
        self.deferred_mends.get_or_insert_with(Vec::new);
    }

    /// Mends the references to every original changed or removed since
    /// [`defer_mends`](History::defer_mends), and mends at once again from then on. Nothing
    /// to do when nothing was deferred.
    pub(crate) fn settle_mends(&mut self) {
        if let Some(touched) = self.deferred_mends.take() {
            self.mend(&touched);
        }
    }

    /// Keeps the references to the input messages `touched` (changed or removed) true: for
    /// each original one of them held and holds no more, the first message still holding a
    /// reference to it gets the original back, and the others are pointed at that one.
    /// Cost: the references to the touched messages, and a list of where every input message
    /// stands (one slot per input message, however many are left) made once until a message
    /// is inserted or removed; one edit per message whose references change (80,000 parallel
    /// results in one message are one edit).
    fn mend(&mut self, touched: &[usize]) {
        if let Some(deferred) = &mut self.deferred_mends {
            deferred.extend(touched.iter().copied().filter(|t| self.referrers_of.contains_key(t)));
            return;
        }
        let mut touched: Vec<usize> =
            touched.iter().copied().filter(|t| self.referrers_of.contains_key(t)).collect();
        if touched.is_empty() {
            return;
        }
        touched.sort_unstable();
        touched.dedup();
        let position = match self.positions.take() {
            Some(position) => position,
            None => Positions::of(&self.meta, self.input_len),
        };
        for target in touched {
            let Some(members) = self.referrers_of.remove(&target) else { continue };
            // the references to each original that message held, in the order written
            let mut groups: Vec<(references::Holds, Vec<usize>)> = Vec::new();
            for i in members {
                let original = self.references[i].holds;
                match groups.iter_mut().find(|(holds, _)| *holds == original) {
                    Some((_, group)) => group.push(i),
                    None => groups.push((original, vec![i])),
                }
            }
            let mut still = Vec::new();
            for (original, members) in groups {
                if position.get(target).is_some_and(|t| holds_in(&self.messages[t], original)) {
                    still.extend(members);
                    continue;
                }
                // the references still written where they were go on; the others are gone
                let live: Vec<usize> = members
                    .into_iter()
                    .filter(|&i| {
                        let r = &self.references[i];
                        position.get(r.referrer).is_some_and(|m| r.still_written_in_held(&self.messages[m]))
                    })
                    .collect();
                let Some((&first, rest)) = live.split_first() else { continue };
                self.restore(first, rest, &position);
            }
            if !still.is_empty() {
                self.referrers_of.insert(target, still);
            }
        }
        // edits move no message: the positions stay true for the next mend
        self.positions = Some(position);
    }

    /// Puts the original of reference `first` back where that reference is written, and
    /// points the references `rest` (to the same original) at it: one edit per message.
    fn restore(&mut self, first: usize, rest: &[usize], position: &Positions) {
        let restored = self.references[first].clone();
        let at = position.at(restored.referrer);
        let detail = format!(
            "restored what its reference pointed at (\"{}\"): {} changed or removed the original",
            restored.written, self.step
        );
        // a reference rewritten is a result's content or a part that holds no call or result:
        // the units stay (worked out again, over a long history, they cost a fit a tenth)
        self.edit_unmended(
            at,
            ChangeKind::Rewritten,
            detail.into(),
            |m| restored.rewrite(m, None),
            Units::Kept,
        );
        if rest.is_empty() {
            return;
        }
        let text = restored.render_to(&self.messages[at]);
        let shared: Arc<str> = Arc::from(text.as_str());
        let mut by_message: Vec<(usize, Vec<Reference<'a>>)> = Vec::new();
        for &i in rest {
            let reference = &mut self.references[i];
            let before = Reference {
                written: std::mem::replace(&mut reference.written, Arc::clone(&shared)),
                ..reference.clone()
            };
            reference.target = restored.referrer;
            let m = position.at(reference.referrer);
            match by_message.last_mut() {
                Some((last, list)) if *last == m => list.push(before),
                _ => by_message.push((m, vec![before])),
            }
        }
        self.referrers_of.entry(restored.referrer).or_default().extend_from_slice(rest);
        for (m, list) in by_message {
            let detail = format!("{} reference(s) now point at the restored copy: \"{text}\"", list.len());
            let rewrite = |message: &mut Message| {
                for reference in &list {
                    reference.rewrite(message, Some(&text));
                }
            };
            self.edit_unmended(m, ChangeKind::Replaced, detail.into(), rewrite, Units::Kept);
        }
    }

    /// Inserts a message written by the running step at `index` (a placeholder, a synthetic
    /// result), recording `detail`.
    pub fn insert(&mut self, index: usize, message: Message, detail: impl Into<String>) {
        let meta = self.inserted_meta(&message, detail.into());
        self.messages.insert(index, HistoryMessage::changed(message));
        self.meta.insert(index, meta);
        self.positions = None;
        self.changed();
    }

    /// Inserts several messages written by the running step in one pass: each `(index,
    /// message, detail)` goes before the message at `index` now, in the history as it is
    /// before any of them (so indices do not shift as they go in); several at one index keep
    /// their order. Why: inserting one at a time moves the rest of the history each time, k
    /// insertions into n messages cost O(k·n) (the repair of a long agent run answering a
    /// call in every task); this costs O(n + k).
    pub fn insert_all(&mut self, mut inserts: Vec<(usize, Message, String)>) {
        if inserts.len() <= 1 {
            if let Some((index, message, detail)) = inserts.pop() {
                self.insert(index, message, detail);
            }
            return;
        }
        inserts.sort_by_key(|(index, ..)| *index);
        let len = self.messages.len() + inserts.len();
        let old_messages = std::mem::replace(&mut self.messages, Vec::with_capacity(len));
        let old_meta = std::mem::replace(&mut self.meta, Vec::with_capacity(len));
        let mut inserts = inserts.into_iter().peekable();
        for (index, (message, meta)) in old_messages.into_iter().zip(old_meta).enumerate() {
            while let Some((_, message, detail)) = inserts.next_if(|(at, ..)| *at <= index) {
                let meta = self.inserted_meta(&message, detail);
                self.messages.push(HistoryMessage::changed(message));
                self.meta.push(meta);
            }
            self.messages.push(message);
            self.meta.push(meta);
        }
        for (_, message, detail) in inserts {
            let meta = self.inserted_meta(&message, detail);
            self.messages.push(HistoryMessage::changed(message));
            self.meta.push(meta);
        }
        self.positions = None;
        self.changed();
    }

    /// The record of a message the running step inserts; its tokens join the total.
    fn inserted_meta(&mut self, message: &Message, detail: String) -> Meta {
        let detail = Detail::Text(detail);
        let tokens = self.cache.message_tokens(&self.counter, message);
        self.message_tokens += tokens;
        Meta {
            origin: Origin::Inserted,
            tokens,
            changes: vec![Change { step: Arc::clone(&self.step), kind: ChangeKind::Rewritten, detail }],
            shape: Shape::of(message),
        }
    }

    /// The fitted messages, the plan of what happened to every input unit, and the count cache
    /// (to reuse on the next call). `input` is the slice this history was made from (the plan
    /// carries the fingerprint taken when it was counted).
    pub fn finish(mut self, input: &[Message]) -> (Vec<Cow<'a, Message>>, Plan, CountCache) {
        let input_units = match (self.revision, self.input_units.take()) {
            (_, Some(units)) => units,
            (0, None) => self.units.take().unwrap_or_else(|| Arc::new(self.input_units_of(input))),
            (_, None) => Arc::new(self.input_units_of(input)),
        };
        debug_assert!(*input_units == units(input), "the input's units, resumed from those known");
        self.cache.remember_units(Arc::clone(&input_units), input.len());
        let input = (input, &input_units[..], std::mem::take(&mut self.input_fingerprint));
        let plan = Plan::record(input, self.provider, &self.messages, &self.meta, &self.dropped);
        (self.messages.into_iter().map(HistoryMessage::into_cow).collect(), plan, self.cache)
    }
}

/// Whether a change may change the units of the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Units {
    /// It may: they are worked out again when next asked for.
    Changed,
    /// It does not (a result's content, a part that is neither a call nor a result).
    Kept,
}

/// Where each input message stands in the history now: one slot per input index, so a
/// lookup is an index into a list of eight bytes a message rather than a probe into a table
/// five times that size.
#[derive(Debug)]
struct Positions(Vec<usize>);

impl Positions {
    const GONE: usize = usize::MAX;

    fn of(meta: &[Meta], input_len: usize) -> Positions {
        let mut at = vec![Positions::GONE; input_len];
        for (i, m) in meta.iter().enumerate() {
            if let Origin::Input(input) = m.origin {
                at[input] = i;
            }
        }
        Positions(at)
    }

    /// Where input message `input` stands, if it is still there.
    fn get(&self, input: usize) -> Option<usize> {
        self.0.get(input).copied().filter(|&at| at != Positions::GONE)
    }

    /// Where input message `input`, still there, stands.
    fn at(&self, input: usize) -> usize {
        self.get(input).expect("a reference's own message is still in the history")
    }
}

/// What a step keeps no matter what it selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// Keep system and developer messages. Defaults to true.
    pub system: bool,
    /// Keep the newest user turn. Defaults to true.
    pub newest_user_turn: bool,
}

impl Default for Keep {
    fn default() -> Keep {
        Keep { system: true, newest_user_turn: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::TextPart;
    use crate::steps::test_support::{counter, openai};

    /// A tool message with a name and a field of its own, between its call and a reply.
    fn with_result() -> Vec<Message> {
        openai(
            r#"[
            {"role": "user", "content": "look it up"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "name": "lookup", "x_trace": 7,
             "content": "a result long enough to be worth replacing by a shorter text"},
            {"role": "assistant", "content": "done"}
        ]"#,
        )
    }

    fn replace_eagerly(history: &mut History<'_>, index: usize, text: &str) {
        let parts = vec![Part::Text(TextPart::new(text))];
        history.replace_parts(index, ChangeKind::Replaced, "replaced", parts, ContentForm::Text);
    }

    #[test]
    fn a_result_replaced_by_a_text_counts_reads_and_is_sent_as_if_written_at_once() {
        let input = with_result();
        let counter = counter();
        let mut cache = CountCache::default();
        // the second fit finds the replaced result's count by its input and text
        for fit in 0..2 {
            let mut lazy = History::new(&input, None, &counter, cache, Format::OpenAi);
            let mut eager = History::new(&input, None, &counter, CountCache::default(), Format::OpenAi);
            let saved =
                lazy.replace_result_text_noting(2, ChangeKind::Replaced, Detail::Cleared, Arc::from("[x]"));
            replace_eagerly(&mut eager, 2, "[x]");
            // held, not written out, for the steps that read it next
            assert_eq!(lazy.replacing_text(2).map(|t| &**t), Some("[x]"), "fit {fit}");
            assert!(saved > 0);
            assert_eq!((lazy.tokens(2), lazy.total_tokens()), (eager.tokens(2), eager.total_tokens()));
            assert_eq!(lazy.shape(2), Shape::of(eager.message(2)));
            // replaced again (a repeat's reference, then cleared), and blank: in place
            lazy.replace_result_text_noting(2, ChangeKind::Replaced, Detail::Cleared, Arc::from(" "));
            replace_eagerly(&mut eager, 2, " ");
            assert_eq!((lazy.tokens(2), lazy.shape(2)), (eager.tokens(2), Shape::of(eager.message(2))));
            // read, it is the message a change in place makes: role, id, name, own field kept
            assert_eq!(lazy.message(2), eager.message(2));
            assert_eq!(lazy.message(2).extra.get("x_trace"), Some(&serde_json::json!(7)));
            // a message that is not a whole tool result is changed as `replace_parts` does
            lazy.replace_result_text_noting(0, ChangeKind::Replaced, Detail::Cleared, Arc::from("[y]"));
            replace_eagerly(&mut eager, 0, "[y]");
            assert_eq!(lazy.replacing_text(0), None);
            assert_eq!(lazy.tokens(0), eager.tokens(0));
            let (sent, _, next) = lazy.finish(&input);
            let (sent_eagerly, ..) = eager.finish(&input);
            assert_eq!(sent, sent_eagerly);
            assert_eq!(input, with_result(), "the input is not changed");
            cache = next;
        }
    }
}
