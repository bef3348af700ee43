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
//! Finding the elements walks the text once without building anything, strings eight bytes at
//! a time (serde_json's `RawValue` would find the same ranges, at about the cost of
//! reading the JSON, and needs a feature of serde_json the engine does not turn on).

use std::borrow::Cow;
use std::ops::Range;

use super::{anthropic, list_key, openai, responses, Conversation, Format};
use crate::message::Message;

/// Where a request body's list of messages and each of its elements lie in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLayout {
    /// The list, brackets included.
    list: Range<usize>,
    /// Each element, without the whitespace around it.
    elements: Vec<Range<usize>>,
}

impl RequestLayout {
    /// Finds the list of messages of a request body in `format` (`messages`, or `input`) in
    /// `text`, which must be valid JSON (a body the readers accepted); `None` when the body
    /// is not an object whose list key appears once, unescaped, with an array value.
    pub fn find(text: &str, format: Format) -> Option<RequestLayout> {
        if format == Format::Gemini {
            return None;
        }
        let key = list_key(format).as_bytes();
        let mut walk = Walk { text, at: 0 };
        walk.skip_whitespace();
        walk.expect(b'{')?;
        let mut found = None;
        walk.skip_whitespace();
        if walk.peek()? == b'}' {
            return None;
        }
        loop {
            walk.skip_whitespace();
            let name = walk.string()?;
            let name = &text.as_bytes()[name.start + 1..name.end - 1];
            if name.contains(&b'\\') {
                // an escaped key might spell the list key: not worth reading
                return None;
            }
            walk.skip_whitespace();
            walk.expect(b':')?;
            walk.skip_whitespace();
            if name == key {
                if found.is_some() || walk.peek()? != b'[' {
                    return None;
                }
                found = Some(walk.elements()?);
            } else {
                walk.value()?;
            }
            walk.skip_whitespace();
            match walk.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
        walk.skip_whitespace();
        if walk.at != text.len() {
            return None;
        }
        let (list, elements) = found?;
        Some(RequestLayout { list, elements })
    }

    /// The byte range of each element of the list, in order.
    pub fn elements(&self) -> &[Range<usize>] {
        &self.elements
    }
}

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
    let head = like.messages.len().checked_sub(layout.elements.len())?;
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
    out.push_str(&text[..layout.list.start]);
    out.push('[');
    for (i, message) in listed.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match origin(message) {
            Some(at) if at >= head => out.push_str(&text[layout.elements[at - head].clone()]),
            Some(_) => return None,
            None => out.push_str(&write(message).to_string()),
        }
    }
    out.push(']');
    out.push_str(&text[layout.list.end..]);
    Some(out)
}

/// The index of `message` in `messages` when it is one of them (not an equal copy).
fn index_in(messages: &[Message], message: &Message) -> Option<usize> {
    let size = std::mem::size_of::<Message>().max(1);
    let at = (message as *const Message as usize).wrapping_sub(messages.as_ptr() as usize) / size;
    (at < messages.len() && std::ptr::eq(message, &messages[at])).then_some(at)
}

/// The high bit of each byte of `word` that equals `byte`, and possibly of bytes above the
/// first one that does.
fn has_byte(word: u64, byte: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & (ONES << 7)
}

/// A walk over valid JSON text, finding where values start and end.
struct Walk<'t> {
    text: &'t str,
    at: usize,
}

impl Walk<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Passes the string starting here; its range, quotes included. Eight bytes at a time:
    /// the text between quotes is most of a body, and a quote comes every 30 bytes or so in
    /// agent transcripts (escaped ones in code), too often for a `memchr` call per quote.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        self.expect(b'"')?;
        let bytes = self.text.as_bytes();
        loop {
            while let Some(word) = bytes.get(self.at..self.at + 8) {
                let word = u64::from_le_bytes(word.try_into().ok()?);
                let found = has_byte(word, b'"') | has_byte(word, b'\\');
                if found != 0 {
                    // the lowest flag is exact (a false one can only follow a true one)
                    self.at += (found.trailing_zeros() / 8) as usize;
                    break;
                }
                self.at += 8;
            }
            match self.next()? {
                b'"' => return Some(start..self.at),
                // an escape: the escaped byte is not the end (`\u` digits are plain bytes)
                b'\\' => self.at += 1,
                _ => {}
            }
        }
    }

    /// Passes the value starting here.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
            }
            _ => {
                while !matches!(self.peek(), None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')) {
                    self.at += 1;
                }
                Some(())
            }
        }
    }

    /// Passes the array starting here; its range and its elements'.
    fn elements(&mut self) -> Option<(Range<usize>, Vec<Range<usize>>)> {
        let start = self.at;
        self.expect(b'[')?;
        let mut elements = Vec::new();
        self.skip_whitespace();
        if self.peek()? == b']' {
            self.at += 1;
            return Some((start..self.at, elements));
        }
        loop {
            self.skip_whitespace();
            let element = self.at;
            self.value()?;
            elements.push(element..self.at);
            self.skip_whitespace();
            match self.next()? {
                b',' => continue,
                b']' => return Some((start..self.at, elements)),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, request_to_string, FormatHint};

    fn layout(text: &str) -> Option<Vec<&str>> {
        RequestLayout::find(text, Format::OpenAi)
            .map(|l| l.elements.iter().map(|r| &text[r.clone()]).collect())
    }

    #[test]
    fn finds_each_element_whatever_its_strings_hold() {
        let text = r#" { "model" : "m", "x": {"messages": [1]}, "messages" : [ {"role":"user","content":"a \"quoted\" ] } \\"} , {"role":"assistant","content":"\\\\\"[{"} ,7,null ] , "y": [ "]" ] } "#;
        assert_eq!(
            layout(text).unwrap(),
            [
                r#"{"role":"user","content":"a \"quoted\" ] } \\"}"#,
                r#"{"role":"assistant","content":"\\\\\"[{"}"#,
                "7",
                "null"
            ]
        );
        assert_eq!(layout(r#"{"messages":[]}"#).unwrap(), Vec::<&str>::new());
    }

    #[test]
    fn a_list_key_given_twice_escaped_or_not_a_list_is_not_spliced() {
        assert_eq!(layout(r#"{"messages":[],"messages":[1]}"#), None);
        assert_eq!(layout(r#"{"messages":[1],"messag\u0065s":[2]}"#), None);
        assert_eq!(layout(r#"{"messages":"hi"}"#), None);
        assert_eq!(layout(r#"[{"role":"user"}]"#), None);
        assert_eq!(layout(r#"{"model":"m"}"#), None);
        assert_eq!(RequestLayout::find(r#"{"input":"hi"}"#, Format::Responses), None);
    }

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
