//! Where a request body's list of messages and its elements lie in its text, found by a walk
//! that builds nothing: strings eight bytes at a time. serde_json's `RawValue` would find
//! the same ranges at about the cost of reading the JSON (and needs a serde_json feature the
//! engine does not turn on); this walk costs a third of that, and a conversation's next
//! request walks only what follows the bytes it shares with the previous one.

use std::ops::Range;

use super::super::{list_key, Format};

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
        RequestLayout::find_after(text, format, None)
    }

    /// [`find`](RequestLayout::find), knowing that `text` starts with the first `shared`
    /// bytes of the text `before` was found in: the elements that lie in those bytes (see
    /// [`lies_within`]) are where they were, and the walk resumes after the last of them.
    pub(super) fn find_after(
        text: &str,
        format: Format,
        before: Option<(&RequestLayout, usize)>,
    ) -> Option<RequestLayout> {
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
                let known = match before {
                    Some((before, shared)) if before.list.start == walk.at && walk.at < shared => {
                        before.elements_within(shared, text)
                    }
                    _ => &[],
                };
                found = Some(walk.elements(known)?);
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

    /// The byte range of the list, brackets included.
    pub(super) fn list(&self) -> &Range<usize> {
        &self.list
    }

    /// The leading elements that lie in the first `shared` bytes of `text`.
    fn elements_within(&self, shared: usize, text: &str) -> &[Range<usize>] {
        let within = self.elements.iter().take_while(|e| lies_within(e, shared, text)).count();
        &self.elements[..within]
    }
}

/// Whether `element` of `text` lies in its first `shared` bytes, as far as a walk can tell: a
/// string, object or array ends with its last byte; a number (or `true`, …) at the first byte
/// that is not its own, which must be shared too.
pub(super) fn lies_within(element: &Range<usize>, shared: usize, text: &str) -> bool {
    element.end < shared
        || (element.end == shared
            && matches!(text.as_bytes().get(element.end.wrapping_sub(1)), Some(b'"' | b'}' | b']')))
}

/// How many bytes `a` and `b` start with alike (compared a kilobyte at a time: `memcmp`).
pub(super) fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 1024;
    let both = a.len().min(b.len());
    let mut at = 0;
    while at + CHUNK <= both && a[at..at + CHUNK] == b[at..at + CHUNK] {
        at += CHUNK;
    }
    at + a[at..both].iter().zip(&b[at..both]).take_while(|(x, y)| x == y).count()
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

    /// Passes the array starting here, its leading elements `known` (where an earlier walk
    /// of the same bytes found them); its range and its elements'.
    fn elements(&mut self, known: &[Range<usize>]) -> Option<(Range<usize>, Vec<Range<usize>>)> {
        let start = self.at;
        self.expect(b'[')?;
        let mut elements = known.to_vec();
        match known.last() {
            Some(last) => self.at = last.end,
            None => {
                self.skip_whitespace();
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some((start..self.at, elements));
                }
                elements.push(self.element()?);
            }
        }
        loop {
            self.skip_whitespace();
            match self.next()? {
                b',' => elements.push(self.element()?),
                b']' => return Some((start..self.at, elements)),
                _ => return None,
            }
        }
    }

    /// Passes an element of an array, the whitespace before it too; its range.
    fn element(&mut self) -> Option<Range<usize>> {
        self.skip_whitespace();
        let start = self.at;
        self.value()?;
        Some(start..self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_walk_resumed_after_the_shared_bytes_finds_what_a_whole_walk_finds() {
        let then = r#"{"model": "m", "messages": [ {"a": "x"}, {"b": [1, "]"]}, 12, {"c": "y"} ], "t": 1}"#;
        for now in [
            then.to_string(),
            then.replace(r#"{"c": "y"} ]"#, r#"{"c": "y"}, {"d": "z"} ]"#),
            then.replace("12,", "123,"),
            then.replace(r#""y"} ]"#, r#""y"}]"#),
            then.replace(r#""m""#, r#""mm""#),
            then.replace(r#"{"b": [1, "]"]}, "#, ""),
        ] {
            let before = RequestLayout::find(then, Format::OpenAi).unwrap();
            let shared = shared_prefix(now.as_bytes(), then.as_bytes());
            assert_eq!(
                RequestLayout::find_after(&now, Format::OpenAi, Some((&before, shared))),
                RequestLayout::find(&now, Format::OpenAi),
                "{now}"
            );
        }
    }
}
