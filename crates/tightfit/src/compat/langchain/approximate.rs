//! LangChain's `count_tokens_approximately`: characters divided by a ratio, plus a fixed cost
//! per message and per image, counted the way langchain-core 1.7.2 counts them, to the token.
//!
//! The count is defined on LangChain messages, so this module also holds what the counter (and
//! the `langchain_trim` step) needs to know of one: [`LangchainMessage`], read from an OpenAI
//! dict ([`LangchainMessage::from_openai`]) or filled in by the Python binding from a
//! LangChain object.
//!
//! Per message: ⌈chars / `chars_per_token`⌉ + `extra_tokens_per_message`, plus
//! `tokens_per_image` for each `image`/`image_url` block, where chars are those of the content
//! (text blocks' text, string blocks, the `repr()` of any other block), of the `repr()` of an AI
//! message's tool calls when its content is a string, of a tool message's `tool_call_id`, of
//! the role and (with `count_name`) of the name. The total is the ceiling of the sum, summed in
//! floating point in message order as LangChain sums it, so fractional per-message costs round
//! the same way. Cost: one pass over the characters of each message.

use serde_json::Value;

use crate::compat::python::text::{json_dumps_len, repr_len};

/// The content of a LangChain message.
#[derive(Debug, Clone, PartialEq)]
pub enum LangchainContent {
    /// A string.
    Text(String),
    /// A list of blocks: strings and dicts (`{"type": "text", "text": ...}`, `image_url`, ...).
    Blocks(Vec<Value>),
    /// Anything else, as its Python `repr()` (LangChain counts that).
    Other(String),
    /// A string known only by its length in characters (code points): what the Python
    /// binding reads for counting, so that a long text is not copied to be measured; it reads
    /// the text itself only for a message it may cut.
    Chars(usize),
}

impl LangchainContent {
    /// The content as JSON: a string, or the list of blocks (`null` for [`Chars`](Self::Chars),
    /// whose text was not read).
    pub fn to_value(&self) -> Value {
        match self {
            LangchainContent::Text(s) | LangchainContent::Other(s) => Value::String(s.clone()),
            LangchainContent::Blocks(blocks) => Value::Array(blocks.clone()),
            LangchainContent::Chars(_) => Value::Null,
        }
    }
}

/// What `trim_messages` and `count_tokens_approximately` see of a LangChain message.
#[derive(Debug, Clone, PartialEq)]
pub struct LangchainMessage {
    /// The names the message answers to in `start_on` / `end_on`: its `type` (`human`, `ai`,
    /// `system`, `tool`, ...) first; a Python caller adds the names of its classes.
    pub types: Vec<String>,
    /// The role LangChain gives it in OpenAI terms (`_get_message_openai_role`): `user`,
    /// `assistant`, `system` (or `developer`), `tool`, `function`, or a chat message's role.
    pub role: String,
    /// The content.
    pub content: LangchainContent,
    /// The name, if any.
    pub name: Option<String>,
    /// Whether it is an `AIMessage` (its tool calls count when its content is a string).
    pub is_ai: bool,
    /// Whether it is a `SystemMessage` (what `include_system` keeps at the start).
    pub is_system: bool,
    /// An AI message's tool calls, as LangChain holds them: `{"name", "args", "id", "type"}`
    /// (measured when `tool_calls_repr_len` is not given).
    pub tool_calls: Vec<Value>,
    /// The id of each of an AI message's tool calls (`None` for one without), in order: what
    /// keeps calls with their results, and how many calls there are.
    pub call_ids: Vec<Option<String>>,
    /// The length of the `repr()` of the tool calls, when the caller measured them where they
    /// live (the Python binding measures LangChain's own objects with
    /// [`node_repr_len`](crate::compat::python::text::node_repr_len)): counted instead of working it
    /// out from `tool_calls`, which then need only their ids.
    pub tool_calls_repr_len: Option<usize>,
    /// A `ToolMessage`'s `tool_call_id` (`None` for every other kind).
    pub tool_call_id: Option<String>,
    /// An AI message's `response_metadata["model_provider"]` (for usage scaling).
    pub model_provider: Option<Value>,
    /// An AI message's `usage_metadata["total_tokens"]`, when it is an int.
    pub total_tokens: Option<i64>,
}

impl LangchainMessage {
    /// A message of `type_` with `role` and text `content`, nothing else.
    pub fn new(type_: &str, role: &str, content: LangchainContent) -> LangchainMessage {
        LangchainMessage {
            types: vec![type_.to_string()],
            role: role.to_string(),
            content,
            name: None,
            is_ai: type_ == "ai",
            is_system: type_ == "system",
            tool_calls: Vec::new(),
            call_ids: Vec::new(),
            tool_calls_repr_len: None,
            tool_call_id: None,
            model_provider: None,
            total_tokens: None,
        }
    }

    /// The message LangChain's `convert_to_messages` makes of an OpenAI Chat Completions dict:
    /// `user` → human, `assistant` → ai (tool calls with their arguments parsed), `system` and
    /// `developer` → system, `tool`, `function`; content `null` → `""`. `None` for a value
    /// that is not such a dict (LangChain raises on those).
    pub fn from_openai(value: &Value) -> Option<LangchainMessage> {
        let map = value.as_object()?;
        let role = map.get("role")?.as_str()?;
        let content = match map.get("content") {
            None | Some(Value::Null) => LangchainContent::Text(String::new()),
            Some(Value::String(s)) => LangchainContent::Text(s.clone()),
            Some(Value::Array(blocks)) => LangchainContent::Blocks(blocks.clone()),
            Some(_) => return None,
        };
        let (type_, openai_role) = match role {
            "user" | "human" => ("human", "user"),
            "assistant" | "ai" => ("ai", "assistant"),
            "system" => ("system", "system"),
            "developer" => ("system", "developer"),
            "tool" => ("tool", "tool"),
            "function" => ("function", "function"),
            _ => return None,
        };
        let mut message = LangchainMessage::new(type_, openai_role, content);
        message.name = map.get("name").and_then(Value::as_str).map(str::to_string);
        if type_ == "tool" {
            message.tool_call_id = Some(map.get("tool_call_id")?.as_str()?.to_string());
        }
        if let Some(Value::Array(calls)) = map.get("tool_calls") {
            for call in calls {
                let call = if let Some(function) = call.get("function") {
                    let args = match function.get("arguments") {
                        Some(Value::String(text)) => serde_json::from_str(text).ok()?,
                        Some(other) => other.clone(),
                        None => return None,
                    };
                    serde_json::json!({
                        "name": function.get("name").cloned().unwrap_or(Value::Null),
                        "args": args,
                        "id": call.get("id").cloned().unwrap_or(Value::Null),
                        "type": "tool_call",
                    })
                } else {
                    call.clone()
                };
                message.call_ids.push(call.get("id").and_then(Value::as_str).map(str::to_string));
                message.tool_calls.push(call);
            }
        }
        Some(message)
    }

    /// The OpenAI Chat Completions dict of the message, as LangChain's
    /// `convert_to_openai_messages` writes it: its role, content, name, tool calls (arguments
    /// as `json.dumps(args, ensure_ascii=False)`) and `tool_call_id`. `None` when its text
    /// was not read ([`LangchainContent::Chars`]).
    pub fn to_openai(&self) -> Option<Value> {
        let content = match &self.content {
            LangchainContent::Chars(_) => return None,
            other => other.to_value(),
        };
        let mut map = serde_json::Map::new();
        map.insert("role".into(), Value::String(self.role.clone()));
        map.insert("content".into(), content);
        if let Some(name) = &self.name {
            map.insert("name".into(), Value::String(name.clone()));
        }
        if !self.tool_calls.is_empty() {
            let calls = self
                .tool_calls
                .iter()
                .map(|call| {
                    let args = call.get("args").unwrap_or(&Value::Null);
                    serde_json::json!({
                        "id": call.get("id").cloned().unwrap_or(Value::Null),
                        "type": "function",
                        "function": {
                            "name": call.get("name").cloned().unwrap_or(Value::Null),
                            "arguments": python_json(args),
                        },
                    })
                })
                .collect();
            map.insert("tool_calls".into(), Value::Array(calls));
        }
        if let Some(id) = &self.tool_call_id {
            map.insert("tool_call_id".into(), Value::String(id.clone()));
        }
        Some(Value::Object(map))
    }

    /// Whether the message answers to one of `names` (`_is_message_type`).
    pub fn is_type(&self, names: &[String]) -> bool {
        self.types.iter().any(|t| names.contains(t))
    }

    /// The ids of the calls an AI message makes.
    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.call_ids.iter().filter_map(|id| id.as_deref())
    }
}

/// `json.dumps(value, ensure_ascii=False)`: Python's separators (`", "`, `": "`), text as is.
fn python_json(value: &Value) -> String {
    struct Python;
    impl serde_json::ser::Formatter for Python {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Python);
    // writing JSON data to memory cannot fail
    let _ = serde::Serialize::serialize(value, &mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// The settings of `count_tokens_approximately`, with LangChain's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Approximate {
    /// Characters per token. Defaults to 4.0.
    pub chars_per_token: f64,
    /// Tokens added per message. Defaults to 3.0.
    pub extra_tokens_per_message: f64,
    /// Whether names count. Defaults to true.
    pub count_name: bool,
    /// Tokens per image block. Defaults to 85.
    pub tokens_per_image: i64,
    /// Scale the count by the last AI message's reported `total_tokens` (between 1 and 1.25),
    /// when all AI messages come from one provider. Defaults to false.
    pub use_usage_metadata_scaling: bool,
}

impl Default for Approximate {
    fn default() -> Approximate {
        Approximate {
            chars_per_token: 4.0,
            extra_tokens_per_message: 3.0,
            count_name: true,
            tokens_per_image: 85,
            use_usage_metadata_scaling: false,
        }
    }
}

/// One message measured for [`Approximate`]: its images and its characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measured {
    /// Image blocks.
    pub images: usize,
    /// Characters counted.
    pub chars: usize,
}

impl Approximate {
    /// The characters and images of `message` that the count sees.
    pub fn measure(&self, message: &LangchainMessage) -> Measured {
        let mut m = Measured::default();
        match &message.content {
            LangchainContent::Text(s) => m.chars += s.chars().count(),
            LangchainContent::Other(repr) => m.chars += repr.chars().count(),
            LangchainContent::Chars(n) => m.chars += n,
            LangchainContent::Blocks(blocks) => {
                for block in blocks {
                    match block {
                        Value::String(s) => m.chars += s.chars().count(),
                        Value::Object(map) => match map.get("type").and_then(Value::as_str).unwrap_or("") {
                            "image" | "image_url" => m.images += 1,
                            "text" => m.chars += text_len(map.get("text")),
                            _ => m.chars += repr_len(block),
                        },
                        other => m.chars += repr_len(other),
                    }
                }
            }
        }
        if message.is_ai
            && !matches!(message.content, LangchainContent::Blocks(_))
            && !message.call_ids.is_empty()
        {
            m.chars += match message.tool_calls_repr_len {
                Some(n) => n,
                None => {
                    // the repr of the list, without building it
                    let calls = &message.tool_calls;
                    2 + calls.iter().map(repr_len).sum::<usize>() + 2 * (calls.len() - 1)
                }
            };
        }
        if let Some(id) = &message.tool_call_id {
            m.chars += id.chars().count();
        }
        m.chars += message.role.chars().count();
        if self.count_name {
            if let Some(name) = message.name.as_deref().filter(|n| !n.is_empty()) {
                m.chars += name.chars().count();
            }
        }
        m
    }

    /// The running float sum after one more message, as LangChain adds it: each image, then
    /// the rounded-up characters, then the fixed cost.
    pub fn add(&self, mut sum: f64, m: Measured) -> f64 {
        for _ in 0..m.images {
            sum += self.tokens_per_image as f64;
        }
        sum += (m.chars as f64 / self.chars_per_token).ceil();
        sum + self.extra_tokens_per_message
    }

    /// The count of a running sum: rounded up once more.
    pub fn finish(sum: f64) -> i64 {
        sum.ceil() as i64
    }

    /// Whether counting a longer list never gives less: no part of the count is negative.
    pub fn is_monotone(&self) -> bool {
        self.chars_per_token > 0.0 && self.extra_tokens_per_message >= 0.0 && self.tokens_per_image >= 0
    }

    /// `count_tokens_approximately(messages, tools=...)`: `tools` are tool schemas as dicts
    /// (their `json.dumps` length counts).
    pub fn count(&self, messages: &[LangchainMessage], tools: &[Value]) -> i64 {
        let mut sum = 0.0;
        if !tools.is_empty() {
            let chars: usize = tools.iter().map(json_dumps_len).sum();
            sum += (chars as f64 / self.chars_per_token).ceil();
        }
        // as LangChain tracks it: the first AI message's provider (None until one has one)
        let mut provider: Option<&Value> = None;
        let mut mixed = false;
        let mut last_total = None;
        let mut approx_at_last = 0.0;
        for message in messages {
            sum = self.add(sum, self.measure(message));
            if self.use_usage_metadata_scaling && message.is_ai {
                let own = message.model_provider.as_ref().filter(|v| !v.is_null());
                match provider {
                    None => provider = own,
                    Some(p) if Some(p) != own => mixed = true,
                    Some(_) => {}
                }
                if let Some(total) = message.total_tokens {
                    last_total = Some(total);
                    approx_at_last = sum;
                }
            }
        }
        if self.use_usage_metadata_scaling && messages.len() > 1 && !mixed && provider.is_some() {
            if let Some(total) = last_total.filter(|_| approx_at_last > 0.0) {
                sum *= (total as f64 / approx_at_last).clamp(1.0, 1.25);
            }
        }
        Approximate::finish(sum)
    }
}

/// `len(block.get("text", ""))` for a text block: the characters of a string, the items of a
/// list, the keys of a dict.
fn text_len(text: Option<&Value>) -> usize {
    match text {
        None => 0,
        Some(Value::String(s)) => s.chars().count(),
        Some(Value::Array(items)) => items.len(),
        Some(Value::Object(map)) => map.len(),
        // `len()` of a number or None raises in Python; count its repr rather than fail
        Some(other) => repr_len(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(value: Value) -> LangchainMessage {
        LangchainMessage::from_openai(&value).expect("an OpenAI message")
    }

    #[test]
    fn counts_like_langchain() {
        let c = Approximate::default();
        // "You are terse." (14) + "system" (6) = 20 chars → 5 + 3
        assert_eq!(c.count(&[msg(json!({"role": "system", "content": "You are terse."}))], &[]), 8);
        // "hi" + "user" = 6 → 2 + 3
        assert_eq!(c.count(&[msg(json!({"role": "user", "content": "hi"}))], &[]), 5);
        let fractional = Approximate { extra_tokens_per_message: 2.5, ..c };
        let two =
            [msg(json!({"role": "user", "content": "hi"})), msg(json!({"role": "user", "content": "hi"}))];
        // 2 + 2.5 + 2 + 2.5 = 9: the sum is rounded once, not per message
        assert_eq!(fractional.count(&two, &[]), 9);
        assert_eq!(fractional.count(&two[..1], &[]), 5);
    }

    #[test]
    fn tool_calls_count_by_their_repr() {
        let c = Approximate { chars_per_token: 1.0, extra_tokens_per_message: 0.0, ..Approximate::default() };
        let m = msg(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]}));
        let repr = "[{'name': 'f', 'args': {'x': 1}, 'id': 'c1', 'type': 'tool_call'}]";
        assert_eq!(c.count(std::slice::from_ref(&m), &[]), (repr.len() + "assistant".len()) as i64);
        // with list content the calls are taken to be in the content already
        let blocks = LangchainMessage { content: LangchainContent::Blocks(vec![]), ..m };
        assert_eq!(c.count(&[blocks], &[]), "assistant".len() as i64);
        let t = msg(json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}));
        assert_eq!(c.count(&[t], &[]), ("ok".len() + "c1".len() + "tool".len()) as i64);
    }

    #[test]
    fn back_to_openai_as_langchain_writes_it() {
        let m = msg(json!({"role": "assistant", "content": "", "name": "bot", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":[1,\"é\"]}"}}]}));
        assert_eq!(
            m.to_openai(),
            Some(json!({"role": "assistant", "content": "", "name": "bot", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": [1, \"é\"]}"}}]}))
        );
        let t =
            msg(json!({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]}));
        assert_eq!(
            t.to_openai(),
            Some(json!({"role": "tool", "content": [{"type": "text", "text": "ok"}], "tool_call_id": "c1"}))
        );
        let unread = LangchainMessage { content: LangchainContent::Chars(3), ..t };
        assert_eq!(unread.to_openai(), None);
    }

    #[test]
    fn images_names_and_other_blocks() {
        let c = Approximate { chars_per_token: 1.0, extra_tokens_per_message: 0.0, ..Approximate::default() };
        let m = msg(json!({"role": "user", "name": "bob", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:..."}},
            "plain",
            {"type": "audio", "id": 1}]}));
        let other = "{'type': 'audio', 'id': 1}".len();
        assert_eq!(c.count(std::slice::from_ref(&m), &[]), (85 + 4 + 5 + other + 4 + 3) as i64);
        let unnamed = Approximate { count_name: false, ..c };
        assert_eq!(unnamed.count(&[m], &[]), (85 + 4 + 5 + other + 4) as i64);
    }

    #[test]
    fn tools_and_usage_scaling() {
        let c = Approximate { chars_per_token: 1.0, extra_tokens_per_message: 0.0, ..Approximate::default() };
        let tool = json!({"name": "f"});
        assert_eq!(c.count(&[], &[tool]), r#"{"name": "f"}"#.len() as i64);
        let scaled = Approximate { use_usage_metadata_scaling: true, ..c };
        let mut ai = msg(json!({"role": "assistant", "content": "abcdefghijk"})); // 11 + 9 = 20
        ai.model_provider = Some(json!("openai"));
        ai.total_tokens = Some(44);
        let user = msg(json!({"role": "user", "content": "abcdefghijklmnop"})); // 16 + 4 = 20
        assert_eq!(scaled.count(&[user.clone(), ai.clone()], &[]), 44); // 40 × 44/40
                                                                        // one message: no scaling
        assert_eq!(scaled.count(&[ai.clone()], &[]), 20);
        // no provider: no scaling
        let anonymous = LangchainMessage { model_provider: None, ..ai };
        assert_eq!(scaled.count(&[user, anonymous], &[]), 40);
    }
}
