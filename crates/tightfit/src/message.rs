//! The message model: one typed representation for every wire format.
//!
//! A [`Message`] is a role and an ordered list of [`Part`]s. Everything a format carries that
//! the model does not interpret is kept in `extra` maps at the level where it appeared, so that
//! reading and writing a message gives back JSON equal to what came in. Tool calls, thinking
//! and tool results are parts too, so that steps see one shape whatever the wire format put
//! them in (`tool_calls` and `reasoning_content` fields for OpenAI, content blocks for
//! Anthropic).

use serde_json::{Map, Value};

/// Fields of a JSON object that tightfit does not interpret, kept in their original order.
pub type Extra = Map<String, Value>;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Role {
    /// Instructions from the application (OpenAI `system`, Anthropic top-level `system`).
    System,
    /// OpenAI's `developer` role: system instructions for reasoning models.
    Developer,
    /// The human (and, in Anthropic form, tool results).
    User,
    /// The model.
    Assistant,
    /// An OpenAI tool result.
    Tool,
    /// The legacy OpenAI `function` result role.
    Function,
    /// A role tightfit does not know (AG2 writes `tool_calls`, for one). The name is kept in
    /// the message's `extra["role"]` and written back; it is counted like a user message and
    /// no provider accepts it, so the validator reports it.
    Other,
}

impl Role {
    /// The role as written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
            Role::Other => "other",
        }
    }

    /// Parses a wire role name.
    pub fn from_wire(name: &str) -> Option<Role> {
        Some(match name {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            "function" => Role::Function,
            _ => return None,
        })
    }

    /// System and developer messages: instructions that steps keep by default.
    pub fn is_instruction(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a message's content was written, so that writing it back keeps the same shape.
///
/// A message whose content was a plain string and still holds a single text part is written
/// as a string again; in every other case content parts are written as a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ContentForm {
    /// No `content` key at all (legacy OpenAI function-call messages).
    Absent,
    /// `"content": null`.
    Null,
    /// `"content": "..."`.
    #[default]
    Text,
    /// `"content": [ ... ]`.
    Parts,
}

/// One conversation message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content in order: text, media, thinking, tool calls and tool results.
    pub parts: Vec<Part>,
    /// The optional participant name (OpenAI `name`).
    pub name: Option<String>,
    /// The call this message answers (OpenAI `tool` messages).
    pub tool_call_id: Option<String>,
    /// How the content was written on the wire.
    pub content_form: ContentForm,
    /// Message-level fields tightfit does not interpret, written back as they came.
    pub extra: Extra,
}

impl Message {
    /// This message with its whole content `parts` written in `form`: its role, name, call
    /// id and fields copied, its old content not (a step replacing a 100 kB tool result
    /// copies its ids, not its text).
    pub(crate) fn with_content(&self, parts: Vec<Part>, form: ContentForm) -> Message {
        Message {
            role: self.role,
            parts,
            name: self.name.clone(),
            tool_call_id: self.tool_call_id.clone(),
            content_form: form,
            extra: self.extra.clone(),
        }
    }

    /// A message with plain text content.
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            parts: vec![Part::Text(TextPart::new(text))],
            name: None,
            tool_call_id: None,
            content_form: ContentForm::Text,
            extra: Extra::new(),
        }
    }

    /// The role as written on the wire, the original name for [`Role::Other`].
    pub fn role_name(&self) -> &str {
        match self.role {
            Role::Other => self.extra.get("role").and_then(|r| r.as_str()).unwrap_or("other"),
            role => role.as_str(),
        }
    }

    /// The tool calls this message makes, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The ids of the calls this message answers: its `tool_call_id` (OpenAI), or the ids of
    /// its `tool_result` blocks (Anthropic).
    pub fn answered_call_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_call_id.as_deref().into_iter().chain(self.parts.iter().filter_map(|p| match p {
            Part::ToolResult(result) => Some(result.tool_use_id.as_str()),
            _ => None,
        }))
    }

    /// Whether this message carries tool results (a `tool`/`function` message, or a user
    /// message with `tool_result` blocks).
    pub fn is_tool_result(&self) -> bool {
        matches!(self.role, Role::Tool | Role::Function)
            || self.parts.iter().any(|p| matches!(p, Part::ToolResult(_)))
    }

    /// Whether this message is one OpenAI Responses item other than a `message`: a
    /// `reasoning` item, a `function_call` or `custom_tool_call`, or an item tightfit does not
    /// know (kept verbatim as an opaque part). Such a message has no `content` and one part.
    /// The items of one model response (its reasoning, message and calls) come as several
    /// messages in a row, which the units keep together as one assistant step.
    pub fn is_response_item(&self) -> bool {
        self.content_form == ContentForm::Absent
            && match self.parts.as_slice() {
                [Part::Thinking(t)] => t.origin == ThinkingOrigin::ResponsesItem,
                [Part::ToolCall(c)] => {
                    matches!(c.style, CallStyle::ResponsesFunction | CallStyle::ResponsesCustom)
                }
                [Part::Opaque(_)] => true,
                _ => false,
            }
    }

    /// The concatenated text parts, for display and search.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text(t) = part {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
        }
        out
    }
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Part {
    /// Plain text.
    Text(TextPart),
    /// An image, by URL, data URI or base64 payload.
    Image(ImagePart),
    /// Audio input (OpenAI `input_audio`).
    Audio(AudioPart),
    /// A file or document (OpenAI `file`, Anthropic `document`).
    File(FilePart),
    /// A refusal written by the model (OpenAI).
    Refusal(RefusalPart),
    /// Model reasoning, with its signature where the provider gives one.
    Thinking(ThinkingPart),
    /// Encrypted reasoning (Anthropic `redacted_thinking`).
    RedactedThinking(RedactedThinkingPart),
    /// A call of a tool by the model.
    ToolCall(ToolCall),
    /// The answer to a tool call (Anthropic `tool_result` block).
    ToolResult(ToolResult),
    /// A part of a kind tightfit does not know, kept verbatim.
    Opaque(Value),
}

/// Plain text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Other fields of the block (`cache_control`, `citations`, ...).
    pub extra: Extra,
}

impl TextPart {
    /// A text part with no other fields.
    pub fn new(text: impl Into<String>) -> TextPart {
        TextPart { text: text.into(), extra: Extra::new() }
    }
}

/// Where an image comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ImageSource {
    /// A URL: `https://...` or a `data:` URI.
    Url(String),
    /// An inline base64 payload (Anthropic `source.type = "base64"`).
    Base64 {
        /// The MIME type, for example `image/png`.
        media_type: String,
        /// The base64 data.
        data: String,
    },
    /// Any other source (for example an Anthropic file id), kept verbatim.
    Other(Extra),
}

/// Which wire shape an image came in, so it is written back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageStyle {
    /// `{"type": "image_url", "image_url": {"url", "detail"}}`.
    OpenAi,
    /// `{"type": "image", "source": {...}}`.
    Anthropic,
    /// OpenAI Responses `{"type": "input_image", "image_url", "detail"}` (or a `file_id`).
    Responses,
    /// A Gemini `{"inlineData": {"mimeType", "data"}}` part of an image type.
    Gemini,
}

/// An image.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImagePart {
    /// Where the image is.
    pub source: ImageSource,
    /// OpenAI's `detail`: `low`, `high` or `auto`.
    pub detail: Option<String>,
    /// The wire shape it came in.
    pub style: ImageStyle,
    /// Other fields of the part.
    pub extra: Extra,
    /// Other fields of the inner object (`image_url` or `source`).
    pub inner_extra: Extra,
}

/// Audio input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AudioPart {
    /// Base64 audio data.
    pub data: String,
    /// `wav`, `mp3`, ...
    pub format: Option<String>,
    /// Other fields of the part.
    pub extra: Extra,
    /// Other fields of the `input_audio` object.
    pub inner_extra: Extra,
}

/// A file or document, kept whole: tightfit only measures and moves it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FilePart {
    /// The block's `type` (`file` or `document`).
    pub kind: String,
    /// Every other field of the block.
    pub fields: Extra,
}

/// A refusal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefusalPart {
    /// The refusal text.
    pub refusal: String,
    /// Other fields of the part.
    pub extra: Extra,
}

/// Where a thinking part lives on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThinkingOrigin {
    /// Anthropic `{"type": "thinking", "thinking", "signature"}` block.
    Block,
    /// OpenAI-compatible `reasoning_content` message field (DeepSeek, vLLM).
    ReasoningContent,
    /// OpenAI-compatible `reasoning` message field (OpenRouter, Ollama).
    Reasoning,
    /// An OpenAI Responses `reasoning` item: the text is its summary, the signature its
    /// `encrypted_content`, and the item's other fields (`id`, the `summary` list as it came)
    /// are in `extra`.
    ResponsesItem,
    /// A Gemini text part with `"thought": true`: the signature is its `thoughtSignature`,
    /// the part's other fields are in `extra`.
    Gemini,
}

/// Model reasoning.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThinkingPart {
    /// The reasoning text.
    pub text: String,
    /// The provider's signature, which must be sent back unchanged (Anthropic).
    pub signature: Option<String>,
    /// Where it came from.
    pub origin: ThinkingOrigin,
    /// Other fields of the block.
    pub extra: Extra,
}

/// Encrypted reasoning.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RedactedThinkingPart {
    /// The opaque payload.
    pub data: String,
    /// Other fields of the block.
    pub extra: Extra,
}

/// The arguments of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Arguments {
    /// A JSON document as a string, as OpenAI sends it (not necessarily valid JSON).
    Text(String),
    /// A JSON value, as Anthropic sends it.
    Json(Value),
}

impl Arguments {
    /// The arguments as a JSON string (what OpenAI sends and counts).
    pub fn to_json_string(&self) -> String {
        match self {
            Arguments::Text(s) => s.clone(),
            Arguments::Json(v) => v.to_string(),
        }
    }

    /// The arguments as a JSON value; text that is not valid JSON becomes a string value.
    pub fn to_value(&self) -> Value {
        match self {
            Arguments::Text(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
            Arguments::Json(v) => v.clone(),
        }
    }
}

/// Which wire shape a tool call came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallStyle {
    /// An entry of OpenAI `tool_calls` with a `function` object.
    OpenAiFunction,
    /// An entry of OpenAI `tool_calls` with a `custom` object (free-form input).
    OpenAiCustom,
    /// The legacy OpenAI `function_call` message field (no id).
    OpenAiLegacy,
    /// An Anthropic `tool_use` block.
    AnthropicToolUse,
    /// An OpenAI Responses `function_call` item (`call_id` is the id; the item's `id` and
    /// `status` are in `extra`).
    ResponsesFunction,
    /// An OpenAI Responses `custom_tool_call` item (free-form `input`).
    ResponsesCustom,
    /// A Gemini `functionCall` part with an `id` (the part's other fields, such as
    /// `thoughtSignature`, are in `extra`; the `functionCall` object's in `inner_extra`).
    Gemini,
    /// A Gemini `functionCall` part without an `id`: the id is made up on reading
    /// (`name#n` for the n-th call of that name in its turn, which the n-th `functionResponse`
    /// of that name in the next turn answers) and not written back.
    GeminiNoId,
}

/// A call of a tool by the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolCall {
    /// The call id that results refer to (absent only for legacy function calls).
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub arguments: Arguments,
    /// The wire shape.
    pub style: CallStyle,
    /// Other fields of the call (OpenAI keeps `type` here).
    pub extra: Extra,
    /// Other fields of the inner `function`/`custom` object.
    pub inner_extra: Extra,
}

/// The answer to a tool call, as an Anthropic `tool_result` block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolResult {
    /// The id of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The result's content.
    pub parts: Vec<Part>,
    /// How the content was written (absent, string, or blocks).
    pub content_form: ContentForm,
    /// Whether the tool failed.
    pub is_error: Option<bool>,
    /// Other fields of the block.
    pub extra: Extra,
}

/// A tool the model may call, with its schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// The JSON schema of its input.
    pub parameters: Option<Value>,
    /// Which wire shape it came in.
    pub style: ToolStyle,
    /// Other fields of the tool object (OpenAI keeps `type` here).
    pub extra: Extra,
    /// Other fields of the inner `function` object (OpenAI `strict`).
    pub inner_extra: Extra,
}

impl Tool {
    /// A tool tightfit does not interpret (a provider's built-in tool), kept verbatim; its
    /// name is the object's `name`, if it has one.
    pub fn other(fields: Extra) -> Tool {
        let name = fields.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        Tool {
            name,
            description: None,
            parameters: None,
            style: ToolStyle::Other,
            extra: fields,
            inner_extra: Extra::new(),
        }
    }
}

/// Which wire shape a tool schema came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolStyle {
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`.
    OpenAi,
    /// `{"name", "description", "input_schema"}`.
    Anthropic,
    /// OpenAI Responses `{"type": "function", "name", "description", "parameters"}`.
    Responses,
    /// One of Gemini's `functionDeclarations` `{"name", "description", "parameters"}`.
    Gemini,
    /// Any other tool (a provider's built-in tool), kept verbatim; `name` is its name if any.
    Other,
}
