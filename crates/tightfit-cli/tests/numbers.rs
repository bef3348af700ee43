//! Numbers go through `tightfit fit` as their text: an integer beyond 64 bits and a float with
//! more digits than an `f64` holds come out byte for byte as they came, whether the message
//! that holds them is kept untouched or written again after a step changed another one.

use crate::{stderr, stdout, tightfit};

/// 30 digits: beyond `u64`, so an `f64` would print `1.2345678901234568e29`.
const BIG: &str = "123456789012345678901234567890";

/// 400 significant digits: an `f64` keeps 17.
fn precise() -> String {
    format!("3.{}", "1415926535".repeat(40)).chars().take(401).collect()
}

/// An old tool result (the one a tight budget truncates), then turns holding the numbers in a
/// message's extra field and in a tool call's arguments (a JSON string for OpenAI, an object
/// for Anthropic).
fn openai_body() -> String {
    let (big, precise, log) = (BIG, precise(), old_log());
    format!(
        r#"{{"model": "gpt-4o", "messages": [
{{"role": "system", "content": "Be brief."}},
{{"role": "user", "content": "Why does the date test fail?"}},
{{"role": "assistant", "content": null, "tool_calls": [{{"id": "call_0", "type": "function", "function": {{"name": "read_log", "arguments": "{{}}"}}}}]}},
{{"role": "tool", "tool_call_id": "call_0", "content": "{log}"}},
{{"role": "assistant", "content": "Noted."}},
{{"role": "user", "content": "Compute it.", "meta": {{"big": {big}, "precise": {precise}}}}},
{{"role": "assistant", "content": null, "tool_calls": [{{"id": "call_1", "type": "function", "function": {{"name": "calc", "arguments": "{{\"big\": {big}, \"precise\": {precise}}}"}}}}], "meta": {{"big": {big}, "precise": {precise}}}}},
{{"role": "tool", "tool_call_id": "call_1", "content": "42"}},
{{"role": "user", "content": "Thanks."}}
]}}"#
    )
}

fn anthropic_body() -> String {
    let (big, precise, log) = (BIG, precise(), old_log());
    format!(
        r#"{{"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
{{"role": "user", "content": "Why does the date test fail?"}},
{{"role": "assistant", "content": [{{"type": "tool_use", "id": "toolu_0", "name": "read_log", "input": {{}}}}]}},
{{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "toolu_0", "content": "{log}"}}]}},
{{"role": "assistant", "content": "Noted."}},
{{"role": "user", "content": "Compute it.", "meta": {{"big": {big}, "precise": {precise}}}}},
{{"role": "assistant", "content": [{{"type": "tool_use", "id": "toolu_1", "name": "calc", "input": {{"big": {big}, "precise": {precise}}}}}], "meta": {{"big": {big}, "precise": {precise}}}}},
{{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"}}]}}
]}}"#
    )
}

fn old_log() -> String {
    "The parser rejects dates before 1970 in every locale we ship. ".repeat(300)
}

/// How often each number's exact text appears in `text` (compact or spaced JSON alike).
fn occurrences(text: &str) -> (usize, usize) {
    (text.matches(BIG).count(), text.matches(&precise()).count())
}

fn fit(body: &str, budget: Option<&str>) -> String {
    let mut args = vec!["fit", "-"];
    if let Some(budget) = budget {
        args.extend(["--budget", budget]);
    }
    let output = tightfit(&args, Some(body));
    assert!(output.status.success(), "{}", stderr(&output));
    if budget.is_some() {
        assert!(stderr(&output).lines().count() > 1, "a step acted: {}", stderr(&output));
    }
    stdout(&output)
}

#[test]
fn numbers_beyond_an_f64_come_out_as_they_came() {
    for body in [openai_body(), anthropic_body()] {
        let expected = occurrences(&body);
        assert_eq!(expected, (3, 3), "the fixture holds each number three times");
        // nothing to do: the history is written back
        assert_eq!(occurrences(&fit(&body, None)), expected, "{}", fit(&body, None));
        // a budget that truncates the old tool result: the rest is written again
        let fitted = fit(&body, Some("1500"));
        assert_eq!(occurrences(&fitted), expected, "{fitted}");
        assert!(!fitted.contains("e29") && !fitted.contains("e+29"), "{fitted}");
    }
}
