//! What Python `tiktoken` does beyond counting, for the peers that lean on it (AG2's
//! `MessageTokenLimiter` counts and cuts text with it): the encoding a model name maps to
//! (`tiktoken.encoding_for_model`), the refusal of text that spells a special token
//! (`encode` with its default `disallowed_special="all"`), and cutting a text to its first N
//! tokens (`decode(encode(text)[:n])`, a cut through a character leaving U+FFFD).
//!
//! The token ids are the same as tiktoken's (the `bpe-openai` encodings are checked against
//! it), so a cut falls where tiktoken's falls. Cost of a cut: the pieces before the cut are
//! counted, not encoded; only the piece the cut falls in is encoded. O(length of the kept
//! prefix).

use crate::tokens::OpenAiEncoding;

/// Why a model name has no encoding here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodingError {
    /// tiktoken does not know the model (it raises `KeyError`).
    #[error("Could not automatically map {0} to a tokeniser. Please use `tiktoken.get_encoding` to explicitly get the tokeniser you expect.")]
    UnknownModel(String),
    /// tiktoken maps the model to an encoding whose vocabulary is not embedded here (the
    /// GPT-2 and GPT-3 era `r50k_base` / `p50k_base`).
    #[error("model {model} uses the {encoding} encoding, which tightfit does not embed (only o200k_base and cl100k_base)")]
    NotEmbedded {
        /// The model asked for.
        model: String,
        /// The encoding tiktoken would use.
        encoding: &'static str,
    },
}

/// tiktoken's exact model names (0.12+, the table of `tiktoken.model`).
const MODEL_TO_ENCODING: &[(&str, &str)] = &[
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4-mini", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4o", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35-turbo", "cl100k_base"),
    ("davinci-002", "cl100k_base"),
    ("babbage-002", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
    ("text-embedding-3-small", "cl100k_base"),
    ("text-embedding-3-large", "cl100k_base"),
    ("text-davinci-003", "p50k_base"),
    ("text-davinci-002", "p50k_base"),
    ("text-davinci-001", "r50k_base"),
    ("text-curie-001", "r50k_base"),
    ("text-babbage-001", "r50k_base"),
    ("text-ada-001", "r50k_base"),
    ("davinci", "r50k_base"),
    ("curie", "r50k_base"),
    ("babbage", "r50k_base"),
    ("ada", "r50k_base"),
    ("code-davinci-002", "p50k_base"),
    ("code-davinci-001", "p50k_base"),
    ("code-cushman-002", "p50k_base"),
    ("code-cushman-001", "p50k_base"),
    ("davinci-codex", "p50k_base"),
    ("cushman-codex", "p50k_base"),
    ("text-davinci-edit-001", "p50k_edit"),
    ("code-davinci-edit-001", "p50k_edit"),
    ("text-similarity-davinci-001", "r50k_base"),
    ("text-similarity-curie-001", "r50k_base"),
    ("text-similarity-babbage-001", "r50k_base"),
    ("text-similarity-ada-001", "r50k_base"),
    ("text-search-davinci-doc-001", "r50k_base"),
    ("text-search-curie-doc-001", "r50k_base"),
    ("text-search-babbage-doc-001", "r50k_base"),
    ("text-search-ada-doc-001", "r50k_base"),
    ("code-search-babbage-code-001", "r50k_base"),
    ("code-search-ada-code-001", "r50k_base"),
    ("gpt2", "gpt2"),
    ("gpt-2", "gpt2"),
];

/// tiktoken's model-name prefixes, tried in this order after the exact names.
const MODEL_PREFIX_TO_ENCODING: &[(&str, &str)] = &[
    ("o1-", "o200k_base"),
    ("o3-", "o200k_base"),
    ("o4-mini-", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-4.5-", "o200k_base"),
    ("gpt-4.1-", "o200k_base"),
    ("chatgpt-4o-", "o200k_base"),
    ("gpt-4o-", "o200k_base"),
    ("gpt-4-", "cl100k_base"),
    ("gpt-3.5-turbo-", "cl100k_base"),
    ("gpt-35-turbo-", "cl100k_base"),
    ("gpt-oss-", "o200k_harmony"),
    ("ft:gpt-4o", "o200k_base"),
    ("ft:gpt-4", "cl100k_base"),
    ("ft:gpt-3.5-turbo", "cl100k_base"),
    ("ft:davinci-002", "cl100k_base"),
    ("ft:babbage-002", "cl100k_base"),
];

/// The encoding `tiktoken.encoding_for_model(model)` gives: an exact name first, then the
/// first matching prefix. `o200k_harmony` (gpt-oss) has o200k's ordinary tokens, so it counts
/// and cuts ordinary text as o200k does.
pub fn encoding_for_model(model: &str) -> Result<OpenAiEncoding, EncodingError> {
    let name = MODEL_TO_ENCODING
        .iter()
        .find(|(m, _)| *m == model)
        .or_else(|| MODEL_PREFIX_TO_ENCODING.iter().find(|(p, _)| model.starts_with(p)))
        .map(|(_, e)| *e)
        .ok_or_else(|| EncodingError::UnknownModel(model.to_string()))?;
    match name {
        "o200k_base" | "o200k_harmony" => Ok(OpenAiEncoding::O200kBase),
        "cl100k_base" => Ok(OpenAiEncoding::Cl100kBase),
        encoding => Err(EncodingError::NotEmbedded { model: model.to_string(), encoding }),
    }
}

/// The special tokens of an encoding, as text.
pub fn special_tokens(encoding: OpenAiEncoding) -> &'static [&'static str] {
    match encoding {
        OpenAiEncoding::O200kBase => &["<|endoftext|>", "<|endofprompt|>"],
        OpenAiEncoding::Cl100kBase => {
            &["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"]
        }
    }
}

/// The first special token `text` spells (leftmost, as tiktoken's regex search finds it), if
/// any: tiktoken's `encode` refuses such text with `ValueError`. One scan per token; a text
/// without `<|` costs one byte search.
pub fn disallowed_special(encoding: OpenAiEncoding, text: &str) -> Option<&'static str> {
    if !text.contains("<|") {
        return None;
    }
    special_tokens(encoding).iter().filter_map(|t| text.find(t).map(|at| (at, *t))).min().map(|(_, t)| t)
}

fn tokenizer(encoding: OpenAiEncoding) -> &'static bpe_openai::Tokenizer {
    encoding.tokenizer()
}

/// `decode(encode(text)[:n])` with Python's slice semantics: `n >= 0` keeps the first `n`
/// tokens, a negative `n` drops the last `-n`. Bytes of a character cut in two become U+FFFD
/// (tiktoken decodes with `errors="replace"`). The caller checks
/// [`disallowed_special`] first, as tiktoken does.
pub fn truncate_to_tokens(encoding: OpenAiEncoding, text: &str, n: i128) -> String {
    let tokenizer = tokenizer(encoding);
    let keep = if n >= 0 {
        n
    } else {
        let total = tokenizer.split(text).map(|p| tokenizer.bpe.count(p.as_bytes())).sum::<usize>() as i128;
        (total + n).max(0)
    };
    let mut left = usize::try_from(keep).unwrap_or(usize::MAX);
    let mut end = 0;
    for piece in tokenizer.split(text) {
        if left == 0 {
            break;
        }
        let count = tokenizer.bpe.count(piece.as_bytes());
        if count <= left {
            left -= count;
            end += piece.len();
            continue;
        }
        // the cut falls inside this piece: its first `left` tokens
        let tokens = tokenizer.bpe.encode_via_backtracking(piece.as_bytes());
        let bytes: usize = tokens[..left].iter().map(|&t| tokenizer.bpe.token_len(t)).sum();
        let mut out = text[..end].to_string();
        out.push_str(&String::from_utf8_lossy(&piece.as_bytes()[..bytes]));
        return out;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(encoding: OpenAiEncoding, text: &str, n: i128) -> String {
        let bpe = match encoding {
            OpenAiEncoding::O200kBase => tiktoken_rs::o200k_base().unwrap(),
            OpenAiEncoding::Cl100kBase => tiktoken_rs::cl100k_base().unwrap(),
        };
        let tokens = bpe.encode_ordinary(text);
        let len = tokens.len() as i128;
        let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) } as usize;
        let bytes: Vec<u8> =
            tokens[..keep].iter().flat_map(|&t| bpe.decode_bytes(&[t]).expect("token decodes")).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[test]
    fn cuts_where_tiktoken_cuts() {
        let texts = [
            "The quick brown fox jumps over the lazy dog.",
            "日本語のテキスト👨‍👩‍👧‍👦 and 한국어 text, mixed: ünïcödé",
            "fn main() {\n    println!(\"{}\", 1 + 2);\n}\n\n\n",
            "",
            "x",
        ];
        for encoding in [OpenAiEncoding::O200kBase, OpenAiEncoding::Cl100kBase] {
            for text in texts {
                for n in [-100, -7, -1, 0, 1, 2, 3, 5, 8, 13, 40, 1000, i128::from(i64::MAX)] {
                    assert_eq!(
                        truncate_to_tokens(encoding, text, n),
                        reference(encoding, text, n),
                        "{encoding:?} {text:?} {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_cut_through_a_character_leaves_a_replacement_character() {
        // one CJK character is several tokens in cl100k
        let cut = truncate_to_tokens(OpenAiEncoding::Cl100kBase, "語", 1);
        assert_eq!(cut, "\u{fffd}");
    }

    #[test]
    fn maps_model_names_as_tiktoken() {
        use OpenAiEncoding::*;
        assert_eq!(encoding_for_model("gpt-4o"), Ok(O200kBase));
        assert_eq!(encoding_for_model("gpt-4o-mini-2024-07-18"), Ok(O200kBase));
        assert_eq!(encoding_for_model("gpt-4.1-nano"), Ok(O200kBase));
        assert_eq!(encoding_for_model("gpt-4"), Ok(Cl100kBase));
        assert_eq!(encoding_for_model("gpt-4-turbo"), Ok(Cl100kBase));
        assert_eq!(encoding_for_model("gpt-3.5-turbo-0613"), Ok(Cl100kBase));
        assert_eq!(encoding_for_model("text-embedding-ada-002"), Ok(Cl100kBase));
        assert_eq!(encoding_for_model("gpt-5.2-codex"), Ok(O200kBase));
        assert!(matches!(encoding_for_model("claude-3-5-sonnet"), Err(EncodingError::UnknownModel(_))));
        assert!(matches!(encoding_for_model("davinci"), Err(EncodingError::NotEmbedded { .. })));
    }

    #[test]
    fn finds_the_leftmost_special_token() {
        use OpenAiEncoding::*;
        assert_eq!(
            disallowed_special(Cl100kBase, "a <|fim_prefix|> b <|endoftext|>"),
            Some("<|fim_prefix|>")
        );
        assert_eq!(disallowed_special(O200kBase, "a <|fim_prefix|> b <|endoftext|>"), Some("<|endoftext|>"));
        assert_eq!(disallowed_special(O200kBase, "a <|fim_prefix|>"), None);
        assert_eq!(disallowed_special(Cl100kBase, "plain <| text |>"), None);
    }
}
