//! Gemini `contents`: read and written losslessly, grouped into units, validated, converted
//! to and from Chat Completions, Responses and Anthropic, and fitted.

use serde_json::{json, Value};
use tightfit::format::{self, convert, Format, FormatHint};
use tightfit::message::{CallStyle, ImageStyle, Part, Role, ThinkingOrigin};
use tightfit::{units, validate, Rule, UnitKind};

use crate::{data_files, lines};

/// A request body with every part kind, in our own words after the API reference's shapes.
fn trip_request() -> Value {
    json!({
        "model": "gemini-2.5-pro",
        "contents": [
            {"role": "user", "parts": [
                {"text": "Plan a day in Lisbon; here is the map and the brochure."},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}},
                {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://bucket/tram.mp4"}, "videoMetadata": {"startOffset": "1s"}}
            ]},
            {"role": "model", "parts": [
                {"text": "Weather first, then museums.", "thought": true, "thoughtSignature": "c2lnLTE="},
                {"functionCall": {"name": "weather", "args": {"city": "Lisbon"}}, "thoughtSignature": "c2lnLTI="},
                {"functionCall": {"name": "museums", "args": {"city": "Lisbon", "open": true}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "weather", "response": {"sky": "clear", "high": 24}}},
                {"functionResponse": {"name": "museums", "response": {"result": "Gulbenkian, MAAT"}}}
            ]},
            {"role": "model", "parts": [
                {"functionCall": {"id": "call-7", "name": "book", "args": {"what": "tram 28"}}},
                {"functionCall": {"id": "call-8", "name": "book"}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "call-8", "name": "book", "response": {"result": "no slot"}}},
                {"functionResponse": {"id": "call-7", "name": "book", "response": {"result": "booked"}}}
            ]},
            {"role": "model", "parts": [
                {"text": "Morning at the Gulbenkian, tram 28 after lunch.", "thoughtSignature": "c2lnLTM="},
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
            ]}
        ],
        "systemInstruction": {"parts": [{"text": "You are a terse travel agent."}]},
        "tools": [
            {"functionDeclarations": [
                {"name": "weather", "description": "Forecast for a city", "parameters": {"type": "object"}},
                {"name": "museums", "parameters": {"type": "object"}},
                {"name": "book"}
            ]},
            {"googleSearch": {}}
        ],
        "generationConfig": {"maxOutputTokens": 1024, "temperature": 0.2},
        "safetySettings": []
    })
}

fn read(value: Value) -> format::Conversation {
    format::parse_value(value, FormatHint::Auto).unwrap()
}

#[test]
fn a_request_with_every_part_kind_round_trips_and_is_read_as_parts() {
    let body = trip_request();
    let conversation = read(body.clone());
    assert_eq!(conversation.format, Format::Gemini);
    assert_eq!(format::to_value(&conversation, Format::Gemini), body);
    let text = format::request_to_string(&conversation.messages, &conversation);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), body);
    let m = &conversation.messages;
    assert_eq!(m.len(), 7, "the system instruction, then one message per contents entry");
    assert_eq!(m[0].role, Role::System);
    assert_eq!(m[0].text_content(), "You are a terse travel agent.");
    assert!(matches!(&m[1].parts[1], Part::Image(i) if i.style == ImageStyle::Gemini));
    assert!(matches!(&m[1].parts[2], Part::File(f) if f.kind == "inlineData"));
    assert!(matches!(&m[1].parts[3], Part::File(f) if f.kind == "fileData"));
    assert_eq!(m[2].role, Role::Assistant);
    match &m[2].parts[0] {
        Part::Thinking(t) => {
            assert_eq!(t.origin, ThinkingOrigin::Gemini);
            assert_eq!(t.signature.as_deref(), Some("c2lnLTE="));
        }
        other => panic!("expected a thought, got {other:?}"),
    }
    let calls: Vec<(Option<&str>, CallStyle)> =
        m[2].tool_calls().map(|c| (c.id.as_deref(), c.style)).collect();
    assert_eq!(
        calls,
        vec![(Some("weather#0"), CallStyle::GeminiNoId), (Some("museums#0"), CallStyle::GeminiNoId)]
    );
    assert_eq!(m[3].answered_call_ids().collect::<Vec<_>>(), vec!["weather#0", "museums#0"]);
    assert_eq!(m[5].answered_call_ids().collect::<Vec<_>>(), vec!["call-8", "call-7"]);
    assert!(matches!(&m[6].parts[1], Part::Opaque(p) if p.get("executableCode").is_some()));
    let request = conversation.request.as_ref().unwrap();
    assert_eq!(request.reserved_output(), Some(1024));
    let tools = conversation.tools.as_ref().unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        vec!["weather", "museums", "book", ""]
    );
    assert_eq!(validate(&conversation.messages, Format::Gemini), vec![]);
}

#[test]
fn bare_contents_and_entries_without_a_role_are_written_back_alike() {
    let contents = json!([
        {"parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "now"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "now", "response": {"t": 1}}}]}
    ]);
    let conversation = read(contents.clone());
    assert_eq!(conversation.format, Format::Gemini);
    assert_eq!(conversation.request, None);
    assert_eq!(conversation.messages[0].role, Role::User);
    assert_eq!(format::to_value(&conversation, Format::Gemini), contents);
    // a role on the system instruction is kept as it came
    let body = json!({"systemInstruction": {"role": "user", "parts": [{"text": "be kind"}]}, "contents": []});
    let read_body = read(body.clone());
    assert_eq!(read_body.messages[0].role, Role::System);
    assert_eq!(format::to_value(&read_body, Format::Gemini), body);
    let messages = format::parse_messages(contents.clone(), Format::Gemini).unwrap();
    assert_eq!(format::messages_to_value(&messages, Format::Gemini), contents);
    // message by message, the made-up ids pair alike
    let third = format::parse_message(contents[2].clone(), Format::Gemini, 2).unwrap();
    assert_eq!(third.answered_call_ids().collect::<Vec<_>>(), vec!["now#0"]);
}

#[test]
fn a_call_turn_and_its_responses_are_one_step() {
    let conversation = read(trip_request());
    let kinds: Vec<(UnitKind, std::ops::Range<usize>)> =
        units(&conversation.messages).iter().map(|u| (u.kind, u.messages.clone())).collect();
    assert_eq!(
        kinds,
        vec![
            (UnitKind::Instruction, 0..1),
            (UnitKind::UserTurn, 1..2),
            (UnitKind::AssistantStep, 2..4),
            (UnitKind::AssistantStep, 4..6),
            (UnitKind::AssistantStep, 6..7),
        ]
    );
    assert!(units(&conversation.messages).iter().all(|u| u.unanswered_calls.is_empty()));
}

#[test]
fn missing_extra_and_mismatched_responses_are_violations() {
    let contents = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "f", "args": {}}}, {"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
        {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "g"}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "b", "name": "g", "response": {}}}]},
        {"role": "system", "parts": [{"text": "late"}]},
        {"role": "tool", "parts": [{"text": "?"}]}
    ]});
    let conversation = format::parse_value(contents, FormatHint::Exactly(Format::Gemini)).unwrap();
    let found: Vec<(usize, Rule)> =
        validate(&conversation.messages, Format::Gemini).iter().map(|v| (v.index, v.rule)).collect();
    assert_eq!(
        found,
        vec![
            (1, Rule::UnansweredToolCall),
            (2, Rule::ResponseCountMismatch),
            (3, Rule::UnansweredToolCall),
            (4, Rule::OrphanToolResult),
            (5, Rule::SystemNotAtStart),
            (6, Rule::UnsupportedRole),
        ]
    );
    assert_eq!(Rule::ResponseCountMismatch.as_str(), "response_count_mismatch");
}

#[test]
fn errors_name_the_entry_and_the_field() {
    let error = |value: Value| {
        format::parse_value(value, FormatHint::Exactly(Format::Gemini)).unwrap_err().to_string()
    };
    assert_eq!(
        error(json!({"contents": [{"role": "user", "parts": [{"text": "a"}]}, {"role": "model"}]})),
        "contents[1]: missing `parts`"
    );
    assert_eq!(
        error(json!({"contents": [{"role": "model", "parts": [{"functionCall": {"args": {}}}]}]})),
        "contents[0].parts[0].functionCall: missing `name`"
    );
    assert_eq!(
        error(json!([{"role": "user", "parts": [{"text": 3}]}])),
        "contents[0].parts[0].text: expected a string, found a number"
    );
    assert_eq!(
        error(json!({"contents": [], "generationConfig": {"maxOutputTokens": "many"}})),
        "generationConfig.maxOutputTokens: expected a non-negative integer, found a string"
    );
    assert!(error(json!({"messages": []})).contains("not a Gemini one"));
    // read as Chat Completions, Gemini contents are refused by name
    let refused = format::parse_value(
        json!([{"role": "user", "parts": [{"text": "a"}]}]),
        FormatHint::Exactly(Format::OpenAi),
    )
    .unwrap_err()
    .to_string();
    assert!(refused.contains("read it as format \"gemini\""), "{refused}");
}

#[test]
fn converting_to_chat_completions_and_back_keeps_calls_and_results() {
    let conversation = read(trip_request());
    let chat = convert(&conversation, Format::OpenAi);
    let out = format::to_value(&chat.conversation, Format::OpenAi);
    let messages = out["messages"].as_array().unwrap();
    assert_eq!(messages[0], json!({"role": "system", "content": "You are a terse travel agent."}));
    let calls = &messages[2]["tool_calls"];
    assert_eq!(calls[0]["id"], "weather#0");
    assert_eq!(calls[0]["function"]["arguments"], "{\"city\":\"Lisbon\"}");
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "weather#0", "content": "{\"sky\":\"clear\",\"high\":24}"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "tool", "tool_call_id": "museums#0", "content": "Gulbenkian, MAAT"})
    );
    assert_eq!(validate(&chat.conversation.messages, Format::OpenAi), vec![]);
    let notes = chat.notes.join("\n");
    assert!(notes.contains("messages[2]: dropped a thought's thoughtSignature"), "{notes}");
    assert!(notes.contains("made-up id \"weather#0\""), "{notes}");
    assert!(notes.contains("kept a `fileData` part"), "{notes}");

    let back = convert(&chat.conversation, Format::Gemini).conversation;
    let written = format::to_value(&back, Format::Gemini);
    assert_eq!(written["systemInstruction"], json!({"parts": [{"text": "You are a terse travel agent."}]}));
    assert_eq!(
        written["contents"][2]["parts"][0],
        json!({"functionResponse": {"id": "weather#0", "name": "weather", "response": {"sky": "clear", "high": 24}}})
    );
    assert_eq!(
        written["contents"][2]["parts"][1],
        json!({"functionResponse": {"id": "museums#0", "name": "museums", "response": {"result": "Gulbenkian, MAAT"}}})
    );
    assert_eq!(written["generationConfig"]["maxOutputTokens"], 1024);
    assert_eq!(validate(&back.messages, Format::Gemini), vec![]);
}

#[test]
fn responses_and_anthropic_convert_to_gemini() {
    let anthropic = read(json!({"system": "be brief", "max_tokens": 100, "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look it up", "signature": "sig"},
            {"type": "tool_use", "id": "tu_1", "name": "weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "rain"}]}
    ]}));
    let gemini = convert(&anthropic, Format::Gemini);
    let out = format::to_value(&gemini.conversation, Format::Gemini);
    assert_eq!(out["systemInstruction"]["parts"][0]["text"], "be brief");
    assert_eq!(
        out["contents"][1]["parts"],
        json!([{"text": "look it up", "thought": true},
               {"functionCall": {"id": "tu_1", "name": "weather", "args": {"city": "Oslo"}}}])
    );
    assert_eq!(
        out["contents"][2]["parts"][0],
        json!({"functionResponse": {"id": "tu_1", "name": "weather", "response": {"result": "rain"}}})
    );
    assert_eq!(out["generationConfig"], json!({"maxOutputTokens": 100}));
    assert!(gemini.notes.iter().any(|n| n.contains("dropped a thinking signature")), "{:?}", gemini.notes);
    let back = convert(&read(out), Format::Anthropic).conversation;
    assert_eq!(
        validate(&back.messages, Format::Anthropic)
            .iter()
            .filter(|v| v.rule != Rule::UnsignedThinking)
            .count(),
        0
    );

    let responses = read(json!({"instructions": "x", "input": [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"},
        {"type": "function_call_output", "call_id": "c1", "output": "done"}
    ]}));
    let gemini = convert(&responses, Format::Gemini).conversation;
    assert_eq!(validate(&gemini.messages, Format::Gemini), vec![]);
    let to_responses = convert(&gemini, Format::Responses).conversation;
    let items = format::to_value(&to_responses, Format::Responses);
    assert_eq!(
        items["input"][2],
        json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"})
    );
    assert_eq!(items["input"][3], json!({"type": "function_call_output", "call_id": "c1", "output": "done"}));
}

#[test]
fn a_gemini_model_speaks_gemini_and_fit_answers_unanswered_calls_in_its_shape() {
    let registry = tightfit::models::Registry::embedded();
    let model = registry.lookup("gemini-2.5-pro").unwrap();
    assert!(model.speaks_gemini(), "{}", model.qualified_id());
    assert!(!registry.lookup("gpt-4o").unwrap().speaks_gemini());
    let contents = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"text": "never mind"}]}
    ]});
    let conversation = read(contents);
    let target = tightfit::fit::Target::for_model(model, None);
    let fitted = tightfit::fit::Fitter::new().fit(&conversation, &target, None).unwrap();
    assert_eq!(validate(&fitted.messages, Format::Gemini), vec![]);
    let out: Value =
        serde_json::from_str(&format::request_to_string(&fitted.messages, &conversation)).unwrap();
    let answer = &out["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(answer["name"], "f");
    assert!(answer.get("id").is_none(), "the call had no id: {answer}");
}

/// Every 7th real Chat Completions transcript, converted into Gemini contents: the contents
/// round trip, group into units that answer every call, validate, and convert back to the
/// same calls, results and texts.
#[test]
fn real_transcripts_converted_to_gemini_round_trip() {
    let mut conversations = 0;
    let mut entries = 0;
    for file in data_files() {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for (i, line) in lines(&file).iter().enumerate().step_by(7) {
            let what = format!("{name}:{}", i + 1);
            let chat = format::parse_str(line, FormatHint::Exactly(Format::OpenAi)).unwrap();
            let gemini = convert(&chat, Format::Gemini).conversation;
            let value = format::to_value(&gemini, Format::Gemini);
            let reread = format::parse_value(value.clone(), FormatHint::Auto)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(reread.format, Format::Gemini, "{what}");
            assert_eq!(format::to_value(&reread, Format::Gemini), value, "{what}");
            assert_eq!(validate(&reread.messages, Format::Gemini), vec![], "{what}");
            for unit in units(&reread.messages) {
                assert!(unit.unanswered_calls.is_empty(), "{what}: {unit:?}");
                assert_ne!(unit.kind, UnitKind::OrphanResults, "{what}");
            }
            let back = convert(&reread, Format::OpenAi).conversation;
            let calls = |m: &[tightfit::Message]| -> Vec<(Option<String>, String, Value)> {
                m.iter()
                    .flat_map(|m| m.tool_calls())
                    .map(|c| (c.id.clone(), c.name.clone(), c.arguments.to_value()))
                    .collect()
            };
            assert_eq!(calls(&back.messages), calls(&chat.messages), "{what}");
            let results = |m: &[tightfit::Message]| -> Vec<(String, String)> {
                m.iter()
                    .filter(|m| m.role == Role::Tool)
                    .map(|m| (m.tool_call_id.clone().unwrap_or_default(), m.text_content()))
                    .collect()
            };
            assert_eq!(results(&back.messages), results(&chat.messages), "{what}");
            // the texts in order; the way through the Anthropic shape merges turns of one role
            // in a row (joined by a newline), so newlines are left out of the comparison
            let texts = |m: &[tightfit::Message]| -> String {
                let joined: String =
                    m.iter().filter(|m| m.role != Role::Tool).map(|m| m.text_content()).collect();
                joined.replace('\n', "")
            };
            let (a, b) = (texts(&back.messages), texts(&chat.messages));
            if a != b {
                let at = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
                let around = |s: &str| s.chars().skip(at.saturating_sub(80)).take(160).collect::<String>();
                panic!("{what}: differ at {at}:\n{:?}\n{:?}", around(&a), around(&b));
            }
            conversations += 1;
            entries += reread.messages.len();
        }
    }
    assert!(conversations > 400, "only {conversations} conversations converted");
    assert!(entries > 5_000, "only {entries} entries");
}
