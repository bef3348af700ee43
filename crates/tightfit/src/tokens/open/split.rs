//! Pre-tokenizers: how each family cuts a text into the pieces its BPE encodes one by one.
//!
//! `regex-automata` has no look-around, so `\s+(?!\S)` is written as `bpe-openai` does it:
//! `\s+$` in the first pattern, then `\s+\s` with its last character given back, then `\s+`.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// Llama 3: cl100k_base's pattern (digits in runs of up to three).
pub(super) const LLAMA3: [&str; 3] = [
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+$",
    r"\s+\s",
    r"\s+",
];

/// Qwen 1.5–3: as Llama 3 with single digits (the text is NFC-normalized first).
pub(super) const QWEN: [&str; 3] = [
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+$",
    r"\s+\s",
    r"\s+",
];

/// Mistral tekken: o200k_base's pattern without the contraction suffixes, single digits.
pub(super) const TEKKEN: [&str; 3] = [
    concat!(
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
        r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+$"
    ),
    r"\s+\s",
    r"\s+",
];

/// The third stage of DeepSeek V3's pre-tokenizer.
const DEEPSEEK_MAIN: [&str; 3] = [
    concat!(
        r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"##,
        r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+$"
    ),
    r"\s+\s",
    r"\s+",
];

/// DeepSeek V3/R1's pre-tokenizer: three `Split(…, Isolated)` stages, each cutting the pieces
/// of the one before: runs of up to three digits; runs of CJK ideographs and kana; then the
/// main pattern. "Isolated" keeps what falls between matches as pieces too (a control
/// character, say), which the anchored splitter of `bpe-openai` would stop at, hence this type.
pub(super) struct DeepSeekSplitter {
    digits: Regex,
    cjk: Regex,
    main: Regex,
}

impl DeepSeekSplitter {
    pub(super) fn new() -> DeepSeekSplitter {
        DeepSeekSplitter {
            digits: Regex::new(r"\p{N}{1,3}").expect("a valid pattern"),
            cjk: Regex::new("[\u{4E00}-\u{9FA5}\u{3040}-\u{309F}\u{30A0}-\u{30FF}]+")
                .expect("a valid pattern"),
            main: Regex::new_many(&DEEPSEEK_MAIN).expect("valid patterns"),
        }
    }

    /// Calls `piece` with each piece of `text` in order, until it returns `false`; returns
    /// whether every piece was seen.
    pub(super) fn split<'t>(&self, text: &'t str, piece: &mut impl FnMut(&'t str) -> bool) -> bool {
        let mut by_digits = Vec::new();
        isolated(&self.digits, text, &mut by_digits);
        let mut by_script = Vec::new();
        for part in by_digits {
            isolated(&self.cjk, part, &mut by_script);
        }
        by_script.into_iter().all(|part| self.split_main(part, piece))
    }

    /// The main pattern, anchored at each position (the look-ahead trick needs an anchored
    /// match); where nothing matches, one character joins the current gap.
    fn split_main<'t>(&self, text: &'t str, piece: &mut impl FnMut(&'t str) -> bool) -> bool {
        let (mut position, mut gap) = (0, None::<usize>);
        while position < text.len() {
            let found = self.main.search(&Input::new(text).range(position..).anchored(Anchored::Yes));
            match found {
                Some(m) if m.end() > position => {
                    if let Some(start) = gap.take() {
                        if !piece(&text[start..position]) {
                            return false;
                        }
                    }
                    let mut end = m.end();
                    if m.pattern().as_usize() == 1 {
                        // the look-ahead character is not part of the piece
                        end -= text[position..end].chars().next_back().map_or(0, char::len_utf8);
                    }
                    if !piece(&text[position..end]) {
                        return false;
                    }
                    position = end;
                }
                _ => {
                    gap.get_or_insert(position);
                    position += text[position..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
        gap.is_none_or(|start| piece(&text[start..]))
    }
}

/// `text` cut at every match of `regex`: the matches and the gaps between them, in order.
fn isolated<'t>(regex: &Regex, text: &'t str, out: &mut Vec<&'t str>) {
    let mut last = 0;
    for m in regex.find_iter(text) {
        if m.start() > last {
            out.push(&text[last..m.start()]);
        }
        out.push(&text[m.range()]);
        last = m.end();
    }
    if last < text.len() {
        out.push(&text[last..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        DeepSeekSplitter::new().split(text, &mut |p| {
            out.push(p);
            true
        });
        out
    }

    #[test]
    fn deepseek_cuts_digits_by_three_and_cjk_runs_apart() {
        assert_eq!(pieces("abc 12345"), vec!["abc", " ", "123", "45"]);
        assert_eq!(pieces("価格は100円"), vec!["価格は", "100", "円"]);
        assert_eq!(pieces("x  \n"), vec!["x", "  \n"]);
    }

    #[test]
    fn deepseek_keeps_what_no_pattern_matches() {
        // a control character followed by another matches none of the main alternatives: it
        // is a piece of its own (the second one starts the next piece, as HuggingFace cuts it)
        assert_eq!(pieces("a\u{1}\u{2}b"), vec!["a", "\u{1}", "\u{2}b"]);
        assert_eq!(pieces("a\u{200d}"), vec!["a", "\u{200d}"]);
    }

    #[test]
    fn deepseek_stops_when_asked() {
        let mut seen = 0;
        let complete = DeepSeekSplitter::new().split("a b c d", &mut |_| {
            seen += 1;
            seen < 2
        });
        assert!(!complete);
        assert_eq!(seen, 2);
    }
}
