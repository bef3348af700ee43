//! OpenAI Responses API input: read and written losslessly, grouped into units, validated,
//! converted to and from Chat Completions and Anthropic, and fitted.

use serde_json::{json, Value};
use tightfit::format::{self, convert, Format, FormatHint};
use tightfit::message::{CallStyle, Part, Role, ThinkingOrigin};
use tightfit::{units, validate, Rule, UnitKind};

use crate::{data_files, lines};

/// A request body with every item kind, written after the API reference's examples.
fn agent_request() -> Value {
    json!({
        "model": "gpt-5",
        "instructions": "You are a careful travel agent. Use the tools.",
        "input": [
            {"role": "user", "content": [
                {"type": "input_text", "text": "Book me the cheapest flight to Lisbon and show this ticket."},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
                {"type": "input_file", "filename": "itinerary.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}
            ]},
            {"type": "reasoning", "id": "rs_01", "summary": [
                {"type": "summary_text", "text": "Search flights first."},
                {"type": "summary_text", "text": "Then compare prices."}],
             "encrypted_content": "gAAAAB-opaque"},
            {"type": "message", "id": "msg_01", "status": "completed", "role": "assistant", "content": [
                {"type": "output_text", "text": "Looking up flights.", "annotations": [], "logprobs": []}]},
            {"type": "function_call", "id": "fc_01", "call_id": "call_a", "name": "search_flights",
             "arguments": "{\"to\":\"LIS\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_02", "call_id": "call_b", "name": "search_hotels",
             "arguments": "{\"city\":\"Lisbon\"}", "status": "completed"},
            {"type": "function_call_output", "call_id": "call_b", "output": "3 hotels"},
            {"type": "function_call_output", "call_id": "call_a", "output": [
                {"type": "input_text", "text": "TP1234 at 89 EUR"}]},
            {"type": "reasoning", "id": "rs_02", "summary": []},
            {"type": "custom_tool_call", "id": "ctc_01", "call_id": "call_c", "name": "run_sql",
             "input": "SELECT 1"},
            {"type": "custom_tool_call_output", "call_id": "call_c", "output": "1"},
            {"type": "web_search_call", "id": "ws_01", "status": "completed",
             "action": {"type": "search", "query": "Lisbon weather"}},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Booked TP1234.", "annotations": [
                    {"type": "url_citation", "url": "https://example.com", "start_index": 0, "end_index": 6, "title": "x"}]},
                {"type": "refusal", "refusal": "I cannot pay for you."}]},
            {"role": "developer", "content": "Answer in one line."},
            {"role": "user", "content": "Thanks!"},
            {"type": "item_reference", "id": "msg_00"}
        ],
        "tools": [
            {"type": "function", "name": "search_flights", "description": "Find flights",
             "parameters": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}, "strict": true},
            {"type": "function", "name": "search_hotels", "parameters": {"type": "object", "properties": {}}},
            {"type": "custom", "name": "run_sql", "description": "Runs SQL"},
            {"type": "web_search"}
        ],
        "max_output_tokens": 2048,
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": false
    })
}

fn read(value: Value) -> format::Conversation {
    format::parse_value(value, FormatHint::Auto).unwrap()
}

#[test]
fn a_request_with_every_item_kind_round_trips_and_is_read_as_items() {
    let body = agent_request();
    let conversation = read(body.clone());
    assert_eq!(conversation.format, Format::Responses);
    assert_eq!(format::to_value(&conversation, Format::Responses), body);
    // the text written back is the same JSON: what a proxy forwards
    let text = format::request_to_string(&conversation.messages, &conversation);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), body);

    let m = &conversation.messages;
    assert_eq!(m.len(), 16, "instructions, then one message per item");
    assert_eq!(
        (m[0].role, m[0].text_content().as_str()),
        (Role::System, "You are a careful travel agent. Use the tools.")
    );
    assert!(matches!(&m[1].parts[1], Part::Image(_)) && matches!(&m[1].parts[2], Part::File(_)));
    match &m[2].parts[..] {
        [Part::Thinking(t)] => {
            assert_eq!(t.origin, ThinkingOrigin::ResponsesItem);
            assert_eq!(t.text, "Search flights first.\n\nThen compare prices.");
            assert_eq!(t.signature.as_deref(), Some("gAAAAB-opaque"));
        }
        other => panic!("{other:?}"),
    }
    let call = m[4].tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_deref(), call.name.as_str(), call.style),
        (Some("call_a"), "search_flights", CallStyle::ResponsesFunction)
    );
    assert_eq!((m[6].role, m[6].tool_call_id.as_deref()), (Role::Tool, Some("call_b")));
    assert_eq!(m[9].tool_calls().next().unwrap().style, CallStyle::ResponsesCustom);
    assert!(matches!(&m[11].parts[..], [Part::Opaque(item)] if item["type"] == "web_search_call"));
    let request = conversation.request.as_ref().unwrap();
    assert_eq!(request.reserved_output(), Some(2048));
    assert_eq!(conversation.tools.as_ref().unwrap().len(), 4);
}

#[test]
fn bare_items_a_string_input_and_edited_summaries_are_written_back_alike() {
    let body = json!({"model": "gpt-5-mini", "input": "What is 2+2?", "temperature": 0});
    let conversation = read(body.clone());
    assert_eq!(conversation.messages.len(), 1);
    assert_eq!(format::to_value(&conversation, Format::Responses), body);

    let items = json!([{"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "greet"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}]);
    let mut conversation = read(items.clone());
    assert_eq!(conversation.request, None);
    assert_eq!(format::to_value(&conversation, Format::Responses), items);
    let messages = format::parse_messages(items.clone(), Format::Responses).unwrap();
    assert_eq!(format::messages_to_value(&messages, Format::Responses), items);
    // a step that rewrites a summary gets it written as one summary part
    if let Part::Thinking(t) = &mut conversation.messages[1].parts[0] {
        t.text = "short".into();
    }
    let written = format::to_value(&conversation, Format::Responses);
    assert_eq!(written[1]["summary"], json!([{"type": "summary_text", "text": "short"}]));
}

#[test]
fn a_reasoning_item_stays_with_its_calls_and_calls_with_their_outputs() {
    let conversation = read(agent_request());
    let kinds: Vec<(UnitKind, std::ops::Range<usize>)> =
        units(&conversation.messages).into_iter().map(|u| (u.kind, u.messages)).collect();
    assert_eq!(
        kinds,
        vec![
            (UnitKind::Instruction, 0..1),
            (UnitKind::UserTurn, 1..2),
            // reasoning, message, two parallel calls, their outputs in any order
            (UnitKind::AssistantStep, 2..8),
            // an empty reasoning item, a custom call and its output
            (UnitKind::AssistantStep, 8..11),
            // a hosted tool's item and the message after it
            (UnitKind::AssistantStep, 11..13),
            (UnitKind::Instruction, 13..14),
            (UnitKind::UserTurn, 14..15),
            (UnitKind::AssistantStep, 15..16),
        ]
    );
    assert!(units(&conversation.messages).iter().all(|u| u.unanswered_calls.is_empty()));
    assert_eq!(validate(&conversation.messages, Format::Responses), vec![]);
}

#[test]
fn orphan_outputs_unanswered_calls_and_lone_reasoning_are_violations() {
    let items = json!([
        {"role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "nobody", "output": "x"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"role": "user", "content": "next"},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {"role": "user", "content": "and?"}
    ]);
    let conversation = read(items);
    let found: Vec<(usize, Rule)> =
        validate(&conversation.messages, Format::Responses).into_iter().map(|v| (v.index, v.rule)).collect();
    assert_eq!(
        found,
        vec![(1, Rule::OrphanToolResult), (3, Rule::UnansweredToolCall), (5, Rule::LoneReasoning)]
    );
    // Chat Completions does not know the reasoning rule
    assert!(validate(&conversation.messages, Format::OpenAi).iter().all(|v| v.rule != Rule::LoneReasoning));
}

#[test]
fn fit_repairs_and_keeps_the_history_valid_in_responses_form() {
    let items = json!({"model": "gpt-4o", "input": [
        {"role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "nobody", "output": "x"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"role": "user", "content": "next"}
    ]});
    let conversation = read(items);
    let target = tightfit::fit::Target::for_model(
        tightfit::models::Registry::embedded().lookup("gpt-4o").unwrap(),
        None,
    );
    let fitted = tightfit::fit::Fitter::new().fit(&conversation, &target, None).unwrap();
    assert_eq!(validate(&fitted.messages, Format::Responses), vec![]);
    let text = format::request_to_string(&fitted.messages, &conversation);
    let out: Value = serde_json::from_str(&text).unwrap();
    let kinds: Vec<&str> =
        out["input"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap_or("message")).collect();
    // the orphan output went, the unanswered call got an aborted output right after it
    assert_eq!(kinds, vec!["message", "reasoning", "function_call", "function_call_output", "message"]);
}

#[test]
fn converting_to_chat_completions_and_back_keeps_calls_and_results() {
    let conversation = read(agent_request());
    let chat = convert(&conversation, Format::OpenAi);
    let out = format::to_value(&chat.conversation, Format::OpenAi);
    let messages = out["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "You are a careful travel agent. Use the tools."})
    );
    assert_eq!(
        messages[1]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}})
    );
    assert_eq!(
        messages[1]["content"][2],
        json!({"type": "file", "file": {"filename": "itinerary.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}})
    );
    // one response: its reasoning summary, its message and both calls in one assistant message
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Looking up flights.", "reasoning_content": "Search flights first.\n\nThen compare prices.",
               "tool_calls": [
                   {"id": "call_a", "type": "function", "function": {"name": "search_flights", "arguments": "{\"to\":\"LIS\"}"}},
                   {"id": "call_b", "type": "function", "function": {"name": "search_hotels", "arguments": "{\"city\":\"Lisbon\"}"}}]})
    );
    assert_eq!(messages[3], json!({"role": "tool", "content": "3 hotels", "tool_call_id": "call_b"}));
    assert_eq!(out["max_completion_tokens"], 2048);
    assert_eq!(
        out["tools"][0],
        json!({"type": "function", "function": {"name": "search_flights", "description": "Find flights",
        "parameters": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}})
    );
    assert_eq!(validate(&chat.conversation.messages, Format::OpenAi), vec![]);
    let notes = chat.notes.join("\n");
    assert!(notes.contains("messages[2]: dropped a reasoning item's encrypted_content"), "{notes}");
    assert!(notes.contains("messages[11]: dropped a `web_search_call` item"), "{notes}");

    // and back: calls become items again, in a row, answered by their outputs
    let back = convert(&chat.conversation, Format::Responses).conversation;
    let written = format::to_value(&back, Format::Responses);
    let input = written["input"].as_array().unwrap();
    assert_eq!(input[1]["role"], "user");
    assert_eq!(input[2], json!({"role": "assistant", "content": "Looking up flights."}));
    assert_eq!(
        input[3],
        json!({"type": "function_call", "call_id": "call_a", "name": "search_flights", "arguments": "{\"to\":\"LIS\"}"})
    );
    assert_eq!(input[5], json!({"type": "function_call_output", "call_id": "call_b", "output": "3 hotels"}));
    assert_eq!(written["max_output_tokens"], 2048);
    assert_eq!(validate(&back.messages, Format::Responses), vec![]);
}

#[test]
fn anthropic_converts_to_responses_and_back() {
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "S", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig"},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "res"},
            {"type": "text", "text": "next"}]}
    ]});
    let conversation = read(body);
    let responses = convert(&conversation, Format::Responses);
    let written = format::to_value(&responses.conversation, Format::Responses);
    assert_eq!(
        written["input"],
        json!([
            {"role": "system", "content": "S"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "Calling."},
            {"type": "function_call", "call_id": "t1", "name": "f", "arguments": "{\"a\":1}"},
            {"type": "function_call_output", "call_id": "t1", "output": "res"},
            {"role": "user", "content": "next"}
        ])
    );
    assert_eq!(written["max_output_tokens"], 100);
    assert!(responses.notes.iter().any(|n| n.contains("dropped reasoning")), "{:?}", responses.notes);
    let back = convert(&responses.conversation, Format::Anthropic).conversation;
    assert_eq!(validate(&back.messages, Format::Anthropic), vec![]);
    let user = &back.messages[3];
    assert!(matches!(user.parts[0], Part::ToolResult(_)));
}

/// Every real Chat Completions transcript, converted into Responses items: the items round
/// trip, group into units that answer every call, validate, and convert back to the same
/// calls, results and texts.
#[test]
fn real_transcripts_converted_to_responses_round_trip() {
    let mut conversations = 0;
    let mut items = 0;
    for file in data_files() {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for (i, line) in lines(&file).iter().enumerate().step_by(7) {
            let what = format!("{name}:{}", i + 1);
            let chat = format::parse_str(line, FormatHint::Exactly(Format::OpenAi)).unwrap();
            let responses = convert(&chat, Format::Responses).conversation;
            let value = format::to_value(&responses, Format::Responses);
            let reread = format::parse_value(value.clone(), FormatHint::Auto)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(reread.format, Format::Responses, "{what}");
            assert_eq!(format::to_value(&reread, Format::Responses), value, "{what}");
            assert_eq!(validate(&reread.messages, Format::Responses), vec![], "{what}");
            for unit in units(&reread.messages) {
                assert!(unit.unanswered_calls.is_empty(), "{what}: {unit:?}");
                assert_ne!(unit.kind, UnitKind::OrphanResults, "{what}");
            }
            let back = convert(&reread, Format::OpenAi).conversation;
            let calls = |m: &[tightfit::Message]| -> Vec<(Option<String>, String, String)> {
                m.iter()
                    .flat_map(|m| m.tool_calls())
                    .map(|c| (c.id.clone(), c.name.clone(), c.arguments.to_json_string()))
                    .collect()
            };
            assert_eq!(calls(&back.messages), calls(&chat.messages), "{what}");
            let texts =
                |m: &[tightfit::Message]| -> Vec<String> { m.iter().map(|m| m.text_content()).collect() };
            let non_empty =
                |t: Vec<String>| -> Vec<String> { t.into_iter().filter(|t| !t.is_empty()).collect() };
            assert_eq!(non_empty(texts(&back.messages)), non_empty(texts(&chat.messages)), "{what}");
            conversations += 1;
            items += reread.messages.len();
        }
    }
    assert!(conversations > 400, "only {conversations} conversations converted");
    assert!(items > 5_000, "only {items} items");
}

#[test]
fn a_null_output_is_an_error_naming_it_not_an_empty_result() {
    let body = json!({"model": "gpt-5", "input": [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": null}]});
    let err = format::parse_value(body, FormatHint::Exactly(Format::Responses)).unwrap_err().to_string();
    assert!(err.contains("input[2].output") && err.contains("found null"), "{err}");
}
