//! autogen-ext 0.7.5's `OpenAIChatCompletionClient.count_tokens`, replicated exactly.
//!
//! autogen's `TokenLimitedChatCompletionContext` counts with its model client, and the
//! OpenAI client counts its own way (not the way OpenAI bills, which [`ChatCounter`] does):
//! each message becomes the OpenAI dicts autogen would send, and every value of every dict is
//! tokenized — the role names too —, non-string values as `json.dumps` text (ASCII-escaped, so
//! `東京` costs the tokens of `\u6771\u4eac`), plus 3 per autogen message (a results message
//! with five results pays it once), 1 per `name`, 3 to prime the reply, and a tool-schema
//! formula of its own. An image costs 85 + 170 per 512-px tile after autogen's scaling (with
//! `int()` truncation). The client also raises where tiktoken or autogen would:
//! special-token text (`<|endoftext|>`) and user or assistant names outside `[a-zA-Z0-9_-]`
//! are errors, not counts.
//!
//! Why here and not in Python: autogen's context re-counts the whole history after each
//! message it drops, and re-tokenizing in Python is what makes it take minutes on a long
//! history. Counted here once per message, the context's loop costs a subtraction per drop.
//!
//! [`ChatCounter`]: crate::tokens::ChatCounter

use serde_json::Value;

use super::message::{AutogenMessage, AutogenPart};
use crate::tokens::{OpenAiEncoding, TokenCounter};

/// Tokens autogen-ext adds for every message, whatever it holds.
pub const AUTOGEN_TOKENS_PER_MESSAGE: usize = 3;

/// Tokens autogen-ext adds to prime the reply.
pub const AUTOGEN_REPLY_PRIMING: usize = 3;

/// What autogen-ext's counter raises instead of counting (a `ValueError` in autogen).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AutogenCountError {
    /// Text holds a special token of the encoding (tiktoken's check).
    #[error(
        "Encountered text corresponding to disallowed special token '{0}'.\nIf you want this text to be \
         encoded as a special token, pass it to `allowed_special`, e.g. `allowed_special={{'{0}', ...}}`.\n\
         If you want this text to be encoded as normal text, disable the check for this token by passing \
         `disallowed_special=(enc.special_tokens_set - {{'{0}'}})`.\nTo disable this check for all special \
         tokens, pass `disallowed_special=()`.\n"
    )]
    SpecialToken(String),
    /// A user or assistant `source`, or a tool name, that OpenAI would reject.
    #[error("Invalid name: {name}. {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// autogen's explanation.
        reason: &'static str,
    },
}

/// autogen-ext's OpenAI token counter for one encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutogenOpenAiCounter {
    /// The encoding tiktoken picks for the client's model (cl100k_base when it knows none).
    pub encoding: OpenAiEncoding,
    /// Whether a user message's `name` is sent (the client's `include_name_in_message`,
    /// default true).
    pub include_name: bool,
}

impl AutogenOpenAiCounter {
    /// The counter of a client whose model uses `encoding`, with names sent.
    pub fn new(encoding: OpenAiEncoding) -> AutogenOpenAiCounter {
        AutogenOpenAiCounter { encoding, include_name: true }
    }

    fn special_tokens(&self) -> &'static [&'static str] {
        match self.encoding {
            OpenAiEncoding::O200kBase => &["<|endoftext|>", "<|endofprompt|>"],
            _ => &["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"],
        }
    }

    /// `len(encoding.encode(text))`: the tokens of `text`, or the error tiktoken raises for
    /// the leftmost special token in it.
    pub fn text(&self, text: &str) -> Result<usize, AutogenCountError> {
        if text.contains("<|") {
            let first = self
                .special_tokens()
                .iter()
                .filter_map(|t| text.find(t).map(|at| (at, *t)))
                .min_by_key(|(at, _)| *at);
            if let Some((_, token)) = first {
                return Err(AutogenCountError::SpecialToken(token.to_string()));
            }
        }
        Ok(self.encoding.count(text))
    }

    /// The tokens of one message, its 3 of framing included.
    pub fn message(&self, message: &AutogenMessage) -> Result<usize, AutogenCountError> {
        let mut n = AUTOGEN_TOKENS_PER_MESSAGE;
        match message {
            AutogenMessage::System { content } => n += self.text(content)? + self.text("system")?,
            AutogenMessage::UserText { source, content } => {
                valid_name(source)?;
                n += self.text("user")? + self.name(source)? + self.text(content)?;
            }
            AutogenMessage::UserParts { source, parts } => {
                valid_name(source)?;
                n += self.text("user")? + self.name(source)?;
                for part in parts {
                    n += match part {
                        AutogenPart::Text(text) => {
                            self.text(&format!("{{\"type\": \"text\", \"text\": {}}}", py_json_string(text)))?
                        }
                        AutogenPart::Image(size) => vision_tokens(*size),
                    };
                }
            }
            AutogenMessage::AssistantText { source, content, .. } => {
                valid_name(source)?;
                n += self.text("assistant")? + self.text(content)?;
            }
            AutogenMessage::Calls { source, calls, thought } => {
                valid_name(source)?;
                let listed: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        format!(
                            "{{\"id\": {}, \"function\": {{\"arguments\": {}, \"name\": {}}}, \"type\": \"function\"}}",
                            py_json_string(&c.id),
                            py_json_string(&c.arguments),
                            py_json_string(&c.name)
                        )
                    })
                    .collect();
                n += self.text("assistant")? + self.text(&format!("[{}]", listed.join(", ")))?;
                if let Some(thought) = thought {
                    n += self.text(thought)?;
                }
            }
            AutogenMessage::Results { results } => {
                for r in results {
                    n += self.text(&r.content)? + self.text("tool")? + self.text(&r.call_id)?;
                }
            }
        }
        Ok(n)
    }

    fn name(&self, source: &str) -> Result<usize, AutogenCountError> {
        if self.include_name {
            Ok(self.text(source)? + 1)
        } else {
            Ok(0)
        }
    }

    /// The tokens of the tool schemas (autogen `ToolSchema` dicts: `name`, `description`,
    /// `parameters`), 12 more when there is any. Fields autogen does not know cost nothing.
    pub fn tools(&self, tools: &[Value]) -> Result<usize, AutogenCountError> {
        let mut total: i64 = 0;
        for tool in tools {
            let name = tool.get("name").map(py_str).unwrap_or_default();
            valid_name(&name)?;
            let description = tool.get("description").map(py_str).unwrap_or_default();
            let mut n = self.text(&name)? as i64 + self.text(&description)? as i64 - 2;
            if let Some(Value::Object(properties)) = tool.get("parameters").and_then(|p| p.get("properties"))
            {
                for (key, v) in properties {
                    n += self.text(key)? as i64;
                    let Value::Object(fields) = v else { continue };
                    for (field, value) in fields {
                        n += match field.as_str() {
                            "type" | "description" | "title" => 2 + self.text(&py_str(value))? as i64,
                            "default" => 2 + self.text(&py_json_dumps(value))? as i64,
                            "anyOf" | "enum" => {
                                let mut m = -3;
                                for o in value.as_array().map(Vec::as_slice).unwrap_or_default() {
                                    let text = if field == "anyOf" {
                                        o.get("type").map(py_str).unwrap_or_default()
                                    } else {
                                        py_str(o)
                                    };
                                    m += 3 + self.text(&text)? as i64;
                                }
                                m
                            }
                            _ => 0,
                        };
                    }
                }
                n += 11;
                if properties.is_empty() {
                    n -= 2;
                }
            }
            total += n;
        }
        if !tools.is_empty() {
            total += 12;
        }
        Ok(total.max(0) as usize)
    }

    /// `count_tokens(messages, tools=tools)`: every message, the reply priming, the tools.
    pub fn count(&self, messages: &[AutogenMessage], tools: &[Value]) -> Result<usize, AutogenCountError> {
        let mut n = AUTOGEN_REPLY_PRIMING + self.tools(tools)?;
        for m in messages {
            n += self.message(m)?;
        }
        Ok(n)
    }
}

/// autogen's `assert_valid_name`: `^[a-zA-Z0-9_-]+$` as Python's `re.match` reads it (so one
/// trailing newline passes), at most 64 characters.
fn valid_name(name: &str) -> Result<(), AutogenCountError> {
    let body = name.strip_suffix('\n').unwrap_or(name);
    if body.is_empty() || !body.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(AutogenCountError::InvalidName {
            name: name.to_string(),
            reason: "Only letters, numbers, '_' and '-' are allowed.",
        });
    }
    if name.chars().count() > 64 {
        return Err(AutogenCountError::InvalidName {
            name: name.to_string(),
            reason: "Name must be less than 64 characters.",
        });
    }
    Ok(())
}

/// autogen-ext's `calculate_vision_tokens` at detail `auto`, with its float arithmetic and
/// `int()` truncations. An image whose size is unknown costs the base 85.
pub fn vision_tokens(size: Option<(u32, u32)>) -> usize {
    let Some((width, height)) = size else { return 85 };
    let (mut w, mut h) = (f64::from(width), f64::from(height.max(1)));
    if w > 2048.0 || h > 2048.0 {
        let ratio = w / h;
        if ratio > 1.0 {
            w = 2048.0;
            h = (2048.0 / ratio).trunc();
        } else {
            h = 2048.0;
            w = (2048.0 * ratio).trunc();
        }
    }
    let ratio = w / h.max(1.0);
    if w > 768.0 && h > 768.0 {
        if ratio > 1.0 {
            h = 768.0;
            w = (768.0 * ratio).trunc();
        } else {
            w = 768.0;
            h = (768.0 / ratio).trunc();
        }
    }
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    85 + 170 * tiles as usize
}

/// A string as Python's `json.dumps` writes it: quoted, with `"`, `\` and control characters
/// escaped and every character outside printable ASCII as `\uXXXX` (UTF-16 surrogate pairs
/// beyond the BMP).
pub fn py_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// Python's `json.dumps(value)` (default separators, ASCII-escaped).
fn py_json_dumps(value: &Value) -> String {
    match value {
        Value::String(s) => py_json_string(s),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(py_json_dumps).collect::<Vec<_>>().join(", "))
        }
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_json_string(k), py_json_dumps(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// Python's `str(value)` for JSON data: a string as it is, anything else as Python prints it.
fn py_str(value: &Value) -> String {
    fn repr(value: &Value) -> String {
        match value {
            Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            other => py_str(other),
        }
    }
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(repr).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter().map(|(k, v)| format!("'{k}': {}", repr(v))).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> AutogenMessage {
        AutogenMessage::from_value(&v, "messages[0]").unwrap()
    }

    const O200K: AutogenOpenAiCounter =
        AutogenOpenAiCounter { encoding: OpenAiEncoding::O200kBase, include_name: true };

    #[test]
    fn counts_as_autogen_ext_does() {
        // figures from autogen-ext 0.7.5 (the conformance corpus)
        assert_eq!(O200K.count(&[], &[]).unwrap(), 3);
        assert_eq!(
            O200K.count(&[read(json!({"role": "system", "content": "You are terse."}))], &[]).unwrap(),
            11
        );
        assert_eq!(
            O200K.count(&[read(json!({"role": "user", "name": "user", "content": "hi"}))], &[]).unwrap(),
            10
        );
        let five: Vec<AutogenMessage> = ["one", "two", "three", "four", "five"]
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                read(json!({"role": role, "name": role, "content": t}))
            })
            .collect();
        assert_eq!(O200K.count(&five, &[]).unwrap(), 34);
    }

    #[test]
    fn a_results_message_is_framed_once() {
        let one = read(json!({"role": "tool", "results": [
            {"tool_call_id": "a", "name": "f", "content": "x"}]}));
        let two = read(json!({"role": "tool", "results": [
            {"tool_call_id": "a", "name": "f", "content": "x"}, {"tool_call_id": "a", "name": "f", "content": "x"}]}));
        let one_n = O200K.message(&one).unwrap();
        assert_eq!(O200K.message(&two).unwrap(), 2 * one_n - AUTOGEN_TOKENS_PER_MESSAGE);
    }

    #[test]
    fn raises_where_autogen_raises() {
        let err = O200K.text("a <|endofprompt|> b <|endoftext|>").unwrap_err();
        assert_eq!(err, AutogenCountError::SpecialToken("<|endofprompt|>".into()));
        assert!(err
            .to_string()
            .starts_with("Encountered text corresponding to disallowed special token '<|endofprompt|>'."));
        // fim tokens are special in cl100k only
        assert!(O200K.text("<|fim_prefix|>").is_ok());
        assert!(AutogenOpenAiCounter::new(OpenAiEncoding::Cl100kBase).text("<|fim_prefix|>").is_err());
        let err =
            O200K.message(&read(json!({"role": "user", "name": "ユーザー", "content": "hi"}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid name: ユーザー. Only letters, numbers, '_' and '-' are allowed."
        );
        assert!(valid_name("abc\n").is_ok());
        assert!(valid_name("").is_err());
    }

    #[test]
    fn json_dumps_escapes_like_python() {
        assert_eq!(py_json_string("a\"b\\c\nd東\u{7f}😀"), "\"a\\\"b\\\\c\\nd\\u6771\\u007f\\ud83d\\ude00\"");
        assert_eq!(py_json_dumps(&json!({"a": [1, null, true]})), "{\"a\": [1, null, true]}");
        assert_eq!(py_str(&json!(["a", null])), "['a', None]");
    }

    #[test]
    fn vision_tokens_follow_autogen_scaling() {
        assert_eq!(vision_tokens(Some((3, 2))), 85 + 170);
        assert_eq!(vision_tokens(Some((1024, 1024))), 85 + 170 * 4);
        // 4096×1024 → 2048×512 → 4×1 tiles
        assert_eq!(vision_tokens(Some((4096, 1024))), 85 + 170 * 4);
        assert_eq!(vision_tokens(None), 85);
    }

    #[test]
    fn tools_follow_autogen_formula() {
        let tool = json!({"name": "get_weather", "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "the city"}}}});
        let n = O200K.tools(&[tool]).unwrap();
        let expect = O200K.text("get_weather").unwrap() + O200K.text("Weather of a city").unwrap() - 2
            + O200K.text("city").unwrap()
            + 2
            + O200K.text("string").unwrap()
            + 2
            + O200K.text("the city").unwrap()
            + 11
            + 12;
        assert_eq!(n, expect);
        assert!(O200K.tools(&[json!({"name": "bad name"})]).is_err());
    }
}
