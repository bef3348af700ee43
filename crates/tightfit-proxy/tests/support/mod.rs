//! What the proxy's tests share: a fake upstream on loopback that records what it receives
//! and answers as told, a proxy started in front of it, and the real conversations of the
//! shared corpus.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{json, Value};
use tightfit_proxy::{Config, Running};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// A request as the fake upstream received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the forwarded body is JSON")
    }
}

/// How the fake upstream answers the next request.
pub enum Reply {
    /// This status, headers and body.
    Whole { status: u16, headers: Vec<(&'static str, String)>, body: Bytes },
    /// Server-sent events: the first chunk at once, the others once `go` is notified (so a
    /// test can see the first arrive before the rest exist).
    Stream { content_type: &'static str, first: Bytes, rest: Vec<Bytes>, go: Arc<Notify> },
    /// These chunks, then the connection broken off.
    Cut { first: Bytes },
    /// Nothing for this long.
    Hang(Duration),
    /// A first chunk, then nothing, ever; `dropped` is notified when the stream is dropped
    /// (the connection closed).
    Endless { first: Bytes, dropped: Arc<Notify> },
}

/// Notifies when dropped.
struct DropSignal(Arc<Notify>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

#[derive(Default)]
struct Script {
    received: Mutex<Vec<Received>>,
    replies: Mutex<VecDeque<Reply>>,
}

/// The fake upstream.
pub struct Fake {
    pub addr: SocketAddr,
    script: Arc<Script>,
}

impl Fake {
    pub async fn start() -> Fake {
        let script = Arc::new(Script::default());
        let router = axum::Router::new().fallback(answer).with_state(Arc::clone(&script));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        Fake { addr, script }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues the answer to a coming request (else: a JSON answer of the route's shape).
    pub fn then(&self, reply: Reply) {
        self.script.replies.lock().unwrap().push_back(reply);
    }

    /// Answers the next request with `first` and then an open stream that never ends; the
    /// notify fires when the upstream's stream is dropped.
    pub fn stream_until_dropped(&self, first: Bytes) -> Arc<Notify> {
        let dropped = Arc::new(Notify::new());
        self.then(Reply::Endless { first, dropped: Arc::clone(&dropped) });
        dropped
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.script.received.lock().unwrap().clone()
    }

    pub fn last(&self) -> Received {
        self.received().pop().expect("the upstream received a request")
    }
}

async fn answer(State(script): State<Arc<Script>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let path = parts.uri.path().to_string();
    script.received.lock().unwrap().push(Received {
        method: parts.method.to_string(),
        path: path.clone(),
        headers: parts.headers.clone(),
        body,
    });
    let reply = script.replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Whole { status, headers, body }) => {
            let mut response = Response::new(Body::from(body));
            *response.status_mut() = StatusCode::from_u16(status).unwrap();
            for (name, value) in headers {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            response
        }
        Some(Reply::Stream { content_type, first, rest, go }) => {
            let stream = async_chunks(first, rest, go);
            let mut response = Response::new(Body::from_stream(stream));
            response.headers_mut().insert("content-type", content_type.parse().unwrap());
            response
        }
        Some(Reply::Cut { first }) => {
            // the break comes a moment after the first chunk, which goes out first
            let cut = futures_util::stream::once(async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut"))
            });
            use futures_util::StreamExt;
            let stream = futures_util::stream::iter([Ok(first)]).chain(cut);
            let mut response = Response::new(Body::from_stream(stream));
            response.headers_mut().insert("content-type", "text/event-stream".parse().unwrap());
            response
        }
        Some(Reply::Endless { first, dropped }) => {
            let signal = DropSignal(dropped);
            let rest = futures_util::stream::pending::<Result<Bytes, std::io::Error>>();
            use futures_util::StreamExt;
            let stream = futures_util::stream::iter([Ok(first)]).chain(rest).map(move |item| {
                let _ = &signal;
                item
            });
            let mut response = Response::new(Body::from_stream(stream));
            response.headers_mut().insert("content-type", "text/event-stream".parse().unwrap());
            response
        }
        Some(Reply::Hang(duration)) => {
            tokio::time::sleep(duration).await;
            Response::new(Body::from("late"))
        }
        None => default_answer(&path),
    }
}

fn async_chunks(
    first: Bytes,
    rest: Vec<Bytes>,
    go: Arc<Notify>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let later = futures_util::stream::once(async move {
        go.notified().await;
        futures_util::stream::iter(rest.into_iter().map(Ok))
    });
    use futures_util::StreamExt;
    futures_util::stream::iter([Ok(first)]).chain(later.flatten())
}

fn default_answer(path: &str) -> Response {
    let (status, body) = match path {
        "/v1/responses" => (
            200,
            json!({
                "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4o",
                "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
                "usage": {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11}
            }),
        ),
        "/v1/chat/completions" => (
            200,
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
            }),
        ),
        "/v1/messages" => (
            200,
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}
            }),
        ),
        "/v1/messages/count_tokens" => (200, json!({"input_tokens": 42})),
        "/v1/models" => (200, json!({"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]})),
        _ => (
            404,
            json!({"error": {"message": "no such route", "type": "invalid_request_error", "param": null, "code": null}}),
        ),
    };
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    response.headers_mut().insert("content-type", "application/json".parse().unwrap());
    response
}

/// A configuration for a proxy on loopback in front of `fake` (both routes), state in memory.
pub fn config_for(fake: &Fake) -> Config {
    let mut config = Config { listen: "127.0.0.1:0".into(), store: "memory".into(), ..Config::default() };
    config.upstream.openai = Some(fake.url());
    config.upstream.anthropic = Some(fake.url());
    config
}

/// A fake upstream and a proxy in front of it fitting every request to at most `budget`
/// input tokens.
pub async fn capped(budget: usize) -> (Fake, Running) {
    let fake = Fake::start().await;
    let mut config = config_for(&fake);
    config.policy.max_input_tokens = Some(budget);
    let proxy = proxy(config).await;
    (fake, proxy)
}

/// A proxy with `config`.
pub async fn proxy(config: Config) -> Running {
    tightfit_proxy::start(config).await.expect("the proxy starts")
}

pub fn url(proxy: &Running, path: &str) -> String {
    format!("http://{}{path}", proxy.addr)
}

/// The `tightfit_turns_in_place_total` of `proxy`'s metrics, over every route.
pub async fn turns_in_place(proxy: &Running) -> usize {
    let metrics = client().get(url(proxy, "/metrics")).send().await.unwrap().text().await.unwrap();
    metrics
        .lines()
        .filter(|l| l.starts_with("tightfit_turns_in_place_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<usize>().ok())
        .sum()
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

/// The conversations of a corpus file (`data/…` or `data2/…` under the shared folder), as
/// JSON records.
pub fn corpus(file: &str) -> Vec<Value> {
    let path = format!("{}/../../../shared/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}
