//! What a tool result says, as one text and as a hash of it: what `dedupe` compares results
//! by, and what counting a message remembers of its result (so that a warm fit need not
//! read the result's text again to compare it).

use std::borrow::Cow;

use xxhash_rust::xxh3::xxh3_128;

use crate::message::{Message, Part, Role};

/// A result's text as one string: its text parts joined by newlines (borrowed when it is one
/// part).
pub(crate) fn joined_text(parts: &[Part]) -> Cow<'_, str> {
    if let [Part::Text(t)] = parts {
        return Cow::Borrowed(&t.text);
    }
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    Cow::Owned(texts.join("\n"))
}

/// The content of a message's one tool result: the whole of a `tool`/`function` message, or
/// the parts of its one `tool_result` block (`None` for a message with none, or several).
pub(crate) fn one_result(message: &Message) -> Option<&[Part]> {
    if matches!(message.role, Role::Tool | Role::Function) {
        return Some(&message.parts);
    }
    let mut results = message.parts.iter().filter_map(|p| match p {
        Part::ToolResult(r) => Some(r.parts.as_slice()),
        _ => None,
    });
    match (results.next(), results.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// The hash of a result that is all text, what `dedupe` compares results by; `None` for one
/// with other parts or none.
pub(crate) fn text_hash(parts: &[Part]) -> Option<u128> {
    result_text(parts).map(|text| text.hash)
}

/// What `dedupe` needs of a result that is all text without reading it: the hash of its
/// [`joined_text`] and that text's length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResultText {
    /// The hash of the text ([`text_hash`]).
    pub(crate) hash: u128,
    /// The length of the text, in bytes.
    pub(crate) len: usize,
}

/// The [`ResultText`] of a result that is all text; `None` for one with other parts or none.
pub(crate) fn result_text(parts: &[Part]) -> Option<ResultText> {
    let all_text = !parts.is_empty() && parts.iter().all(|p| matches!(p, Part::Text(_)));
    all_text.then(|| {
        let text = joined_text(parts);
        ResultText { hash: xxh3_128(text.as_bytes()), len: text.len() }
    })
}
