//! Counting messages and conversations the way a provider family frames them.

use std::sync::Arc;

use serde_json::Value;

use super::image::{self, Dimensions};
use super::templates::{template, Template};
use super::{schema, Estimate, OpenAiEncoding, OpenFamily, OpenTokenizer, TokenCounter, TokenizerError};
use crate::message::{ImageSource, Message, Part, Role, Tool};
use crate::models::TokenizerFamily;

/// How a provider family wraps messages into the prompt, which decides the tokens beyond
/// the text itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Framing {
    /// OpenAI chat models: 3 tokens per message plus the role, 1 more plus the name's tokens
    /// for a `name`, 3 plus name and arguments per tool call, 3 of reply priming per
    /// conversation (the cookbook formula). Reasoning fields and tool-call ids are not counted:
    /// OpenAI models do not take them back as input. Images by tiles.
    OpenAi,
    /// Claude: 3 tokens per message for the turn markers, thinking and tool calls counted as
    /// text, images by area (w·h/750), tool schemas as JSON plus the tool-use system prompt.
    /// Thinking of earlier turns, which Anthropic strips and does not bill, is counted too: a
    /// per-message count cannot know the turn, and over is the safe side (`drop_thinking`
    /// removes it).
    Anthropic,
    /// Llama 3.1–3.3's chat template: 4 per message plus the role, 8 per tool call beyond
    /// name and arguments, 30 per request (begin-of-text, the system block with its date
    /// lines, the reply's header). Names and reasoning are not written.
    Llama3,
    /// ChatML as Qwen 2.5/3 write it: 4 per message plus the role, 12 per tool call, 5 per
    /// tool result, 3 of reply priming; reasoning counted.
    ChatMl,
    /// DeepSeek V3/R1: 1 marker per user turn, 2 per assistant turn, roles not written, 11
    /// per tool call, 4 per result, 4 per request; earlier reasoning dropped.
    DeepSeek,
    /// Mistral's instruct format (mistral-common): 2 control tokens per system or user turn,
    /// 1 per assistant turn, 21 per tool call, 18 per result, 1 per request; reasoning counted.
    Mistral,
}

impl Framing {
    /// The framing of an open family's chat template.
    pub fn for_open_family(family: OpenFamily) -> Framing {
        match family {
            OpenFamily::Llama3 => Framing::Llama3,
            OpenFamily::Qwen => Framing::ChatMl,
            OpenFamily::DeepSeekV3 => Framing::DeepSeek,
            OpenFamily::MistralTekken => Framing::Mistral,
        }
    }
}

/// Counts the tokens of messages and conversations for one model: a tokenizer and a framing.
///
/// Cheap to clone (the tokenizer is shared), `Send + Sync`. Costs: one tokenizer pass over
/// the text of each message; images cost a base64 decode of their header only.
#[derive(Clone)]
pub struct ChatCounter {
    counter: Arc<dyn TokenCounter>,
    framing: Framing,
    template: Template,
    default_image: Dimensions,
    /// The calibration factor applied to message and tool-schema counts (1 when uncalibrated).
    scale: f64,
    role_tokens: [usize; 6],
    fingerprint: u64,
}

impl std::fmt::Debug for ChatCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatCounter")
            .field("counter", &self.counter.name())
            .field("framing", &self.framing)
            .field("default_image", &self.default_image)
            .finish()
    }
}

/// A conversation's tokens, message by message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Count {
    /// Tokens of each message, framing included, in order.
    pub per_message: Vec<usize>,
    /// Tokens of the tool schemas.
    pub tools: usize,
    /// Tokens the provider adds to prime the reply.
    pub priming: usize,
    /// The sum of all of the above.
    pub total: usize,
}

impl ChatCounter {
    /// A counter with `counter` for text and `framing` for everything around it.
    pub fn new(counter: Arc<dyn TokenCounter>, framing: Framing) -> ChatCounter {
        let roles = [Role::System, Role::Developer, Role::User, Role::Assistant, Role::Tool, Role::Function];
        let role_tokens = roles.map(|role| counter.count(role.as_str()));
        let mut this = ChatCounter {
            counter,
            framing,
            template: template(framing),
            default_image: image::DEFAULT_DIMENSIONS,
            scale: 1.0,
            role_tokens,
            fingerprint: 0,
        };
        this.fingerprint = this.compute_fingerprint();
        this
    }

    /// The exact counter for an OpenAI encoding with OpenAI framing.
    pub fn openai(encoding: OpenAiEncoding) -> ChatCounter {
        ChatCounter::new(Arc::new(encoding), Framing::OpenAi)
    }

    /// The counter the registry's tokenizer family calls for: exact BPE with OpenAI framing
    /// for OpenAI encodings; exact BPE with the family's chat framing for Qwen, DeepSeek and
    /// Mistral tekken (embedded) and for Llama 3 when its vocabulary is found (see
    /// [`super::llama3`]; if not, [`Estimate::open_model`] saying so); [`Estimate::claude`]
    /// with Claude framing for Claude; [`Estimate::open_model`] with OpenAI framing for every
    /// other model. An embedded family is built on its first use in the process (0.5–1.3 s).
    pub fn for_family(family: TokenizerFamily) -> ChatCounter {
        let open = match family {
            TokenizerFamily::O200kBase => return ChatCounter::openai(OpenAiEncoding::O200kBase),
            TokenizerFamily::Cl100kBase => return ChatCounter::openai(OpenAiEncoding::Cl100kBase),
            TokenizerFamily::Claude => {
                return ChatCounter::new(Arc::new(Estimate::claude()), Framing::Anthropic)
            }
            TokenizerFamily::Llama3 => OpenFamily::Llama3,
            TokenizerFamily::Qwen => OpenFamily::Qwen,
            TokenizerFamily::DeepSeekV3 => OpenFamily::DeepSeekV3,
            TokenizerFamily::MistralTekken => OpenFamily::MistralTekken,
            _ => return ChatCounter::new(Arc::new(Estimate::open_model()), Framing::OpenAi),
        };
        let framing = Framing::for_open_family(open);
        let counter: Arc<dyn TokenCounter> = match OpenTokenizer::embedded(open) {
            Some(tokenizer) => tokenizer,
            None => match super::llama3() {
                Ok(tokenizer) => tokenizer,
                Err(reason) => Arc::new(Estimate::open_model().with_reason(reason)),
            },
        };
        ChatCounter::new(counter, framing)
    }

    /// The counter of an open family's tokenizer (a user's file, say) with its chat framing.
    pub fn for_open(tokenizer: Arc<OpenTokenizer>) -> ChatCounter {
        let framing = Framing::for_open_family(tokenizer.family());
        ChatCounter::new(tokenizer, framing)
    }

    /// Why this counter's counts are an estimate (its text counter's reason, or that it was
    /// calibrated), or `None` when they are exact.
    pub fn estimate_reason(&self) -> Option<String> {
        match self.counter.estimate_reason() {
            Some(reason) => Some(reason.to_string()),
            None if self.scale != 1.0 => Some(format!("calibrated from usage (× {:.4})", self.scale)),
            None => None,
        }
    }

    /// The same counter, assuming `size` for images whose dimensions cannot be read.
    /// Defaults to [`image::DEFAULT_DIMENSIONS`] (1024×1024).
    pub fn with_default_image(mut self, size: Dimensions) -> ChatCounter {
        self.default_image = size;
        self.fingerprint = self.compute_fingerprint();
        self
    }

    /// The same framing with another text counter (a calibrated estimate, say).
    pub fn with_counter(&self, counter: Arc<dyn TokenCounter>) -> ChatCounter {
        let mut other = ChatCounter::new(counter, self.framing).with_default_image(self.default_image);
        other.scale = self.scale;
        other.fingerprint = other.compute_fingerprint();
        other
    }

    /// This counter corrected by a provider's own count of an earlier request of the same
    /// conversation: `estimated` is what this counter counted for that request (its
    /// [`Count::total`]) and `reported` the input tokens the provider billed for it
    /// (`usage.input_tokens` plus cache reads and writes for Anthropic, `usage.prompt_tokens`
    /// for OpenAI-compatible servers). Every message and the tool schemas are then scaled by
    /// `reported / estimated` (rounding up), so the calibrated total of that same request is
    /// `reported` give or take the reply priming and one token per message. Errors when
    /// either number is zero.
    pub fn calibrated(&self, estimated: usize, reported: usize) -> Result<ChatCounter, TokenizerError> {
        if estimated == 0 || reported == 0 {
            return Err(TokenizerError::Calibration(format!(
                "need non-zero counts, got estimated={estimated} reported={reported}"
            )));
        }
        let mut calibrated = self.clone();
        calibrated.scale = self.scale * reported as f64 / estimated as f64;
        calibrated.fingerprint = calibrated.compute_fingerprint();
        Ok(calibrated)
    }

    /// This counter with every message and the tool schemas scaled by `factor` (a calibration
    /// worked out earlier, `reported / estimated` of a request; it multiplies any calibration
    /// this counter already has). Errors unless `factor` is finite and positive.
    pub fn scaled_by(&self, factor: f64) -> Result<ChatCounter, TokenizerError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(TokenizerError::Calibration(format!(
                "the factor must be finite and positive, got {factor}"
            )));
        }
        let mut calibrated = self.clone();
        calibrated.scale = self.scale * factor;
        calibrated.fingerprint = calibrated.compute_fingerprint();
        Ok(calibrated)
    }

    /// Applies the calibration factor, rounding up (exactly `n` when uncalibrated).
    fn scaled(&self, n: usize) -> usize {
        if self.scale == 1.0 {
            n
        } else {
            (n as f64 * self.scale - 1e-9).ceil().max(0.0) as usize
        }
    }

    /// The most tokens the texts of a message counted at `tokens` can have together (its
    /// text parts, its tool results' included), when no calibration scales the counts: a
    /// message's count is its framing plus each of its texts' own count. `None` for a
    /// calibrated counter. Lets a step skip, unread, a message too small for what it looks
    /// for: its count is kept, its text is elsewhere in memory.
    pub fn max_text_tokens(&self, tokens: usize) -> Option<usize> {
        (self.scale == 1.0).then_some(tokens)
    }

    /// The most bytes the texts of a message counted at `tokens` can have together, when
    /// [`max_text_tokens`](ChatCounter::max_text_tokens) bounds their tokens and the text
    /// counter bounds a token's length.
    pub fn max_text_len(&self, tokens: usize) -> Option<usize> {
        self.max_text_tokens(tokens).and_then(|tokens| self.counter.max_len_of_tokens(tokens))
    }

    /// The text counter.
    pub fn text_counter(&self) -> &dyn TokenCounter {
        self.counter.as_ref()
    }

    /// The framing.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Identifies what this counter counts with; cache entries are only valid for the same
    /// fingerprint.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn compute_fingerprint(&self) -> u64 {
        let text = format!(
            "{}|{:?}|{}|{}x{}",
            self.counter.name(),
            self.framing,
            self.scale,
            self.default_image.width,
            self.default_image.height
        );
        xxhash_rust::xxh3::xxh3_64(text.as_bytes())
    }

    /// Tokens of one message, framing included.
    pub fn message_tokens(&self, message: &Message) -> usize {
        self.message_and_text_tokens(message).0
    }

    /// [`message_tokens`](ChatCounter::message_tokens), and the tokens of its content by
    /// the text counter (unscaled) when its content is all text parts: in the same pass, for
    /// the count cache to remember with a tool message (`clear_tool_results` then weighs an
    /// unchanged result without reading it).
    pub(crate) fn message_and_text_tokens(&self, message: &Message) -> (usize, Option<usize>) {
        let role = match message.role {
            Role::Other => self.counter.count(message.role_name()),
            role => self.role_tokens[role_index(role)],
        };
        let role = if self.template.role_as_text { role } else { 0 };
        let mut total = self.template.per_message[role_index(message.role)] + role;
        if let (Some(name), Some(per_name)) = (&message.name, self.template.per_name) {
            total += per_name + self.counter.count(name);
        }
        let mut texts = Some(0);
        let mut parts = 0;
        for part in &message.parts {
            let tokens = self.part_tokens(part);
            parts += tokens;
            texts = texts.filter(|_| matches!(part, Part::Text(_))).map(|sum| sum + tokens);
        }
        let texts = texts.filter(|_| !message.parts.is_empty());
        (self.scaled(total + parts), texts)
    }

    fn parts_tokens(&self, parts: &[Part]) -> usize {
        parts.iter().map(|part| self.part_tokens(part)).sum()
    }

    fn part_tokens(&self, part: &Part) -> usize {
        let counter = self.counter.as_ref();
        match part {
            Part::Text(t) => counter.count(&t.text),
            Part::Refusal(r) => counter.count(&r.refusal),
            Part::Image(image) => {
                let size = match &image.source {
                    ImageSource::Url(url) => image::dimensions_from_data_uri(url),
                    ImageSource::Base64 { data, .. } => image::dimensions_from_base64(data),
                    ImageSource::Other(_) => None,
                }
                .unwrap_or(self.default_image);
                match self.framing {
                    Framing::Anthropic => image::claude_image_tokens(size),
                    _ => image::openai_image_tokens(size, image.detail.as_deref()),
                }
            }
            Part::Audio(audio) => audio_tokens(audio.data.len(), audio.format.as_deref()),
            Part::File(file) => file_tokens(counter, &file.fields),
            Part::Thinking(t) if self.template.thinking => counter.count(&t.text),
            // encrypted: about 3 bytes of base64 per token of the original
            Part::RedactedThinking(r) if self.template.thinking => r.data.len().div_ceil(3),
            Part::Thinking(_) | Part::RedactedThinking(_) => 0,
            Part::ToolCall(call) => {
                let arguments = match &call.arguments {
                    crate::message::Arguments::Text(s) => counter.count(s),
                    crate::message::Arguments::Json(v) => counter.count(&v.to_string()),
                };
                self.template.per_tool_call + counter.count(&call.name) + arguments
            }
            Part::ToolResult(result) => self.template.per_tool_result + self.parts_tokens(&result.parts),
            Part::Opaque(value) => match value {
                Value::String(s) => counter.count(s),
                other => counter.count(&other.to_string()),
            },
        }
    }

    /// Tokens of the tool schemas offered to the model (see the `schema` module's heuristic).
    pub fn tools_tokens(&self, tools: &[Tool]) -> usize {
        self.scaled(match self.framing {
            Framing::Anthropic => schema::anthropic_tools_tokens(self.counter.as_ref(), tools),
            _ => schema::openai_tools_tokens(self.counter.as_ref(), tools),
        })
    }

    /// Tokens the provider adds once per request to prime the reply.
    pub fn priming_tokens(&self) -> usize {
        self.template.priming
    }

    /// Counts a conversation, every message tokenized (see [`super::CountCache`] to avoid
    /// re-tokenizing messages counted before).
    pub fn count(&self, messages: &[Message], tools: Option<&[Tool]>) -> Count {
        let per_message: Vec<usize> = messages.iter().map(|m| self.message_tokens(m)).collect();
        self.assemble(per_message, tools.map_or(0, |t| self.tools_tokens(t)))
    }

    /// A count from per-message counts and the tool schemas' tokens.
    pub(crate) fn assemble(&self, per_message: Vec<usize>, tools: usize) -> Count {
        let priming = self.priming_tokens();
        let total = per_message.iter().sum::<usize>() + tools + priming;
        Count { per_message, tools, priming, total }
    }
}

fn role_index(role: Role) -> usize {
    match role {
        Role::System => 0,
        Role::Developer => 1,
        Role::User => 2,
        Role::Assistant => 3,
        Role::Tool => 4,
        Role::Function | Role::Other => 5,
    }
}

/// Audio input, estimated from its size: 10 tokens per second, seconds from the bitrate of
/// the format (16 kHz 16-bit WAV 32 kB/s, compressed formats 16 kB/s).
fn audio_tokens(base64_len: usize, format: Option<&str>) -> usize {
    let bytes = base64_len / 4 * 3;
    let bytes_per_second = if format == Some("wav") { 32_000 } else { 16_000 };
    (bytes * 10).div_ceil(bytes_per_second).max(1)
}

/// Tokens assumed for a file known only by its id (`file_id`): about one PDF page.
pub const DEFAULT_FILE_TOKENS: usize = 1_500;

/// A file or document.
///
/// - An inline binary payload (a base64 `source.data`, or OpenAI's `file_data`) is estimated at
///   one token per 32 bytes of content, at least 85 (a PDF page costs ~1.5–3k tokens for a
///   ~50–100 kB page).
/// - Text (a `text` source's `data`, a `content` source's text blocks, `title`, `context`,
///   `filename`) is counted as text.
/// - A file known only by id costs [`DEFAULT_FILE_TOKENS`].
///
/// Type tags, media types and ids are not content and are not counted.
fn file_tokens(counter: &dyn TokenCounter, fields: &serde_json::Map<String, Value>) -> usize {
    let mut total = 0;
    let mut has_content = false;
    let mut maps = vec![fields];
    while let Some(map) = maps.pop() {
        let base64_source = map.get("type").and_then(Value::as_str) == Some("base64");
        for (key, value) in map {
            match (key.as_str(), value) {
                ("type" | "media_type" | "file_id" | "url" | "cache_control" | "citations", _) => {}
                ("file_data", Value::String(s)) => {
                    has_content = true;
                    total += binary_tokens(s);
                }
                ("data", Value::String(s)) if base64_source => {
                    has_content = true;
                    total += binary_tokens(s);
                }
                (_, Value::String(s)) => {
                    has_content = true;
                    total += counter.count(s);
                }
                (_, Value::Object(inner)) => maps.push(inner),
                (_, Value::Array(items)) => maps.extend(items.iter().filter_map(Value::as_object)),
                _ => {}
            }
        }
    }
    if has_content {
        total
    } else {
        DEFAULT_FILE_TOKENS
    }
}

/// Base64 content at one token per 32 bytes, at least 85.
fn binary_tokens(base64: &str) -> usize {
    (base64.len() / 4 * 3 / 32).max(85)
}
