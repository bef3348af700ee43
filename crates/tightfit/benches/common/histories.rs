//! The histories the `fit` bench and the `warm_fits` example measure, read from the shared
//! corpus beside the repository (not copied into it).

use std::path::PathBuf;

use serde_json::Value;
use tightfit::format::{self, Conversation, FormatHint};

/// A file of the shared corpus.
pub fn shared(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(relative)
}

/// The extreme histories (250k to 1M tokens), each as (its id, its JSON line).
pub fn extreme_lines() -> Vec<(String, String)> {
    std::fs::read_to_string(shared("data/extreme_long.jsonl"))
        .expect("the shared corpus beside the repository")
        .lines()
        .map(|line| {
            let id = serde_json::from_str::<Value>(line).unwrap()["id"].as_str().unwrap().to_string();
            (id, line.to_string())
        })
        .collect()
}

/// A history of `n` messages: the tau-bench concatenation repeated, call ids suffixed per copy.
pub fn repeated(n: usize) -> Conversation {
    let line = extreme_lines().into_iter().find(|(id, _)| id.contains("tau-bench")).unwrap().1;
    let record: Value = serde_json::from_str(&line).unwrap();
    let source = record["messages"].as_array().unwrap();
    let mut messages = Vec::with_capacity(n);
    let mut copy = 0;
    while messages.len() < n {
        for m in source.iter().skip(usize::from(copy > 0)) {
            if messages.len() == n {
                break;
            }
            let mut m = m.clone();
            if let Some(id) = m.get("tool_call_id").and_then(Value::as_str) {
                m["tool_call_id"] = Value::from(format!("{id}_c{copy}"));
            }
            if let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for call in calls {
                    let id = call["id"].as_str().unwrap().to_string();
                    call["id"] = Value::from(format!("{id}_c{copy}"));
                }
            }
            messages.push(m);
        }
        copy += 1;
    }
    format::parse_value(Value::Array(messages), FormatHint::Auto).unwrap()
}

/// [`repeated`] less its last messages when they leave calls unanswered, so that it ends on a
/// whole step, as a history handed to `fit` before a model call does: a history cut inside a
/// step would be repaired (a synthetic result written) by every fit.
pub fn repeated_whole(n: usize) -> Conversation {
    let mut conversation = repeated(n);
    let messages = &mut conversation.messages;
    while let Some(caller) = messages.iter().rposition(|m| m.tool_calls().next().is_some()) {
        let answered: Vec<&str> =
            messages[caller + 1..].iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
        if messages[caller].tool_calls().all(|c| c.id.as_deref().is_some_and(|id| answered.contains(&id))) {
            break;
        }
        messages.truncate(caller);
    }
    conversation
}
