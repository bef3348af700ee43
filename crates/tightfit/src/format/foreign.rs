//! Shapes of other formats met by a reader told to read one format (Gemini `contents` and
//! OpenAI Responses API items read as Chat Completions or Anthropic messages), recognised so
//! that they are an error naming what they are and how to read them. Read as Chat Completions
//! messages they would count as a few tokens (Gemini's `parts` is not `content`): a silent
//! wrong answer.

use serde_json::{Map, Value};

use super::path::Path;
use super::FormatError;

/// What a message-shaped object is, if it belongs to another format, and how to read it.
fn recognise(map: &Map<String, Value>) -> Option<String> {
    if !map.contains_key("content") && map.get("parts").is_some_and(Value::is_array) {
        return Some(
            "a Gemini `contents` entry (`parts` instead of `content`): read it as format \"gemini\"".into(),
        );
    }
    let kind = map.get("type").and_then(Value::as_str);
    match (map.contains_key("role"), kind) {
        (false, Some(kind)) | (true, Some(kind @ "message")) => Some(format!(
            "an OpenAI Responses API input item (`\"type\": {kind:?}`): read it as format \"responses\""
        )),
        _ => None,
    }
}

/// Refuses a message of another format, saying which; `Ok` for anything else (the reader
/// then says what is wrong with it, if anything).
pub(super) fn refuse_message(map: &Map<String, Value>, at: &Path) -> Result<(), FormatError> {
    match recognise(map) {
        Some(what) => Err(at.error(format!("this is {what}"))),
        None => Ok(()),
    }
}

/// The error for a request body without `messages`: naming the format it looks like.
pub(super) fn missing_messages(map: &Map<String, Value>, root: &Path) -> FormatError {
    if map.contains_key("contents") {
        root.error("this is a Gemini request (`contents`): read it as format \"gemini\"")
    } else if map.contains_key("input") {
        root.error("this is an OpenAI Responses API request (`input`): read it as format \"responses\"")
    } else {
        root.error(
            "expected a list of messages or an object with `messages` (or a Responses request's \
             `input`, or a Gemini request's `contents`)",
        )
    }
}
