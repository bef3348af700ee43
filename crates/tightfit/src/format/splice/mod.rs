//! Writing a fitted request body by splicing the request's own bytes: everything around the
//! list of messages (`messages`, or `input` for Responses; Anthropic's `system` and
//! Responses' `instructions` with it) copied as it came, each message kept unchanged copied as
//! its own bytes, and only the messages the fit changed or added serialized. For a proxy,
//! where writing a 1 MB body as a whole `Value` costs as much as the fit: the copy is a
//! `memcpy`, and what the upstream receives keeps the client's own bytes (its prompt-cache
//! prefix included).
//!
//! The result parses to the JSON [`request_to_string`](super::request_to_string) writes: the
//! readers are lossless, so a kept message's bytes and the envelope's say what the writers
//! would write. Splicing applies only where the fitted list maps one to one onto the wire
//! list; anywhere else (the system prompt or the instructions changed, dropped or joined by
//! another instruction message, a Responses `input` string, a Gemini body, a list key given
//! twice or spelled with escapes) [`splice_request`] says `None` and the caller writes the
//! body with [`request_to_string`](super::request_to_string).
//!
//! [`RequestLayout`] finds the list's elements in the text; [`read_request`] reads a body
//! reusing what the conversation's previous request read (the messages both lists hold, byte
//! for byte, are not read again), and gives the layout the splice needs.

mod layout;
mod reread;

use std::borrow::Cow;

use super::{anthropic, openai, responses, Conversation, Format};
use crate::message::Message;

pub use layout::RequestLayout;
pub use reread::{read_appended, read_request, Appended, Previous, ReadRequest};

/// Writes the body of `messages` (a fitted history: borrowed from `like` or owned) by
/// splicing `text`, the body `like` was read from, whose list `layout` found: the body
/// [`request_to_string`](super::request_to_string) would write, as JSON, with every byte that
/// did not change kept. `None` when the fitted list does not map one to one onto the wire
/// list (see the module's documentation): write it whole then.
pub fn splice_request(
    text: &str,
    layout: &RequestLayout,
    messages: &[Cow<'_, Message>],
    like: &Conversation,
) -> Option<String> {
    let request = like.request.as_ref()?;
    // the messages read from outside the list: Anthropic's `system`, Responses' `instructions`
    let head = like.messages.len().checked_sub(layout.elements().len())?;
    let head_fits = match like.format {
        Format::OpenAi => head == 0,
        Format::Anthropic => head <= 1,
        Format::Responses => head == usize::from(request.instructions) && !request.input_string,
        _ => false,
    };
    if !head_fits || messages.len() < head {
        return None;
    }
    let origin = |message: &Cow<'_, Message>| match message {
        Cow::Borrowed(kept) => index_in(&like.messages, kept),
        Cow::Owned(_) => None,
    };
    // the head as it came, and nothing after it that a writer would fold into it
    if (0..head).any(|i| origin(&messages[i]) != Some(i)) {
        return None;
    }
    let (_, listed) = messages.split_at(head);
    if like.format == Format::Anthropic && listed.first().is_some_and(|m| m.role.is_instruction()) {
        return None;
    }
    let write: fn(&Message) -> serde_json::Value = match like.format {
        Format::OpenAi => openai::write_message,
        Format::Anthropic => anthropic::write_message,
        _ => responses::write_item,
    };
    let mut out = String::with_capacity(text.len() + 64);
    // a layout of another text reads as a body it does not fit (`None`), not a panic
    out.push_str(text.get(..layout.list().start)?);
    out.push('[');
    for (i, message) in listed.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match origin(message) {
            Some(at) if at >= head => out.push_str(text.get(layout.elements().get(at - head)?.clone())?),
            Some(_) => return None,
            None => out.push_str(&write(message).to_string()),
        }
    }
    out.push(']');
    out.push_str(text.get(layout.list().end..)?);
    Some(out)
}

/// The index of `message` in `messages` when it is one of them (not an equal copy).
fn index_in(messages: &[Message], message: &Message) -> Option<usize> {
    let size = std::mem::size_of::<Message>().max(1);
    let at = (message as *const Message as usize).wrapping_sub(messages.as_ptr() as usize) / size;
    (at < messages.len() && std::ptr::eq(message, &messages[at])).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, request_to_string, FormatHint};

    #[test]
    fn kept_messages_keep_their_bytes_and_changed_ones_are_written() {
        let text = r#"{"model":"gpt-4o",  "messages":[ {"content":"one",  "role":"user"},{"role":"assistant","content":"two"} ],"temperature":0.50}"#;
        let conversation = parse_str(text, FormatHint::Exactly(Format::OpenAi)).unwrap();
        let layout = RequestLayout::find(text, Format::OpenAi).unwrap();
        let mut changed = conversation.messages[1].clone();
        changed.parts = vec![crate::message::Part::Text(crate::message::TextPart::new("2"))];
        let fitted = vec![Cow::Borrowed(&conversation.messages[0]), Cow::Owned(changed)];
        let spliced = splice_request(text, &layout, &fitted, &conversation).unwrap();
        assert_eq!(
            spliced,
            r#"{"model":"gpt-4o",  "messages":[{"content":"one",  "role":"user"},{"role":"assistant","content":"2"}],"temperature":0.50}"#
        );
        let whole: serde_json::Value =
            serde_json::from_str(&request_to_string(&fitted, &conversation)).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&spliced).unwrap(), whole);
    }

    #[test]
    fn a_changed_or_dropped_system_prompt_is_written_whole() {
        let text = r#"{"model":"claude-sonnet-4-5","system":"be brief","messages":[{"role":"user","content":"hi"}]}"#;
        let conversation = parse_str(text, FormatHint::Exactly(Format::Anthropic)).unwrap();
        let layout = RequestLayout::find(text, Format::Anthropic).unwrap();
        let [system, user] = [&conversation.messages[0], &conversation.messages[1]];
        let splice = |fitted: Vec<Cow<'_, Message>>| splice_request(text, &layout, &fitted, &conversation);
        assert_eq!(splice(vec![Cow::Borrowed(system), Cow::Borrowed(user)]).as_deref(), Some(text));
        assert_eq!(splice(vec![Cow::Borrowed(user)]), None);
        assert_eq!(splice(vec![Cow::Owned(system.clone()), Cow::Borrowed(user)]), None);
        assert_eq!(splice(vec![Cow::Borrowed(system), Cow::Borrowed(system), Cow::Borrowed(user)]), None);
        // a message moved into the place of the system prompt
        assert_eq!(splice(vec![Cow::Borrowed(user), Cow::Borrowed(user)]), None);
    }
}
