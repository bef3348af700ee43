//! Wire formats: reading and writing OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages and Google Gemini `contents`.
//!
//! Reading is lossless: every field tightfit does not interpret is kept in an `extra` map and
//! written back, so `write(parse(json)) == json` (as JSON values) for any input the reader
//! accepts. Errors name the place: malformed JSON gives line and column, a wrong shape gives
//! the path (`messages[12].tool_calls[0].function.arguments: expected a string, found null`).
//!
//! An input is either a bare JSON array of messages or an object with a `messages` array (a
//! request body, or any record that carries one — its other fields are kept); for the
//! Responses API, an array of input items or an object with `input`; for Gemini, an array of
//! `contents` entries or an object with `contents`.

mod anthropic;
mod common;
mod content;
mod convert;
mod convert_gemini;
mod convert_responses;
mod detect;
mod foreign;
mod gemini;
mod openai;
pub(crate) mod path;
mod responses;
mod splice;

use serde_json::Value;

use crate::message::{Extra, Message, Tool};

pub use convert::{convert, Conversion};
pub use detect::{detect, list_verdict, message_verdict, verdict};
pub use splice::{
    read_appended, read_request, splice_request, Appended, Previous, ReadRequest, RequestLayout,
};

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// OpenAI Chat Completions (also what most OpenAI-compatible servers speak).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses API input items (`input`, `instructions`).
    Responses,
    /// Google Gemini `contents` (`parts`, `systemInstruction`).
    Gemini,
}

impl Format {
    /// The format's name on the command line and in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Responses => "responses",
            Format::Gemini => "gemini",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "openai" => Ok(Format::OpenAi),
            "anthropic" => Ok(Format::Anthropic),
            "responses" => Ok(Format::Responses),
            "gemini" => Ok(Format::Gemini),
            other => {
                Err(format!("unknown format {other:?} (expected openai, anthropic, responses or gemini)"))
            }
        }
    }
}

/// An error in an input document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The text is not JSON.
    #[error("invalid JSON at line {line}, column {column}: {reason}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the JSON parser said.
        reason: String,
    },
    /// The JSON does not have the shape of a conversation.
    #[error("{path}: {reason}")]
    Shape {
        /// Where, for example `messages[3].content[0].text`.
        path: String,
        /// What is wrong there.
        reason: String,
    },
}

impl FormatError {
    fn from_json(err: serde_json::Error) -> FormatError {
        FormatError::Syntax {
            line: err.line(),
            column: err.column(),
            reason: strip_position(&err.to_string()),
        }
    }
}

/// serde_json appends " at line L column C" to its messages; we report those separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// A conversation read from one document: its messages, its tool schemas, and, when the
/// input was an object rather than a bare array, that object's other fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The format it was read from (and is written back in by default).
    pub format: Format,
    /// The messages, system prompt first for Anthropic input that has one.
    pub messages: Vec<Message>,
    /// The tool schemas offered to the model (`tools`), if the input had them.
    pub tools: Option<Vec<Tool>>,
    /// The request fields around the messages; `None` for a bare array of messages.
    pub request: Option<RequestFields>,
}

/// The fields of a request body other than the messages and tools.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestFields {
    /// `model`.
    pub model: Option<String>,
    /// `max_tokens`: the output budget the caller reserved.
    pub max_tokens: Option<u64>,
    /// OpenAI `max_completion_tokens` (reasoning models).
    pub max_completion_tokens: Option<u64>,
    /// OpenAI Responses `max_output_tokens`; Gemini `generationConfig.maxOutputTokens`.
    pub max_output_tokens: Option<u64>,
    /// OpenAI Responses: the request had `instructions` (Gemini: `systemInstruction`), read
    /// as its leading system message and written back there.
    pub instructions: bool,
    /// OpenAI Responses: `input` was a string, written back as one while the history is still
    /// that one plain user message.
    pub input_string: bool,
    /// Every other field, in order (`temperature`, `stream`, or a record's `id` and `meta`).
    pub extra: Extra,
    /// The body's top-level keys in the order they came (`messages`, `tools` and `system`
    /// among them), so that the body is written back in that order; empty for a body built
    /// in code, which is written `model`, (`system`), `messages`, `tools`, then the rest.
    pub key_order: Vec<String>,
}

impl RequestFields {
    /// The output tokens the request reserves, if it says.
    pub fn reserved_output(&self) -> Option<u64> {
        self.max_completion_tokens.or(self.max_output_tokens).or(self.max_tokens)
    }
}

/// Which format to read an input as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatHint {
    /// Decide from the document's shape (see [`detect`]).
    #[default]
    Auto,
    /// This format.
    Exactly(Format),
    /// Decide from the document's shape; where nothing in it decides (plain text, valid in
    /// both), this format: the one the target model's API takes. Gemini's `contents` always
    /// decide by their shape, so preferring Gemini reads plain `content` messages as Chat
    /// Completions (and an empty history as Gemini).
    Prefer(Format),
}

/// Reads one document from JSON text.
pub fn parse_str(text: &str, hint: FormatHint) -> Result<Conversation, FormatError> {
    parse_value(read_json(text)?, hint)
}

/// Reads JSON text, a syntax error naming its line and column (for a caller that looks at
/// the document before choosing how to read it: a request body's `model`).
pub fn read_json(text: &str) -> Result<Value, FormatError> {
    serde_json::from_str(text).map_err(FormatError::from_json)
}

/// Reads one document from a JSON value, taking ownership so strings are moved, not copied.
pub fn parse_value(value: Value, hint: FormatHint) -> Result<Conversation, FormatError> {
    let format = match hint {
        FormatHint::Auto => detect(&value),
        FormatHint::Exactly(format) => format,
        FormatHint::Prefer(format) => detect::verdict(&value).unwrap_or(match format {
            // a Gemini entry always says so (`parts`), so messages that say nothing are
            // `content` messages, which Gemini cannot read; only an empty history is Gemini's
            Format::Gemini if !detect::is_empty_history(&value) => Format::OpenAi,
            format => format,
        }),
    };
    match format {
        Format::OpenAi => openai::read_document(value),
        Format::Anthropic => anthropic::read_document(value),
        Format::Responses => responses::read_document(value),
        Format::Gemini => gemini::read_document(value),
    }
}

/// Writes a conversation as a JSON value in `format`.
///
/// Writing in the format it was read from gives back the input. Writing in the other format
/// converts it; use [`convert`] instead to learn what the conversion could not carry over.
pub fn to_value(conversation: &Conversation, format: Format) -> Value {
    if format == conversation.format {
        match format {
            Format::OpenAi => openai::write_document(conversation),
            Format::Anthropic => anthropic::write_document(conversation),
            Format::Responses => responses::write_document(conversation),
            Format::Gemini => gemini::write_document(conversation),
        }
    } else {
        let converted = convert(conversation, format);
        to_value(&converted.conversation, format)
    }
}

/// Writes `messages` (a fitted history: borrowed from `like` or owned) as JSON text, in the
/// envelope of `like` (its request fields and tools) and in `like`'s format: a fitted request
/// body without copying the messages kept as they came.
pub fn request_to_string<M: std::borrow::Borrow<Message>>(messages: &[M], like: &Conversation) -> String {
    request_to_value(messages, like).to_string()
}

/// [`request_to_string`] as a JSON value: for a caller that hands the body on as data (the
/// Python package's `FitResult.body`).
pub fn request_to_value<M: std::borrow::Borrow<Message>>(messages: &[M], like: &Conversation) -> Value {
    match like.format {
        Format::OpenAi => openai::write_request(messages, like),
        Format::Anthropic => anthropic::write_request(messages, like),
        Format::Responses => responses::write_request(messages, like),
        Format::Gemini => gemini::write_request(messages, like),
    }
}

/// What a request body in `format` calls its list of messages: `messages`, `input` or
/// `contents`.
pub fn list_key(format: Format) -> &'static str {
    list_name(format)
}

/// Writes a conversation as compact JSON text in `format`.
pub fn to_string(conversation: &Conversation, format: Format) -> String {
    to_value(conversation, format).to_string()
}

/// Reads a bare list of messages in `format` (no request envelope).
pub fn parse_messages(value: Value, format: Format) -> Result<Vec<Message>, FormatError> {
    let items = path::array(value, &path::Path::root(list_name(format)))?;
    let conversation = parse_value(Value::Array(items), FormatHint::Exactly(format))?;
    Ok(conversation.messages)
}

/// Reads one message of a bare history in `format`, as item `index` of the list (errors name
/// `messages[index]`). Reading a list message by message gives the messages
/// [`parse_messages`] gives, for a caller that keeps the messages it read before.
pub fn parse_message(value: Value, format: Format, index: usize) -> Result<Message, FormatError> {
    let list = path::Path::root(list_name(format));
    let at = list.index(index);
    match format {
        Format::OpenAi => openai::read_message(value, &at),
        Format::Anthropic => anthropic::read_message(value, &at, true),
        Format::Responses => responses::read_item(value, &at),
        Format::Gemini => gemini::read_message(value, &at),
    }
}

/// What a format calls its list of messages, for error paths: `messages`, or `input`.
fn list_name(format: Format) -> &'static str {
    match format {
        Format::Responses => "input",
        Format::Gemini => "contents",
        _ => "messages",
    }
}

/// Writes messages as a JSON array in `format`, as they are (no conversion; an Anthropic
/// system prompt is written as a `system` message at the head, since a bare list has nowhere
/// else to put it).
pub fn messages_to_value(messages: &[Message], format: Format) -> Value {
    let write = match format {
        Format::OpenAi => openai::write_message,
        Format::Anthropic => anthropic::write_message,
        Format::Responses => responses::write_item,
        Format::Gemini => gemini::write_message,
    };
    Value::Array(messages.iter().map(write).collect())
}
