//! The provider rules: every violation named with its message index.

use crate::{call, result};
use serde_json::{json, Value};
use tightfit::format::{self, Format, FormatHint};
use tightfit::{validate, Rule};

fn violations(messages: Value, format: Format) -> Vec<(usize, Rule)> {
    let messages = format::parse_messages(messages, format).unwrap();
    validate(&messages, format).into_iter().map(|v| (v.index, v.rule)).collect()
}

#[test]
fn a_valid_openai_history_with_parallel_calls_out_of_order_passes() {
    let got = violations(
        json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            result("b"), result("a"),
            {"role": "assistant", "content": "done"}
        ]),
        Format::OpenAi,
    );
    assert_eq!(got, vec![]);
}

#[test]
fn openai_violations_name_the_message() {
    let got = violations(
        json!([
            {"role": "system", "content": "s"},
            result("x"),
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b"), call("b")]},
            result("a"),
            {"role": "user", "content": "hm"},
            result("b"),
            {"role": "tool", "content": "no id"},
            {"role": "tool_calls", "content": "ag2"}
        ]),
        Format::OpenAi,
    );
    assert_eq!(
        got,
        vec![
            (1, Rule::LeadingToolResult),
            (3, Rule::DuplicateCallId),
            (3, Rule::UnansweredToolCall),
            (6, Rule::OrphanToolResult),
            (7, Rule::MissingCallId),
            (8, Rule::UnsupportedRole),
        ]
    );
    let messages =
        format::parse_messages(json!([{"role": "user", "content": "go"}, result("zz")]), Format::OpenAi)
            .unwrap();
    let text = validate(&messages, Format::OpenAi)[0].to_string();
    assert_eq!(text, "messages[1]: answers call \"zz\", which no assistant message before it made");
}

#[test]
fn every_real_history_is_valid_for_openai() {
    for file in crate::data_files() {
        for line in crate::lines(&file) {
            let conversation = format::parse_str(&line, FormatHint::Auto).unwrap();
            let found = validate(&conversation.messages, Format::OpenAi);
            assert!(found.is_empty(), "{}: {}", file.display(), found[0]);
        }
    }
}

#[test]
fn anthropic_rules_alternation_result_placement_and_thinking() {
    let body = json!({"system": "s", "messages": [
        {"role": "assistant", "content": "I speak first"},
        {"role": "user", "content": "go"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t"},
            {"type": "tool_use", "id": "a", "name": "f", "input": {}},
            {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
        {"role": "user", "content": [
            {"type": "text", "text": "first"},
            {"type": "tool_result", "tool_use_id": "a", "content": "A"},
            {"type": "tool_result", "tool_use_id": "q", "content": "?"}]}
    ]});
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    let got: Vec<(usize, Rule)> =
        validate(&conversation.messages, Format::Anthropic).into_iter().map(|v| (v.index, v.rule)).collect();
    assert_eq!(
        got,
        vec![
            (1, Rule::FirstNotUser),
            (3, Rule::NotAlternating),
            (4, Rule::UnsignedThinking),
            (4, Rule::UnansweredToolCall),
            (5, Rule::ToolResultNotFirst),
            (5, Rule::ToolResultNotFirst),
            (5, Rule::OrphanToolResult),
        ]
    );
}

#[test]
fn anthropic_current_tool_turn_must_keep_its_thinking() {
    let body = |first: Value| {
        json!({"system": "s", "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "old", "signature": "s1"}, {"type": "text", "text": "hi"}]},
            {"role": "user", "content": "now use the tool"},
            {"role": "assistant", "content": [first, {"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "A"}]}
        ]})
    };
    let kept = format::parse_value(
        body(json!({"type": "thinking", "thinking": "plan", "signature": "s2"})),
        FormatHint::Auto,
    )
    .unwrap();
    assert_eq!(validate(&kept.messages, Format::Anthropic), vec![]);
    let lost =
        format::parse_value(body(json!({"type": "text", "text": "calling"})), FormatHint::Auto).unwrap();
    let got: Vec<(usize, Rule)> =
        validate(&lost.messages, Format::Anthropic).into_iter().map(|v| (v.index, v.rule)).collect();
    assert_eq!(got, vec![(4, Rule::MissingCurrentThinking)]);
}

#[test]
fn the_current_turn_starts_at_its_first_assistant_message() {
    // a multi-step tool loop: only the turn's first assistant message carries thinking
    let body = json!({"system": "s", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"},
            {"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "A"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "B"}]}
    ]});
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    assert_eq!(validate(&conversation.messages, Format::Anthropic), vec![]);
}

#[test]
fn anthropic_rejects_empty_text_and_accepts_a_developer_prompt_at_the_head() {
    let messages = format::parse_messages(
        json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": " "}]},
            {"role": "assistant", "content": ""}
        ]),
        Format::Anthropic,
    )
    .unwrap();
    let got: Vec<(usize, Rule)> =
        validate(&messages, Format::Anthropic).into_iter().map(|v| (v.index, v.rule)).collect();
    assert_eq!(got, vec![(1, Rule::EmptyText)], "a final empty assistant message is a prefill");
    let openai = format::parse_messages(
        json!([{"role": "developer", "content": "d"}, {"role": "user", "content": "hi"}]),
        Format::OpenAi,
    )
    .unwrap();
    assert_eq!(validate(&openai, Format::Anthropic), vec![]);
}
