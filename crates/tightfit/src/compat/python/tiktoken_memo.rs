//! Counting and cutting texts as tiktoken does, remembered by text hash across runs.
//!
//! A peer's transform is called on every turn of an agent with the whole history, and counts
//! every text again (AG2's `MessageTokenLimiter` counts each kept message twice: once to
//! count, once to check the cut). A [`TiktokenMemo`] kept by the transform's owner turns the
//! second and later counts of a text into one hash of it (xxh3, ~10 GB/s) and a map lookup.
//!
//! Only texts tiktoken accepts are remembered: one that spells a special token is checked
//! (and refused) on every call, as tiktoken refuses it every time.
//!
//! Memory: an entry per distinct text (about 50 bytes) and the cut texts themselves; each map
//! is emptied when it passes its cap, so a long-lived owner stays bounded.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_128;

use super::tiktoken::{disallowed_special, truncate_to_tokens};
use crate::tokens::{OpenAiEncoding, TokenCounter};

/// The most texts whose counts are remembered before the memo starts again.
const COUNTS_CAPACITY: usize = 1 << 18;

/// The most bytes of cut texts remembered before those start again.
const CUTS_CAPACITY_BYTES: usize = 64 << 20;

/// What is known of a text's token count.
#[derive(Debug, Clone, Copy)]
enum Known {
    /// Exactly this many tokens.
    Exact(usize),
    /// More than this many.
    Over(usize),
}

/// Token counts and cuts of texts by hash, per encoding; see the module doc.
#[derive(Debug, Default)]
pub struct TiktokenMemo {
    counts: HashMap<(OpenAiEncoding, u128), Known>,
    cuts: HashMap<(OpenAiEncoding, u128, i128), String>,
    cut_bytes: usize,
}

impl TiktokenMemo {
    /// An empty memo.
    pub fn new() -> TiktokenMemo {
        TiktokenMemo::default()
    }

    /// How many texts have a remembered count.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    fn remember(&mut self, key: (OpenAiEncoding, u128), known: Known) {
        if self.counts.len() >= COUNTS_CAPACITY {
            self.counts.clear();
        }
        self.counts.insert(key, known);
    }

    /// The tokens of `text` in `encoding` (`len(encoding.encode(text))`), or the special
    /// token it spells, which tiktoken refuses.
    pub fn count(&mut self, encoding: OpenAiEncoding, text: &str) -> Result<usize, &'static str> {
        let key = (encoding, xxh3_128(text.as_bytes()));
        if let Some(Known::Exact(n)) = self.counts.get(&key) {
            return Ok(*n);
        }
        if let Some(token) = disallowed_special(encoding, text) {
            return Err(token);
        }
        let n = encoding.count(text);
        self.remember(key, Known::Exact(n));
        Ok(n)
    }

    /// `text` cut to its first `n` tokens (`decode(encode(text)[:n])`, Python slicing: a
    /// negative `n` drops that many from the end), or `None` when that is the whole text; or
    /// the special token it spells. Whether a text fits is found by counting at most `n + 1`
    /// tokens of it, and remembered, as is the cut.
    pub fn cut(
        &mut self,
        encoding: OpenAiEncoding,
        text: &str,
        n: i128,
    ) -> Result<Option<String>, &'static str> {
        let key = (encoding, xxh3_128(text.as_bytes()));
        let known = self.counts.get(&key).copied();
        if known.is_none() {
            if let Some(token) = disallowed_special(encoding, text) {
                return Err(token);
            }
        }
        if n >= 0 {
            let limit = usize::try_from(n).unwrap_or(usize::MAX);
            // no text has more tokens than bytes
            let fits = text.len() <= limit
                || match known {
                    Some(Known::Exact(count)) => count <= limit,
                    Some(Known::Over(over)) if over >= limit => false,
                    _ => {
                        let counted = encoding.count_till_limit(text, limit);
                        self.remember(key, counted.map_or(Known::Over(limit), Known::Exact));
                        counted.is_some()
                    }
                };
            if fits {
                return Ok(None);
            }
        }
        let cut_key = (encoding, key.1, n);
        if let Some(cut) = self.cuts.get(&cut_key) {
            return Ok(Some(cut.clone()));
        }
        let cut = truncate_to_tokens(encoding, text, n);
        if cut == text {
            return Ok(None);
        }
        if self.cut_bytes + cut.len() > CUTS_CAPACITY_BYTES {
            self.cuts.clear();
            self.cut_bytes = 0;
        }
        self.cut_bytes += cut.len();
        self.cuts.insert(cut_key, cut.clone());
        Ok(Some(cut))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXTS: &[&str] = &[
        "",
        "hello",
        "The quick brown fox jumps over the lazy dog.",
        "naïve café — 日本語のテキスト, emoji 🦀🦀 and    spaces\n\n\tand tabs",
        "def f(x):\n    return x ** 2  # squares\n",
    ];

    #[test]
    fn counts_as_the_encoding_does_first_and_again() {
        let mut memo = TiktokenMemo::new();
        for encoding in [OpenAiEncoding::Cl100kBase, OpenAiEncoding::O200kBase] {
            for _ in 0..2 {
                for text in TEXTS {
                    assert_eq!(memo.count(encoding, text), Ok(encoding.count(text)), "{encoding:?} {text:?}");
                }
            }
        }
        assert_eq!(memo.len(), 2 * TEXTS.len());
    }

    #[test]
    fn cuts_as_tiktoken_cuts_whatever_was_learned_before() {
        let encoding = OpenAiEncoding::O200kBase;
        for text in TEXTS {
            let total = encoding.count(text) as i128;
            for n in [-3, -1, 0, 1, 2, 5, total - 1, total, total + 1, 1000] {
                let expected = truncate_to_tokens(encoding, text, n);
                let expected = (expected != *text).then_some(expected);
                // what the memo knows beforehand changes how it decides, never the answer
                let mut fresh = TiktokenMemo::new();
                let mut counted = TiktokenMemo::new();
                counted.count(encoding, text).unwrap();
                let mut over = TiktokenMemo::new();
                over.cut(encoding, text, 0).unwrap();
                for memo in [&mut fresh, &mut counted, &mut over] {
                    assert_eq!(memo.cut(encoding, text, n).unwrap(), expected, "{text:?} n={n}");
                    assert_eq!(memo.cut(encoding, text, n).unwrap(), expected, "again: {text:?} n={n}");
                    assert_eq!(memo.count(encoding, text), Ok(total as usize));
                }
            }
        }
    }

    #[test]
    fn refuses_special_tokens_every_time() {
        let mut memo = TiktokenMemo::new();
        for _ in 0..2 {
            assert_eq!(memo.count(OpenAiEncoding::Cl100kBase, "a <|endoftext|> b"), Err("<|endoftext|>"));
            assert_eq!(memo.cut(OpenAiEncoding::Cl100kBase, "x <|fim_prefix|>", 1), Err("<|fim_prefix|>"));
        }
        assert!(memo.is_empty());
    }
}
