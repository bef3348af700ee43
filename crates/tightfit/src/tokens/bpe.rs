//! Exact OpenAI tokenizers: o200k_base and cl100k_base, embedded in the binary (their tables
//! are built once per process: see `openai_tables`).
//!
//! Backed by the `bpe-openai` crate (GitHub's rust-gems), which gives the same tokens as
//! tiktoken and measured about 1.6× faster than tiktoken-rs here; its `count_till_limit`
//! stops as soon as the limit is passed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

use super::openai_tables::OpenAiEncoding;
use super::TokenCounter;

/// Pieces up to this many bytes are cached (words, numbers, punctuation runs: most pieces).
pub(super) const CACHED_PIECE_LEN: usize = 24;

/// Entries per encoding and thread before a cache starts over (about 4 MB each for the piece
/// cache and the cache of counts up to a limit).
const CACHE_CAPACITY: usize = 1 << 16;

/// Token counts of pieces, by piece.
pub(super) type PieceCache = HashMap<Box<str>, u32, xxhash_rust::xxh3::Xxh3Builder>;

/// Caches per thread: one per vocabulary (the two OpenAI encodings, then the open families).
const CACHE_SLOTS: usize = 6;

thread_local! {
    /// Token counts of recently seen pieces, per encoding. Text repeats its words, and a hash
    /// lookup is several times cheaper than running the BPE on a piece: this made counting
    /// the corpus about 1.5× faster (benches/counting.rs). Pieces depend only on the text, so
    /// the cache cannot change a count. On the heap: the thread-local itself stays a few bytes
    /// (a Python extension module has under 2 KB of static TLS to share, and each map's
    /// hasher holds a 192-byte secret).
    static PIECES: RefCell<Vec<PieceCache>> = const { RefCell::new(Vec::new()) };

    /// Counts of whole texts up to a limit ([`TokenCounter::count_till_limit_again`]), per
    /// OpenAI encoding, by a hash of the text seeded with the limit. Why: `dedupe` and
    /// `clear_tool_results` check every old tool result against their `min_tokens` on every
    /// fit, and a growing history is fitted again every turn; splitting a result's start
    /// into pieces again each time was an eighth of a warm fit. Hashing the text costs a
    /// tenth of that. Only those repeated questions use it (one-off ones, such as a binary
    /// search for a cut, would push them out).
    static LIMITED: RefCell<Vec<LimitedCache>> = const { RefCell::new(Vec::new()) };
}

/// Counts up to a limit, by the text's xxh3-128 seeded with the limit; `u32::MAX` for "more
/// than the limit". 32 bytes an entry: at most about 4 MB per encoding and thread.
type LimitedCache = foldhash::HashMap<u128, u32>;

/// One cache of counts up to a limit per OpenAI encoding.
const LIMITED_SLOTS: usize = 2;

/// Texts shorter than this are split and counted each time (a piece or two: a hash lookup
/// would save nothing).
const CACHED_LIMITED_LEN: usize = 64;

/// `count` (the text's count up to `limit`, `None` past it) from this thread's cache number
/// `slot`, or counted and remembered. Texts under [`CACHED_LIMITED_LEN`] bytes and limits
/// of `u32::MAX` or more are counted each time.
fn with_limited_cache(
    slot: usize,
    text: &str,
    limit: usize,
    count: impl FnOnce() -> Option<usize>,
) -> Option<usize> {
    let limit32 = match u32::try_from(limit) {
        Ok(l) if l < u32::MAX && text.len() >= CACHED_LIMITED_LEN => l,
        _ => return count(),
    };
    let key = xxhash_rust::xxh3::xxh3_128_with_seed(text.as_bytes(), u64::from(limit32));
    let found = LIMITED.with(|cache| cache.borrow().get(slot).and_then(|c| c.get(&key).copied()));
    if let Some(found) = found {
        return (found != u32::MAX).then_some(found as usize);
    }
    let counted = count();
    LIMITED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() < LIMITED_SLOTS {
            cache.resize_with(LIMITED_SLOTS, LimitedCache::default);
        }
        let cache = &mut cache[slot];
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        // a count up to a limit below `u32::MAX` is below it too
        cache.insert(key, counted.map_or(u32::MAX, |n| n as u32));
    });
    counted
}

/// Runs `f` with this thread's piece cache number `slot`.
pub(super) fn with_piece_cache<R>(slot: usize, f: impl FnOnce(&mut PieceCache) -> R) -> R {
    PIECES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() < CACHE_SLOTS {
            cache.resize_with(CACHE_SLOTS, PieceCache::default);
        }
        f(&mut cache[slot])
    })
}

/// The tokens of one pre-tokenized piece, from the cache when it is short.
pub(super) fn count_piece(
    bpe: &::bpe::byte_pair_encoding::BytePairEncoding,
    cache: &mut PieceCache,
    piece: &str,
) -> usize {
    if piece.len() > CACHED_PIECE_LEN {
        return bpe.count(piece.as_bytes());
    }
    if let Some(&count) = cache.get(piece) {
        return count as usize;
    }
    let count = bpe.count(piece.as_bytes());
    if cache.len() >= CACHE_CAPACITY {
        cache.clear();
    }
    cache.insert(piece.into(), count as u32);
    count
}

impl OpenAiEncoding {
    /// The encoding's tokenizer, built on first use (see `openai_tables` for what that costs).
    pub(crate) fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        super::openai_tables::tokenizer(self)
    }

    /// The length in bytes of the longest token of the vocabulary (worked out once).
    fn longest_token(self) -> usize {
        static LONGEST: [OnceLock<usize>; 2] = [OnceLock::new(), OnceLock::new()];
        *LONGEST[self as usize].get_or_init(|| {
            let bpe = &self.tokenizer().bpe;
            (0..bpe.num_tokens() as u32).map(|id| bpe.token_len(id)).max().unwrap_or(1)
        })
    }

    /// Whether `text` has more than `limit` tokens by its length alone: no token is longer
    /// than the longest of the vocabulary, so a long tool result is "over" at no cost.
    fn surely_over(self, text: &str, limit: usize) -> bool {
        text.len() > limit.saturating_mul(self.longest_token())
    }

    /// The tokens of `text` up to `limit` (`None` past it), piece by piece with the piece
    /// cache; the body of both counts up to a limit, after their length check.
    fn count_pieces_till_limit(self, text: &str, limit: usize) -> Option<usize> {
        let tokenizer = self.tokenizer();
        with_piece_cache(self as usize, |cache| {
            let mut total = 0;
            for piece in tokenizer.split(text) {
                total += if piece.len() > CACHED_PIECE_LEN {
                    tokenizer.bpe.count_till_limit(piece.as_bytes(), limit - total)?
                } else {
                    count_piece(&tokenizer.bpe, cache, piece)
                };
                if total > limit {
                    return None;
                }
            }
            Some(total)
        })
    }

    /// The token ids of `text` (ordinary text, no special tokens).
    pub fn encode(self, text: &str) -> Vec<u32> {
        self.tokenizer().encode(text)
    }

    /// The text of token ids, if they decode to valid UTF-8.
    pub fn decode(self, tokens: &[u32]) -> Option<String> {
        self.tokenizer().decode(tokens)
    }

    /// How many ordinary tokens the vocabulary has: their ids are `0..n`, in rank order
    /// (special tokens not included).
    pub fn vocabulary_len(self) -> usize {
        self.tokenizer().bpe.num_tokens()
    }
}

impl TokenCounter for OpenAiEncoding {
    fn name(&self) -> &str {
        match self {
            OpenAiEncoding::O200kBase => "o200k_base",
            OpenAiEncoding::Cl100kBase => "cl100k_base",
        }
    }

    /// Splits the text with the encoding's pre-tokenizer, then counts each piece, taking
    /// short pieces from a per-thread cache (see [`count_piece`]).
    fn count(&self, text: &str) -> usize {
        let tokenizer = self.tokenizer();
        with_piece_cache(*self as usize, |cache| {
            tokenizer.split(text).map(|piece| count_piece(&tokenizer.bpe, cache, piece)).sum()
        })
    }

    /// A byte-level BPE: every token is at least one byte, and no special token is added.
    fn max_tokens_of_len(&self, bytes: usize) -> Option<usize> {
        Some(bytes)
    }

    /// No token is longer than the vocabulary's longest (special tokens are counted as
    /// ordinary text).
    fn max_len_of_tokens(&self, tokens: usize) -> Option<usize> {
        Some(tokens.saturating_mul(self.longest_token()))
    }

    /// Like [`count`](Self::count), piece by piece, stopping at the first piece that passes
    /// the limit: O(limit) for a long text. A long piece is counted by the BPE's own early
    /// stop, so one huge unbroken piece (base64, say) costs no more than the limit either.
    fn count_till_limit(&self, text: &str, limit: usize) -> Option<usize> {
        if self.surely_over(text, limit) {
            return None;
        }
        self.count_pieces_till_limit(text, limit)
    }

    /// [`count_till_limit`](Self::count_till_limit), remembered per thread by the text and
    /// the limit (see `LIMITED`); a text too long to be within the limit is answered before
    /// it is hashed.
    fn count_till_limit_again(&self, text: &str, limit: usize) -> Option<usize> {
        if self.surely_over(text, limit) {
            return None;
        }
        with_limited_cache(*self as usize, text, limit, || self.count_pieces_till_limit(text, limit))
    }
}
