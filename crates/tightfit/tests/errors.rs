//! Bad input gets an error that names where: line and column, or the path of the value.

use tightfit::format::{self, FormatError, FormatHint};

fn error(text: &str) -> String {
    format::parse_str(text, FormatHint::Auto).unwrap_err().to_string()
}

#[test]
fn malformed_json_names_line_and_column() {
    let err = format::parse_str("[\n  {\"role\": \"user\",\n   \"content\": \"hi\",,}\n]", FormatHint::Auto)
        .unwrap_err();
    match err {
        FormatError::Syntax { line, column, .. } => assert_eq!((line, column), (3, 20)),
        other => panic!("expected a syntax error, got {other}"),
    }
}

#[test]
fn other_formats_are_read_as_such_or_named_never_counted_as_nothing() {
    // a Gemini history: 2,000 words in `parts` would count as a few tokens if read as OpenAI
    let words = "word ".repeat(2_000);
    let gemini = format!(
        r#"[{{"role": "user", "parts": [{{"text": "{words}"}}]}}, {{"role": "model", "parts": [{{"text": "ok"}}]}}]"#
    );
    let read = format::parse_str(&gemini, FormatHint::Auto).unwrap();
    assert_eq!(read.format, format::Format::Gemini);
    assert_eq!(read.messages[0].text_content().len(), words.len());
    let message =
        format::parse_str(&gemini, FormatHint::Exactly(format::Format::OpenAi)).unwrap_err().to_string();
    assert!(message.starts_with("messages[0]: this is a Gemini `contents` entry"), "{message}");
    assert!(message.contains("read it as format \"gemini\""), "{message}");
    // a list that mixes the formats names the message that does not belong
    let later = r#"[{"role": "user", "content": "hi"}, {"role": "model", "parts": [{"text": "ok"}]}]"#;
    assert!(
        error(later).starts_with("contents[0].content: a Chat Completions or Anthropic message"),
        "{}",
        error(later)
    );
    let body = r#"{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}"#;
    let message =
        format::parse_str(body, FormatHint::Exactly(format::Format::Anthropic)).unwrap_err().to_string();
    assert!(message.starts_with("$: this is a Gemini request (`contents`)"), "{message}");
    // OpenAI Responses API items are read as such; told to read Chat Completions, the reader
    // names them and says how to read them
    let responses = r#"[{"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "42"}]"#;
    let read = format::parse_str(responses, FormatHint::Auto).unwrap();
    assert_eq!((read.format, read.messages.len()), (format::Format::Responses, 3));
    let message =
        format::parse_str(responses, FormatHint::Exactly(format::Format::OpenAi)).unwrap_err().to_string();
    assert_eq!(
        message,
        r#"messages[1]: this is an OpenAI Responses API input item (`"type": "function_call"`): read it as format "responses""#
    );
    let body = r#"{"model": "gpt-4o", "input": [{"role": "user", "content": "hi"}]}"#;
    assert_eq!(format::parse_str(body, FormatHint::Auto).unwrap().format, format::Format::Responses);
    let message =
        format::parse_str(body, FormatHint::Exactly(format::Format::OpenAi)).unwrap_err().to_string();
    assert!(message.starts_with("$: this is an OpenAI Responses API request (`input`)"), "{message}");
    // a list that mixes the formats is an error, not calls that count as nothing
    let mixed = r#"[{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]"#;
    assert!(
        error(mixed).starts_with("input[1].tool_calls: a Chat Completions field in a Responses input"),
        "{}",
        error(mixed)
    );
    // LangChain messages dumped to dicts are named as such
    let langchain = r#"[{"type": "human", "content": "hi"}]"#;
    assert!(error(langchain).contains("tightfit.compat.langchain"), "{}", error(langchain));
    // the same refusal when the format is given
    for format in [format::Format::OpenAi, format::Format::Anthropic] {
        let read = format::parse_str(&gemini, FormatHint::Exactly(format)).unwrap_err().to_string();
        assert!(read.contains("Gemini"), "{format:?}: {read}");
    }
}

#[test]
fn wrong_shapes_name_the_path() {
    let arguments = r#"{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": null,
        "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]}]}"#;
    assert_eq!(
        error(arguments),
        "messages[1].tool_calls[0].function.arguments: expected a string, found an object"
    );
    assert_eq!(error(r#"[{"content": "x"}]"#), "messages[0]: missing `role`");
    assert_eq!(
        error(r#"[{"role": 3, "content": "x"}]"#),
        "messages[0].role: expected a string, found a number"
    );
    assert_eq!(
        error(r#"[{"role": "user", "content": [{"type": "text", "text": 5}]}]"#),
        "messages[0].content[0].text: expected a string, found a number"
    );
    assert_eq!(
        error(r#"[{"role": "user", "content": 12}]"#),
        "messages[0].content: expected a string, null or an array of parts, found a number"
    );
    assert_eq!(
        error(r#"{"model": "gpt-4o"}"#),
        "$: expected a list of messages or an object with `messages` (or a Responses request's `input`, or a Gemini request's `contents`)"
    );
    assert_eq!(error(r#""hello""#), "$: expected an array of messages or an object, found a string");
    assert_eq!(
        error(r#"{"messages": [], "max_tokens": -5}"#),
        "max_tokens: expected a non-negative integer, found a number"
    );
    assert_eq!(
        error(
            r#"{"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]}"#
        ),
        "messages[0].content[0]: missing `tool_use_id`"
    );
    assert_eq!(
        error(r#"{"system": "s", "messages": [{"role": "tool", "content": "x"}]}"#),
        "messages[0].role: unknown role \"tool\" (expected \"user\" or \"assistant\" (the system prompt goes in the top-level `system` field))"
    );
}

#[test]
fn an_unknown_role_is_kept_not_rejected() {
    // AG2 writes role "tool_calls"; the message is kept verbatim and counted like a user turn
    let conversation =
        format::parse_str(r#"[{"role": "tool_calls", "content": "calling"}]"#, FormatHint::Auto).unwrap();
    assert_eq!(conversation.messages[0].role, tightfit::Role::Other);
    assert_eq!(conversation.messages[0].role_name(), "tool_calls");
}
