//! OpenAI Responses API input through the command line: `--format responses`, fitted in its
//! own shape, validated by its own rules.

use serde_json::{json, Value};
use tightfit::format::{self, Format, FormatHint};
use tightfit::tokens::{ChatCounter, OpenAiEncoding};
use tightfit::validate::validate;

use crate::{stderr, stdout, tightfit};

/// An agent run in Responses items: each round a reasoning item, a call and a long output.
fn agent_run(rounds: usize) -> Value {
    let mut input = vec![json!({"role": "user", "content": "Fix the failing test."})];
    for i in 0..rounds {
        input.push(json!({"type": "reasoning", "id": format!("rs_{i}"),
            "summary": [{"type": "summary_text", "text": format!("Look at file {i}.")}], "encrypted_content": "gAAAA"}));
        input.push(json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": format!("call_{i}"),
            "name": "bash", "arguments": format!("{{\"cmd\":\"cat src/file{i}.py\"}}")}));
        input.push(json!({"type": "function_call_output", "call_id": format!("call_{i}"),
            "output": format!("line {i} of the file\n").repeat(60)}));
    }
    json!({"model": "gpt-4o", "instructions": "You are a coding agent.", "input": input,
           "tools": [{"type": "function", "name": "bash", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]})
}

#[test]
fn a_responses_request_is_fitted_in_its_own_shape() {
    let body = agent_run(12).to_string();
    let output = tightfit(&["fit", "-", "--budget", "2500"], Some(&body));
    assert!(output.status.success(), "{}", stderr(&output));
    let fitted: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(fitted["instructions"], "You are a coding agent.");
    assert_eq!(fitted["tools"][0]["name"], "bash");
    let conversation = format::parse_value(fitted.clone(), FormatHint::Exactly(Format::Responses)).unwrap();
    assert_eq!(validate(&conversation.messages, Format::Responses), vec![]);
    let counter = ChatCounter::openai(OpenAiEncoding::O200kBase);
    let total = counter.count(&conversation.messages, conversation.tools.as_deref()).total;
    assert!(total <= 2500, "{total} tokens");
    // every reasoning item kept is followed by its call
    let input = fitted["input"].as_array().unwrap();
    for (i, item) in input.iter().enumerate() {
        if item["type"] == "reasoning" {
            assert_eq!(input[i + 1]["type"], "function_call", "{i}: {}", input[i + 1]);
        }
    }
}

#[test]
fn format_responses_reads_plain_items_and_validate_applies_its_rules() {
    let plain = r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]"#;
    let output = tightfit(
        &["fit", "-", "--format", "responses", "--model", "gpt-4o", "--budget", "1000"],
        Some(plain),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&output)).unwrap(),
        serde_json::from_str::<Value>(plain).unwrap()
    );

    let broken = r#"[{"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"role": "user", "content": "again"},
        {"type": "function_call_output", "call_id": "nobody", "output": "x"}]"#;
    let output = tightfit(&["validate", "-", "--json"], Some(broken));
    assert_eq!(output.status.code(), Some(1));
    let rules: Vec<(u64, String)> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["index"].as_u64().unwrap(), v["rule"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(rules, vec![(1, "LoneReasoning".to_string()), (3, "OrphanToolResult".to_string())]);
    let output = tightfit(
        &["validate", "-", "--provider", "responses"],
        Some(r#"[{"role": "user", "content": "hi"}]"#),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("valid for responses"), "{}", stderr(&output));
}
