//! Errors the proxy answers itself, in the shape of the provider the client speaks to, so that
//! the client's SDK raises its usual exception and an agent that compacts on overflow (Claude
//! Code, Codex, opencode) still recognises one.
//!
//! OpenAI: `{"error": {"message", "type", "param", "code"}}`; Anthropic: `{"type": "error",
//! "error": {"type", "message"}}`. Each answer also carries `x-tightfit-error: <kind>` so a
//! person can tell the proxy's answers from the upstream's.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tightfit::Format;

/// What went wrong, in the terms both providers have a status and a type for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request is malformed (not JSON, a message we cannot read, an unknown policy).
    InvalidRequest,
    /// The history cannot be made to fit the model's window.
    Overflow,
    /// The proxy's own client key is missing or wrong.
    Unauthorized,
    /// No route or no upstream for this path.
    NotFound,
    /// The body is over `limits.max_body_bytes`.
    TooLarge,
    /// Too many requests in flight (`limits.max_concurrency`).
    Overloaded,
    /// The upstream could not be reached, or broke off before answering.
    BadGateway,
    /// The upstream did not answer within `timeouts.response_secs`.
    GatewayTimeout,
    /// The sessions' store (Redis, PostgreSQL) could not be reached: worth a retry.
    StoreUnavailable,
    /// The proxy failed (its store, a step).
    Internal,
}

impl Kind {
    fn status(self, api: Format) -> StatusCode {
        match self {
            Kind::InvalidRequest | Kind::Overflow => StatusCode::BAD_REQUEST,
            Kind::Unauthorized => StatusCode::UNAUTHORIZED,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            // Anthropic's own status for "overloaded"; its SDK retries it like a 503
            Kind::Overloaded if api == Format::Anthropic => {
                StatusCode::from_u16(529).expect("529 is a status")
            }
            Kind::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            Kind::BadGateway => StatusCode::BAD_GATEWAY,
            Kind::GatewayTimeout => StatusCode::GATEWAY_TIMEOUT,
            Kind::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The error's `type` (Anthropic) or `type` and `code` (OpenAI).
    fn names(self, api: Format) -> (&'static str, Option<&'static str>) {
        match (api, self) {
            (Format::Anthropic, Kind::InvalidRequest | Kind::Overflow) => ("invalid_request_error", None),
            (Format::Anthropic, Kind::Unauthorized) => ("authentication_error", None),
            (Format::Anthropic, Kind::NotFound) => ("not_found_error", None),
            (Format::Anthropic, Kind::TooLarge) => ("request_too_large", None),
            (Format::Anthropic, Kind::Overloaded) => ("overloaded_error", None),
            (Format::Anthropic, Kind::GatewayTimeout) => ("timeout_error", None),
            (Format::Anthropic, _) => ("api_error", None),
            (_, Kind::InvalidRequest) => ("invalid_request_error", None),
            (_, Kind::Overflow) => ("invalid_request_error", Some("context_length_exceeded")),
            (_, Kind::Unauthorized) => ("invalid_request_error", Some("invalid_api_key")),
            (_, Kind::NotFound) => ("invalid_request_error", Some("not_found")),
            (_, Kind::TooLarge) => ("invalid_request_error", Some("request_too_large")),
            (_, Kind::Overloaded) => ("server_error", Some("overloaded")),
            (_, Kind::BadGateway) => ("server_error", Some("bad_gateway")),
            (_, Kind::GatewayTimeout) => ("server_error", Some("timeout")),
            (_, Kind::StoreUnavailable) => ("server_error", Some("service_unavailable")),
            (_, Kind::Internal) => ("server_error", None),
        }
    }

    /// The value of `x-tightfit-error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::InvalidRequest => "invalid_request",
            Kind::Overflow => "overflow",
            Kind::Unauthorized => "unauthorized",
            Kind::NotFound => "not_found",
            Kind::TooLarge => "too_large",
            Kind::Overloaded => "overloaded",
            Kind::BadGateway => "bad_gateway",
            Kind::GatewayTimeout => "gateway_timeout",
            Kind::StoreUnavailable => "store_unavailable",
            Kind::Internal => "internal",
        }
    }
}

/// An error answered by the proxy, shaped for `api`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The provider whose shape the answer takes.
    pub api: Format,
    /// What went wrong.
    pub kind: Kind,
    /// For a person (and, for an overflow, for the client's overflow detection).
    pub message: String,
    /// The request field at fault (OpenAI's `param`), if one is.
    pub param: Option<String>,
}

impl ApiError {
    /// An error of `kind` for a client of `api`.
    pub fn new(api: Format, kind: Kind, message: impl Into<String>) -> ApiError {
        ApiError { api, kind, message: message.into(), param: None }
    }

    /// The same error naming the request field at fault.
    pub fn with_param(mut self, param: impl Into<String>) -> ApiError {
        self.param = Some(param.into());
        self
    }

    /// The overflow answer, worded as the provider words it (clients match on it): OpenAI's
    /// "maximum context length is N tokens", Anthropic's "prompt is too long: N tokens > M
    /// maximum".
    pub fn overflow(api: Format, needed: usize, limit: usize) -> ApiError {
        let message = match api {
            Format::Anthropic => format!("prompt is too long: {needed} tokens > {limit} maximum"),
            _ => format!(
                "This model's maximum context length is {limit} tokens. However, your messages resulted in \
                 {needed} tokens, and tightfit could not fit them. Please reduce the length of the messages."
            ),
        };
        ApiError::new(api, Kind::Overflow, message).with_param("messages")
    }

    /// The HTTP status it is answered with.
    pub fn status(&self) -> StatusCode {
        self.kind.status(self.api)
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let (kind, code) = self.kind.names(self.api);
        match self.api {
            Format::Anthropic => json!({"type": "error", "error": {"type": kind, "message": self.message}}),
            _ => json!({"error": {"message": self.message, "type": kind, "param": self.param, "code": code}}),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status(),
            [(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            self.body().to_string(),
        )
            .into_response();
        response.headers_mut().insert("x-tightfit-error", HeaderValue::from_static(self.kind.as_str()));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_reads_as_the_providers_own() {
        let anthropic = ApiError::overflow(Format::Anthropic, 250_000, 200_000);
        assert_eq!(anthropic.status(), StatusCode::BAD_REQUEST);
        assert_eq!(anthropic.body()["error"]["type"], "invalid_request_error");
        assert_eq!(
            anthropic.body()["error"]["message"],
            "prompt is too long: 250000 tokens > 200000 maximum"
        );
        let openai = ApiError::overflow(Format::OpenAi, 140_000, 128_000);
        assert_eq!(openai.status(), StatusCode::BAD_REQUEST);
        assert_eq!(openai.body()["error"]["code"], "context_length_exceeded");
        assert!(openai.body()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum context length is 128000 tokens"));
    }

    #[test]
    fn overload_is_529_for_anthropic_and_503_for_openai() {
        assert_eq!(ApiError::new(Format::Anthropic, Kind::Overloaded, "busy").status().as_u16(), 529);
        assert_eq!(ApiError::new(Format::OpenAi, Kind::Overloaded, "busy").status().as_u16(), 503);
    }
}
