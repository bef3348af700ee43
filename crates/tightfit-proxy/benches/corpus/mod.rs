//! The agent conversation the overhead benchmark and the `fit_phases` example send.

use serde_json::{json, Value};

/// A request body of the first `messages` messages of a mini-SWE-agent run (DeepSeek, its
/// runs concatenated: 4,857 messages in all).
pub fn conversation(messages: usize) -> String {
    let path = format!("{}/../../../shared/data/extreme_long.jsonl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let record: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["id"] == "concat/mini-swe-deepseek/1M")
        .expect("the mini-swe concatenation of 1M tokens");
    let all = record["messages"].as_array().unwrap();
    assert!(all.len() >= messages, "{} messages, {messages} asked for", all.len());
    json!({"model": "gpt-4o", "max_tokens": 1024, "messages": &all[..messages]}).to_string()
}
