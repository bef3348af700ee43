//! LLM summarizers for tightfit: the `summarize` step's (and a session's compactions')
//! summaries written by a model behind an HTTP API — any OpenAI-compatible Chat Completions
//! endpoint (OpenAI, vLLM, llama.cpp's server, Ollama, OpenRouter, ...) or Anthropic's Messages
//! API. In a crate of its own so that the engine and a CLI without it carry no HTTP stack.
//!
//! ```no_run
//! use tightfit_llm::{Api, HttpSummarizer};
//!
//! let summarizer = HttpSummarizer::new(Api::OpenAi, "http://127.0.0.1:8000/v1", "qwen2.5-7b-instruct")
//!     .with_api_key_env("VLLM_API_KEY");
//! // lend it to a run: Services::default().with_summarizer(&summarizer)
//! ```
//!
//! One blocking request per summary (rustls, no system OpenSSL), with a timeout and retries
//! with backoff on a refused connection, a timeout, 429 and 5xx (honouring `retry-after`).
//! Everything that goes wrong — no answer, an error status, an answer that is not the API's
//! shape, empty or over the budget — is a [`SummaryError`] saying what; the `summarize` step
//! then falls back to the extractive summarizer, so a compaction never fails because a model
//! did. The API key is read from the named environment variable at each call, never stored.

mod prompt;
mod transcript;

use std::time::Duration;

use serde_json::{json, Value};
use tightfit::summary::{Summarizer, SummaryError, SummaryRequest};

pub use prompt::PROMPT;

/// Which API the endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions: `POST {base}/chat/completions`, `Authorization: Bearer`.
    OpenAi,
    /// Anthropic Messages: `POST {base}/v1/messages`, `x-api-key`, `anthropic-version`.
    Anthropic,
}

/// The longest a `retry-after` is waited for, in seconds (a session waits with it).
pub const MAX_RETRY_AFTER_SECS: u64 = 30;

/// The Anthropic API version sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A summarizer calling a model over HTTP.
#[derive(Debug, Clone)]
pub struct HttpSummarizer {
    api: Api,
    base_url: String,
    model: String,
    api_key_env: Option<String>,
    timeout: Duration,
    retries: u32,
    backoff: Duration,
    prompt: String,
    name: String,
}

impl HttpSummarizer {
    /// A summarizer calling `model` at `base_url` (for OpenAI-compatible servers the URL up to
    /// `/chat/completions`, e.g. ending in `/v1`; for Anthropic the server's root), with no API
    /// key, a 60-second timeout, 2 retries from a 1-second backoff, and [`PROMPT`].
    pub fn new(api: Api, base_url: impl Into<String>, model: impl Into<String>) -> HttpSummarizer {
        let model = model.into();
        let base_url = base_url.into();
        HttpSummarizer {
            api,
            name: format!(
                "{}:{model}@{}",
                match api {
                    Api::OpenAi => "openai",
                    Api::Anthropic => "anthropic",
                },
                base_url.trim_end_matches('/')
            ),
            base_url: base_url.trim_end_matches('/').to_string(),
            model,
            api_key_env: None,
            timeout: Duration::from_secs(60),
            retries: 2,
            backoff: Duration::from_secs(1),
            prompt: PROMPT.to_string(),
        }
    }

    /// The same summarizer, sending the key held by environment variable `name`.
    pub fn with_api_key_env(mut self, name: impl Into<String>) -> HttpSummarizer {
        self.api_key_env = Some(name.into());
        self
    }

    /// The same summarizer with another timeout per request.
    pub fn with_timeout(mut self, timeout: Duration) -> HttpSummarizer {
        self.timeout = timeout;
        self
    }

    /// The same summarizer retrying `retries` times, waiting `backoff`, then twice as long, ...
    pub fn with_retries(mut self, retries: u32, backoff: Duration) -> HttpSummarizer {
        self.retries = retries;
        self.backoff = backoff;
        self
    }

    /// The same summarizer with another system prompt (`{max_tokens}` is replaced by the
    /// summary's budget).
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> HttpSummarizer {
        self.prompt = prompt.into();
        self
    }

    fn url(&self) -> String {
        match self.api {
            Api::OpenAi => format!("{}/chat/completions", self.base_url),
            Api::Anthropic => format!("{}/v1/messages", self.base_url),
        }
    }

    fn body(&self, request: &SummaryRequest<'_>) -> Value {
        let system = self.prompt.replace("{max_tokens}", &request.max_tokens.to_string());
        let transcript = transcript::render(request);
        match self.api {
            Api::OpenAi => json!({
                "model": self.model,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": transcript}],
                "max_tokens": request.max_tokens,
                "temperature": 0,
            }),
            Api::Anthropic => json!({
                "model": self.model,
                "system": system,
                "messages": [{"role": "user", "content": transcript}],
                "max_tokens": request.max_tokens,
                "temperature": 0,
            }),
        }
    }

    fn error(&self, reason: impl Into<String>) -> SummaryError {
        SummaryError { summarizer: self.name.clone(), reason: reason.into() }
    }

    /// One request: the answer's text, or why there is none and whether to try again.
    fn attempt(&self, agent: &ureq::Agent, body: &str) -> Result<String, (SummaryError, Option<Duration>)> {
        let mut call = agent.post(&self.url()).header("content-type", "application/json");
        let key = match &self.api_key_env {
            Some(name) => Some(std::env::var(name).map_err(|_| {
                (self.error(format!("the API key's environment variable {name} is not set")), None)
            })?),
            None => None,
        };
        call = match (self.api, &key) {
            (Api::OpenAi, Some(key)) => call.header("authorization", &format!("Bearer {key}")),
            (Api::Anthropic, Some(key)) => call.header("x-api-key", key),
            _ => call,
        };
        if self.api == Api::Anthropic {
            call = call.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let mut response = match call.send(body) {
            Ok(response) => response,
            // no answer at all (refused, timed out, reset): worth another try
            Err(e) => return Err((self.error(format!("{}: {e}", self.url())), Some(self.backoff))),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(MAX_RETRY_AFTER_SECS)));
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| (self.error(format!("reading the answer: {e}")), Some(self.backoff)))?;
        if status == 429 || status >= 500 {
            let wait = retry_after.unwrap_or(self.backoff);
            return Err((self.error(format!("HTTP {status}: {}", snippet(&text))), Some(wait)));
        }
        if status >= 400 {
            return Err((self.error(format!("HTTP {status}: {}", snippet(&text))), None));
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|_| (self.error(format!("the answer is not JSON: {}", snippet(&text))), None))?;
        let summary = match self.api {
            Api::OpenAi => {
                value.pointer("/choices/0/message/content").and_then(Value::as_str).map(str::to_string)
            }
            Api::Anthropic => value.get("content").and_then(Value::as_array).map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
        };
        summary.ok_or_else(|| {
            (self.error(format!("the answer has no text where the API puts it: {}", snippet(&text))), None)
        })
    }
}

impl Summarizer for HttpSummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let body = self.body(request).to_string();
        let mut wait = self.backoff;
        let mut attempt = 0;
        let text = loop {
            match self.attempt(&agent, &body) {
                Ok(text) => break text,
                Err((error, Some(after))) if attempt < self.retries => {
                    std::thread::sleep(after.max(wait));
                    wait = wait.saturating_mul(2);
                    attempt += 1;
                    let _ = error;
                }
                Err((error, _)) => {
                    let tries = attempt + 1;
                    return Err(SummaryError {
                        reason: format!(
                            "{} (after {tries} attempt{})",
                            error.reason,
                            if tries == 1 { "" } else { "s" }
                        ),
                        ..error
                    });
                }
            }
        };
        let text = text.trim().to_string();
        if text.is_empty() {
            return Err(self.error("the model answered with an empty summary"));
        }
        let tokens = (request.count)(&text);
        if tokens > request.max_tokens {
            return Err(self.error(format!(
                "the summary has {tokens} tokens, over its budget of {}",
                request.max_tokens
            )));
        }
        Ok(text)
    }
}

/// The start of an answer, for an error message.
fn snippet(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 200 {
        format!("{}...", flat.chars().take(200).collect::<String>())
    } else {
        flat
    }
}
