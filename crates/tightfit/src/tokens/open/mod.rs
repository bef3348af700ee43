//! Exact token counts for open models: Llama 3.x, Qwen 1.5–3, DeepSeek V3/R1 and Mistral's
//! tekken, on the `bpe` crate (the engine of `bpe-openai`).
//!
//! Each family is a token list in rank order, a pre-tokenizer, a hash factor for the `bpe`
//! crate's token table, the tokens BPE merges cannot reach (counted whole), and the added
//! tokens a HuggingFace tokenizer counts as one token wherever their text appears.
//!
//! - Qwen, DeepSeek and tekken are embedded (gzip, 0.65 MB each; `vocab/` beside this crate's
//!   manifest holds them with their licences, `scripts/gen_vocabularies.py` regenerates them).
//!   Each is built once per process on first use: 0.5–1.3 s in a release build.
//! - Llama 3 is not embedded: its licence binds whoever redistributes it. It is read from a
//!   file the user has (see [`llama3`]), checked against the known vocabulary's digest first,
//!   and built once per process.
//!
//! Counts equal the family's reference tokenizer (HuggingFace `tokenizers` for Llama, Qwen and
//! DeepSeek; mistral-common's tekken construction for Mistral) on every string of the shared
//! transcripts. Counting is 7–10× faster than the `tokenizers` crate (`benches/counting.rs`).

mod llama;
mod split;
mod vocab;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use aho_corasick::{AhoCorasick, MatchKind};

use super::bpe::{count_piece, with_piece_cache, PieceCache, CACHED_PIECE_LEN};
use super::openai_tables::OPENAI_HASH_FACTOR;
use super::{TokenCounter, TokenizerError};
use split::DeepSeekSplitter;

pub(super) use vocab::read_compact_gz;

pub use llama::{llama3, llama3_candidates, set_llama3_search_path, LLAMA3_NOT_FOUND};

/// An open model family whose tokenizer tightfit counts exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpenFamily {
    /// Llama 3, 3.1, 3.2 and 3.3 (128,000 tokens; the vocabulary is read from a user's file).
    Llama3,
    /// Qwen 1.5, 2, 2.5 and 3 (151,643 tokens, NFC), QwQ. Not Qwen 3.5/3.6 (a new vocabulary).
    Qwen,
    /// DeepSeek V3, V3.1, V3.2, R1 and V4 (one 128,000-token vocabulary and pre-tokenizer).
    DeepSeekV3,
    /// Mistral's tekken (130,072 text tokens): NeMo, Pixtral 12B, Ministral 8B, Mistral Small
    /// 2409 and 3.x, Magistral, Devstral.
    MistralTekken,
}

impl OpenFamily {
    /// The counter's name, part of every cache key.
    pub fn name(self) -> &'static str {
        match self {
            OpenFamily::Llama3 => "llama3",
            OpenFamily::Qwen => "qwen2",
            OpenFamily::DeepSeekV3 => "deepseek_v3",
            OpenFamily::MistralTekken => "tekken",
        }
    }

    /// The per-thread piece cache this family uses (the OpenAI encodings use 0 and 1).
    fn cache_slot(self) -> usize {
        match self {
            OpenFamily::Llama3 => 2,
            OpenFamily::Qwen => 3,
            OpenFamily::DeepSeekV3 => 4,
            OpenFamily::MistralTekken => 5,
        }
    }
}

/// A family's counter, built from its token list. `Send + Sync`; shared by every thread.
pub struct OpenTokenizer {
    family: OpenFamily,
    /// The BPE and, except for DeepSeek, the pre-tokenizer and normalization.
    tokenizer: bpe_openai::Tokenizer,
    /// DeepSeek's three-stage pre-tokenizer.
    deepseek: Option<DeepSeekSplitter>,
    /// Tokens that merges cannot reach: a piece equal to one is one token.
    whole: HashSet<Vec<u8>>,
    /// Added-token texts, each one token where it appears (none for tekken).
    added: Option<AhoCorasick>,
    /// The longest token or added-token text, in bytes.
    longest: usize,
}

impl std::fmt::Debug for OpenTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenTokenizer").field("family", &self.family).finish()
    }
}

/// The embedded token lists.
const QWEN_TOKENS: &[u8] = include_bytes!("../../../vocab/qwen.tokens.gz");
const DEEPSEEK_TOKENS: &[u8] = include_bytes!("../../../vocab/deepseek.tokens.gz");
const TEKKEN_TOKENS: &[u8] = include_bytes!("../../../vocab/tekken.tokens.gz");
const DEEPSEEK_ADDED: &str = include_str!("../../../vocab/deepseek.added");

/// The added tokens of Qwen3's `tokenizer.json` (Qwen 2.5 has all but the last four).
const QWEN_ADDED: &[&str] = &[
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
];

/// Hash factors under which no two tokens of a family share a hash in the `bpe` crate's table
/// (found with `bpe::byte_pair_encoding::find_hash_factor_for_dictionary`; a test builds every
/// embedded family with its factor).
const LLAMA3_HASH_FACTOR: u64 = 1_050_247_186_594_202_341;
const DEEPSEEK_HASH_FACTOR: u64 = 4_251_383_202_586_726_350;

impl OpenTokenizer {
    /// The counter of an embedded family (Qwen, DeepSeek, tekken), built on first use;
    /// `None` for Llama 3 (see [`llama3`]).
    pub fn embedded(family: OpenFamily) -> Option<Arc<OpenTokenizer>> {
        static BUILT: [OnceLock<Arc<OpenTokenizer>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let (slot, gz, factor, added): (usize, &[u8], u64, Vec<&str>) = match family {
            OpenFamily::Qwen => (0, QWEN_TOKENS, OPENAI_HASH_FACTOR, QWEN_ADDED.to_vec()),
            OpenFamily::DeepSeekV3 => {
                (1, DEEPSEEK_TOKENS, DEEPSEEK_HASH_FACTOR, DEEPSEEK_ADDED.lines().collect())
            }
            OpenFamily::MistralTekken => (2, TEKKEN_TOKENS, OPENAI_HASH_FACTOR, Vec::new()),
            OpenFamily::Llama3 => return None,
        };
        let built = BUILT[slot].get_or_init(|| {
            Arc::new(OpenTokenizer::build(family, vocab::read_compact_gz(gz), factor, &added, Vec::new()))
        });
        Some(built.clone())
    }

    /// Builds a family's counter from its (verified) token list. `whole` are the tokens left
    /// out of the BPE because merges cannot reach them.
    fn build(
        family: OpenFamily,
        tokens: Vec<Vec<u8>>,
        hash_factor: u64,
        added: &[&str],
        whole: Vec<Vec<u8>>,
    ) -> OpenTokenizer {
        let longest_token = tokens.iter().chain(&whole).map(Vec::len).max().unwrap_or(1);
        let longest_added = added.iter().map(|a| a.len()).max().unwrap_or(1);
        let bpe = ::bpe::byte_pair_encoding::BytePairEncoding::from_dictionary(tokens, Some(hash_factor));
        let patterns = match family {
            OpenFamily::Llama3 => Some(split::LLAMA3),
            OpenFamily::Qwen => Some(split::QWEN),
            OpenFamily::MistralTekken => Some(split::TEKKEN),
            OpenFamily::DeepSeekV3 => None,
        };
        let tokenizer = match patterns {
            Some([first, lookahead, rest]) => bpe_openai::Tokenizer::new_lookahead(
                bpe,
                &[(first, false), (lookahead, true), (rest, false)],
                family == OpenFamily::Qwen,
            ),
            None => bpe_openai::Tokenizer::new(bpe, None, false),
        }
        .expect("the pre-tokenizer patterns are valid");
        let added = (!added.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(added)
                .expect("the added tokens make a valid automaton")
        });
        OpenTokenizer {
            family,
            tokenizer,
            deepseek: (family == OpenFamily::DeepSeekV3).then(DeepSeekSplitter::new),
            whole: whole.into_iter().collect(),
            added,
            longest: longest_token.max(longest_added),
        }
    }

    /// The family.
    pub fn family(&self) -> OpenFamily {
        self.family
    }

    /// How many ordinary tokens the vocabulary has (added tokens not included).
    pub fn vocabulary_len(&self) -> usize {
        self.tokenizer.bpe.num_tokens() + self.whole.len()
    }

    /// The count of `text`, or `None` as soon as it passes `limit`.
    fn count_bounded(&self, text: &str, limit: usize) -> Option<usize> {
        with_piece_cache(self.family.cache_slot(), |cache| {
            let mut run = Run { tokenizer: self, cache, total: 0, limit };
            let Some(added) = &self.added else {
                return run.segment(text).then_some(run.total);
            };
            let mut last = 0;
            for found in added.find_iter(text) {
                if !run.segment(&text[last..found.start()]) {
                    return None;
                }
                run.total += 1;
                if run.total > limit {
                    return None;
                }
                last = found.end();
            }
            run.segment(&text[last..]).then_some(run.total)
        })
    }
}

/// One count in progress.
struct Run<'a> {
    tokenizer: &'a OpenTokenizer,
    cache: &'a mut PieceCache,
    total: usize,
    limit: usize,
}

impl Run<'_> {
    /// Adds the tokens of a text that holds no added token; `false` once over the limit.
    fn segment(&mut self, text: &str) -> bool {
        if text.is_empty() {
            return true;
        }
        let tokenizer = self.tokenizer;
        // ASCII is its own NFC: only Qwen normalizes, and only text beyond ASCII needs it
        // (normalizing copies the text: skipping it made Qwen's counting 2× faster, benches/counting.rs)
        let normalized;
        let text = if text.is_ascii() {
            text
        } else {
            normalized = tokenizer.tokenizer.normalize(text);
            normalized.as_str()
        };
        match &tokenizer.deepseek {
            Some(splitter) => splitter.split(text, &mut |piece| self.piece(piece)),
            None => tokenizer.tokenizer.split(text).all(|piece| self.piece(piece)),
        }
    }

    fn piece(&mut self, piece: &str) -> bool {
        let tokenizer = self.tokenizer;
        let bpe = &tokenizer.tokenizer.bpe;
        let count = if !tokenizer.whole.is_empty() && tokenizer.whole.contains(piece.as_bytes()) {
            1
        } else if piece.len() <= CACHED_PIECE_LEN {
            count_piece(bpe, self.cache, piece)
        } else if self.limit == usize::MAX {
            bpe.count(piece.as_bytes())
        } else {
            match bpe.count_till_limit(piece.as_bytes(), self.limit - self.total) {
                Some(count) => count,
                None => return false,
            }
        };
        self.total += count;
        self.total <= self.limit
    }
}

impl TokenCounter for OpenTokenizer {
    fn name(&self) -> &str {
        self.family.name()
    }

    /// Added-token texts (`<|im_start|>`, `<think>`, `<|eot_id|>`, `<｜User｜>`) count as one
    /// token each, as a HuggingFace tokenizer (and vLLM, TGI, transformers) counts them in a
    /// message; tekken has none, as mistral-common encodes text. The rest is split by the
    /// family's pre-tokenizer and each piece counted by the BPE, short pieces from a
    /// per-thread cache.
    fn count(&self, text: &str) -> usize {
        self.count_bounded(text, usize::MAX).unwrap_or(usize::MAX)
    }

    /// Byte-level: every token is at least one byte.
    fn max_tokens_of_len(&self, bytes: usize) -> Option<usize> {
        Some(bytes)
    }

    /// No token, nor added-token text, is longer than the longest of the vocabulary.
    fn max_len_of_tokens(&self, tokens: usize) -> Option<usize> {
        Some(tokens.saturating_mul(self.longest))
    }

    /// Stops at the first piece that passes the limit; a text longer than `limit` of the
    /// longest token is over at no cost.
    fn count_till_limit(&self, text: &str, limit: usize) -> Option<usize> {
        if text.len() > limit.saturating_mul(self.longest) {
            return None;
        }
        self.count_bounded(text, limit)
    }
}

/// Reads a tokenizer file the user names (`--tokenizer`, Python `tokenizer=`) and returns the
/// exact counter of the family it holds: a tiktoken file or a byte-level `tokenizer.json` of
/// Llama 3 (checked against the known digest), or of an embedded family. `Ok(None)` when the
/// file is none of these (then the HuggingFace backend, feature `hf`, may read it).
pub fn recognize_file(path: &Path) -> Result<Option<Arc<OpenTokenizer>>, TokenizerError> {
    let load_error = |reason: String| TokenizerError::Load { path: path.display().to_string(), reason };
    let bytes = std::fs::read(path).map_err(|e| load_error(e.to_string()))?;
    let Some(tokens) = llama::read_any(&bytes) else {
        return Ok(None);
    };
    let digest = vocab::digest(&tokens);
    if digest == llama::LLAMA3_SHA256 {
        return llama::from_verified(tokens).map(Some);
    }
    let embedded = [
        (OpenFamily::Qwen, QWEN_TOKENS),
        (OpenFamily::DeepSeekV3, DEEPSEEK_TOKENS),
        (OpenFamily::MistralTekken, TEKKEN_TOKENS),
    ];
    for (family, gz) in embedded {
        // cheap first: the length, then the digest of the embedded list
        let len = embedded_len(family, gz);
        if tokens.len() == len && vocab::digest(&vocab::read_compact_gz(gz)) == digest {
            return Ok(OpenTokenizer::embedded(family));
        }
    }
    Ok(None)
}

/// The number of tokens of an embedded list (read once).
fn embedded_len(family: OpenFamily, gz: &[u8]) -> usize {
    static LENS: [OnceLock<usize>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match family {
        OpenFamily::Qwen => 0,
        OpenFamily::DeepSeekV3 => 1,
        _ => 2,
    };
    *LENS[slot].get_or_init(|| vocab::read_compact_gz(gz).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_family_builds_with_its_hash_factor() {
        for (family, len) in [
            (OpenFamily::Qwen, 151_643),
            (OpenFamily::DeepSeekV3, 127_997),
            (OpenFamily::MistralTekken, 130_072),
        ] {
            let tokenizer = OpenTokenizer::embedded(family).unwrap();
            assert_eq!(tokenizer.vocabulary_len(), len, "{family:?}");
            assert_eq!(tokenizer.name(), family.name());
        }
        assert!(OpenTokenizer::embedded(OpenFamily::Llama3).is_none());
    }

    #[test]
    fn the_embedded_lists_have_no_token_merges_cannot_reach() {
        for gz in [QWEN_TOKENS, DEEPSEEK_TOKENS, TEKKEN_TOKENS] {
            assert!(vocab::unreachable_tokens(&vocab::read_compact_gz(gz)).is_empty());
        }
    }
}
