//! Reading then writing gives back JSON equal to the input, for every real conversation and
//! every OpenAI-form input of the conformance corpus.

use serde_json::Value;
use tightfit::format::{self, Format, FormatHint};

use crate::{data_files, lines, shared};

fn assert_round_trip(value: Value, hint: FormatHint, what: &str) {
    let conversation = format::parse_value(value.clone(), hint).unwrap_or_else(|e| panic!("{what}: {e}"));
    let written = format::to_value(&conversation, conversation.format);
    if written != value {
        panic!("{what}: round trip differs\n in: {}\nout: {}", value, written);
    }
}

#[test]
fn every_real_conversation_round_trips() {
    let mut conversations = 0;
    for file in data_files() {
        for (i, line) in lines(&file).iter().enumerate() {
            let value: Value = serde_json::from_str(line).unwrap();
            let what = format!("{}:{}", file.file_name().unwrap().to_string_lossy(), i + 1);
            assert_round_trip(value, FormatHint::Auto, &what);
            conversations += 1;
        }
    }
    // 122 + 15 + 200 + 22 + 413 + 2312 + 4 conversations in the corpus
    assert!(conversations >= 3088, "only {conversations} conversations read");
}

/// The second corpus: OpenHands, tau2, LoCoMo and Anthropic-shaped transcripts (thinking blocks
/// with signatures, Claude Code sessions), each read in the format its record names.
#[test]
fn every_conversation_of_the_second_corpus_round_trips() {
    let mut conversations = 0;
    for file in crate::jsonl_files("data2") {
        for (i, line) in lines(&file).iter().enumerate() {
            let value: Value = serde_json::from_str(line).unwrap();
            let hint = match value.get("format").and_then(Value::as_str) {
                Some(name) => FormatHint::Exactly(name.parse::<Format>().unwrap()),
                None => FormatHint::Auto,
            };
            let what = format!("{}:{}", file.file_name().unwrap().to_string_lossy(), i + 1);
            assert_round_trip(value, hint, &what);
            conversations += 1;
        }
    }
    // 155 conversations in the second corpus
    assert!(conversations >= 155, "only {conversations} conversations read");
}

#[test]
fn every_openai_form_conformance_input_round_trips() {
    let mut inputs = 0;
    for name in [
        "ag2_message_history_limiter.jsonl",
        "ag2_message_token_limiter.jsonl",
        "langchain_core_trim_messages.jsonl",
    ] {
        for line in lines(&shared(&format!("conformance/{name}"))) {
            let case: Value = serde_json::from_str(&line).unwrap();
            let what = format!("{name} {}", case["case_id"]);
            assert_round_trip(case["input"].clone(), FormatHint::Exactly(Format::OpenAi), &what);
            if let Value::Array(output) = &case["output"] {
                assert_round_trip(Value::Array(output.clone()), FormatHint::Exactly(Format::OpenAi), &what);
            }
            inputs += 1;
        }
    }
    assert!(inputs > 2000, "only {inputs} cases read");
}

#[test]
fn anthropic_request_with_every_block_kind_round_trips() {
    let body = serde_json::json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are a tool user.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this image and this PDF?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}, "title": "spec"}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should look it up.", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x", "n": 2}},
                {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "second"},
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "first"}], "is_error": true},
                {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}}
            ]},
            {"role": "assistant", "content": "Done."}
        ],
        "tools": [
            {"name": "lookup", "description": "Look up", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
        ],
        "temperature": 0.2,
        "stream": false
    });
    assert_round_trip(body.clone(), FormatHint::Auto, "anthropic body");
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    assert_eq!(conversation.format, Format::Anthropic);
    assert_eq!(conversation.messages.len(), 5, "system prompt plus four messages");
    assert_eq!(conversation.messages[2].tool_calls().count(), 2);
}

#[test]
fn openai_request_with_every_part_kind_round_trips() {
    let body = serde_json::json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "name": "ana", "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}}
            ]},
            {"role": "assistant", "content": null, "reasoning_content": "think", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
                {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "not json"}}
            ], "refusal": null},
            {"role": "tool", "tool_call_id": "call_2", "content": "two"},
            {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "one"}]},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
            {"role": "assistant", "content": "", "tool_calls": [], "name": null},
            {"role": "assistant", "content": null, "tool_calls": [{"id": null, "type": "function", "function": {"name": "h", "arguments": "{}"}}]},
            {"role": "assistant", "function_call": {"name": "legacy", "arguments": "{}"}},
            {"role": "function", "name": "legacy", "content": "ok"}
        ],
        "tools": [
            {"type": "function", "function": {"name": "f", "description": "F", "parameters": {"type": "object"}, "strict": true}},
            {"type": "function", "function": {"name": "g", "description": null, "parameters": null}}
        ],
        "max_completion_tokens": 500,
        "max_tokens": 400,
        "temperature": 0
    });
    assert_round_trip(body, FormatHint::Auto, "openai body");
}

#[test]
fn bare_message_lists_round_trip_through_messages_to_value() {
    let openai = serde_json::json!([
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"}
    ]);
    let messages = format::parse_messages(openai.clone(), Format::OpenAi).unwrap();
    assert_eq!(format::messages_to_value(&messages, Format::OpenAi), openai);
    let anthropic = serde_json::json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]}
    ]);
    let messages = format::parse_messages(anthropic.clone(), Format::Anthropic).unwrap();
    assert_eq!(format::messages_to_value(&messages, Format::Anthropic), anthropic);
}
