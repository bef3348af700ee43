//! `tightfit validate`: each violation with its message index and reason; exit code 1 if any.

use serde_json::Value;

use crate::{shared, stderr, stdout, tightfit};

const BROKEN: &str = r#"[
  {"role": "tool", "tool_call_id": "a", "content": "stray"},
  {"role": "user", "content": "go"},
  {"role": "assistant", "content": null, "tool_calls": [
    {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
  {"role": "user", "content": "next"}
]"#;

#[test]
fn a_valid_history_passes() {
    let output = tightfit(&["validate", "data/examples/agent_session.json"], None);
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
    assert!(stderr(&output).contains("1 conversation(s) valid for openai"), "{}", stderr(&output));
}

#[test]
fn violations_name_the_message_and_the_reason() {
    let output = tightfit(&["validate", "-"], Some(BROKEN));
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("messages[0]"), "the leading tool result: {text}");
    assert!(text.contains("messages[2]"), "the unanswered call: {text}");
    assert!(text.contains("\"b\""), "names the call: {text}");

    let json = tightfit(&["validate", "-", "--json"], Some(BROKEN));
    assert_eq!(json.status.code(), Some(1));
    let lines: Vec<Value> = stdout(&json).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 2);
    assert!(lines.iter().all(|l| l["line"] == 1 && l["index"].is_u64() && l["rule"].is_string()));
}

#[test]
fn anthropic_rules_apply_on_request() {
    // valid for OpenAI, but Anthropic wants the first message from the user
    let input = r#"[{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "hi"}]"#;
    assert!(tightfit(&["validate", "-"], Some(input)).status.success());
    let output = tightfit(&["validate", "-", "--provider", "anthropic"], Some(input));
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("messages[0]"), "{}", stdout(&output));
}

#[test]
fn every_real_agent_run_is_valid_for_openai() {
    let file = shared("data/agent_tau_bench_airline_gpt4o.jsonl");
    let output = tightfit(&["validate", file.to_str().unwrap()], None);
    assert!(output.status.success(), "{}", stdout(&output));
    assert!(stderr(&output).contains("200 conversation(s) valid for openai"), "{}", stderr(&output));
}
