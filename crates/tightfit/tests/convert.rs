//! Conversion between OpenAI and Anthropic shapes.

use serde_json::json;
use tightfit::format::{self, convert, Format, FormatHint};
use tightfit::message::Part;
use tightfit::{units, UnitKind};

#[test]
fn openai_tool_calls_become_tool_use_and_results_one_user_message() {
    let body = json!({"model": "m", "max_completion_tokens": 100, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "name": "ana", "content": [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}}]},
        {"role": "assistant", "content": "Checking.", "reasoning_content": "hmm", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "user", "content": "and?"}
    ], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]});
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    let converted = convert(&conversation, Format::Anthropic);
    let out = format::to_value(&converted.conversation, Format::Anthropic);
    assert_eq!(
        out,
        json!({"model": "m", "system": "Be brief.", "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "c1", "name": "f", "input": {"x": 1}},
                {"type": "tool_use", "id": "c2", "name": "g", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "one"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "two"},
                {"type": "text", "text": "and?"}]}
        ], "tools": [{"name": "f", "input_schema": {"type": "object"}}], "max_tokens": 100})
    );
    // what did not carry over is said, with the message index
    assert!(
        converted.notes.iter().any(|n| n.starts_with("messages[1]: dropped `name`")),
        "{:?}",
        converted.notes
    );
    assert!(
        converted.notes.iter().any(|n| n.starts_with("messages[2]: dropped unsigned reasoning")),
        "{:?}",
        converted.notes
    );
    // the converted history still groups the calls with their results
    let kinds: Vec<UnitKind> = units(&converted.conversation.messages).iter().map(|u| u.kind).collect();
    assert_eq!(kinds, vec![UnitKind::Instruction, UnitKind::UserTurn, UnitKind::AssistantStep]);
}

#[test]
fn anthropic_blocks_become_openai_messages_and_back() {
    let body = json!({"model": "claude", "max_tokens": 50, "system": "S", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": [1, 2]}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "res", "is_error": true},
            {"type": "text", "text": "next"}]}
    ]});
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    let converted = convert(&conversation, Format::OpenAi);
    let out = format::to_value(&converted.conversation, Format::OpenAi);
    assert_eq!(
        out,
        json!({"model": "claude", "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "reasoning_content": "plan", "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":[1,2]}"}}]},
            {"role": "tool", "content": "res", "tool_call_id": "t1"},
            {"role": "user", "content": "next"}
        ], "max_tokens": 50})
    );
    assert!(converted.notes.iter().any(|n| n.contains("signature")));
    assert!(converted.notes.iter().any(|n| n.contains("error")));

    // and back: the tool result returns to the head of the user message
    let back = convert(&converted.conversation, Format::Anthropic).conversation;
    let user = &back.messages[3];
    assert!(matches!(user.parts[0], Part::ToolResult(_)));
    assert!(matches!(&user.parts[1], Part::Text(t) if t.text == "next"));
}

#[test]
fn real_agent_runs_convert_to_anthropic_with_every_call_answered() {
    for name in ["agent_tau_bench_airline_gpt4o.jsonl", "agent_mini_swe_deepseek_reasoner.jsonl"] {
        for line in crate::lines(&crate::shared(&format!("data/{name}"))).iter().take(20) {
            let conversation = format::parse_str(line, FormatHint::Auto).unwrap();
            let converted = convert(&conversation, Format::Anthropic).conversation;
            let text = format::to_string(&converted, Format::Anthropic);
            let reread = format::parse_str(&text, FormatHint::Exactly(Format::Anthropic)).unwrap();
            for unit in units(&reread.messages) {
                assert!(unit.unanswered_calls.is_empty(), "{name}: {unit:?}");
                assert_ne!(unit.kind, UnitKind::OrphanResults, "{name}");
            }
            // roles alternate after the system prompt
            for pair in reread.messages[1..].windows(2) {
                assert_ne!(pair[0].role, pair[1].role, "{name}");
            }
        }
    }
}

#[test]
fn empty_text_beside_tool_calls_is_dropped_for_anthropic_and_noted() {
    let body = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}]}
    ], "tool_choice": "auto"});
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    let converted = convert(&conversation, Format::Anthropic);
    let assistant = &converted.conversation.messages[1];
    assert!(matches!(assistant.parts.as_slice(), [Part::ToolCall(_)]), "{:?}", assistant.parts);
    assert!(tightfit::validate(&converted.conversation.messages, Format::Anthropic).is_empty());
    let notes = converted.notes.join("\n");
    assert!(notes.contains("messages[1]: dropped empty text"), "{notes}");
    assert!(notes.contains("messages[3]: dropped an image's `detail`"), "{notes}");
    assert!(notes.contains("\"tool_choice\""), "{notes}");
}
