//! `langchain_trim`: LangChain's `trim_messages` (langchain-core 1.7.2), message for message.
//!
//! The selection is LangChain's, including its quirks, so that `tightfit.compat.langchain`
//! returns what the peer returns:
//!
//! - strategy `first` keeps the longest prefix whose count is within `max_tokens`; `last` runs
//!   the same search over the reversed history (after dropping messages after the last
//!   `end_on` type, and setting aside a leading system message with `include_system`, whose
//!   tokens come off the budget first: it is kept even when it alone is over);
//! - the search is LangChain's binary search over prefixes, calling the counter on the same
//!   lists in the same order, so a counter that is not additive (one that adds reply priming
//!   per list, say) gives the same answer; a counter known to be a running sum that never
//!   decreases ([`Approximate`] with non-negative settings, message counting) answers in one
//!   pass over the messages it keeps instead;
//! - `allow_partial` first tries the crossing message with fewer content blocks (from the end
//!   for `first`, from the start for `last`), then cuts the text of the one block left (or the
//!   string content) at the splitter's pieces (lines by default), which turns list content into
//!   a string; `end_on` (for `first`) and `start_on` (for `last`) then drop messages from the
//!   cut end until one of those types.
//!
//! One deliberate difference, on by default ([`LangchainTrim::keep_tool_pairs`]): LangChain
//! ignores tool calls, so its cut can keep a tool result whose call was dropped or a call whose
//! results were dropped, which providers reject. Afterwards this step drops such results and
//! such calls' messages (with any of their results), only where the cut separated them: a
//! history that was already broken stays as it was. A call's results are the tool messages
//! right after its message (OpenAI's shape), matched by id. Dropping never adds tokens, so the
//! result stays within the limit LangChain kept to.
//!
//! Messages are read through a [`Source`], on first use: with a running-sum counter only the
//! messages the search passes (the kept ones and the one that crosses the limit) and the
//! neighbours the repair looks at are ever read, which is what makes a trim of a long history
//! from Python cheap (the binding reads LangChain objects only when asked).
//!
//! Cost: O(kept) to find the cut with a running-sum counter, O(log n) counter calls on
//! prefixes otherwise (each as costly as the counter makes it); O(log k) more for a partial
//! message cut into k pieces; O(kept) for the repair.

use crate::steps::shared::written::Written;
use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;

use serde_json::Value;

use super::approximate::{Approximate, LangchainContent, LangchainMessage};
use crate::calls::{caller_of, results_of_call, CallSource, CallView};
use crate::format::{messages_to_value, parse_messages, Format};
use crate::history::History;
use crate::message::Message;
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::steps::{ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};
use crate::tokens::ChatCounter;

/// Which end `trim_messages` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// The first messages.
    First,
    /// The last messages.
    #[default]
    Last,
}

impl Strategy {
    /// Its name in configuration (`first`, `last`).
    pub fn word(self) -> &'static str {
        match self {
            Strategy::First => "first",
            Strategy::Last => "last",
        }
    }

    /// `first` or `last`; LangChain's error otherwise.
    pub fn from_name(name: &str) -> Result<Strategy, ConfigError> {
        match name {
            "first" => Ok(Strategy::First),
            "last" => Ok(Strategy::Last),
            other => Err(ConfigError::new(
                "strategy",
                format!("Unrecognized strategy='{other}'. Supported strategies are 'last' and 'first'."),
            )),
        }
    }
}

/// How a kept message's content was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartialContent {
    /// The content blocks `start..end` of a list content, in their order, or reversed (how
    /// LangChain holds them while it counts for strategy `last`).
    Blocks {
        /// The first block kept.
        start: usize,
        /// One past the last block kept.
        end: usize,
        /// Whether the blocks are in reverse order.
        reversed: bool,
    },
    /// A string: the pieces of text kept, joined.
    Text(String),
}

/// One message in a list the counter is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// Input message `i`, as it is.
    Whole(usize),
    /// Input message `i` with its content replaced.
    Partial(usize, &'a PartialContent),
}

/// A message of the result: input message `index`, cut when `partial` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The input message.
    pub index: usize,
    /// Its new content, if it was cut (blocks never reversed here).
    pub partial: Option<PartialContent>,
}

/// The messages to trim, read on first use (reading can fail with `E`: a Python exception
/// for the Python binding).
pub trait Source<E> {
    /// How many messages there are.
    fn len(&self) -> usize;

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Message `i`.
    fn message(&self, i: usize) -> Result<&LangchainMessage, E>;

    /// The full content of message `i`, for cutting it: a source that read only the length of
    /// a text ([`LangchainContent::Chars`]) reads the text here.
    fn content(&self, i: usize) -> Result<Cow<'_, LangchainContent>, E> {
        Ok(Cow::Borrowed(&self.message(i)?.content))
    }
}

impl<E> Source<E> for Vec<LangchainMessage> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn message(&self, i: usize) -> Result<&LangchainMessage, E> {
        Ok(&self[i])
    }
}

/// Counts a list of messages, as LangChain's `token_counter` does.
pub trait ListCounter<E> {
    /// The count of `items` (messages of `source`, some cut).
    fn count(&mut self, source: &dyn Source<E>, items: &[Item<'_>]) -> Result<f64, E>;

    /// For a counter whose count of a list is a running sum that never decreases as the list
    /// grows: how many of the messages `order` (in that order) fit `max`, reading only those
    /// it passes. `None` (the default) makes the trim search the way LangChain does.
    fn longest_prefix_within(
        &mut self,
        _source: &dyn Source<E>,
        _order: &[usize],
        _max: f64,
    ) -> Option<Result<usize, E>> {
        None
    }
}

/// Splits a text into pieces that join back into it (`text_splitter`).
pub trait TextSplitter<E> {
    /// The pieces of `text`.
    fn split(&mut self, text: &str) -> Result<Vec<String>, E>;
}

/// LangChain's default splitter: lines, each keeping its `\n`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lines;

impl<E> TextSplitter<E> for Lines {
    fn split(&mut self, text: &str) -> Result<Vec<String>, E> {
        Ok(text
            .split_inclusive('\n')
            .map(str::to_string)
            .chain(text.ends_with('\n').then(String::new))
            .collect())
    }
}

/// The message `item` stands for, cut when it is partial.
pub fn item_message<'m, E>(
    source: &'m dyn Source<E>,
    item: Item<'_>,
) -> Result<Cow<'m, LangchainMessage>, E> {
    Ok(match item {
        Item::Whole(i) => Cow::Borrowed(source.message(i)?),
        Item::Partial(i, partial) => {
            let mut m = source.message(i)?.clone();
            m.content = match (partial, source.content(i)?.as_ref()) {
                (PartialContent::Text(s), _) => LangchainContent::Text(s.clone()),
                (PartialContent::Blocks { start, end, reversed }, LangchainContent::Blocks(blocks)) => {
                    let mut kept = blocks[*start..*end].to_vec();
                    if *reversed {
                        kept.reverse();
                    }
                    LangchainContent::Blocks(kept)
                }
                (PartialContent::Blocks { .. }, other) => other.clone(),
            };
            Cow::Owned(m)
        }
    })
}

impl<E> ListCounter<E> for Approximate {
    fn count(&mut self, source: &dyn Source<E>, items: &[Item<'_>]) -> Result<f64, E> {
        let mut sum = 0.0;
        for item in items {
            let message = item_message(source, *item)?;
            sum = self.add(sum, self.measure(&message));
        }
        Ok(Approximate::finish(sum) as f64)
    }

    fn longest_prefix_within(
        &mut self,
        source: &dyn Source<E>,
        order: &[usize],
        max: f64,
    ) -> Option<Result<usize, E>> {
        if !self.is_monotone() {
            return None;
        }
        let mut sum = 0.0;
        for (k, &i) in order.iter().enumerate() {
            let message = match source.message(i) {
                Ok(m) => m,
                Err(e) => return Some(Err(e)),
            };
            sum = self.add(sum, self.measure(message));
            if Approximate::finish(sum) as f64 > max {
                return Some(Ok(k));
            }
        }
        Some(Ok(order.len()))
    }
}

/// LangChain's `token_counter=len`: a list counts its messages.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessageCount;

impl<E> ListCounter<E> for MessageCount {
    fn count(&mut self, _: &dyn Source<E>, items: &[Item<'_>]) -> Result<f64, E> {
        Ok(items.len() as f64)
    }

    fn longest_prefix_within(
        &mut self,
        _: &dyn Source<E>,
        order: &[usize],
        max: f64,
    ) -> Option<Result<usize, E>> {
        Some(Ok(if max < 0.0 { 0 } else { (max.floor() as usize).min(order.len()) }))
    }
}

/// A model's own tokens (tightfit's exact count: tokenizer and framing) of LangChain
/// messages, as `tightfit.compat.langchain.count_tokens` counts them: the request's tokens,
/// every message with its framing plus the reply priming. A running sum, so a trim reads
/// and tokenizes only the messages it keeps (and each once).
#[derive(Debug, Clone)]
pub struct ModelCount {
    counter: ChatCounter,
    tokens: HashMap<usize, usize>,
}

impl ModelCount {
    /// Counts with `counter`.
    pub fn new(counter: ChatCounter) -> ModelCount {
        ModelCount { counter, tokens: HashMap::new() }
    }

    /// The tokens of one message, framing included (0 for one that cannot be read as an
    /// OpenAI message).
    pub fn message_tokens(&self, message: &LangchainMessage) -> usize {
        message
            .to_openai()
            .and_then(|value| parse_messages(Value::Array(vec![value]), Format::OpenAi).ok())
            .and_then(|mut parsed| parsed.pop())
            .map_or(0, |m| self.counter.message_tokens(&m))
    }

    /// The tokens of a list of messages: each with its framing, and the reply priming.
    pub fn count_messages<'m>(&self, messages: impl IntoIterator<Item = &'m LangchainMessage>) -> usize {
        self.counter.priming_tokens() + messages.into_iter().map(|m| self.message_tokens(m)).sum::<usize>()
    }

    fn tokens_of<E>(&mut self, source: &dyn Source<E>, item: Item<'_>) -> Result<usize, E> {
        if let Item::Whole(i) = item {
            if let Some(n) = self.tokens.get(&i) {
                return Ok(*n);
            }
        }
        let message = match item {
            Item::Whole(i) => match &source.message(i)?.content {
                LangchainContent::Chars(_) => {
                    let mut m = source.message(i)?.clone();
                    m.content = source.content(i)?.into_owned();
                    Cow::Owned(m)
                }
                _ => Cow::Borrowed(source.message(i)?),
            },
            partial => item_message(source, partial)?,
        };
        let n = self.message_tokens(&message);
        if let Item::Whole(i) = item {
            self.tokens.insert(i, n);
        }
        Ok(n)
    }
}

impl<E> ListCounter<E> for ModelCount {
    fn count(&mut self, source: &dyn Source<E>, items: &[Item<'_>]) -> Result<f64, E> {
        let mut sum = self.counter.priming_tokens();
        for item in items {
            sum += self.tokens_of(source, *item)?;
        }
        Ok(sum as f64)
    }

    fn longest_prefix_within(
        &mut self,
        source: &dyn Source<E>,
        order: &[usize],
        max: f64,
    ) -> Option<Result<usize, E>> {
        let mut sum = self.counter.priming_tokens();
        for (k, &i) in order.iter().enumerate() {
            match self.tokens_of(source, Item::Whole(i)) {
                Ok(n) => sum += n,
                Err(e) => return Some(Err(e)),
            }
            if sum as f64 > max {
                return Some(Ok(k));
            }
        }
        Some(Ok(order.len()))
    }
}

/// The counter of a configured step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum TrimCounter {
    /// `count_tokens_approximately` with these settings.
    Approximate(Approximate),
    /// Messages (`len`).
    Messages,
    /// The tokens of the model being fitted for, message by message (framing included,
    /// without the reply priming).
    #[default]
    Model,
}

/// `langchain_trim` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<LangchainTrim>("langchain_trim", &["trim_messages"]).documented(
    "LangChain's `trim_messages`, result for result, except that tool calls keep their results.",
    &[
        KeyDoc::new("max_tokens", KeyUnit::Tokens, "the limit, in what `counter` counts; none: the call's budget"),
        KeyDoc::new("strategy", KeyUnit::Choice, "which end to keep: `last` or `first`"),
        KeyDoc::new("allow_partial", KeyUnit::Flag, "cut the message that crosses the limit"),
        KeyDoc::new("include_system", KeyUnit::Flag, "keep a leading system message (strategy `last`)"),
        KeyDoc::new("start_on", KeyUnit::Names, "for `last`: drop kept messages from the start until one of these types (`human`, `ai`, `system`, `tool`)"),
        KeyDoc::new("end_on", KeyUnit::Names, "drop messages after the last one of these types"),
        KeyDoc::new("counter", KeyUnit::Choice, "how messages are counted: `model` (tokens), `approximate` or `len` (messages)"),
        KeyDoc::new("keep_tool_pairs", KeyUnit::Flag, "drop results whose call was cut and calls whose results were (the one difference from LangChain)"),
    ],
);

/// LangChain's `trim_messages`.
#[derive(Debug, Clone, PartialEq)]
pub struct LangchainTrim {
    /// The limit. Required in configuration; `None` takes the call's budget.
    pub max_tokens: Option<f64>,
    /// Which end to keep. Defaults to `last`.
    pub strategy: Strategy,
    /// Cut the message that crosses the limit. Defaults to false.
    pub allow_partial: bool,
    /// Keep a leading system message (strategy `last` only). Defaults to false.
    pub include_system: bool,
    /// For `last`: drop kept messages from the start until one of these types. Defaults to none.
    pub start_on: Option<Vec<String>>,
    /// Drop messages after the last one of these types (for `last` before the cut, for
    /// `first` after it). Defaults to none.
    pub end_on: Option<Vec<String>>,
    /// How messages are counted. Defaults to the model's tokens.
    pub counter: TrimCounter,
    /// Drop tool results whose call was cut away and calls whose results were (the one
    /// deliberate difference from LangChain). Defaults to true.
    pub keep_tool_pairs: bool,
}

impl Default for LangchainTrim {
    fn default() -> LangchainTrim {
        LangchainTrim {
            max_tokens: None,
            strategy: Strategy::Last,
            allow_partial: false,
            include_system: false,
            start_on: None,
            end_on: None,
            counter: TrimCounter::default(),
            keep_tool_pairs: true,
        }
    }
}

fn bit_length(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

fn wholes(order: &[usize]) -> Vec<Item<'static>> {
    order.iter().map(|&i| Item::Whole(i)).collect()
}

/// Whether message `i` answers to one of `names`.
fn is_type<E>(source: &dyn Source<E>, i: usize, names: &[String]) -> Result<bool, E> {
    Ok(source.message(i)?.is_type(names))
}

impl LangchainTrim {
    /// LangChain's argument checks, with its messages.
    pub fn check_args(&self) -> Result<(), ConfigError> {
        if self.start_on.is_some() && self.strategy == Strategy::First {
            return Err(ConfigError::new("", "start_on parameter is only valid with strategy='last'"));
        }
        if self.include_system && self.strategy == Strategy::First {
            return Err(ConfigError::new("", "include_system parameter is only valid with strategy='last'"));
        }
        Ok(())
    }

    /// Trims the messages of `source` with `counter` and `splitter` (used only with
    /// `allow_partial`) to `max_tokens`: the kept messages in order.
    pub fn trim<E>(
        &self,
        source: &dyn Source<E>,
        max_tokens: f64,
        counter: &mut dyn ListCounter<E>,
        splitter: &mut dyn TextSplitter<E>,
    ) -> Result<Vec<Kept>, E> {
        let order: Vec<usize> = (0..source.len()).collect();
        let mut kept = match self.strategy {
            Strategy::First => self.first_max_tokens(
                source,
                &order,
                max_tokens,
                counter,
                splitter,
                self.allow_partial.then_some(Strategy::First),
                self.end_on.as_deref(),
            )?,
            Strategy::Last => self.last_max_tokens(source, order, max_tokens, counter, splitter)?,
        };
        if self.keep_tool_pairs {
            keep_tool_pairs(source, &mut kept)?;
        }
        Ok(kept)
    }

    fn last_max_tokens<E>(
        &self,
        source: &dyn Source<E>,
        mut order: Vec<usize>,
        max_tokens: f64,
        counter: &mut dyn ListCounter<E>,
        splitter: &mut dyn TextSplitter<E>,
    ) -> Result<Vec<Kept>, E> {
        if order.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(end_on) = &self.end_on {
            while let Some(&last) = order.last() {
                if is_type(source, last, end_on)? {
                    break;
                }
                order.pop();
            }
        }
        let mut system = None;
        if self.include_system {
            if let Some(&first) = order.first() {
                if source.message(first)?.is_system {
                    system = Some(order.remove(0));
                }
            }
        }
        order.reverse();
        let mut remaining = max_tokens;
        if let Some(s) = system {
            let tokens = counter.count(source, &[Item::Whole(s)])?;
            remaining = (max_tokens - tokens).max(0.0);
        }
        let mut kept = self.first_max_tokens(
            source,
            &order,
            remaining,
            counter,
            splitter,
            self.allow_partial.then_some(Strategy::Last),
            self.start_on.as_deref(),
        )?;
        kept.reverse();
        if let Some(s) = system {
            kept.insert(0, Kept { index: s, partial: None });
        }
        Ok(kept)
    }

    /// LangChain's `_first_max_tokens` over the messages `order`.
    #[allow(clippy::too_many_arguments)]
    fn first_max_tokens<E>(
        &self,
        source: &dyn Source<E>,
        order: &[usize],
        max: f64,
        counter: &mut dyn ListCounter<E>,
        splitter: &mut dyn TextSplitter<E>,
        partial: Option<Strategy>,
        end_on: Option<&[String]>,
    ) -> Result<Vec<Kept>, E> {
        let n = order.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut idx = match counter.longest_prefix_within(source, order, max) {
            Some(found) => found?,
            None => {
                if counter.count(source, &wholes(order))? <= max {
                    n
                } else {
                    let (mut left, mut right) = (0, n);
                    for _ in 0..bit_length(n) {
                        if left >= right {
                            break;
                        }
                        let mid = (left + right).div_ceil(2);
                        if counter.count(source, &wholes(&order[..mid]))? <= max {
                            left = mid;
                        } else {
                            right = mid - 1;
                        }
                    }
                    left
                }
            }
        };
        let mut kept: Vec<Kept> = order[..idx].iter().map(|&index| Kept { index, partial: None }).collect();
        if let (Some(side), true) = (partial, idx < n) {
            if let Some(cut) = self.partial(source, order, idx, max, counter, splitter, side)? {
                kept.push(Kept { index: order[idx], partial: Some(cut) });
                idx += 1;
            }
        }
        debug_assert_eq!(kept.len(), idx);
        if let Some(end_on) = end_on {
            while let Some(last) = kept.last() {
                if is_type(source, last.index, end_on)? {
                    break;
                }
                kept.pop();
            }
        }
        Ok(kept)
    }

    /// The crossing message `order[idx]` cut to fit after `order[..idx]`, if any cut does.
    #[allow(clippy::too_many_arguments)]
    fn partial<E>(
        &self,
        source: &dyn Source<E>,
        order: &[usize],
        idx: usize,
        max: f64,
        counter: &mut dyn ListCounter<E>,
        splitter: &mut dyn TextSplitter<E>,
        side: Strategy,
    ) -> Result<Option<PartialContent>, E> {
        let index = order[idx];
        let text: Option<String> = match source.content(index)?.as_ref() {
            LangchainContent::Text(s) => Some(s.clone()),
            LangchainContent::Other(_) | LangchainContent::Chars(_) => None,
            LangchainContent::Blocks(blocks) => {
                let nb = blocks.len();
                for removed in 1..nb {
                    let cut = match side {
                        Strategy::First => {
                            PartialContent::Blocks { start: 0, end: nb - removed, reversed: false }
                        }
                        Strategy::Last => PartialContent::Blocks { start: removed, end: nb, reversed: true },
                    };
                    let mut items = wholes(&order[..idx]);
                    items.push(Item::Partial(index, &cut));
                    if counter.count(source, &items)? <= max {
                        let PartialContent::Blocks { start, end, .. } = cut else {
                            unreachable!("a block cut")
                        };
                        return Ok(Some(PartialContent::Blocks { start, end, reversed: false }));
                    }
                }
                // the one block left after the loop (LangChain looks for text only there)
                let left = match (nb, side) {
                    (0 | 1, _) | (_, Strategy::First) => blocks.first(),
                    (_, Strategy::Last) => blocks.last(),
                };
                match left {
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(Value::Object(map)) if map.get("type").and_then(Value::as_str) == Some("text") => {
                        map.get("text").and_then(Value::as_str).map(str::to_string)
                    }
                    _ => None,
                }
            }
        };
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let mut pieces = splitter.split(&text)?;
        let base = counter.count(source, &wholes(&order[..idx]))?;
        if side == Strategy::Last {
            pieces.reverse();
        }
        let (mut left, mut right) = (0, pieces.len());
        for _ in 0..bit_length(pieces.len()) {
            if left >= right {
                break;
            }
            let mid = (left + right).div_ceil(2);
            let cut = PartialContent::Text(pieces[..mid].concat());
            if base + counter.count(source, &[Item::Partial(index, &cut)])? <= max {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        if left == 0 {
            return Ok(None);
        }
        let mut kept = pieces[..left].to_vec();
        if side == Strategy::Last {
            kept.reverse();
        }
        Ok(Some(PartialContent::Text(kept.concat())))
    }
}

impl CallView for LangchainMessage {
    /// An AI message's call ids (a call without an id is not counted).
    fn call_ids(&self) -> impl Iterator<Item = &str> {
        let ai = self.is_ai;
        LangchainMessage::call_ids(self).filter(move |_| ai)
    }

    fn answered_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_call_id.as_deref().into_iter()
    }

    /// A `ToolMessage` (the message with a `tool_call_id`).
    fn is_result(&self) -> bool {
        self.tool_call_id.is_some()
    }
}

/// A [`Source`] as the call index reads it.
struct Calls<'s, E>(&'s dyn Source<E>);

impl<E> CallSource for Calls<'_, E> {
    type View = LangchainMessage;
    type Error = E;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn view(&mut self, i: usize) -> Result<&LangchainMessage, E> {
        self.0.message(i)
    }
}

/// Drops, from `kept`, tool results whose call was not kept and messages whose calls lost a
/// result (with their other results), where the input had them together. Reads only the kept
/// messages and the tool runs beside them.
fn keep_tool_pairs<E>(source: &dyn Source<E>, kept: &mut Vec<Kept>) -> Result<(), E> {
    loop {
        let present: std::collections::HashSet<usize> = kept.iter().map(|k| k.index).collect();
        let mut drop = std::collections::HashSet::new();
        for k in kept.iter() {
            let m = source.message(k.index)?;
            if m.tool_call_id.is_some() {
                if caller_of(&mut Calls(source), k.index)?.is_some_and(|c| !present.contains(&c)) {
                    drop.insert(k.index);
                }
            } else if m.is_ai
                && m.call_ids().next().is_some()
                && results_of_call(&mut Calls(source), k.index)?.iter().any(|r| !present.contains(r))
            {
                drop.insert(k.index);
            }
        }
        if drop.is_empty() {
            return Ok(());
        }
        kept.retain(|k| !drop.contains(&k.index));
    }
}

/// A counter over a [`History`]'s messages for the configured step.
struct HistoryCounter<'h, 'a> {
    history: &'h History<'a>,
    counter: TrimCounter,
}

impl ListCounter<Infallible> for HistoryCounter<'_, '_> {
    fn count(&mut self, source: &dyn Source<Infallible>, items: &[Item<'_>]) -> Result<f64, Infallible> {
        match self.counter {
            TrimCounter::Approximate(mut a) => ListCounter::count(&mut a, source, items),
            TrimCounter::Messages => MessageCount.count(source, items),
            TrimCounter::Model => {
                let mut sum = 0;
                for item in items {
                    sum += match item {
                        Item::Whole(i) => self.history.tokens(*i),
                        Item::Partial(i, cut) => cut_message(self.history.message(*i), source, *i, cut)?
                            .map_or(0, |m| self.history.counter().message_tokens(&m)),
                    };
                }
                Ok(sum as f64)
            }
        }
    }

    fn longest_prefix_within(
        &mut self,
        source: &dyn Source<Infallible>,
        order: &[usize],
        max: f64,
    ) -> Option<Result<usize, Infallible>> {
        match self.counter {
            TrimCounter::Approximate(mut a) => a.longest_prefix_within(source, order, max),
            TrimCounter::Messages => MessageCount.longest_prefix_within(source, order, max),
            TrimCounter::Model => {
                let mut sum = 0;
                for (k, &i) in order.iter().enumerate() {
                    sum += self.history.tokens(i);
                    if sum as f64 > max {
                        return Some(Ok(k));
                    }
                }
                Some(Ok(order.len()))
            }
        }
    }
}

/// `message` (input `index` of `source`) with its content cut as `cut` says, through its
/// OpenAI form.
fn cut_message(
    message: &Message,
    source: &dyn Source<Infallible>,
    index: usize,
    cut: &PartialContent,
) -> Result<Option<Message>, Infallible> {
    let content = item_message(source, Item::Partial(index, cut))?.content.to_value();
    let mut value = messages_to_value(std::slice::from_ref(message), Format::OpenAi);
    let Some(map) = value.get_mut(0).and_then(Value::as_object_mut) else { return Ok(None) };
    map.insert("content".into(), content);
    Ok(parse_messages(value, Format::OpenAi).ok().and_then(|mut m| m.pop()))
}

impl Step for LangchainTrim {
    fn name(&self) -> &'static str {
        "langchain_trim"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        let counter = match self.counter {
            TrimCounter::Model => "model",
            TrimCounter::Messages => "len",
            // configuration names LangChain's default settings only
            TrimCounter::Approximate(settings) if settings == Approximate::default() => "approximate",
            TrimCounter::Approximate(_) => return None,
        };
        Written::new("langchain_trim")
            .key("max_tokens", self.max_tokens)
            .key("strategy", self.strategy.word())
            .key("allow_partial", self.allow_partial)
            .key("include_system", self.include_system)
            .key("start_on", self.start_on.clone())
            .key("end_on", self.end_on.clone())
            .key("counter", counter)
            .key("keep_tool_pairs", self.keep_tool_pairs)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        self.check_args()
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        let max = self.max_tokens.or(cx.budget.map(|b| b as f64)).ok_or_else(|| {
            StepError::new(self.name(), "no token budget: set max_tokens or give the call a budget")
        })?;
        let value = messages_to_value(
            &history.messages().iter().map(|m| m.as_ref().clone()).collect::<Vec<_>>(),
            Format::OpenAi,
        );
        let lc: Vec<LangchainMessage> = value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|v| {
                        LangchainMessage::from_openai(v).unwrap_or_else(|| {
                            LangchainMessage::new("chat", "user", LangchainContent::Text(String::new()))
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let kept = {
            let mut counter = HistoryCounter { history, counter: self.counter };
            match self.trim(&lc, max, &mut counter, &mut Lines) {
                Ok(kept) => kept,
                Err(never) => match never {},
            }
        };
        let cuts: Vec<(usize, Message)> = kept
            .iter()
            .filter_map(|k| {
                let cut = k.partial.as_ref()?;
                let source: &dyn Source<Infallible> = &lc;
                match cut_message(history.message(k.index), source, k.index, cut) {
                    Ok(m) => m.map(|m| (k.index, m)),
                    Err(never) => match never {},
                }
            })
            .collect();
        let keep: std::collections::HashSet<usize> = kept.iter().map(|k| k.index).collect();
        let reason = format!("trim_messages ({:?}) to {max} tokens", self.strategy).to_lowercase();
        history.retain(|i, _| keep.contains(&i), &reason);
        for (input, message) in cuts {
            // its index among the kept messages (the order is kept)
            let at = kept.iter().filter(|k| k.index < input).count();
            history.edit(at, ChangeKind::Truncated, "content cut by trim_messages allow_partial", |m| {
                *m = message
            });
        }
        Ok(())
    }
}

impl FromParams for LangchainTrim {
    /// Keys: `max_tokens`, `strategy` (`first`/`last`), `allow_partial`, `include_system`,
    /// `start_on`, `end_on` (a type name or a list: `human`, `ai`, `system`, `tool`), `counter`
    /// (`model`, `approximate`, `len`), `keep_tool_pairs`.
    fn from_params(p: &mut Params) -> Result<LangchainTrim, ConfigError> {
        let mut step = LangchainTrim { max_tokens: p.f64(&["max_tokens"])?, ..LangchainTrim::default() };
        step.strategy = Strategy::from_name(&p.string_or(&["strategy"], step.strategy.word())?)?;
        step.allow_partial = p.bool_or(&["allow_partial"], step.allow_partial)?;
        step.include_system = p.bool_or(&["include_system"], step.include_system)?;
        step.start_on = p.strings(&["start_on"])?.filter(|s| !s.is_empty());
        step.end_on = p.strings(&["end_on"])?.filter(|s| !s.is_empty());
        let counter =
            p.choice_or(&["counter", "token_counter"], &["model", "approximate", "len"], "model")?;
        step.counter = match counter.as_str() {
            "approximate" => TrimCounter::Approximate(Approximate::default()),
            "len" => TrimCounter::Messages,
            _ => TrimCounter::Model,
        };
        step.keep_tool_pairs = p.bool_or(&["keep_tool_pairs"], step.keep_tool_pairs)?;
        Ok(step)
    }
}

#[cfg(test)]
#[path = "conformance.rs"]
mod conformance;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::test_support::{openai, run, texts, tool_history};
    use serde_json::json;

    /// LangChain's test counter: 10 per string message, 3 + 4 per block + 3 for a list.
    struct Dummy {
        calls: usize,
    }

    impl ListCounter<Infallible> for Dummy {
        fn count(&mut self, source: &dyn Source<Infallible>, items: &[Item<'_>]) -> Result<f64, Infallible> {
            self.calls += 1;
            let mut sum = 0;
            for item in items {
                sum += match &item_message(source, *item)?.content {
                    LangchainContent::Blocks(b) => 6 + 4 * b.len(),
                    _ => 10,
                };
            }
            Ok(sum as f64)
        }
    }

    fn lc(values: Value) -> Vec<LangchainMessage> {
        values.as_array().unwrap().iter().map(|v| LangchainMessage::from_openai(v).unwrap()).collect()
    }

    /// LangChain's `_MESSAGES_TO_TRIM`.
    fn to_trim() -> Vec<LangchainMessage> {
        lc(json!([
            {"role": "system", "content": "This is a 4 token text."},
            {"role": "user", "content": "This is a 4 token text."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "This is the FIRST 4 token block."},
                {"type": "text", "text": "This is the SECOND 4 token block."}]},
            {"role": "user", "content": "This is a 4 token text."},
            {"role": "assistant", "content": "This is a 4 token text."}
        ]))
    }

    fn trim(step: &LangchainTrim, messages: &Vec<LangchainMessage>, max: f64) -> Vec<Kept> {
        let mut counter = Dummy { calls: 0 };
        match step.trim(messages, max, &mut counter, &mut Lines) {
            Ok(kept) => kept,
            Err(never) => match never {},
        }
    }

    fn whole(indices: &[usize]) -> Vec<Kept> {
        indices.iter().map(|&index| Kept { index, partial: None }).collect()
    }

    #[test]
    fn first_keeps_the_longest_prefix_that_fits() {
        let step = LangchainTrim { strategy: Strategy::First, ..LangchainTrim::default() };
        assert_eq!(trim(&step, &to_trim(), 30.0), whole(&[0, 1]));
        let partial = LangchainTrim { allow_partial: true, ..step.clone() };
        let mut expected = whole(&[0, 1]);
        expected.push(Kept {
            index: 2,
            partial: Some(PartialContent::Blocks { start: 0, end: 1, reversed: false }),
        });
        assert_eq!(trim(&partial, &to_trim(), 30.0), expected);
        // end_on drops the cut message again
        let end_on = LangchainTrim { end_on: Some(vec!["human".into()]), ..partial };
        assert_eq!(trim(&end_on, &to_trim(), 30.0), whole(&[0, 1]));
    }

    #[test]
    fn last_keeps_the_system_message_and_the_newest() {
        let step = LangchainTrim { include_system: true, ..LangchainTrim::default() };
        assert_eq!(trim(&step, &to_trim(), 30.0), whole(&[0, 3, 4]));
        let partial = LangchainTrim { allow_partial: true, ..step.clone() };
        let kept = trim(&partial, &to_trim(), 40.0);
        assert_eq!(
            kept[1],
            Kept { index: 2, partial: Some(PartialContent::Blocks { start: 1, end: 2, reversed: false }) }
        );
        let start_on = LangchainTrim { start_on: Some(vec!["human".into()]), ..partial };
        assert_eq!(trim(&start_on, &to_trim(), 30.0), whole(&[0, 3, 4]));
        // the system message stays even when it alone is over the limit
        assert_eq!(trim(&step, &to_trim(), 5.0), whole(&[0]));
    }

    #[test]
    fn text_is_cut_at_lines_from_the_right_end() {
        let messages = lc(json!([{"role": "user", "content": "one\ntwo\nthree"}]));
        let chars =
            Approximate { chars_per_token: 1.0, extra_tokens_per_message: 0.0, ..Approximate::default() };
        // "user" costs 4: 10 leaves room for 6 characters of text
        for (strategy, kept) in [(Strategy::First, "one\n"), (Strategy::Last, "three")] {
            let step = LangchainTrim { strategy, allow_partial: true, ..LangchainTrim::default() };
            let mut counter = chars;
            let out = match step.trim::<Infallible>(&messages, 10.0, &mut counter, &mut Lines) {
                Ok(k) => k,
                Err(never) => match never {},
            };
            assert_eq!(out, vec![Kept { index: 0, partial: Some(PartialContent::Text(kept.into())) }]);
        }
        let split = |text: &str| TextSplitter::<Infallible>::split(&mut Lines, text).unwrap();
        assert_eq!(split("a\nb\n"), vec!["a\n", "b\n", ""]);
        assert_eq!(split("a"), vec!["a"]);
    }

    #[test]
    fn a_running_sum_counter_gives_the_binary_search_answer() {
        /// Approximate without its shortcut: counted the way LangChain searches.
        struct Searching(Approximate);
        impl ListCounter<Infallible> for Searching {
            fn count(
                &mut self,
                source: &dyn Source<Infallible>,
                items: &[Item<'_>],
            ) -> Result<f64, Infallible> {
                ListCounter::count(&mut self.0, source, items)
            }
        }
        let messages = lc(json!((0..40)
            .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": "word ".repeat(i * 7 % 13)}))
            .collect::<Vec<_>>()));
        for strategy in [Strategy::First, Strategy::Last] {
            for max in [0.0, 7.0, 50.0, 123.0, 400.0, 10_000.0] {
                let step = LangchainTrim { strategy, allow_partial: true, ..LangchainTrim::default() };
                let fast = step.trim::<Infallible>(&messages, max, &mut Approximate::default(), &mut Lines);
                let slow = step.trim::<Infallible>(
                    &messages,
                    max,
                    &mut Searching(Approximate::default()),
                    &mut Lines,
                );
                assert_eq!(fast, slow, "{strategy:?} {max}");
            }
        }
    }

    #[test]
    fn a_cut_through_a_tool_step_drops_its_broken_half() {
        let messages = lc(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "r"},
            {"role": "assistant", "content": "done"},
            {"role": "tool", "tool_call_id": "zz", "content": "already orphaned"}
        ]));
        let last = LangchainTrim::default();
        let mut len = MessageCount;
        let kept = |step: &LangchainTrim, max: f64, len: &mut MessageCount| match step
            .trim::<Infallible>(&messages, max, len, &mut Lines)
        {
            Ok(k) => k.into_iter().map(|k| k.index).collect::<Vec<_>>(),
            Err(never) => match never {},
        };
        // LangChain keeps [tool a, assistant, tool zz]: the result of "a" goes; "zz" was
        // orphaned in the input and stays
        assert_eq!(kept(&last, 3.0, &mut len), vec![3, 4]);
        let peer = LangchainTrim { keep_tool_pairs: false, ..last };
        assert_eq!(kept(&peer, 3.0, &mut len), vec![2, 3, 4]);
        // first: the call without its result goes
        let first = LangchainTrim { strategy: Strategy::First, ..LangchainTrim::default() };
        assert_eq!(kept(&first, 2.0, &mut len), vec![0]);
    }

    /// Found on tau-bench histories: agents reuse call ids, so a result belongs to the call
    /// right before its run of results, not to the first call with that id.
    #[test]
    fn a_reused_call_id_belongs_to_the_nearest_call() {
        let call = |id: &str| {
            json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        };
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "r"});
        let messages = lc(json!([
            {"role": "user", "content": "q"}, call("x"), result("x"),
            {"role": "user", "content": "again"}, call("x"), result("x")
        ]));
        let first = LangchainTrim { strategy: Strategy::First, ..LangchainTrim::default() };
        let kept = |step: &LangchainTrim, max: f64| match step.trim::<Infallible>(
            &messages,
            max,
            &mut MessageCount,
            &mut Lines,
        ) {
            Ok(k) => k.into_iter().map(|k| k.index).collect::<Vec<_>>(),
            Err(never) => match never {},
        };
        // the first step is whole: kept, though a later result answers the same id
        assert_eq!(kept(&first, 4.0), vec![0, 1, 2, 3]);
        assert_eq!(kept(&first, 5.0), vec![0, 1, 2, 3]);
        assert_eq!(kept(&LangchainTrim::default(), 2.0), vec![4, 5]);
        assert_eq!(kept(&LangchainTrim::default(), 1.0), Vec::<usize>::new());
    }

    #[test]
    fn the_model_count_is_the_requests_tokens() {
        let history = tool_history();
        let value = messages_to_value(&history, Format::OpenAi);
        let messages: Vec<LangchainMessage> =
            value.as_array().unwrap().iter().map(|v| LangchainMessage::from_openai(v).unwrap()).collect();
        let counter = crate::steps::test_support::counter();
        let model = ModelCount::new(counter.clone());
        assert_eq!(model.count_messages(&messages), counter.count(&history, None).total);
        // a running sum: the trim keeps the longest tail within the limit
        let total = model.count_messages(&messages) as f64;
        let kept = match LangchainTrim::default().trim::<Infallible>(
            &messages,
            total - 1.0,
            &mut model.clone(),
            &mut Lines,
        ) {
            Ok(k) => k,
            Err(never) => match never {},
        };
        assert_eq!(kept.first().map(|k| k.index), Some(1), "only the system message goes");
    }

    #[test]
    fn runs_as_a_configured_step() {
        let step = crate::config::step_from_value(
            json!({"type": "trim_messages", "max_tokens": 3, "counter": "len"}),
        )
        .expect("a valid step");
        let out = run(step.as_ref(), &tool_history());
        // LangChain keeps [tool, user, assistant]; the tool result without its call goes
        assert_eq!(texts(&out), vec!["user: and now?", "assistant: done"]);
        let e = crate::config::step_from_value(
            json!({"type": "langchain_trim", "max_tokens": 3, "strategy": "first", "include_system": true}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("include_system parameter is only valid"), "{e}");
        let e = crate::config::step_from_value(json!({"type": "langchain_trim", "strategy": "middle"}))
            .unwrap_err();
        assert!(e.to_string().contains("Unrecognized strategy='middle'"), "{e}");
    }

    #[test]
    fn the_model_counter_cuts_text_in_a_pipeline() {
        let input = openai(r#"[{"role": "user", "content": "line one\nline two\nline three\nline four"}]"#);
        let step = LangchainTrim { max_tokens: Some(12.0), allow_partial: true, ..LangchainTrim::default() };
        let out = run(&step, &input);
        assert_eq!(out.len(), 1);
        let text = out[0].text_content();
        assert!(text.starts_with("line") && text.ends_with("line four") && text.len() < 40, "{text:?}");
    }
}
