//! Reads the token usage the upstream reports, from the response bytes as they pass, without
//! holding the response back or changing a byte: for the metrics (tokens billed, cached
//! share) and, later, for calibrating counts.
//!
//! - OpenAI, streamed: the chunk whose `usage` is an object (sent before `[DONE]` when the
//!   client asked `stream_options.include_usage`); not streamed: the body's `usage`.
//! - Anthropic, streamed: `message_start`'s `message.usage`, then each `message_delta`'s
//!   `usage` (cumulative); not streamed: the body's `usage`.
//! - OpenAI Responses, streamed: `response.completed`'s `response.usage` (`input_tokens`,
//!   `output_tokens`); not streamed: the body's `usage`.
//!
//! Only `data:` lines that mention `"usage"` are parsed. A compressed body (a
//! `content-encoding`) is not read, nor a JSON body over [`MAX_JSON`] bytes.

use serde_json::Value;
use tightfit::Format;

/// The largest non-streamed body whose usage is read (kept while it passes).
pub const MAX_JSON: usize = 4 << 20;

/// The longest SSE line kept while it passes; a longer one (a huge delta) is skipped.
const MAX_LINE: usize = 1 << 20;

/// Tokens the upstream billed for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Input tokens, cached ones included.
    pub input: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cached_input: u64,
    /// Input tokens written to the cache (Anthropic).
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
}

impl Usage {
    /// Reads a `usage` object of `api`'s shape.
    fn read(api: Format, usage: &Value) -> Option<Usage> {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        if !usage.is_object() {
            return None;
        }
        Some(match api {
            Format::Anthropic => {
                let cached = n(&usage["cache_read_input_tokens"]);
                let write = n(&usage["cache_creation_input_tokens"]);
                Usage {
                    // Anthropic's input_tokens excludes what was read from or written to the cache
                    input: n(&usage["input_tokens"]) + cached + write,
                    cached_input: cached,
                    cache_write: write,
                    output: n(&usage["output_tokens"]),
                }
            }
            Format::Responses => Usage {
                input: n(&usage["input_tokens"]),
                cached_input: n(&usage["input_tokens_details"]["cached_tokens"]),
                cache_write: 0,
                output: n(&usage["output_tokens"]),
            },
            _ => Usage {
                input: n(&usage["prompt_tokens"]),
                cached_input: n(&usage["prompt_tokens_details"]["cached_tokens"]),
                cache_write: 0,
                output: n(&usage["completion_tokens"]),
            },
        })
    }

    /// This usage updated by a later `message_delta`'s (whose counts are cumulative; a field
    /// it leaves out keeps its value).
    fn updated(self, delta: &Value) -> Usage {
        let get = |key: &str| delta.get(key).and_then(Value::as_u64);
        let cached = get("cache_read_input_tokens").unwrap_or(self.cached_input);
        let write = get("cache_creation_input_tokens").unwrap_or(self.cache_write);
        let uncached = get("input_tokens").unwrap_or(self.input - self.cached_input - self.cache_write);
        Usage {
            input: uncached + cached + write,
            cached_input: cached,
            cache_write: write,
            output: get("output_tokens").unwrap_or(self.output),
        }
    }
}

/// How the body is read.
#[derive(Debug)]
enum Mode {
    /// Server-sent events, line by line.
    Events(Lines),
    /// One JSON document, kept up to [`MAX_JSON`].
    Json { body: Vec<u8>, over: bool },
    /// Not read.
    Off,
}

/// Splits a body into lines as its chunks come, whatever their boundaries.
#[derive(Debug, Default)]
struct Lines {
    /// The start of a line whose end has not come yet.
    partial: Vec<u8>,
    /// The current line is over [`MAX_LINE`]: skipped to its end.
    skipping: bool,
}

impl Lines {
    fn feed(&mut self, mut chunk: &[u8], mut on_line: impl FnMut(&[u8])) {
        while let Some(end) = chunk.iter().position(|&b| b == b'\n') {
            let head = &chunk[..end];
            chunk = &chunk[end + 1..];
            if self.skipping {
                self.skipping = false;
            } else if self.partial.is_empty() {
                on_line(head);
            } else {
                self.partial.extend_from_slice(head);
                on_line(&self.partial);
            }
            self.partial.clear();
        }
        if self.skipping {
            return;
        }
        if self.partial.len() + chunk.len() > MAX_LINE {
            self.partial.clear();
            self.skipping = true;
        } else {
            self.partial.extend_from_slice(chunk);
        }
    }
}

/// Watches a response body pass; [`UsageTap::finish`] says what usage it carried.
#[derive(Debug)]
pub struct UsageTap {
    api: Format,
    mode: Mode,
    usage: Option<Usage>,
}

impl UsageTap {
    /// A tap for a response of `api` with these `content-type` and `content-encoding`.
    pub fn new(api: Format, content_type: Option<&str>, encoded: bool) -> UsageTap {
        let mode = match content_type {
            _ if encoded => Mode::Off,
            Some(t) if t.starts_with("text/event-stream") => Mode::Events(Lines::default()),
            Some(t) if t.starts_with("application/json") => Mode::Json { body: Vec::new(), over: false },
            _ => Mode::Off,
        };
        UsageTap { api, mode, usage: None }
    }

    /// Reads the next chunk of the body.
    pub fn feed(&mut self, chunk: &[u8]) {
        match &mut self.mode {
            Mode::Off => {}
            Mode::Json { body, over } => {
                if !*over && body.len() + chunk.len() <= MAX_JSON {
                    body.extend_from_slice(chunk);
                } else {
                    *over = true;
                    body.clear();
                }
            }
            Mode::Events(lines) => {
                let (api, usage) = (self.api, &mut self.usage);
                lines.feed(chunk, |line| {
                    if let Some(event) = read_event_line(line) {
                        *usage = next_usage(api, *usage, &event);
                    }
                });
            }
        }
    }

    /// The usage the body carried, if it carried one the tap could read.
    pub fn finish(&mut self) -> Option<Usage> {
        if let Mode::Json { body, over: false } = &self.mode {
            if let Ok(doc) = serde_json::from_slice::<Value>(body) {
                self.usage = doc.get("usage").and_then(|u| Usage::read(self.api, u));
            }
        }
        self.mode = Mode::Off;
        self.usage
    }
}

/// The JSON of an SSE `data:` line that mentions usage.
fn read_event_line(line: &[u8]) -> Option<Value> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let data = line.strip_prefix(b"data:")?;
    if !data.windows(7).any(|w| w == b"\"usage\"") {
        return None;
    }
    serde_json::from_slice(data).ok()
}

fn next_usage(api: Format, current: Option<Usage>, event: &Value) -> Option<Usage> {
    match api {
        Format::Anthropic => match event.get("type").and_then(Value::as_str) {
            Some("message_start") => Usage::read(api, &event["message"]["usage"]).or(current),
            Some("message_delta") => match (current, event.get("usage")) {
                (Some(u), Some(delta)) => Some(u.updated(delta)),
                (None, Some(delta)) => Usage::read(api, delta),
                (u, None) => u,
            },
            _ => current,
        },
        // the events carry the response object; only the last one has its usage
        Format::Responses => Usage::read(api, &event["response"]["usage"]).or(current),
        _ => event.get("usage").and_then(|u| Usage::read(api, u)).or(current),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tap_all(api: Format, content_type: &str, body: &[u8], chunk: usize) -> Option<Usage> {
        let mut tap = UsageTap::new(api, Some(content_type), false);
        for piece in body.chunks(chunk) {
            tap.feed(piece);
        }
        tap.finish()
    }

    const OPENAI_STREAM: &[u8] = b"data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n\
data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n\
data: [DONE]\n\n";

    const ANTHROPIC_STREAM: &[u8] = b"event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":2000,\"cache_creation_input_tokens\":30,\"output_tokens\":1}}}\r\n\r\n\
event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n\
event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"the \\\"usage\\\" word\"}}\r\n\r\n\
event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":42}}\r\n\r\n\
event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";

    #[test]
    fn streamed_usage_is_read_whatever_the_chunking() {
        let openai = Usage { input: 1200, cached_input: 1024, cache_write: 0, output: 7 };
        let anthropic = Usage { input: 2040, cached_input: 2000, cache_write: 30, output: 42 };
        for chunk in [1, 3, 17, 4096] {
            assert_eq!(
                tap_all(Format::OpenAi, "text/event-stream", OPENAI_STREAM, chunk),
                Some(openai),
                "{chunk}"
            );
            assert_eq!(
                tap_all(Format::Anthropic, "text/event-stream; charset=utf-8", ANTHROPIC_STREAM, chunk),
                Some(anthropic),
                "{chunk}"
            );
        }
    }

    #[test]
    fn json_usage_is_read_and_other_bodies_are_not() {
        let body = br#"{"id":"msg","usage":{"input_tokens":5,"output_tokens":2}}"#;
        let want = Usage { input: 5, cached_input: 0, cache_write: 0, output: 2 };
        assert_eq!(tap_all(Format::Anthropic, "application/json", body, 4), Some(want));
        assert_eq!(tap_all(Format::Anthropic, "text/plain", body, 4), None);
        let mut encoded = UsageTap::new(Format::Anthropic, Some("application/json"), true);
        encoded.feed(body);
        assert_eq!(encoded.finish(), None);
        // a stream cut before its usage chunk has none
        assert_eq!(tap_all(Format::OpenAi, "text/event-stream", &OPENAI_STREAM[..80], 5), None);
    }
}
