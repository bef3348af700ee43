//! The Llama 3 vocabulary, read from a file the user already has.
//!
//! It is not embedded: the Llama 3.x Community License asks whoever redistributes it to pass the
//! agreement on, show "Built with Llama" and keep a notice, which would bind every user of
//! tightfit. Where it is looked for, in order (the first file found decides):
//!
//! 1. the `TIGHTFIT_LLAMA3_TOKENIZER` environment variable: a path to Meta's `tokenizer.model`
//!    (tiktoken form) or a Llama 3.x `tokenizer.json`;
//! 2. a path registered with [`set_llama3_search_path`] (the Python package registers the
//!    `llama_models` package it can import);
//! 3. an installed `llama-models` package (`pip install llama-models`):
//!    `lib/python3*/site-packages/llama_models/llama3/tokenizer.model` (also `dist-packages`,
//!    and `Lib/site-packages` on Windows) under `$VIRTUAL_ENV`, `$CONDA_PREFIX`, `./.venv`,
//!    `~/.local`, `/usr/local` and `/usr`;
//! 4. the HuggingFace hub cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
//!    `~/.cache/huggingface/hub`): `models--meta-llama--*Llama-3*/snapshots/*/tokenizer.json`.
//!    Read only; nothing is ever downloaded.
//!
//! A file is used only if its 128,000 tokens have the known digest (so the BPE is never built
//! from a list it could refuse); the search runs once per process.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use super::vocab::{self, Tokens};
use super::{OpenFamily, OpenTokenizer, LLAMA3_HASH_FACTOR};
use crate::tokens::TokenizerError;

/// The sha256 of Llama 3's 128,000 tokens in the compact form (see `vocab::digest`); the same
/// for Meta's `tokenizer.model` and the `tokenizer.json` of Llama 3, 3.1, 3.2 and 3.3.
pub(super) const LLAMA3_SHA256: &str = "8de55f737f9974d7fc0c5c891aeb99966717c5b5b3c04a6ce79c7d1dc3d3a30d";

/// The environment variable naming a Llama 3 tokenizer file.
const ENV: &str = "TIGHTFIT_LLAMA3_TOKENIZER";

/// Why a Llama model's count is an estimate when no vocabulary was found.
pub const LLAMA3_NOT_FOUND: &str =
    "Llama 3 tokenizer not found; pass --tokenizer (Python: tokenizer=), set TIGHTFIT_LLAMA3_TOKENIZER or install llama-models";

static SEARCH_PATH: RwLock<Option<PathBuf>> = RwLock::new(None);
static BUILT: OnceLock<Arc<OpenTokenizer>> = OnceLock::new();
static SEARCHED: OnceLock<Result<Arc<OpenTokenizer>, String>> = OnceLock::new();

/// Adds `path` (a Llama 3 `tokenizer.model` or `tokenizer.json`) to the places [`llama3`]
/// looks, after the environment variable. Only a search not yet run sees it.
pub fn set_llama3_search_path(path: PathBuf) {
    *SEARCH_PATH.write().unwrap_or_else(|e| e.into_inner()) = Some(path);
}

/// The Llama 3 counter from the first file found where the module documentation says, or why
/// there is none. Searched and built once per process (about 1 s in a release build).
pub fn llama3() -> Result<Arc<OpenTokenizer>, String> {
    if let Some(built) = BUILT.get() {
        return Ok(built.clone());
    }
    SEARCHED.get_or_init(search).clone()
}

fn search() -> Result<Arc<OpenTokenizer>, String> {
    let from_env = std::env::var_os(ENV).filter(|p| !p.is_empty()).map(PathBuf::from);
    match from_env {
        Some(path) => search_in(Some(path), Vec::new()),
        None => search_in(None, llama3_candidates()),
    }
}

/// The first of `from_env` (which alone decides when given) and `candidates` that holds the
/// vocabulary; the error says why none did.
fn search_in(from_env: Option<PathBuf>, candidates: Vec<PathBuf>) -> Result<Arc<OpenTokenizer>, String> {
    if let Some(path) = from_env {
        return load(&path).map_err(|e| format!("{LLAMA3_NOT_FOUND} ({ENV}: {e})"));
    }
    let mut rejected = Vec::new();
    for candidate in candidates {
        match load(&candidate) {
            Ok(tokenizer) => return Ok(tokenizer),
            Err(e) => rejected.push(e.to_string()),
        }
    }
    match rejected.first() {
        None => Err(LLAMA3_NOT_FOUND.to_string()),
        Some(first) => Err(format!("{LLAMA3_NOT_FOUND} ({first})")),
    }
}

/// Reads `path` and builds the counter if it holds the Llama 3 vocabulary.
fn load(path: &Path) -> Result<Arc<OpenTokenizer>, TokenizerError> {
    let load_error = |reason: String| TokenizerError::Load { path: path.display().to_string(), reason };
    let bytes = std::fs::read(path).map_err(|e| load_error(e.to_string()))?;
    let tokens =
        read_any(&bytes).ok_or_else(|| load_error("neither a tiktoken file nor a tokenizer.json".into()))?;
    let digest = vocab::digest(&tokens);
    if digest != LLAMA3_SHA256 {
        return Err(load_error(format!(
            "not the Llama 3 vocabulary ({} tokens, sha256 {digest})",
            tokens.len()
        )));
    }
    from_verified(tokens)
}

/// The token list of a tiktoken file or a byte-level `tokenizer.json`, or `None`.
pub(super) fn read_any(bytes: &[u8]) -> Option<Tokens> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.trim_start().starts_with('{') {
        let json: serde_json::Value = serde_json::from_str(text).ok()?;
        vocab::read_tokenizer_json(&json).ok()
    } else {
        vocab::read_tiktoken(text).ok()
    }
}

/// Builds (once per process) the counter from a list whose digest is [`LLAMA3_SHA256`].
pub(super) fn from_verified(tokens: Tokens) -> Result<Arc<OpenTokenizer>, TokenizerError> {
    let built = BUILT.get_or_init(|| {
        let unreachable = vocab::unreachable_tokens(&tokens);
        let mut whole = Vec::with_capacity(unreachable.len());
        let mut reachable = Vec::with_capacity(tokens.len());
        let mut next = unreachable.iter().peekable();
        for (id, token) in tokens.into_iter().enumerate() {
            if next.peek() == Some(&&id) {
                next.next();
                whole.push(token);
            } else {
                reachable.push(token);
            }
        }
        let added = added_tokens();
        let added: Vec<&str> = added.iter().map(String::as_str).collect();
        Arc::new(OpenTokenizer::build(OpenFamily::Llama3, reachable, LLAMA3_HASH_FACTOR, &added, whole))
    });
    Ok(built.clone())
}

/// Llama 3's special tokens, as Llama 3.0's `tokenizer.json` and Meta's `llama_models`
/// (3.1–3.3) name them: a few named ones and reserved ones numbered 0 to 250.
fn added_tokens() -> Vec<String> {
    let named = [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|finetune_right_pad_id|>",
        "<|step_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eom_id|>",
        "<|eot_id|>",
        "<|python_tag|>",
        "<|image|>",
    ];
    named
        .iter()
        .map(|s| s.to_string())
        .chain((0..=250).map(|n| format!("<|reserved_special_token_{n}|>")))
        .collect()
}

/// Every existing file the search would try after the environment variable, in order.
pub fn llama3_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(path) = SEARCH_PATH.read().unwrap_or_else(|e| e.into_inner()).clone() {
        out.push(path);
    }
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).map(PathBuf::from);
    let mut prefixes: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .iter()
        .filter_map(|var| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from))
        .collect();
    prefixes.push(PathBuf::from(".venv"));
    prefixes.extend(home.iter().map(|h| h.join(".local")));
    prefixes.extend([PathBuf::from("/usr/local"), PathBuf::from("/usr")]);
    for prefix in prefixes {
        out.extend(
            site_packages(&prefix).into_iter().map(|dir| dir.join("llama_models/llama3/tokenizer.model")),
        );
    }
    out.extend(hub_cache(home.as_deref()));
    out.retain(|path| path.is_file());
    out
}

/// `lib/python3*/{site,dist}-packages` and `Lib/site-packages` under a prefix.
fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut out = vec![prefix.join("Lib/site-packages")];
    let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
        return out;
    };
    let mut pythons: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path())
        .collect();
    pythons.sort();
    for python in pythons {
        out.push(python.join("site-packages"));
        out.push(python.join("dist-packages"));
    }
    out
}

/// `tokenizer.json` of Meta's Llama 3.x snapshots in the HuggingFace hub cache.
fn hub_cache(home: Option<&Path>) -> Vec<PathBuf> {
    let hub = std::env::var_os("HF_HUB_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
        .or_else(|| home.map(|h| h.join(".cache/huggingface/hub")));
    let Some(Ok(models)) = hub.map(std::fs::read_dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut repos: Vec<PathBuf> = models
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_lowercase();
            name.starts_with("models--meta-llama--") && name.contains("llama-3")
        })
        .map(|e| e.path())
        .collect();
    repos.sort();
    for repo in repos {
        let Ok(snapshots) = std::fs::read_dir(repo.join("snapshots")) else { continue };
        let mut snapshots: Vec<PathBuf> =
            snapshots.flatten().map(|e| e.path().join("tokenizer.json")).collect();
        snapshots.sort();
        out.extend(snapshots);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_the_llama_vocabulary_is_refused_by_its_digest() {
        let dir = std::env::temp_dir().join(format!("tightfit-llama-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("tokenizer.model");
        std::fs::write(&fake, "YQ== 0\nYg== 1\n").unwrap();
        let error = load(&fake).unwrap_err().to_string();
        assert!(error.contains("not the Llama 3 vocabulary (2 tokens"), "{error}");
        std::fs::write(&fake, "not a vocabulary").unwrap();
        assert!(load(&fake)
            .unwrap_err()
            .to_string()
            .contains("neither a tiktoken file nor a tokenizer.json"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_a_vocabulary_the_search_says_what_to_do() {
        assert_eq!(search_in(None, Vec::new()).unwrap_err(), LLAMA3_NOT_FOUND);
        let missing = std::env::temp_dir().join("tightfit-no-such-tokenizer.model");
        let error = search_in(Some(missing.clone()), vec![missing]).unwrap_err();
        assert!(error.starts_with(LLAMA3_NOT_FOUND), "{error}");
        assert!(error.contains("TIGHTFIT_LLAMA3_TOKENIZER: cannot load tokenizer"), "{error}");
    }

    #[test]
    fn installed_packages_are_found_under_a_prefix() {
        let prefix = std::env::temp_dir().join(format!("tightfit-prefix-{}", std::process::id()));
        let package = prefix.join("lib/python3.12/site-packages/llama_models/llama3");
        std::fs::create_dir_all(&package).unwrap();
        let dirs = site_packages(&prefix);
        assert!(dirs.contains(&prefix.join("lib/python3.12/site-packages")), "{dirs:?}");
        assert!(dirs.contains(&prefix.join("lib/python3.12/dist-packages")));
        std::fs::remove_dir_all(&prefix).unwrap();
    }

    #[test]
    fn the_special_tokens_cover_both_llama_3_generations() {
        let added = added_tokens();
        assert!(added.iter().any(|t| t == "<|eot_id|>"));
        assert!(added.iter().any(|t| t == "<|reserved_special_token_250|>"));
        assert_eq!(added.len(), 10 + 251);
    }
}
