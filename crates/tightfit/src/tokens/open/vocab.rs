//! Token lists of byte-level BPE vocabularies: the compact form embedded in the crate, and the
//! two file forms a user may have (a tiktoken file, a HuggingFace `tokenizer.json`), reduced to
//! one form so that one digest identifies a vocabulary whatever file it came from.

use std::collections::HashMap;
use std::io::Read;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// Tokens in rank order (the position of a token is its rank, as tiktoken reads it).
pub(super) type Tokens = Vec<Vec<u8>>;

/// The tokens of an embedded `*.tokens.gz` file (see `scripts/gen_vocabularies.py`): gzip of
/// one length byte and the bytes of each token. Costs a few milliseconds per 150,000 tokens.
pub(in crate::tokens) fn read_compact_gz(gz: &[u8]) -> Tokens {
    let mut raw = Vec::with_capacity(gz.len() * 2);
    flate2::read::GzDecoder::new(gz).read_to_end(&mut raw).expect("an embedded vocabulary is valid gzip");
    let mut tokens = Vec::with_capacity(raw.len() / 7);
    let mut rest = raw.as_slice();
    while let Some((&len, tail)) = rest.split_first() {
        let (token, tail) = tail.split_at(len as usize);
        tokens.push(token.to_vec());
        rest = tail;
    }
    tokens
}

/// The sha256 of a token list in the compact form (one length byte, then the bytes, per
/// token): what a loaded file is checked against before a BPE is built from it.
pub(super) fn digest(tokens: &[Vec<u8>]) -> String {
    let mut hasher = Sha256::new();
    for token in tokens {
        hasher.update([token.len().min(255) as u8]);
        hasher.update(token);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The tokens of a tiktoken file (`base64 rank` per line), in rank order.
pub(super) fn read_tiktoken(text: &str) -> Result<Tokens, String> {
    let mut ranked = Vec::new();
    for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let mut fields = line.split_whitespace();
        let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(format!("line {}: expected `base64 rank`", index + 1));
        };
        let token = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|e| format!("line {}: {e}", index + 1))?;
        let rank: usize = rank.parse().map_err(|e| format!("line {}: rank: {e}", index + 1))?;
        ranked.push((rank, token));
    }
    in_rank_order(ranked)
}

/// The byte-level vocabulary of a HuggingFace `tokenizer.json` (`model.vocab`, GPT-2's
/// byte-to-character table undone), in id order from its first byte-level id. Added tokens
/// (`added_tokens`) and entries that are not byte-level (DeepSeek's ids 0–2) are not part of it.
pub(super) fn read_tokenizer_json(json: &serde_json::Value) -> Result<Tokens, String> {
    let vocab = json
        .pointer("/model/vocab")
        .and_then(|v| v.as_object())
        .ok_or("model.vocab: expected an object of token to id")?;
    let added: std::collections::HashSet<u64> = json
        .get("added_tokens")
        .and_then(|a| a.as_array())
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("id").and_then(|id| id.as_u64()))
        .collect();
    let decode = gpt2_byte_decoder();
    let mut ranked = Vec::with_capacity(vocab.len());
    for (token, id) in vocab {
        let id = id.as_u64().ok_or_else(|| format!("model.vocab[{token:?}]: expected an id"))?;
        if added.contains(&id) {
            continue;
        }
        if let Some(bytes) = token.chars().map(|c| decode.get(&c).copied()).collect::<Option<Vec<u8>>>() {
            ranked.push((id as usize, bytes));
        }
    }
    let first = ranked.iter().map(|(id, _)| *id).min().unwrap_or(0);
    in_rank_order(ranked.into_iter().map(|(id, token)| (id - first, token)).collect())
}

fn in_rank_order(mut ranked: Vec<(usize, Vec<u8>)>) -> Result<Tokens, String> {
    ranked.sort_unstable_by_key(|(rank, _)| *rank);
    if let Some((position, (rank, _))) = ranked.iter().enumerate().find(|(i, (rank, _))| i != rank) {
        return Err(format!("ranks are not 0..{}: rank {rank} at position {position}", ranked.len()));
    }
    Ok(ranked.into_iter().map(|(_, token)| token).collect())
}

/// GPT-2's table from the printable characters of byte-level vocabularies to bytes.
fn gpt2_byte_decoder() -> HashMap<char, u8> {
    let printable =
        |b: u32| (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
    let mut extra = 0;
    (0..=255u32)
        .map(|b| {
            let c = if printable(b) {
                b
            } else {
                extra += 1;
                255 + extra
            };
            (char::from_u32(c).expect("a valid char"), b as u8)
        })
        .collect()
}

/// The tokens that byte-pair merging by rank cannot produce from their own bytes (tiktoken
/// and HuggingFace with `ignore_merges` still give them when a whole piece equals one).
/// The `bpe` crate refuses such tokens, so they are counted apart. Cost: one naive merge per
/// token, O(len²) lookups each (about 0.1 s for 128,000 tokens).
pub(super) fn unreachable_tokens(tokens: &[Vec<u8>]) -> Vec<usize> {
    let ranks: HashMap<&[u8], usize> = tokens.iter().enumerate().map(|(i, t)| (t.as_slice(), i)).collect();
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = Vec::new();
    for (id, token) in tokens.iter().enumerate().filter(|(_, t)| t.len() > 1) {
        parts.clear();
        parts.extend(token.chunks(1));
        while parts.len() > 1 {
            let best = (0..parts.len() - 1)
                .filter_map(|i| {
                    let joined =
                        &token[offset(token, parts[i])..offset(token, parts[i + 1]) + parts[i + 1].len()];
                    ranks.get(joined).map(|&rank| (rank, i, joined))
                })
                .min();
            let Some((_, i, joined)) = best else { break };
            parts[i] = joined;
            parts.remove(i + 1);
        }
        if parts.len() != 1 {
            out.push(id);
        }
    }
    out
}

/// Where `part` (a subslice of `whole`) starts in `whole`.
fn offset(whole: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_decoder_covers_every_byte_once() {
        let decode = gpt2_byte_decoder();
        let mut bytes: Vec<u8> = decode.values().copied().collect();
        bytes.sort_unstable();
        assert_eq!(bytes, (0..=255).collect::<Vec<u8>>());
        assert_eq!(decode[&'Ġ'], b' ');
        assert_eq!(decode[&'Ċ'], b'\n');
        assert_eq!(decode[&'a'], b'a');
    }

    #[test]
    fn tiktoken_files_are_read_in_rank_order_and_bad_lines_are_named() {
        let tokens = read_tiktoken("Yg== 1\nYQ== 0\n\n").unwrap();
        assert_eq!(tokens, vec![b"a".to_vec(), b"b".to_vec()]);
        assert!(read_tiktoken("YQ== 0\nYg==\n").unwrap_err().starts_with("line 2"));
        assert!(read_tiktoken("YQ== 0\nYg== 5\n").unwrap_err().contains("rank 5"));
    }

    #[test]
    fn a_token_that_merges_cannot_reach_is_found() {
        let tokens = |list: &[&str]| list.iter().map(|t| t.as_bytes().to_vec()).collect::<Vec<_>>();
        // "abc": no pair of its bytes is a token, so merging never gets past a, b, c
        assert_eq!(unreachable_tokens(&tokens(&["a", "b", "c", "abc"])), vec![3]);
        // with "ab", merging goes a+b, then ab+c
        assert!(unreachable_tokens(&tokens(&["a", "b", "c", "ab", "abc"])).is_empty());
    }
}
