//! The routes: what each does with a request, from its arrival to its forwarding.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tightfit::session::Peeked;
use tightfit::Format;
use tightfit_store::Peeker;
use tokio::sync::Semaphore;

use crate::config::{check_policy, Config};
use crate::errors::{ApiError, Kind};
use crate::fitting::{Fitting, Outcome};
use crate::forward::{self, Accounting, Outgoing, Slot};
use crate::headers;
use crate::metrics::Metrics;
use crate::parsed::HEAD_BYTES;

/// The proxy's state, shared by every request.
#[derive(Debug)]
pub struct App {
    config: Config,
    client: reqwest::Client,
    fitting: Arc<Fitting>,
    metrics: Arc<Metrics>,
    places: Arc<Semaphore>,
    /// SHA-256 of each client key (`auth.client_keys_env`); empty: no proxy auth.
    client_keys: Vec<[u8; 32]>,
    requests: AtomicU64,
    started: u128,
    /// Whether, and how, a warm turn is answered in place on the async worker
    /// ([`Fitting::answer_appended`]).
    in_place: InPlace,
}

/// How a warm turn is answered in place on the async worker that received it.
#[derive(Debug)]
pub enum InPlace {
    /// Never: every turn goes to the blocking pool.
    Never,
    /// The store reads locally (memory, an SQLite file), without blocking.
    Local,
    /// The store is read over the network: its checkpoint version is awaited from this
    /// async client first.
    Peeked(Peeker),
}

/// Runs `answer` in place on the async worker; a panic is answered as the blocking pool's
/// is (500), not by dropping the connection.
fn in_place<T>(api: Format, answer: impl FnOnce() -> Result<T, ApiError>) -> Result<T, ApiError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(answer))
        .map_err(|_| ApiError::new(api, Kind::Internal, "tightfit proxy: fitting failed: it panicked"))?
}

/// What `peeker` reads for conversation `key`, if it answers within [`PEEK_TIMEOUT`]. A
/// failure is logged (at debug: a store that is down fails every turn, and the blocking
/// path's fit reports it to the client) and leaves the turn to the blocking pool.
async fn peek_within(peeker: Peeker, key: String) -> Option<Peeked> {
    match tokio::time::timeout(PEEK_TIMEOUT, peeker.peek(&key)).await {
        Ok(Ok(peeked)) => Some(peeked),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "the checkpoint version was not read: the turn goes to the blocking pool");
            None
        }
        Err(_) => {
            tracing::debug!(
                store = peeker.describe(),
                "the checkpoint version was not read within {PEEK_TIMEOUT:?}"
            );
            None
        }
    }
}

/// The longest a turn waits for its store's version before it takes the blocking path.
const PEEK_TIMEOUT: Duration = Duration::from_millis(250);

impl App {
    /// The state for `config`, fitting with `fitting`, admitting the clients whose keys are
    /// `client_keys` (all, if empty).
    pub fn new(
        config: Config,
        fitting: Fitting,
        client_keys: &[String],
        in_place: InPlace,
    ) -> Result<App, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect())
            .read_timeout(config.timeouts.idle())
            // the client asked for what it asked for: no decompression, no redirects followed
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let places = Arc::new(Semaphore::new(config.limits.max_concurrency));
        Ok(App {
            client,
            fitting: Arc::new(fitting),
            metrics: Arc::new(Metrics::new()),
            places,
            client_keys: client_keys.iter().map(|k| Sha256::digest(k.as_bytes()).into()).collect(),
            requests: AtomicU64::new(0),
            started: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            in_place,
            config,
        })
    }

    /// The routes.
    pub fn router(self: Arc<App>) -> Router {
        Router::new()
            .route("/v1/chat/completions", post(chat_completions).fallback(passthrough))
            .route("/v1/responses", post(responses).fallback(passthrough))
            .route("/v1/messages", post(messages).fallback(passthrough))
            .route("/v1/messages/count_tokens", post(count_tokens).fallback(passthrough))
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/metrics", get(metrics))
            .fallback(passthrough)
            .with_state(self)
    }

    fn upstream(&self, api: Format) -> Option<&str> {
        match api {
            Format::Anthropic => self.config.upstream.anthropic.as_deref(),
            _ => self.config.upstream.openai.as_deref(),
        }
    }

    /// The client's `x-request-id` when it is a short visible string, else a new one.
    fn request_id(&self, headers: &HeaderMap) -> String {
        match headers.get("x-request-id").and_then(|v| v.to_str().ok()) {
            Some(id) if !id.is_empty() && id.len() <= 128 => id.to_string(),
            _ => {
                let n = self.requests.fetch_add(1, Ordering::Relaxed);
                format!("tf-{:x}-{n:x}", self.started & 0xffff_ffff)
            }
        }
    }

    /// Checks the proxy's own client key, when the proxy has keys.
    fn authorize(&self, api: Format, headers: &HeaderMap) -> Result<(), ApiError> {
        if self.client_keys.is_empty() {
            return Ok(());
        }
        let given = headers.get("x-tightfit-key").map(|v| <[u8; 32]>::from(Sha256::digest(v.as_bytes())));
        match given {
            Some(digest) if self.client_keys.contains(&digest) => Ok(()),
            Some(_) => Err(ApiError::new(
                api,
                Kind::Unauthorized,
                "tightfit proxy: the x-tightfit-key is not one of the proxy's client keys",
            )),
            None => Err(ApiError::new(
                api,
                Kind::Unauthorized,
                "tightfit proxy: this proxy needs a client key in the x-tightfit-key header",
            )),
        }
    }

    fn take_slot(&self, api: Format) -> Result<Slot, ApiError> {
        Slot::take(&self.places, &self.metrics).ok_or_else(|| {
            ApiError::new(
                api,
                Kind::Overloaded,
                format!(
                    "tightfit proxy: {} requests are in flight (limits.max_concurrency); retry shortly",
                    self.config.limits.max_concurrency
                ),
            )
        })
    }

    /// The body, whole, refused past `limits.max_body_bytes` (before reading it when its
    /// length is declared).
    async fn read_body(&self, api: Format, headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
        self.read_body_telling_head(api, headers, body, |_| {}).await
    }

    /// [`read_body`](App::read_body), calling `head` once with the body's first
    /// [`HEAD_BYTES`] bytes (or all of it, if shorter) as soon as they are in.
    async fn read_body_telling_head(
        &self,
        api: Format,
        headers: &HeaderMap,
        body: Body,
        head: impl FnOnce(&[u8]),
    ) -> Result<Bytes, ApiError> {
        let mut head = Some(head);
        let limit = self.config.limits.max_body_bytes;
        let too_large = || {
            ApiError::new(
                api,
                Kind::TooLarge,
                format!("tightfit proxy: the request body is over {limit} bytes (limits.max_body_bytes)"),
            )
        };
        let declared = headers
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        let mut stream = body.into_data_stream();
        let mut bytes = BytesMut::with_capacity(declared.unwrap_or(0) as usize);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                ApiError::new(
                    api,
                    Kind::InvalidRequest,
                    format!("tightfit proxy: reading the request body failed: {e}"),
                )
            })?;
            if bytes.len() + chunk.len() > limit {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
            if bytes.len() >= HEAD_BYTES {
                if let Some(head) = head.take() {
                    head(&bytes[..HEAD_BYTES]);
                }
            }
        }
        if let Some(head) = head.take() {
            head(&bytes);
        }
        Ok(bytes.freeze())
    }

    /// The policy of a request: its `x-tightfit-policy` header, else its API key's, else its
    /// route's, else the default.
    fn policy(&self, api: Format, headers: &HeaderMap) -> Result<String, ApiError> {
        if let Some(value) = headers.get("x-tightfit-policy") {
            let name = value.to_str().unwrap_or("");
            check_policy("x-tightfit-policy", name).map_err(|e| {
                ApiError::new(api, Kind::InvalidRequest, e.to_string()).with_param("x-tightfit-policy")
            })?;
            return Ok(name.to_string());
        }
        let policies = &self.config.policy;
        let by_key = headers::api_key_digest(headers).and_then(|digest| policies.api_keys.get(&digest));
        let by_route = match api {
            Format::Anthropic => policies.anthropic.as_ref(),
            _ => policies.openai.as_ref(),
        };
        Ok(by_key.or(by_route).unwrap_or(&policies.default).clone())
    }

    /// Forwards a request to `api`'s upstream and answers with its response, the proxy's
    /// headers added.
    async fn forward(
        &self,
        api: Format,
        route: &'static str,
        parts: &axum::http::request::Parts,
        body: Bytes,
        slot: Slot,
        request_id: &str,
    ) -> Result<Response<Body>, ApiError> {
        let base = self.upstream_for(api)?;
        let outgoing = Outgoing {
            base: base.to_string(),
            path_and_query: parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string(),
            method: parts.method.clone(),
            headers: parts.headers.clone(),
            body,
        };
        let accounting = Accounting {
            metrics: Arc::clone(&self.metrics),
            route,
            api,
            _slot: slot,
            request_id: request_id.to_string(),
        };
        forward::send(
            &self.client,
            outgoing,
            self.config.timeouts.response(),
            self.config.timeouts.idle(),
            accounting,
        )
        .await
    }

    fn upstream_for(&self, api: Format) -> Result<&str, ApiError> {
        self.upstream(api).ok_or_else(|| {
            let key = match api {
                Format::Anthropic => "upstream.anthropic",
                _ => "upstream.openai",
            };
            ApiError::new(
                api,
                Kind::NotFound,
                format!("tightfit proxy: no upstream is configured for this route ({key})"),
            )
        })
    }

    /// Fits a request of `api` and forwards it.
    async fn fit_and_forward(
        &self,
        api: Format,
        route: &'static str,
        request: Request,
        arrival: &mut Arrival,
    ) -> Result<Response<Body>, ApiError> {
        let log = &mut arrival.log;
        self.authorize(api, request.headers())?;
        let slot = self.take_slot(api)?;
        let (parts, body) = request.into_parts();
        let policy = self.policy(api, &parts.headers)?;
        log.policy = policy.clone();
        // on a network store, the conversation's checkpoint version is read while the body
        // arrives, from the moment its head tells the conversation
        let mut peek = None;
        let body = match &self.in_place {
            InPlace::Peeked(peeker) if policy != "off" => {
                let start = |head: &[u8]| {
                    peek = self
                        .fitting
                        .previous_key(api, &parts.headers, head)
                        .map(|key| tokio::spawn(peek_within(peeker.clone(), key)));
                };
                self.read_body_telling_head(api, &parts.headers, body, start).await?
            }
            _ => self.read_body(api, &parts.headers, body).await?,
        };
        let mut added = vec![("x-tightfit-policy", policy.clone())];
        let body = if policy == "off" {
            added.push(("x-tightfit-actions", "none (policy off)".to_string()));
            body
        } else {
            // a warm turn in place (microseconds); the rest on the blocking pool
            let answered = match &self.in_place {
                InPlace::Never => None,
                InPlace::Local => {
                    in_place(api, || self.fitting.answer_appended(api, &parts.headers, &policy, &body, None))?
                }
                InPlace::Peeked(_) => self.answer_peeked(peek, api, &parts.headers, &policy, &body).await?,
            };
            let outcome = match answered {
                Some(outcome) => {
                    // a request not fitted (no model, an unknown one) is not a turn
                    if outcome.tokens.is_some() {
                        self.metrics.in_place(route);
                    }
                    outcome
                }
                None => {
                    let fitting = Arc::clone(&self.fitting);
                    let headers = parts.headers.clone();
                    let request_body = body.clone();
                    tokio::task::spawn_blocking(move || fitting.fit(api, &headers, &policy, &request_body))
                        .await
                        .map_err(|e| {
                            ApiError::new(api, Kind::Internal, format!("tightfit proxy: fitting failed: {e}"))
                        })??
                }
            };
            if let Some((before, after)) = outcome.tokens {
                self.metrics.fitted(route, before, after, outcome.outcome, outcome.prefix_tokens);
                added.push(("x-tightfit-tokens-before", before.to_string()));
                added.push(("x-tightfit-tokens-after", after.to_string()));
                log.tokens = Some((before, after));
            }
            if let Some(epoch) = outcome.epoch {
                added.push(("x-tightfit-epoch", epoch.to_string()));
            }
            log.actions = outcome.actions.clone();
            log.reused = outcome.reused;
            added.push(("x-tightfit-actions", outcome.actions));
            outcome.body.unwrap_or(body)
        };
        self.metrics.overhead(route, arrival.at.elapsed());
        let mut response = self.forward(api, route, &parts, body, slot, &arrival.id).await?;
        forward::add_headers(&mut response, &added);
        Ok(response)
    }

    /// A warm turn on a network store, answered in place from the store's version of its
    /// conversation's checkpoint, read by the async peeker while the body arrived (`early`:
    /// for the key the conversation's previous request was fitted under, which its head
    /// named). `None`: for the blocking pool: no version read (a first turn, a store slow or
    /// down: the pool's fit says what is wrong), or not a turn that only appends, or one of
    /// another conversation than the head named (the session declines a version read for
    /// another key).
    ///
    /// The version is the one the store held when the body's head arrived. A compaction
    /// another replica writes of the same conversation while this body is still arriving
    /// (the same conversation sent to two replicas at once) is not seen by this turn; the
    /// turns of an agent loop come one after the other's answer, and a replica writes a
    /// checkpoint before it forwards, so each of them sees the last.
    async fn answer_peeked(
        &self,
        early: Option<tokio::task::JoinHandle<Option<Peeked>>>,
        api: Format,
        headers: &HeaderMap,
        policy: &str,
        body: &Bytes,
    ) -> Result<Option<Outcome>, ApiError> {
        // awaited before the body is read: the read takes the conversation's last reading out
        // of its slot, which must not stay empty across an await
        let Some(peeked) = (match early {
            Some(task) => task.await.ok().flatten(),
            None => None,
        }) else {
            return Ok(None);
        };
        in_place(api, || self.fitting.answer_appended(api, headers, policy, body, Some(&peeked)))
    }

    /// What a request is known by from its arrival.
    fn arrival(&self, request: &Request) -> Arrival {
        Arrival { id: self.request_id(request.headers()), at: Instant::now(), log: LogLine::default() }
    }

    /// Stamps, counts and logs the answer to a request.
    fn answer(
        &self,
        route: &'static str,
        arrival: Arrival,
        result: Result<Response<Body>, ApiError>,
    ) -> Response {
        let Arrival { id, at, mut log } = arrival;
        let mut response = match result {
            Ok(response) => response,
            Err(error) => {
                log.error = Some(error.message.clone());
                error.into_response()
            }
        };
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert("x-tightfit-request-id", value);
        }
        let status = response.status().as_u16();
        self.metrics.request(route, status);
        let (before, after) = log.tokens.unzip();
        tracing::info!(
            request_id = %id,
            route,
            status,
            policy = %log.policy,
            tokens_before = before,
            tokens_after = after,
            actions = %log.actions,
            messages_reused = log.reused,
            error = log.error.as_deref(),
            elapsed_us = at.elapsed().as_micros() as u64,
            "request"
        );
        response
    }

    /// Anthropic's token count, answered by the upstream; the proxy's own count in
    /// `x-tightfit-input-tokens`.
    async fn count_and_forward(&self, request: Request, id: &str) -> Result<Response<Body>, ApiError> {
        let api = Format::Anthropic;
        self.authorize(api, request.headers())?;
        let slot = self.take_slot(api)?;
        let (parts, body) = request.into_parts();
        let body = self.read_body(api, &parts.headers, body).await?;
        let fitting = Arc::clone(&self.fitting);
        let counted = body.clone();
        let ours = tokio::task::spawn_blocking(move || fitting.count(api, &counted)).await.ok().flatten();
        let mut response = self.forward(api, "count_tokens", &parts, body, slot, id).await?;
        if let Some(tokens) = ours {
            forward::add_headers(&mut response, &[("x-tightfit-input-tokens", tokens.to_string())]);
        }
        Ok(response)
    }

    /// Any other path: to the upstream the request's headers point at (Anthropic's when it
    /// carries `x-api-key` or `anthropic-version`, else OpenAI's), or the only one
    /// configured.
    async fn pass(&self, request: Request, id: &str) -> Result<Response<Body>, ApiError> {
        let headers = request.headers();
        let said = if headers.contains_key("x-api-key") || headers.contains_key("anthropic-version") {
            Format::Anthropic
        } else {
            Format::OpenAi
        };
        let api = match (self.upstream(said), self.upstream(Format::Anthropic), self.upstream(Format::OpenAi))
        {
            (None, Some(_), None) => Format::Anthropic,
            (None, None, Some(_)) => Format::OpenAi,
            _ => said,
        };
        self.authorize(api, request.headers())?;
        let slot = self.take_slot(api)?;
        let (parts, body) = request.into_parts();
        let body = self.read_body(api, &parts.headers, body).await?;
        self.forward(api, "passthrough", &parts, body, slot, id).await
    }
}

/// A request's id, arrival time and what its log line will say.
struct Arrival {
    id: String,
    at: Instant,
    log: LogLine,
}

/// What a request's log line says besides its route and status.
#[derive(Debug, Default)]
struct LogLine {
    policy: String,
    /// The messages taken from the conversation's previous request instead of read.
    reused: usize,
    tokens: Option<(usize, usize)>,
    actions: String,
    error: Option<String>,
}

async fn chat_completions(State(app): State<Arc<App>>, request: Request) -> Response {
    let mut arrival = app.arrival(&request);
    let result = app.fit_and_forward(Format::OpenAi, "openai", request, &mut arrival).await;
    app.answer("openai", arrival, result)
}

async fn responses(State(app): State<Arc<App>>, request: Request) -> Response {
    let mut arrival = app.arrival(&request);
    let result = app.fit_and_forward(Format::Responses, "responses", request, &mut arrival).await;
    app.answer("responses", arrival, result)
}

async fn messages(State(app): State<Arc<App>>, request: Request) -> Response {
    let mut arrival = app.arrival(&request);
    let result = app.fit_and_forward(Format::Anthropic, "anthropic", request, &mut arrival).await;
    app.answer("anthropic", arrival, result)
}

async fn count_tokens(State(app): State<Arc<App>>, request: Request) -> Response {
    let arrival = app.arrival(&request);
    let result = app.count_and_forward(request, &arrival.id).await;
    app.answer("count_tokens", arrival, result)
}

async fn passthrough(State(app): State<Arc<App>>, request: Request) -> Response {
    let arrival = app.arrival(&request);
    let result = app.pass(request, &arrival.id).await;
    app.answer("passthrough", arrival, result)
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        app.metrics.render(),
    )
        .into_response()
}
