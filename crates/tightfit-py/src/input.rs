//! The caller's messages and tool schemas, read in two halves: the Python data is copied to
//! JSON values while the GIL is held ([`RawInput::read`]), then parsed into the engine's
//! message model without it ([`RawInput::parse`]).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::{json, Value};
use tightfit::format::{parse_value, Format, FormatHint};
use tightfit::message::Tool;
use tightfit::steps::ConfigError;
use tightfit::Conversation;

use crate::convert::to_value;
use crate::errors::Failure;

/// Reads a format name (`openai`, `anthropic`, `responses`) given under `key`; `None` means
/// detect it.
pub(crate) fn format_arg(name: Option<&str>, key: &str) -> Result<Option<Format>, Failure> {
    name.map(|n| n.parse::<Format>().map_err(|reason| Failure::Config(ConfigError::new(key, reason))))
        .transpose()
}

/// How the caller handed a history over, which decides what a fit hands back.
pub(crate) enum Shape {
    /// A list of messages: the fitted list comes back.
    Messages,
    /// A request body (a dict with `messages`, `input` or `contents`): the fitted list comes
    /// back, and the whole body as `FitResult.body`.
    Body,
    /// A list of messages and Anthropic's `system=` beside it: the fitted list comes back, and
    /// the system prompt as `FitResult.system`.
    System,
}

/// The messages and tools as JSON, not yet parsed.
pub(crate) struct RawInput {
    messages: Value,
    tools: Option<Value>,
    format: Option<Format>,
    /// The format to read plain messages in (valid in both): the target model's.
    preferred: Option<Format>,
}

impl RawInput {
    /// [`read`](RawInput::read), also taking a request body (a dict with `messages`, and
    /// `system`, `tools` as the provider's API has them) where only a count or a check is
    /// wanted, not messages handed back.
    pub(crate) fn read_history_or_body(
        messages: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        format: Option<&str>,
    ) -> Result<RawInput, Failure> {
        if !messages.is_instance_of::<PyDict>() {
            return RawInput::read(messages, tools, format);
        }
        let body =
            to_value(messages).map_err(|e| Failure::Format { path: e.path(""), reason: e.reason.clone() })?;
        Ok(RawInput {
            messages: body,
            tools: tools_value(tools)?,
            format: format_arg(format, "format")?,
            preferred: None,
        })
    }

    /// Reads whatever form the caller used: a list of messages, a request body, or a list with
    /// Anthropic's `system=` beside it (read as the body `{"system", "messages"}` in Anthropic's
    /// format, the only API that takes the system prompt that way).
    pub(crate) fn read_any(
        messages: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        format: Option<&str>,
        system: Option<&Bound<'_, PyAny>>,
    ) -> Result<(RawInput, Shape), Failure> {
        let Some(system) = system.filter(|s| !s.is_none()) else {
            let Ok(dict) = messages.cast::<PyDict>() else {
                return Ok((RawInput::read(messages, tools, format)?, Shape::Messages));
            };
            let is = |key: &str| dict.contains(key).unwrap_or(false);
            if !(is("messages") || is("input") || is("contents")) && (is("role") || is("type") || is("parts"))
            {
                return Err(Failure::Type(
                    "messages: expected a list of messages or a request body, found one message (a dict \
                     with `role`): put it in a list"
                        .into(),
                ));
            }
            return Ok((RawInput::read_history_or_body(messages, tools, format)?, Shape::Body));
        };
        if messages.is_instance_of::<PyDict>() {
            return Err(Failure::Type(
                "system: a request body carries its own `system`; pass one or the other".into(),
            ));
        }
        let format = format_arg(format, "format")?;
        if format.is_some_and(|f| f != Format::Anthropic) {
            return Err(Failure::Config(ConfigError::new(
                "system",
                "system= is Anthropic's way to give the system prompt; in other formats it is the \
                 first message",
            )));
        }
        let list = RawInput::read(messages, None, None)?;
        let system = to_value(system)
            .map_err(|e| Failure::Format { path: e.path("system"), reason: e.reason.clone() })?;
        if !(system.is_string() || system.is_array()) {
            return Err(Failure::Type(
                "system: expected a string or a list of text blocks, as Anthropic's API takes it".into(),
            ));
        }
        let body = json!({"system": system, "messages": list.messages});
        Ok((
            RawInput {
                messages: body,
                tools: tools_value(tools)?,
                format: Some(Format::Anthropic),
                preferred: None,
            },
            Shape::System,
        ))
    }

    /// The model a request body names (`model`), if the input is one.
    pub(crate) fn body_model(&self) -> Option<&str> {
        self.messages.as_object()?.get("model")?.as_str()
    }

    /// Copies `messages` (a list or tuple of dicts) and `tools` (a list of schemas or `None`)
    /// out of Python. Needs the GIL; costs one walk over the data.
    pub(crate) fn read(
        messages: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        format: Option<&str>,
    ) -> Result<RawInput, Failure> {
        if !(messages.is_instance_of::<PyList>() || messages.is_instance_of::<PyTuple>()) {
            let found = messages.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            let hint = match messages.cast::<PyDict>() {
                Ok(body) if body.contains("input").unwrap_or(false) => {
                    " (for a Responses request body, pass body[\"input\"])"
                }
                Ok(_) => " (for a request body, pass body[\"messages\"])",
                Err(_) => "",
            };
            return Err(Failure::Type(format!(
                "messages: expected a list of message dicts, found {found}{hint}"
            )));
        }
        let format = format_arg(format, "format")?;
        let messages = to_value(messages)
            .map_err(|e| Failure::Format { path: e.path("messages"), reason: e.reason.clone() })?;
        Ok(RawInput { messages, tools: tools_value(tools)?, format, preferred: None })
    }

    /// The same input, read in `preferred` (the target model's format) where its shape
    /// decides nothing.
    pub(crate) fn preferring(self, preferred: Option<Format>) -> RawInput {
        RawInput { preferred, ..self }
    }

    /// Parses the messages (format detected unless given; the preferred one where the shape
    /// decides nothing) and the tool schemas in the same format. Runs without the GIL. Message `i` of the result is item `i` of the caller's
    /// list: a bare list of messages is read one message per item.
    pub(crate) fn parse(self) -> Result<Conversation, Failure> {
        let hint = match (self.format, self.preferred) {
            (Some(format), _) => FormatHint::Exactly(format),
            (None, Some(preferred)) => FormatHint::Prefer(preferred),
            (None, None) => FormatHint::Auto,
        };
        let mut conversation = parse_value(self.messages, hint)?;
        // tools given beside the messages; a request body's own stay when none are
        if self.tools.is_some() {
            conversation.tools = parse_tools(self.tools, conversation.format)?;
        }
        Ok(conversation)
    }
}

/// Copies `tools` (a list of schemas or `None`) out of Python. Needs the GIL.
pub(crate) fn tools_value(tools: Option<&Bound<'_, PyAny>>) -> Result<Option<Value>, Failure> {
    match tools {
        Some(t) if !t.is_none() => Ok(Some(
            to_value(t).map_err(|e| Failure::Format { path: e.path("tools"), reason: e.reason.clone() })?,
        )),
        _ => Ok(None),
    }
}

/// Parses tool schemas in `format`. Runs without the GIL.
pub(crate) fn parse_tools(tools: Option<Value>, format: Format) -> Result<Option<Vec<Tool>>, Failure> {
    let Some(tools) = tools else { return Ok(None) };
    // the reader knows tool schemas only inside a request body, whose history key is the format's
    let body = match format {
        Format::Responses => json!({"input": [], "tools": tools}),
        Format::Gemini => json!({"contents": [], "tools": tools}),
        _ => json!({"messages": [], "tools": tools}),
    };
    Ok(parse_value(body, FormatHint::Exactly(format))?.tools)
}

/// The format `model`'s API takes, to read plain messages in (as the CLI does: a Gemini
/// model's messages that say nothing of their shape are still read as `content` messages,
/// since a Gemini entry always says so with `parts`).
pub(crate) fn model_format(model: &tightfit::models::ModelInfo) -> Format {
    if model.speaks_anthropic() {
        Format::Anthropic
    } else if model.speaks_gemini() {
        Format::Gemini
    } else {
        Format::OpenAi
    }
}
