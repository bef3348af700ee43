//! The BPE tables of OpenAI's o200k_base and cl100k_base, built once per process.
//!
//! By default they are built on first use from the token lists embedded in the crate
//! (`vocab/o200k_base.tokens.gz` and `vocab/cl100k_base.tokens.gz`, 1.5 MB together): about
//! 1–2 s for o200k_base and 0.5 s for cl100k_base in a release build, once per process and
//! encoding. With the feature `prebuilt-bpe` they are `bpe-openai`'s tables instead, built at
//! compile time and embedded ready to use (under 0.1 s on first use), at the price of 47 MB of
//! binary: what the command line chooses, where a process counts one file and ends; the Python
//! wheel and library users who ship binaries keep the small form.
//!
//! Both give the same tables: the same token lists in the same order, the same hash factor and
//! the same pre-tokenizer patterns (a test compares them token by token with the feature on).

/// An OpenAI BPE encoding (its counting is in `bpe`; here, its tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpenAiEncoding {
    /// GPT-4o, GPT-4.1, GPT-5, o-series.
    O200kBase,
    /// GPT-4, GPT-3.5-turbo, text-embedding-3.
    Cl100kBase,
}

/// The tokenizer of `encoding`, built on first use.
pub(super) fn tokenizer(encoding: OpenAiEncoding) -> &'static bpe_openai::Tokenizer {
    #[cfg(feature = "prebuilt-bpe")]
    {
        match encoding {
            OpenAiEncoding::O200kBase => bpe_openai::o200k_base(),
            OpenAiEncoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
    #[cfg(not(feature = "prebuilt-bpe"))]
    {
        from_lists::built(encoding)
    }
}

/// Hash factor under which no two tokens of o200k_base or cl100k_base share a hash in the
/// `bpe` crate's token table (the one `bpe-openai` builds its tables with).
pub(super) const OPENAI_HASH_FACTOR: u64 = 17_846_336_922_010_275_747;

/// The tables built from the embedded token lists: the default, and with `prebuilt-bpe` what
/// the test compares with the prebuilt ones.
#[cfg_attr(all(feature = "prebuilt-bpe", not(test)), allow(dead_code))]
mod from_lists {
    use std::sync::OnceLock;

    use super::{OpenAiEncoding, OPENAI_HASH_FACTOR};

    /// The tokenizer of `encoding` built from its embedded token list (once per process).
    pub(super) fn built(encoding: OpenAiEncoding) -> &'static bpe_openai::Tokenizer {
        static BUILT: [OnceLock<bpe_openai::Tokenizer>; 2] = [OnceLock::new(), OnceLock::new()];
        BUILT[encoding as usize].get_or_init(|| build(encoding))
    }

    const O200K_TOKENS: &[u8] = include_bytes!("../../vocab/o200k_base.tokens.gz");
    const CL100K_TOKENS: &[u8] = include_bytes!("../../vocab/cl100k_base.tokens.gz");

    /// cl100k_base's pre-tokenizer, as `bpe-openai` writes tiktoken's pattern: the negative
    /// look-ahead `\s+(?!\S)` becomes a second pattern whose last character is dropped from the
    /// match.
    const CL100K_PATTERNS: [&str; 3] = [
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
        "\\s+\\s",
        "\\s+",
    ];

    /// o200k_base's pre-tokenizer, written the same way.
    const O200K_PATTERNS: [&str; 3] = [
        concat!(
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "|\\p{N}{1,3}",
            "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
            "|\\s*[\\r\\n]+",
            "|\\s+$",
        ),
        "\\s+\\s",
        "\\s+",
    ];

    fn build(encoding: OpenAiEncoding) -> bpe_openai::Tokenizer {
        let (gz, [first, lookahead, rest]) = match encoding {
            OpenAiEncoding::O200kBase => (O200K_TOKENS, O200K_PATTERNS),
            OpenAiEncoding::Cl100kBase => (CL100K_TOKENS, CL100K_PATTERNS),
        };
        let tokens = super::super::open::read_compact_gz(gz);
        let bpe =
            ::bpe::byte_pair_encoding::BytePairEncoding::from_dictionary(tokens, Some(OPENAI_HASH_FACTOR));
        bpe_openai::Tokenizer::new_lookahead(bpe, &[(first, false), (lookahead, true), (rest, false)], false)
            .expect("the pre-tokenizer patterns are valid")
    }
}

#[cfg(all(test, feature = "prebuilt-bpe"))]
mod tests {
    use super::*;

    /// The tables built from the embedded lists are `bpe-openai`'s prebuilt ones: every token's
    /// bytes in the same order, and the same pieces from the pre-tokenizer.
    #[test]
    fn built_tables_equal_the_prebuilt_ones() {
        let text = "Hello, World!  It's 2024\n\n\tindented   spaces 12345 ünïcödé 中文 and /path/to/file.rs";
        for encoding in [OpenAiEncoding::O200kBase, OpenAiEncoding::Cl100kBase] {
            let (ours, theirs) = (from_lists::built(encoding), tokenizer(encoding));
            assert_eq!(ours.bpe.num_tokens(), theirs.bpe.num_tokens(), "{encoding:?}");
            for id in 0..ours.bpe.num_tokens() as u32 {
                assert_eq!(ours.bpe.token_bytes(id), theirs.bpe.token_bytes(id), "{encoding:?} token {id}");
            }
            assert_eq!(ours.split(text).collect::<Vec<_>>(), theirs.split(text).collect::<Vec<_>>());
            assert_eq!(ours.encode(text), theirs.encode(text), "{encoding:?}");
        }
    }
}
