//! Cutting text without breaking it: lengths in characters or tokens, keeping the head, the
//! tail or both, never splitting a UTF-8 character or a grapheme cluster (an emoji with its
//! modifiers, a letter with its combining marks).
//!
//! Cost: O(length) for character limits; for token limits a binary search over the text,
//! O(length · log length) tokenization in the worst case, paid only for texts over the limit.

use std::ops::Range;

use unicode_segmentation::GraphemeCursor;

use crate::tokens::TokenCounter;

/// A length limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Length {
    /// Unicode characters (code points, as Python's `len`).
    Chars(usize),
    /// Tokens of the history's counter.
    Tokens(usize),
}

impl Length {
    /// The number, whatever the unit.
    pub fn value(self) -> usize {
        match self {
            Length::Chars(n) | Length::Tokens(n) => n,
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Length::Chars(_) => "chars",
            Length::Tokens(_) => "tokens",
        }
    }
}

/// Which part of a text a cut keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeepPart {
    /// The beginning (the default).
    #[default]
    Head,
    /// The end.
    Tail,
    /// The beginning and the end, half the limit each, cutting the middle.
    HeadAndTail,
}

/// A text after a cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The new text: what was kept, with the marker where the cut is.
    pub text: String,
    /// The byte ranges of the original text that were kept.
    pub kept: Vec<Range<usize>>,
    /// For the report: `kept chars 0..1000 and 9000..10000 of 10000`.
    pub detail: String,
}

/// Cuts `text` to `limit` (the marker included), keeping `keep`; `None` when it already fits.
/// When the limit is smaller than the marker, only the marker is left.
pub fn cut(
    text: &str,
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
) -> Option<Cut> {
    let measure = |s: &str| -> usize {
        match limit {
            Length::Chars(_) => s.chars().count(),
            Length::Tokens(_) => counter.count(s),
        }
    };
    let total = match limit {
        Length::Chars(n) => {
            let chars = text.chars().count();
            if chars <= n {
                return None;
            }
            chars
        }
        Length::Tokens(n) => counter.count_till_limit(text, n).map_or_else(|| counter.count(text), |_| 0),
    };
    if total == 0 {
        return None;
    }
    let mut room = limit.value().saturating_sub(measure(marker));
    loop {
        let c = cut_within(text, room, limit, keep, marker, counter, total);
        // tokens are not additive at the joins: shrink until the whole fits
        let over = match limit {
            Length::Tokens(n) => counter.count(&c.text).saturating_sub(n),
            Length::Chars(_) => 0,
        };
        if over == 0 || room == 0 {
            return Some(c);
        }
        room = room.saturating_sub(over);
    }
}

fn cut_within(
    text: &str,
    room: usize,
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
    total: usize,
) -> Cut {
    let (head_room, tail_room) = match keep {
        KeepPart::Head => (room, 0),
        KeepPart::Tail => (0, room),
        KeepPart::HeadAndTail => (room - room / 2, room / 2),
    };
    let head_end = if head_room == 0 { 0 } else { longest_prefix(text, head_room, limit, counter) };
    let tail_start =
        if tail_room == 0 { text.len() } else { shortest_suffix_start(text, tail_room, limit, counter) };
    let tail_start = tail_start.max(head_end);
    let mut out = String::with_capacity(head_end + marker.len() + text.len() - tail_start);
    out.push_str(&text[..head_end]);
    out.push_str(marker);
    out.push_str(&text[tail_start..]);
    let mut kept = Vec::new();
    if head_end > 0 {
        kept.push(0..head_end);
    }
    if tail_start < text.len() {
        kept.push(tail_start..text.len());
    }
    let unit = limit.unit();
    let ranges: Vec<String> = kept
        .iter()
        .map(|r| match limit {
            Length::Chars(_) => {
                let a = text[..r.start].chars().count();
                let b = a + text[r.clone()].chars().count();
                format!("{a}..{b}")
            }
            Length::Tokens(_) => format!("bytes {}..{}", r.start, r.end),
        })
        .collect();
    let detail = if ranges.is_empty() {
        format!("cut all {total} {unit}, left the marker")
    } else {
        format!("kept {unit} {} of {total}", ranges.join(" and "))
    };
    Cut { text: out, kept, detail }
}

/// The end (byte offset, on a grapheme boundary) of the longest prefix within `room`.
fn longest_prefix(text: &str, room: usize, limit: Length, counter: &dyn TokenCounter) -> usize {
    let end = match limit {
        Length::Chars(_) => text.char_indices().nth(room).map_or(text.len(), |(i, _)| i),
        Length::Tokens(_) => {
            // the last char boundary whose prefix fits: binary search (prefix counts grow
            // with the prefix)
            let bounds = char_bounds(text);
            let k = bounds.partition_point(|&b| counter.count_till_limit(&text[..b], room).is_some());
            bounds[k.saturating_sub(1)]
        }
    };
    floor_grapheme(text, end)
}

/// The start (byte offset, on a grapheme boundary) of the longest suffix within `room`.
fn shortest_suffix_start(text: &str, room: usize, limit: Length, counter: &dyn TokenCounter) -> usize {
    let start = match limit {
        Length::Chars(_) => text.char_indices().rev().nth(room.saturating_sub(1)).map_or(0, |(i, _)| i),
        Length::Tokens(_) => {
            let bounds = char_bounds(text);
            let k = bounds.partition_point(|&b| counter.count_till_limit(&text[b..], room).is_none());
            bounds[k.min(bounds.len() - 1)]
        }
    };
    ceil_grapheme(text, start)
}

/// Every char boundary of `text`, 0 and `text.len()` included.
fn char_bounds(text: &str) -> Vec<usize> {
    text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len())).collect()
}

/// Input messages `first..=last` for a person: `message 3`, `messages 3-9`.
pub fn message_span(first: usize, last: usize) -> String {
    if first == last {
        format!("message {first}")
    } else {
        format!("messages {first}-{last}")
    }
}

/// `1234567` as `1,234,567` (for reports and placeholders people read).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The grapheme boundary at or before byte `i` (a char boundary).
pub fn floor_grapheme(text: &str, i: usize) -> usize {
    let mut cursor = GraphemeCursor::new(i, text.len(), true);
    match cursor.is_boundary(text, 0) {
        Ok(true) => i,
        _ => cursor.prev_boundary(text, 0).ok().flatten().unwrap_or(0),
    }
}

/// The grapheme boundary at or after byte `i` (a char boundary).
pub fn ceil_grapheme(text: &str, i: usize) -> usize {
    let mut cursor = GraphemeCursor::new(i, text.len(), true);
    match cursor.is_boundary(text, 0) {
        Ok(true) => i,
        _ => cursor.next_boundary(text, 0).ok().flatten().unwrap_or(text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::OpenAiEncoding;

    const ENC: OpenAiEncoding = OpenAiEncoding::O200kBase;

    #[test]
    fn text_within_the_limit_is_not_cut() {
        assert_eq!(cut("hello", Length::Chars(5), KeepPart::Head, "…", &ENC), None);
        assert_eq!(cut("hello", Length::Tokens(1), KeepPart::Head, "…", &ENC), None);
    }

    #[test]
    fn char_cuts_keep_the_marker_inside_the_limit() {
        let c = cut("abcdefghij", Length::Chars(6), KeepPart::Head, "..", &ENC).unwrap();
        assert_eq!(c.text, "abcd..");
        let c = cut("abcdefghij", Length::Chars(6), KeepPart::Tail, "..", &ENC).unwrap();
        assert_eq!(c.text, "..ghij");
        let c = cut("abcdefghij", Length::Chars(6), KeepPart::HeadAndTail, "..", &ENC).unwrap();
        assert_eq!(c.text, "ab..ij");
        assert_eq!(c.detail, "kept chars 0..2 and 8..10 of 10");
    }

    #[test]
    fn cuts_never_split_a_grapheme() {
        // a family emoji is one grapheme of 7 chars; "é" as e + combining accent is 2 chars
        let text = "ab👨‍👩‍👧‍👦cde\u{301}f";
        for n in 0..text.chars().count() {
            for keep in [KeepPart::Head, KeepPart::Tail, KeepPart::HeadAndTail] {
                if let Some(c) = cut(text, Length::Chars(n), keep, "", &ENC) {
                    for r in &c.kept {
                        assert_eq!(floor_grapheme(text, r.start), r.start);
                        assert_eq!(ceil_grapheme(text, r.end), r.end);
                    }
                    assert!(c.text.chars().count() <= n, "{keep:?} {n}: {:?}", c.text);
                }
            }
        }
    }

    #[test]
    fn token_cuts_fit_the_token_limit() {
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(50);
        for keep in [KeepPart::Head, KeepPart::Tail, KeepPart::HeadAndTail] {
            let c = cut(&text, Length::Tokens(40), keep, " [...] ", &ENC).unwrap();
            assert!(ENC.count(&c.text) <= 41, "{keep:?}: {}", ENC.count(&c.text));
            assert!(ENC.count(&c.text) >= 30, "{keep:?} keeps close to the limit");
        }
    }
}
