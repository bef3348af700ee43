//! Builders and checks shared by the steps' unit tests.

use crate::format::{parse_str, Format, FormatHint};
use crate::history::History;
use crate::message::{Message, Role};
use crate::steps::{Step, StepContext};
use crate::tokens::{ChatCounter, CountCache, OpenAiEncoding};
use crate::validate::validate;

/// Reads an OpenAI message array.
pub fn openai(json: &str) -> Vec<Message> {
    parse_str(json, FormatHint::Exactly(Format::OpenAi)).expect("test input parses").messages
}

/// Reads an Anthropic message array.
pub fn anthropic(json: &str) -> Vec<Message> {
    parse_str(json, FormatHint::Exactly(Format::Anthropic)).expect("test input parses").messages
}

/// system, user, assistant calling `lookup` + its result, user, assistant.
pub fn tool_history() -> Vec<Message> {
    openai(
        r#"[
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "found it"},
        {"role": "user", "content": "and now?"},
        {"role": "assistant", "content": "done"}
    ]"#,
    )
}

/// The o200k counter with OpenAI framing.
/// A context for Anthropic's rules, with no budget.
pub fn anthropic_cx() -> StepContext<'static> {
    StepContext::new(Format::Anthropic)
}

pub fn counter() -> ChatCounter {
    ChatCounter::openai(OpenAiEncoding::O200kBase)
}

/// Runs `step` on `input` (OpenAI rules, no budget) and returns the messages.
pub fn run(step: &dyn Step, input: &[Message]) -> Vec<Message> {
    run_in(step, input, StepContext::new(Format::OpenAi))
}

/// Runs `step` on `input` in `cx`; the input must come back unchanged.
pub fn run_in(step: &dyn Step, input: &[Message], cx: StepContext) -> Vec<Message> {
    let before = input.to_vec();
    let mut history = History::new(input, None, &counter(), CountCache::new(), cx.provider);
    history.set_step(step.name());
    step.apply(&mut history, &cx).expect("step runs");
    crate::repair::normalize(&mut history);
    let (messages, _, _) = history.finish(input);
    assert_eq!(input, before.as_slice(), "the input is not mutated");
    messages.into_iter().map(|m| m.into_owned()).collect()
}

/// The tokens `messages` hold as a request (OpenAI rules, no tools), as the steps see them.
pub fn total_tokens(messages: &[Message]) -> usize {
    History::new(messages, None, &counter(), CountCache::new(), Format::OpenAi).total_tokens()
}

/// `role: text` of each message.
pub fn texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let text = m.text_content();
            let calls: Vec<&str> = m.tool_calls().map(|c| c.name.as_str()).collect();
            match (text.is_empty(), calls.is_empty(), m.role) {
                (_, true, _) | (false, false, _) => format!("{}: {text}", m.role_name()),
                (true, false, Role::Assistant) => format!("assistant: calls {}", calls.join(",")),
                _ => m.role_name().to_string(),
            }
        })
        .collect()
}

/// Asserts the messages are valid for OpenAI.
pub fn assert_valid(messages: &[Message]) {
    assert_eq!(validate(messages, Format::OpenAi), vec![], "valid for OpenAI");
}
