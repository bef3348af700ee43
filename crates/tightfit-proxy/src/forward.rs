//! Sending a request on to its upstream and the answer back, as it comes.
//!
//! The response body is passed chunk by chunk (never gathered), through a watch that reads
//! the usage ([`UsageTap`]) and cuts the response when the upstream pauses longer than
//! `timeouts.idle_secs`. The client's disconnect drops the body stream, and with it the
//! upstream connection: the upstream request is cancelled. A failure before the upstream's
//! headers becomes a gateway error of the provider's shape; an upstream's own answer, error or
//! not, goes to the client with its status, headers and body.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Response};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tightfit::Format;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::errors::{ApiError, Kind};
use crate::headers;
use crate::metrics::Metrics;
use crate::usage::UsageTap;

/// A request ready to go upstream.
pub struct Outgoing {
    /// The upstream's base URL (from configuration).
    pub base: String,
    /// The client's path and query, appended to the base.
    pub path_and_query: String,
    /// The method.
    pub method: Method,
    /// The client's headers (filtered here).
    pub headers: HeaderMap,
    /// The body to send.
    pub body: Bytes,
}

/// What the response's body stream needs to account for itself when it ends.
pub struct Accounting {
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// The route's name in the metrics.
    pub route: &'static str,
    /// The provider shape of errors and usage.
    pub api: Format,
    /// The request's place among those in flight, held until the body ends.
    pub _slot: Slot,
    /// The request's id, for the logs.
    pub request_id: String,
}

/// Sends `outgoing` and answers with the upstream's response (its body streamed), or a
/// gateway error.
pub async fn send(
    client: &reqwest::Client,
    outgoing: Outgoing,
    response_timeout: Duration,
    idle_timeout: Duration,
    accounting: Accounting,
) -> Result<Response<Body>, ApiError> {
    let api = accounting.api;
    let url = format!("{}{}", outgoing.base.trim_end_matches('/'), outgoing.path_and_query);
    let request = client
        .request(outgoing.method, url)
        .headers(headers::request_headers(&outgoing.headers))
        .body(outgoing.body);
    let started = Instant::now();
    let sent = tokio::time::timeout(response_timeout, request.send()).await;
    let upstream = match sent {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            let kind = if e.is_timeout() { Kind::GatewayTimeout } else { Kind::BadGateway };
            let what = if e.is_connect() { "cannot connect to the upstream" } else { "the upstream failed" };
            return Err(ApiError::new(api, kind, format!("tightfit proxy: {what}: {}", source_chain(&e))));
        }
        Err(_) => {
            let message = format!(
                "tightfit proxy: the upstream did not answer within {} s (timeouts.response_secs)",
                response_timeout.as_secs_f64()
            );
            return Err(ApiError::new(api, Kind::GatewayTimeout, message));
        }
    };
    accounting.metrics.upstream_latency(accounting.route, started.elapsed());
    let status = upstream.status();
    let mut response_headers = headers::response_headers(upstream.headers());
    let content_type = upstream.headers().get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let encoded = upstream.headers().contains_key(axum::http::header::CONTENT_ENCODING);
    let tap = UsageTap::new(api, content_type, encoded);
    let body = Body::from_stream(watched(upstream.bytes_stream(), tap, idle_timeout, accounting));
    let mut response = Response::new(body);
    *response.status_mut() = status;
    std::mem::swap(response.headers_mut(), &mut response_headers);
    Ok(response)
}

/// The error's message with its causes (reqwest's top-level message alone says little).
fn source_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The state of a response body in passage.
struct Passage<S> {
    upstream: S,
    tap: UsageTap,
    idle: Duration,
    accounting: Accounting,
    ended: bool,
}

impl<S> Drop for Passage<S> {
    fn drop(&mut self) {
        // the body ended, failed, or the client went away: the usage seen so far counts
        if let Some(usage) = self.tap.finish() {
            self.accounting.metrics.usage(self.accounting.route, usage);
        }
        tracing::debug!(request_id = %self.accounting.request_id, "response body done");
    }
}

/// A request's place among those in flight (`limits.max_concurrency`): taken when it comes,
/// given back when its response has ended (a stream's last chunk, or the client gone).
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl Slot {
    /// A place, if one is free.
    pub fn take(places: &Arc<Semaphore>, metrics: &Arc<Metrics>) -> Option<Slot> {
        let permit = Arc::clone(places).try_acquire_owned().ok()?;
        metrics.in_flight().inc();
        Some(Slot { _permit: permit, metrics: Arc::clone(metrics) })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.metrics.in_flight().dec();
    }
}

/// The upstream's body as it comes, read by the tap, cut after `idle` without a chunk.
fn watched<S>(
    upstream: S,
    tap: UsageTap,
    idle: Duration,
    accounting: Accounting,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static
where
    S: Stream<Item = reqwest::Result<Bytes>> + Send + Unpin + 'static,
{
    let passage = Passage { upstream, tap, idle, accounting, ended: false };
    futures_util::stream::unfold(passage, |mut passage| async move {
        if passage.ended {
            return None;
        }
        match tokio::time::timeout(passage.idle, passage.upstream.next()).await {
            Ok(Some(Ok(chunk))) => {
                passage.tap.feed(&chunk);
                Some((Ok(chunk), passage))
            }
            Ok(None) => None,
            Ok(Some(Err(e))) => {
                tracing::warn!(request_id = %passage.accounting.request_id, error = %source_chain(&e), "upstream body broke off");
                passage.ended = true;
                Some((Err(std::io::Error::other(e)), passage))
            }
            Err(_) => {
                tracing::warn!(request_id = %passage.accounting.request_id, "upstream body paused past timeouts.idle_secs");
                passage.ended = true;
                Some((Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "upstream idle")), passage))
            }
        }
    })
}

/// Adds the proxy's `x-tightfit-*` headers to a response.
pub fn add_headers(response: &mut Response<Body>, pairs: &[(&'static str, String)]) {
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(*name, value);
        }
    }
}
