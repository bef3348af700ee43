//! The engine's integration tests: one binary (link time on 2 cores), one module per topic.

mod convert;
mod counting;
mod errors;
mod fit;
mod gemini;
mod generate;
#[cfg(feature = "inspect")]
mod inspect;
mod layers;
mod models;
mod offload;
mod open_models;
mod props;
mod responses;
mod roundtrip;
mod session;
mod session_props;
mod step_props;
mod units;
mod validate;

use std::path::PathBuf;

/// The shared corpus beside the repository (`../shared`): real transcripts and the peers'
/// recorded outputs. Tests read it in place; a missing corpus fails the test.
pub fn shared(relative: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(relative);
    assert!(path.exists(), "missing {} (the shared corpus must sit beside the repository)", path.display());
    path
}

/// An OpenAI tool call with this id (function `f`, no arguments).
pub fn call(id: &str) -> serde_json::Value {
    serde_json::json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
}

/// An OpenAI tool message answering the call `id`.
pub fn result(id: &str) -> serde_json::Value {
    serde_json::json!({"role": "tool", "tool_call_id": id, "content": "r"})
}

/// Every JSONL file of real conversations.
pub fn data_files() -> Vec<PathBuf> {
    let files = jsonl_files("data");
    assert!(files.len() >= 7, "expected the seven data files, found {}", files.len());
    files
}

/// The JSONL files of a folder of the shared corpus, in name order.
pub fn jsonl_files(folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(shared(folder))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The lines of a JSONL file.
pub fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}
