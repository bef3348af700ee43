//! References one message makes to another's content, kept true while later steps run.
//!
//! `dedupe` replaces a repeated tool result by "identical to the result of tool call call_3
//! above", and a repeated image by a reference to where the first one is. A later rung of the
//! same pipeline may clear, cut or drop that first copy (`clear_tool_results`, `middle_out`);
//! the reference would then point at nothing, and the newest copy of the output, usually the
//! one the model needs, would be gone with budget to spare. So the history records each
//! reference, and whenever a step changes or removes the message holding an original, it
//! checks the original is still there; if not, the first message still holding a reference
//! to it gets the original back, and the other references are pointed at that one. The
//! content moves forward instead of vanishing; the tokens it costs are counted like any other
//! change, so the budget rungs that follow see them.
//!
//! A step that clears many results oldest first mends once, at its end (or when it checks
//! the budget): mended after each change, an original would move into the next copy, which
//! the step clears in turn, rewriting every other reference at each move.
//!
//! Cost: nothing for a history without references; otherwise a map lookup per changed or
//! removed message, the references to an original when it is lost, and a pass over the
//! messages' origins (into a list with a slot per input message) once until one is inserted
//! or removed.

use std::borrow::Cow;
use std::hash::Hash;
use std::sync::Arc;

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use crate::calls::result_keys;
use crate::history_message::HistoryMessage;
use crate::message::{Message, Part};
use crate::record::result_id;
use crate::result_text::text_hash;
use crate::shape::is_whole_result;

/// What a reference replaced.
#[derive(Debug, Clone)]
pub(crate) enum Original<'a> {
    /// Its parts, borrowed from the input or copied.
    Parts(Cow<'a, [Part]>),
    /// The whole content of this input message (the referrer as it came), read only if the
    /// original is put back.
    ContentOf(&'a Message),
}

impl Original<'_> {
    /// The parts replaced.
    pub(crate) fn parts(&self) -> &[Part] {
        match self {
            Original::Parts(parts) => parts,
            Original::ContentOf(message) => &message.parts,
        }
    }
}

/// Where a reference is written in the message that makes it, and how it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Site {
    /// The whole content of the result of call `key` (a `tool` message, or a `tool_result`
    /// block; the key results name their call with); `template` writes a reference to it,
    /// with `{id}` for the call whose result is the original.
    Result { key: String, template: Arc<str> },
    /// The whole content of the referrer, itself one result that names its call (see
    /// [`Shape::is_whole_result`](crate::shape::Shape::is_whole_result)): a repeated `tool`
    /// message. Its key is the referrer's own, read from it only if the original is put back
    /// (a long history's repeats are not opened to copy their ids); `template` as above.
    WholeResult { template: Arc<str> },
    /// One media part, now a text part holding the reference: in the result of call `scope`,
    /// or (`None`) among the message's own parts; `template` has `{kind}` (the media's kind)
    /// and `{at}` (the place of the original).
    Media { scope: Option<String>, template: Arc<str>, kind: &'static str },
}

/// What the message holding an original must still hold for a reference to it to be true.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Holds {
    /// A result whose text hashes to this (see [`text_hash`]).
    ResultText(u128),
    /// A media part that hashes to this (see [`media_hash`]).
    Media(u128),
}

/// A reference a step wrote: where, to what, what it replaced, and how to write it again.
#[derive(Debug, Clone)]
pub(crate) struct Reference<'a> {
    /// The input index of the message that makes the reference.
    pub referrer: usize,
    /// Where in it, and how it is written.
    pub site: Site,
    /// The text the step wrote there (shared by the references to one original).
    pub written: Arc<str>,
    /// What was there before: the result's parts, or the one media part. Borrowed from the
    /// input when the referrer was still the input's message (a repeated result is usually
    /// replaced before any other step touched it): a history of thousands of repeats would
    /// otherwise copy every repeat's content, only to drop the copies unless an original is
    /// lost.
    pub original: Original<'a>,
    /// The input index of the message that holds the original.
    pub target: usize,
    /// What that message must still hold.
    pub holds: Holds,
}

impl Reference<'_> {
    /// Whether `message` (the referrer) still holds the reference as it was written.
    pub(crate) fn still_written_in(&self, message: &Message) -> bool {
        match &self.site {
            Site::WholeResult { .. } => {
                whole_parts(message).is_some_and(|parts| is_text(parts, &self.written))
            }
            Site::Result { key, .. } => {
                result_parts(message, key).is_some_and(|parts| is_text(parts, &self.written))
            }
            Site::Media { scope, .. } => scope_parts(message, scope.as_deref())
                .is_some_and(|parts| parts.iter().any(|p| is_text(std::slice::from_ref(p), &self.written))),
        }
    }

    /// [`still_written_in`](Reference::still_written_in) the history's `message`, without
    /// writing out a tool result replaced by a text (the case of nearly every referrer a
    /// long history checks, a repeat `dedupe` replaced and a later step cleared): its one
    /// result is that text, under its input's key.
    pub(crate) fn still_written_in_held(&self, message: &HistoryMessage<'_>) -> bool {
        let same = |text: &Arc<str>| Arc::ptr_eq(text, &self.written) || **text == *self.written;
        match (&self.site, message.replacing_text(), message.input_with_same_ids()) {
            // a replaced result is a whole one (it is held so only then)
            (Site::WholeResult { .. }, Some(text), _) => same(text),
            (Site::Result { key, .. }, Some(text), Some(input)) => {
                same(text) && result_keys(input, 0).any(|(k, _)| k.as_str() == key)
            }
            _ => self.still_written_in(message),
        }
    }

    /// Writes `text` where the reference is in `message` (the referrer): the reference again
    /// (pointed elsewhere), or `None` for the original back.
    pub(crate) fn rewrite(&self, message: &mut Message, text: Option<&str>) {
        let written = &*self.written;
        let replacement = || match text {
            Some(text) => vec![Part::Text(crate::message::TextPart::new(text))],
            None => self.original.parts().to_vec(),
        };
        match &self.site {
            Site::WholeResult { .. } => {
                if whole_parts(message).is_some() {
                    message.parts = replacement();
                }
            }
            Site::Result { key, .. } => {
                if let Some(parts) = result_parts_mut(message, key) {
                    *parts = replacement();
                }
            }
            Site::Media { scope, .. } => {
                if let Some(parts) = scope_parts_mut(message, scope.as_deref()) {
                    if let Some(at) = parts.iter().position(|p| is_text(std::slice::from_ref(p), written)) {
                        parts.splice(at..at + 1, replacement());
                    }
                }
            }
        }
    }

    /// The reference to the original once it is back in `referrer` (this reference's own
    /// message), for the other references to it.
    pub(crate) fn render_to(&self, referrer: &Message) -> String {
        match &self.site {
            Site::Result { key, template } => template.replace("{id}", key),
            Site::WholeResult { template } => template.replace("{id}", result_id(referrer)),
            Site::Media { scope, template, kind } => {
                let at = match scope {
                    Some(key) => format!("the result of tool call {key}"),
                    None => message_place(referrer),
                };
                template.replace("{kind}", kind).replace("{at}", &at)
            }
        }
    }
}

/// [`holds`] for the history's `message`, without writing out a tool result replaced by a
/// text: its one result is that text.
pub(crate) fn holds_in(message: &HistoryMessage<'_>, holds_what: Holds) -> bool {
    match (holds_what, message.replacing_text(), message.input_with_same_ids()) {
        (Holds::ResultText(hash), Some(text), Some(input)) => {
            result_keys(input, 0).next().is_some() && xxh3_128(text.as_bytes()) == hash
        }
        _ => holds(message, holds_what),
    }
}

/// Whether `message` holds what `holds` describes.
pub(crate) fn holds(message: &Message, holds: Holds) -> bool {
    match holds {
        Holds::ResultText(hash) => result_keys(message, 0)
            .any(|(_, at)| at.parts(message).is_some_and(|p| text_hash(p) == Some(hash))),
        Holds::Media(hash) => media_parts(message).any(|p| media_hash(p).is_some_and(|(_, h)| h == hash)),
    }
}

/// Every media part of `message`, its results' included.
fn media_parts(message: &Message) -> impl Iterator<Item = &Part> {
    message.parts.iter().flat_map(|p| match p {
        Part::ToolResult(r) => r.parts.iter().collect::<Vec<_>>(),
        p => vec![p],
    })
}

/// The whole content of `message` when it is one result that names its call.
fn whole_parts(message: &Message) -> Option<&[Part]> {
    is_whole_result(message).then_some(message.parts.as_slice())
}

fn is_text(parts: &[Part], text: &str) -> bool {
    matches!(parts, [Part::Text(t)] if t.text == text)
}

/// The content of the result of call `key` in `message`.
fn result_parts<'m>(message: &'m Message, key: &str) -> Option<&'m [Part]> {
    let (_, at) = result_keys(message, 0).find(|(k, _)| k.as_str() == key)?;
    at.parts(message)
}

fn result_parts_mut<'m>(message: &'m mut Message, key: &str) -> Option<&'m mut Vec<Part>> {
    let (_, at) = result_keys(message, 0).find(|(k, _)| k.as_str() == key)?;
    at.parts_mut(message)
}

/// The parts of the result of call `key` in `message`, or the message's own parts.
fn scope_parts<'m>(message: &'m Message, key: Option<&str>) -> Option<&'m [Part]> {
    match key {
        Some(key) => result_parts(message, key),
        None => Some(&message.parts),
    }
}

fn scope_parts_mut<'m>(message: &'m mut Message, key: Option<&str>) -> Option<&'m mut Vec<Part>> {
    match key {
        Some(key) => result_parts_mut(message, key),
        None => Some(&mut message.parts),
    }
}

/// The kind and content hash of a media part (what it holds, not how it is decorated).
pub(crate) fn media_hash(part: &Part) -> Option<(&'static str, u128)> {
    let mut hasher = Xxh3::new();
    let kind = match part {
        Part::Image(image) => {
            image.source.hash(&mut hasher);
            "image"
        }
        Part::Audio(audio) => {
            audio.data.hash(&mut hasher);
            audio.format.hash(&mut hasher);
            "audio"
        }
        Part::File(file) => {
            file.fields.hash(&mut hasher);
            if file.kind == "document" {
                "document"
            } else {
                "file"
            }
        }
        _ => return None,
    };
    kind.hash(&mut hasher);
    Some((kind, hasher.digest128()))
}

/// How many words of a message a media reference quotes to say which message it means.
const QUOTED_WORDS: usize = 8;

/// How a media reference names a message that is not a tool result: by its role and first
/// words, which stay put when other messages are dropped.
pub(crate) fn message_place(message: &Message) -> String {
    let text = message.text_content();
    let words: Vec<&str> = text.split_whitespace().take(QUOTED_WORDS + 1).collect();
    match words.len() {
        0 => format!("an earlier {} message", message.role_name()),
        n if n > QUOTED_WORDS => {
            format!(
                "the {} message that begins \"{}…\"",
                message.role_name(),
                words[..QUOTED_WORDS].join(" ")
            )
        }
        _ => format!("the {} message \"{}\"", message.role_name(), words.join(" ")),
    }
}
