//! HuggingFace `tokenizer.json` files, read from a local path (never from a hub), for open
//! models such as Llama, Qwen or Mistral.

use std::path::Path;

use super::{TokenCounter, TokenizerError};

/// A tokenizer loaded from a `tokenizer.json` file.
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    name: String,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer").field("name", &self.name).finish()
    }
}

impl HfTokenizer {
    /// Loads `path`. The counter's name (its cache identity) is `hf:` and the file's content
    /// hash, so two copies of one file share cache entries and an edited file does not.
    pub fn from_file(path: &Path) -> Result<HfTokenizer, TokenizerError> {
        let load_error = |reason: String| TokenizerError::Load { path: path.display().to_string(), reason };
        let bytes = std::fs::read(path).map_err(|e| load_error(e.to_string()))?;
        HfTokenizer::from_bytes(&bytes).map_err(|e| match e {
            TokenizerError::Load { reason, .. } => load_error(reason),
            other => other,
        })
    }

    /// Loads a tokenizer from the bytes of a `tokenizer.json`.
    pub fn from_bytes(bytes: &[u8]) -> Result<HfTokenizer, TokenizerError> {
        let inner = tokenizers::Tokenizer::from_bytes(bytes)
            .map_err(|e| TokenizerError::Load { path: "<bytes>".into(), reason: e.to_string() })?;
        let name = format!("hf:{:016x}", xxhash_rust::xxh3::xxh3_64(bytes));
        Ok(HfTokenizer { inner, name })
    }
}

impl TokenCounter for HfTokenizer {
    fn name(&self) -> &str {
        &self.name
    }

    /// Counts without the special tokens a template would add (the framing model adds
    /// per-message overhead separately). A text the tokenizer cannot encode counts as its
    /// byte length, an upper bound for byte-level vocabularies.
    fn count(&self, text: &str) -> usize {
        match self.inner.encode_fast(text, false) {
            Ok(encoding) => encoding.len(),
            Err(_) => text.len(),
        }
    }
}
