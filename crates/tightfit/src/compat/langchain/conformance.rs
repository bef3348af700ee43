//! The langchain-core conformance corpus (`../shared/conformance/`) run through the engine
//! alone, without Python: with the tool-pair repair off, every trim case must give exactly
//! LangChain's output (the repair is tested by the Python runner under the corpus's rule 2),
//! and every `count_tokens_approximately` case its count. The corpus's `tiktoken_cl100k`
//! counter is rebuilt from its definition with the engine's cl100k_base encoding.

use std::convert::Infallible;
use std::path::PathBuf;

use serde_json::Value;

use super::*;
use crate::tokens::{OpenAiEncoding, TokenCounter};

fn cases(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (the shared corpus must sit beside the repository)", path.display())
    });
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The corpus's "tiktoken_cl100k" counter: per message 3 + content + (1 + name) + per call
/// (3 + name + arguments) + a tool message's call id.
struct Cl100k;

impl Cl100k {
    fn t(text: &str) -> usize {
        OpenAiEncoding::Cl100kBase.count(text)
    }

    fn message(m: &LangchainMessage) -> usize {
        let content = match &m.content {
            LangchainContent::Text(s) => Cl100k::t(s),
            LangchainContent::Blocks(blocks) => blocks
                .iter()
                .map(|b| match b {
                    Value::String(s) => Cl100k::t(s),
                    b if b["type"] == "text" => Cl100k::t(b["text"].as_str().unwrap_or("")),
                    b if b["type"] == "image_url" || b["type"] == "image" => 85,
                    // json.dumps(block, ensure_ascii=False, sort_keys=True): not in the corpus
                    b => Cl100k::t(&b.to_string()),
                })
                .sum(),
            other => panic!("unexpected content {other:?}"),
        };
        let name = m.name.as_deref().filter(|n| !n.is_empty()).map_or(0, |n| 1 + Cl100k::t(n));
        let calls: usize = m
            .to_openai()
            .and_then(|v| v.get("tool_calls").cloned())
            .and_then(|c| c.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|c| {
                3 + Cl100k::t(c["function"]["name"].as_str().unwrap())
                    + Cl100k::t(c["function"]["arguments"].as_str().unwrap())
            })
            .sum();
        3 + content + name + calls + m.tool_call_id.as_deref().map_or(0, Cl100k::t)
    }
}

impl ListCounter<Infallible> for Cl100k {
    fn count(&mut self, source: &dyn Source<Infallible>, items: &[Item<'_>]) -> Result<f64, Infallible> {
        let mut sum = 0;
        for item in items {
            let message = item_message(source, *item)?;
            sum += Cl100k::message(&message);
        }
        Ok(sum as f64)
    }
}

fn type_names(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => Some(items.iter().map(|v| v.as_str().unwrap().to_string()).collect()),
        other => panic!("unexpected type spec {other}"),
    }
}

/// The OpenAI dict of a kept message: the input's, with the cut content.
fn output(input: &[Value], kept: &Kept) -> Value {
    let mut out = input[kept.index].clone();
    match &kept.partial {
        None => {}
        Some(PartialContent::Text(s)) => out["content"] = Value::String(s.clone()),
        Some(PartialContent::Blocks { start, end, .. }) => {
            out["content"] = Value::Array(out["content"].as_array().unwrap()[*start..*end].to_vec())
        }
    }
    out
}

#[test]
fn every_trim_case_gives_langchains_output() {
    let all = cases("langchain_core_trim_messages.jsonl");
    assert_eq!(all.len(), 884);
    for case in &all {
        let id = case["case_id"].as_str().unwrap();
        let p = &case["params"];
        let step = LangchainTrim {
            max_tokens: None,
            strategy: Strategy::from_name(p["strategy"].as_str().unwrap_or("last")).unwrap(),
            allow_partial: p["allow_partial"].as_bool().unwrap_or(false),
            include_system: p["include_system"].as_bool().unwrap_or(false),
            start_on: type_names(&p["start_on"]),
            end_on: type_names(&p["end_on"]),
            counter: TrimCounter::Messages,
            keep_tool_pairs: false,
        };
        if let Some(error) = case["output"].get("error") {
            let e = step.check_args().expect_err(id);
            assert!(error.as_str().unwrap().ends_with(&e.reason), "{id}: {e}");
            continue;
        }
        let input = case["input"].as_array().unwrap();
        let messages: Vec<LangchainMessage> =
            input.iter().map(|m| LangchainMessage::from_openai(m).unwrap()).collect();
        let max = p["max_tokens"].as_f64().unwrap();
        let mut counter: Box<dyn ListCounter<Infallible>> = match p["token_counter"].as_str().unwrap() {
            "approximate" => Box::new(Approximate::default()),
            "len" => Box::new(MessageCount),
            "tiktoken_cl100k" => Box::new(Cl100k),
            other => panic!("{id}: unknown counter {other}"),
        };
        let kept = match step.trim(&messages, max, counter.as_mut(), &mut Lines) {
            Ok(k) => k,
            Err(never) => match never {},
        };
        let ours: Vec<Value> = kept.iter().map(|k| output(input, k)).collect();
        assert_eq!(Value::Array(ours), case["output"], "{id}");
    }
}

#[test]
fn every_count_case_gives_langchains_count() {
    let all = cases("langchain_core_count_tokens_approximately.jsonl");
    assert_eq!(all.len(), 235);
    for case in &all {
        let p = &case["params"];
        let mut a = Approximate::default();
        if let Some(v) = p["chars_per_token"].as_f64() {
            a.chars_per_token = v;
        }
        if let Some(v) = p["extra_tokens_per_message"].as_f64() {
            a.extra_tokens_per_message = v;
        }
        if let Some(v) = p["count_name"].as_bool() {
            a.count_name = v;
        }
        if let Some(v) = p["tokens_per_image"].as_i64() {
            a.tokens_per_image = v;
        }
        let messages: Vec<LangchainMessage> = case["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| LangchainMessage::from_openai(m).unwrap())
            .collect();
        assert_eq!(Value::from(a.count(&messages, &[])), case["output"], "{}", case["case_id"]);
    }
}
