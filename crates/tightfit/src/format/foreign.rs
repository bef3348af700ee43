//! Shapes of formats tightfit does not read yet (Gemini `contents`, OpenAI Responses API
//! items), recognised so that they are an error naming what they are. Read as Chat
//! Completions messages they would count as a few tokens (Gemini's `parts` is not `content`):
//! a silent wrong answer.

use serde_json::{Map, Value};

use super::path::Path;
use super::FormatError;

/// What a message-shaped object is, if it belongs to a format tightfit does not read.
fn recognise(map: &Map<String, Value>) -> Option<String> {
    if !map.contains_key("content") && map.get("parts").is_some_and(Value::is_array) {
        return Some("a Gemini `contents` entry (`parts` instead of `content`)".into());
    }
    if !map.contains_key("role") {
        if let Some(kind) = map.get("type").and_then(Value::as_str) {
            return Some(format!("an OpenAI Responses API input item (`\"type\": {kind:?}`)"));
        }
    }
    None
}

/// Refuses a message of a format tightfit does not read, saying which; `Ok` for anything
/// else (the reader then says what is wrong with it, if anything).
pub(super) fn refuse_message(map: &Map<String, Value>, at: &Path) -> Result<(), FormatError> {
    match recognise(map) {
        Some(what) => Err(at.error(format!(
            "this is {what}; tightfit reads OpenAI Chat Completions and Anthropic Messages \
             histories, not this format yet"
        ))),
        None => Ok(()),
    }
}

/// The error for a request body without `messages`: naming the format it looks like.
pub(super) fn missing_messages(map: &Map<String, Value>, root: &Path) -> FormatError {
    let what = if map.contains_key("contents") {
        Some("a Gemini request (`contents`)")
    } else if map.contains_key("input") {
        Some("an OpenAI Responses API request (`input`)")
    } else {
        None
    };
    match what {
        Some(what) => root.error(format!(
            "this is {what}; tightfit reads OpenAI Chat Completions and Anthropic Messages \
             requests (`messages`), not this format yet"
        )),
        None => root.error("expected a list of messages or an object with `messages`"),
    }
}
