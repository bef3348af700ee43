//! Gemini `contents` through the command line: `--format gemini`, fitted in its own shape,
//! validated by its own rules (`--provider gemini`).

use serde_json::{json, Value};
use tightfit::format::{self, Format, FormatHint};
use tightfit::validate::validate;

use crate::{stderr, stdout, tightfit};

/// An agent run in Gemini contents: each round a call and a long response.
fn agent_run(rounds: usize) -> Value {
    let mut contents = vec![json!({"role": "user", "parts": [{"text": "Fix the failing test."}]})];
    for i in 0..rounds {
        contents.push(json!({"role": "model", "parts": [
            {"functionCall": {"name": "bash", "args": {"cmd": format!("cat src/file{i}.py")}}, "thoughtSignature": "c2ln"}]}));
        contents.push(json!({"role": "user", "parts": [
            {"functionResponse": {"name": "bash", "response": {"result": format!("line {i} of the file\n").repeat(60)}}}]}));
    }
    json!({"model": "gemini-2.5-pro", "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
           "contents": contents,
           "tools": [{"functionDeclarations": [{"name": "bash", "parameters": {"type": "object"}}]}],
           "generationConfig": {"maxOutputTokens": 256}})
}

#[test]
fn a_gemini_request_is_fitted_counted_and_validated_in_its_own_shape() {
    let body = agent_run(12).to_string();
    let output = tightfit(&["fit", "-", "--budget", "3000"], Some(&body));
    assert!(output.status.success(), "{}", stderr(&output));
    let fitted: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(fitted["systemInstruction"]["parts"][0]["text"], "You are a coding agent.");
    assert_eq!(fitted["tools"][0]["functionDeclarations"][0]["name"], "bash");
    assert_eq!(fitted["generationConfig"]["maxOutputTokens"], 256);
    let conversation = format::parse_value(fitted.clone(), FormatHint::Exactly(Format::Gemini)).unwrap();
    assert_eq!(validate(&conversation.messages, Format::Gemini), vec![]);
    assert!(fitted.to_string().len() < body.len(), "nothing was cut");

    let output = tightfit(&["count", "-", "--format", "gemini", "--json"], Some(&body));
    assert!(output.status.success(), "{}", stderr(&output));
    let count: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(count["model"], "google/gemini-2.5-pro");
    // no public Gemini tokenizer: the count is the registry's estimate, and says so
    assert_eq!(count["exact"], false);

    let output = tightfit(&["validate", "-", "--provider", "gemini"], Some(&body));
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn provider_gemini_applies_its_rules_and_plain_messages_stay_chat() {
    let broken = r#"{"contents": [{"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f"}}, {"functionCall": {"name": "g"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]}"#;
    let output = tightfit(&["validate", "-", "--provider", "gemini", "--json"], Some(broken));
    assert_eq!(output.status.code(), Some(1));
    let rules: Vec<(u64, String)> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["index"].as_u64().unwrap(), v["rule"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(rules, vec![(1, "UnansweredToolCall".to_string()), (2, "ResponseCountMismatch".to_string())]);

    // plain Chat Completions messages for a Gemini model are read and written as they came
    let plain = r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]"#;
    let output = tightfit(&["fit", "-", "--model", "gemini-2.5-pro", "--budget", "1000"], Some(plain));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&output)).unwrap(),
        serde_json::from_str::<Value>(plain).unwrap()
    );
    // read as Gemini, they are an error naming the message
    let output = tightfit(&["count", "-", "--format", "gemini", "--model", "gemini-2.5-pro"], Some(plain));
    assert!(!output.status.success());
    assert!(stderr(&output).contains("contents[0]"), "{}", stderr(&output));
}
