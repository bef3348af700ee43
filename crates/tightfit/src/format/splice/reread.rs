//! Reading a request body when the conversation's previous request was read: an agent resends
//! its whole history every turn, so all but the newest messages are the bytes the previous
//! request held, in the same place. Those are taken from the previous reading instead of
//! read again; only the envelope (the body without its list) and the new messages are read.
//! On a warm turn of a 1 MB history that is a comparison of the two texts (`memcmp`) instead
//! of reading 1 MB of JSON into values and messages.
//!
//! The result is the conversation [`parse_str`] reads from the text: a message's reading
//! depends only on its own bytes (and the format), the envelope is read by the same reader,
//! and any error (or a body whose layout is not found) reads the whole text again with
//! [`parse_str`], for its error as it would be (line and column in the whole text). One
//! difference: a message read alone is two levels less deep, so a body nested past
//! serde_json's limit of 128 levels by one message is read rather than refused.

use serde_json::Value;

use super::super::path::Path;
use super::super::{
    anthropic, list_key, openai, parse_str, responses, Conversation, Format, FormatError, FormatHint,
};
use super::layout::{lies_within, shared_prefix, RequestLayout};
use crate::message::Message;

/// What a conversation's previous request left for its next one.
#[derive(Debug)]
pub struct Previous<'p> {
    /// The previous request's body.
    pub text: &'p str,
    /// Its layout (from its [`ReadRequest`]).
    pub layout: &'p RequestLayout,
    /// The messages read from its list, in order: its conversation's messages after the
    /// ones read from outside the list (Anthropic's `system`, Responses' `instructions`).
    pub listed: Vec<Message>,
}

/// A request body read.
#[derive(Debug)]
pub struct ReadRequest {
    /// The conversation, as [`parse_str`] reads it.
    pub conversation: Conversation,
    /// Where its list and messages lie, for [`splice_request`](super::splice_request) and
    /// for the next request's [`Previous`]; `None` when the body is not one it applies to
    /// (see [`RequestLayout::find`]).
    pub layout: Option<RequestLayout>,
    /// How many messages were taken from the previous request instead of read.
    pub reused: usize,
}

impl ReadRequest {
    /// The messages read from the list (not from Anthropic's `system` or Responses'
    /// `instructions`), taken out of the conversation: what the next request's [`Previous`]
    /// holds. Empty when there is no layout.
    pub fn take_listed(&mut self) -> Vec<Message> {
        let Some(layout) = &self.layout else { return Vec::new() };
        let messages = &mut self.conversation.messages;
        let head = messages.len().saturating_sub(layout.elements().len());
        messages.split_off(head)
    }
}

/// Reads request body `text` in `format` as [`parse_str`] does, taking the messages it shares
/// byte for byte with `previous` (the same conversation's previous request) from there.
pub fn read_request(
    text: &str,
    format: Format,
    previous: Option<Previous<'_>>,
) -> Result<ReadRequest, FormatError> {
    let previous = previous.map(|p| {
        let shared = shared_prefix(text.as_bytes(), p.text.as_bytes());
        (p, shared)
    });
    let layout =
        RequestLayout::find_after(text, format, previous.as_ref().map(|(p, shared)| (p.layout, *shared)));
    let Some(layout) = layout else {
        return Ok(ReadRequest {
            conversation: parse_str(text, FormatHint::Exactly(format))?,
            layout: None,
            reused: 0,
        });
    };
    match read_by_element(text, format, &layout, previous) {
        Some((conversation, reused)) => Ok(ReadRequest { conversation, layout: Some(layout), reused }),
        None => {
            let conversation = parse_str(text, FormatHint::Exactly(format))?;
            Ok(ReadRequest { conversation, layout: Some(layout), reused: 0 })
        }
    }
}

/// What [`read_appended`] did.
// returned once per request and matched at once, as `read_request`'s result is: boxing the
// reading would cost an allocation per request for nothing
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Appended<'p> {
    /// The body keeps every message of the previous request: read as [`read_request`]
    /// reads it.
    Read(ReadRequest),
    /// It does not (an edit, a removal, another conversation), or it has more than the
    /// bound to read: nothing was read, and the previous reading is handed back untouched.
    NotAppended(Previous<'p>),
    /// It keeps them, but what is new does not read alone (a bad message, a changed
    /// envelope): [`read_request`] reads the whole text and says what is wrong. The previous
    /// reading is spent.
    Unread,
}

/// [`read_request`] only for a body that keeps every message of `previous` byte for byte at
/// its place (a turn that appends to it), with at most `max_read` bytes besides them to read
/// (the envelope and the new messages): then reading costs a comparison of the two texts and
/// at most `max_read` bytes of JSON, never the whole history. What a server can afford to do
/// in place on an async worker; any other body is left to [`read_request`].
pub fn read_appended<'p>(
    text: &str,
    format: Format,
    previous: Previous<'p>,
    max_read: usize,
) -> Appended<'p> {
    let elements = previous.layout.elements();
    let kept = elements.last().map_or(previous.layout.list().start, |last| last.end);
    let first = elements.first().map_or(kept, |first| first.start);
    let to_read = text.len().saturating_sub(kept - first);
    if text.len() < kept || to_read > max_read {
        return Appended::NotAppended(previous);
    }
    let shared = shared_prefix(text.as_bytes(), previous.text.as_bytes());
    if shared < kept {
        return Appended::NotAppended(previous);
    }
    let Some(layout) = RequestLayout::find_after(text, format, Some((previous.layout, shared))) else {
        return Appended::Unread;
    };
    match read_by_element(text, format, &layout, Some((previous, shared))) {
        Some((conversation, reused)) => {
            Appended::Read(ReadRequest { conversation, layout: Some(layout), reused })
        }
        None => Appended::Unread,
    }
}

/// The conversation read as its envelope and its list's elements, those `previous` holds at
/// the same place within the `shared` bytes both texts start with taken from it; `None` on
/// any error (the caller reads the whole text).
fn read_by_element(
    text: &str,
    format: Format,
    layout: &RequestLayout,
    previous: Option<(Previous<'_>, usize)>,
) -> Option<(Conversation, usize)> {
    let list = layout.list();
    let mut envelope = String::with_capacity(text.len() - list.len() + 2);
    envelope.push_str(&text[..list.start]);
    envelope.push_str("[]");
    envelope.push_str(&text[list.end..]);
    let mut conversation = parse_str(&envelope, FormatHint::Exactly(format)).ok()?;
    // the previous request's messages at the places both lists hold the same bytes
    let mut reusable = Vec::new();
    if let Some((previous, shared)) = previous.filter(|(p, _)| p.listed.len() == p.layout.elements().len()) {
        // an element within the bytes both texts start with is the same bytes, and lies
        // where it did only if it is the same element
        let same = layout
            .elements()
            .iter()
            .zip(previous.layout.elements())
            .take_while(|(now, then)| now == then && lies_within(now, shared, text))
            .count();
        reusable = previous.listed;
        reusable.truncate(same);
    }
    let reused = reusable.len();
    let mut listed = reusable;
    listed.reserve(layout.elements().len() - reused);
    let root = Path::root("");
    let at_list = root.key(list_key(format));
    for (i, element) in layout.elements().iter().enumerate().skip(reused) {
        let value: Value = serde_json::from_str(&text[element.clone()]).ok()?;
        let at = at_list.index(i);
        let message = match format {
            Format::OpenAi => openai::read_message(value, &at),
            Format::Anthropic => anthropic::read_message(value, &at, false),
            Format::Responses => responses::read_item(value, &at),
            _ => return None,
        };
        listed.push(message.ok()?);
    }
    conversation.messages.extend(listed);
    Some((conversation, reused))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `now` after `then` (read first, alone), as `format`.
    fn read_after(then: &str, now: &str, format: Format) -> Result<ReadRequest, FormatError> {
        let mut first = read_request(then, format, None).unwrap();
        assert_eq!(
            (first.reused, &first.conversation),
            (0, &parse_str(then, FormatHint::Exactly(format)).unwrap())
        );
        let listed = first.take_listed();
        let layout = first.layout.as_ref().unwrap();
        read_request(now, format, Some(Previous { text: then, layout, listed }))
    }

    fn body(messages: &[&str]) -> String {
        format!(r#"{{"model": "gpt-4o", "messages": [{}], "temperature": 0}}"#, messages.join(", "))
    }

    const A: &str = r#"{"role": "user", "content": "fix the bug"}"#;
    const B: &str = r#"{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{\"cmd\": \"ls\"}"}}]}"#;
    const C: &str = r#"{"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"}"#;

    #[test]
    fn the_messages_a_turn_shares_with_the_previous_are_taken_and_the_rest_read() {
        let now = body(&[A, B, C]);
        let read = read_after(&body(&[A, B]), &now, Format::OpenAi).unwrap();
        assert_eq!(read.reused, 2);
        assert_eq!(read.conversation, parse_str(&now, FormatHint::Exactly(Format::OpenAi)).unwrap());
        assert_eq!(read.layout, RequestLayout::find(&now, Format::OpenAi));
        // the same body again: everything taken
        assert_eq!(read_after(&now, &now, Format::OpenAi).unwrap().reused, 3);
    }

    /// Reads `now` after `then` by [`read_appended`].
    fn appended_after(then: &str, now: &str) -> Result<Option<ReadRequest>, Vec<Message>> {
        let mut first = read_request(then, Format::OpenAi, None).unwrap();
        let listed = first.take_listed();
        let layout = first.layout.as_ref().unwrap();
        match read_appended(now, Format::OpenAi, Previous { text: then, layout, listed }, 1 << 20) {
            Appended::Read(read) => Ok(Some(read)),
            Appended::Unread => Ok(None),
            Appended::NotAppended(previous) => Err(previous.listed),
        }
    }

    #[test]
    fn only_a_body_that_keeps_every_previous_message_is_read_appended() {
        // appended, the envelope after the list included: read as the whole reader reads it
        let now = body(&[A, B, C]);
        let read = appended_after(&body(&[A, B]), &now).unwrap().unwrap();
        assert_eq!(read.reused, 2);
        assert_eq!(read.conversation, parse_str(&now, FormatHint::Exactly(Format::OpenAi)).unwrap());
        assert_eq!(appended_after(&now, &now).unwrap().unwrap().reused, 3, "the same body again");
        let empty = body(&[]);
        assert_eq!(appended_after(&empty, &body(&[A])).unwrap().unwrap().reused, 0, "from an empty list");
        // a new message that does not read is left unread, for the whole reader's error
        let bad = body(&[A, r#"{"role": "user", "content": 7}"#]);
        assert!(appended_after(&body(&[A]), &bad).unwrap().is_none());
        // more to read than the bound: handed back, nothing read
        let mut first = read_request(&body(&[A]), Format::OpenAi, None).unwrap();
        let (listed, layout) = (first.take_listed(), first.layout.clone().unwrap());
        let then = body(&[A]);
        let previous = Previous { text: &then, layout: &layout, listed };
        let now = body(&[A, B, C]);
        let bound = now.len() - A.len() - 1;
        assert!(matches!(read_appended(&now, Format::OpenAi, previous, bound), Appended::NotAppended(_)));
        // an edit, a removal, another envelope before the list: nothing read, and the previous
        // reading handed back whole
        let previous = parse_str(&body(&[A, B, C]), FormatHint::Exactly(Format::OpenAi)).unwrap().messages;
        for now in [
            body(&[A, &B.replace("ls", "rm"), C]),
            body(&[A, B]),
            body(&[A, C, B]),
            body(&[A, B, C]).replace("gpt-4o", "gpt-4.1"),
        ] {
            assert_eq!(appended_after(&body(&[A, B, C]), &now).unwrap_err(), previous, "{now}");
        }
    }

    #[test]
    fn a_message_edited_in_place_or_an_envelope_changed_before_the_list_is_read_again() {
        // the same length, other bytes: only the message before it is taken
        let edited = B.replace("ls", "rm");
        let now = body(&[A, &edited, C]);
        let read = read_after(&body(&[A, B, C]), &now, Format::OpenAi).unwrap();
        assert_eq!(read.reused, 1);
        assert_eq!(read.conversation, parse_str(&now, FormatHint::Exactly(Format::OpenAi)).unwrap());
        let other_model = body(&[A, B]).replace("gpt-4o", "gpt-4.1");
        let read = read_after(&body(&[A, B]), &other_model, Format::OpenAi).unwrap();
        assert_eq!(read.reused, 0);
        assert_eq!(read.conversation, parse_str(&other_model, FormatHint::Exactly(Format::OpenAi)).unwrap());
    }

    #[test]
    fn a_bad_body_is_the_error_the_whole_reader_gives() {
        for bad in [
            body(&[A, r#"{"content": "no role"}"#]),
            body(&[A, r#"{"role": "user", "content": 7}"#]),
            body(&[A, r#"{"role": "user" "content": "x"}"#]),
            body(&[A, "[1, 2"]),
            format!("{} trailing", body(&[A])),
            r#"{"model": 7, "messages": []}"#.to_string(),
        ] {
            let whole = parse_str(&bad, FormatHint::Exactly(Format::OpenAi)).unwrap_err();
            assert_eq!(read_after(&body(&[A]), &bad, Format::OpenAi).unwrap_err(), whole, "{bad}");
            assert_eq!(read_request(&bad, Format::OpenAi, None).unwrap_err(), whole, "{bad}");
        }
    }

    #[test]
    fn anthropic_s_system_prompt_is_read_with_the_envelope_and_a_system_role_in_the_list_refused() {
        let then = r#"{"model": "claude-sonnet-4-5", "system": "be brief", "messages": [{"role": "user", "content": "hi"}]}"#;
        let now = r#"{"model": "claude-sonnet-4-5", "system": "be brief", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "c2ln"}, {"type": "text", "text": "hello"}]}]}"#;
        let read = read_after(then, now, Format::Anthropic).unwrap();
        assert_eq!((read.reused, read.conversation.messages.len()), (1, 3));
        assert_eq!(read.conversation, parse_str(now, FormatHint::Exactly(Format::Anthropic)).unwrap());
        let system_in_list = now.replace(r#""role": "assistant""#, r#""role": "system""#);
        let whole = parse_str(&system_in_list, FormatHint::Exactly(Format::Anthropic)).unwrap_err();
        assert_eq!(read_after(then, &system_in_list, Format::Anthropic).unwrap_err(), whole);
    }

    #[test]
    fn responses_instructions_and_items_read_alike() {
        let then = r#"{"model": "gpt-4o", "instructions": "be brief", "input": [{"role": "user", "content": "hi"}]}"#;
        let now = r#"{"model": "gpt-4o", "instructions": "be brief", "input": [{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"}, {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}"#;
        let read = read_after(then, now, Format::Responses).unwrap();
        assert_eq!((read.reused, read.conversation.messages.len()), (1, 4));
        assert_eq!(read.conversation, parse_str(now, FormatHint::Exactly(Format::Responses)).unwrap());
        // `input` as a string has no list: read whole
        let string = r#"{"model": "gpt-4o", "input": "hi"}"#;
        let read = read_request(string, Format::Responses, None).unwrap();
        assert_eq!(
            (read.layout, read.conversation),
            (None, parse_str(string, FormatHint::Exactly(Format::Responses)).unwrap())
        );
    }
}
