//! Faults and bad input: each answered with the right status and a provider-shaped error (or
//! the upstream's own answer), never a hang, and the proxy still serving afterwards.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::support::{capped, client, config_for, proxy, url, Fake, Reply};

fn chat(text: &str) -> String {
    json!({"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}).to_string()
}

fn message(text: &str) -> String {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": text}]})
        .to_string()
}

/// Sends `body` to `path` and returns the status, the `x-tightfit-error` header and the JSON
/// body.
async fn answer(
    proxy: &tightfit_proxy::Running,
    path: &str,
    body: String,
    headers: &[(&str, &str)],
) -> (u16, String, Value) {
    let mut request = client().post(url(proxy, path)).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response.headers().get("x-tightfit-error").map_or("", |v| v.to_str().unwrap()).to_string();
    (status, kind, response.json().await.unwrap())
}

/// Checks a request still goes through.
async fn still_serving(proxy: &tightfit_proxy::Running) {
    let (status, _, body) = answer(proxy, "/v1/chat/completions", chat("still there?"), &[]).await;
    assert_eq!((status, body["choices"][0]["message"]["content"].as_str()), (200, Some("ok")));
}

#[tokio::test]
async fn bad_input_is_answered_in_the_providers_shape() {
    let fake = Fake::start().await;
    let mut config = config_for(&fake);
    config.limits.max_body_bytes = 4_000;
    let proxy = proxy(config).await;

    let (status, kind, body) =
        answer(&proxy, "/v1/chat/completions", "{\"model\": \"gpt-4o\", \"messages\": [".into(), &[]).await;
    assert_eq!(
        (status, kind.as_str(), body["error"]["type"].as_str()),
        (400, "invalid_request", Some("invalid_request_error"))
    );
    assert!(body["error"]["message"].as_str().unwrap().contains("not JSON"), "{body}");

    let (status, _, body) = answer(&proxy, "/v1/messages", "[1, 2".into(), &[]).await;
    assert_eq!(
        (status, body["type"].as_str(), body["error"]["type"].as_str()),
        (400, Some("error"), Some("invalid_request_error"))
    );

    // a message we cannot read names where it is
    let bad = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": 7}]});
    let (status, _, body) = answer(&proxy, "/v1/chat/completions", bad.to_string(), &[]).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"].as_str().unwrap().contains("messages[1]"), "{body}");
    assert_eq!(body["error"]["param"].as_str().map(|p| p.starts_with("messages[1]")), Some(true), "{body}");

    let (status, kind, body) = answer(&proxy, "/v1/messages", message(&"long ".repeat(2_000)), &[]).await;
    assert_eq!(
        (status, kind.as_str(), body["error"]["type"].as_str()),
        (413, "too_large", Some("request_too_large"))
    );

    let (status, _, body) =
        answer(&proxy, "/v1/chat/completions", chat("hi"), &[("x-tightfit-policy", "shrink-a-lot")]).await;
    assert_eq!((status, body["error"]["param"].as_str()), (400, Some("x-tightfit-policy")));
    assert!(body["error"]["message"].as_str().unwrap().contains("shrink-a-lot"), "{body}");

    // none of these reached the upstream
    assert!(fake.received().is_empty());
    still_serving(&proxy).await;
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn a_history_that_cannot_fit_is_the_providers_overflow_never_a_5xx() {
    let (fake, proxy) = capped(1_000).await;
    let huge = "the same words again ".repeat(1_000);
    let (status, kind, body) = answer(&proxy, "/v1/chat/completions", chat(&huge), &[]).await;
    assert_eq!((status, kind.as_str()), (400, "overflow"));
    assert_eq!(body["error"]["code"], "context_length_exceeded");
    let (status, _, body) = answer(&proxy, "/v1/messages", message(&huge), &[]).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let text = body["error"]["message"].as_str().unwrap();
    assert!(text.starts_with("prompt is too long: ") && text.ends_with(" tokens > 1000 maximum"), "{text}");
    assert!(fake.received().is_empty());
    // the same request with the policy off goes on as it came (the upstream decides)
    let (status, _, _) =
        answer(&proxy, "/v1/chat/completions", chat(&huge), &[("x-tightfit-policy", "off")]).await;
    assert_eq!(status, 200);
    assert_eq!(fake.last().body, chat(&huge).as_bytes());
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_gateway_error_of_the_providers_shape() {
    // a port nobody listens on
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut config =
        tightfit_proxy::Config { listen: "127.0.0.1:0".into(), store: "memory".into(), ..Default::default() };
    config.upstream.openai = Some(format!("http://{closed}"));
    config.upstream.anthropic = Some(format!("http://{closed}"));
    let proxy = proxy(config).await;
    let (status, kind, body) = answer(&proxy, "/v1/chat/completions", chat("hi"), &[]).await;
    assert_eq!(
        (status, kind.as_str(), body["error"]["type"].as_str()),
        (502, "bad_gateway", Some("server_error"))
    );
    assert!(body["error"]["message"].as_str().unwrap().contains("cannot connect"), "{body}");
    let (status, _, body) = answer(&proxy, "/v1/messages", message("hi"), &[]).await;
    assert_eq!((status, body["error"]["type"].as_str()), (502, Some("api_error")));
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn a_slow_upstream_times_out_and_a_paused_stream_is_cut() {
    let fake = Fake::start().await;
    let mut config = config_for(&fake);
    config.timeouts.response_secs = 0.3;
    config.timeouts.idle_secs = 0.3;
    let proxy = proxy(config).await;
    fake.then(Reply::Hang(Duration::from_secs(5)));
    let (status, kind, body) = answer(&proxy, "/v1/messages", message("hi"), &[]).await;
    assert_eq!(
        (status, kind.as_str(), body["error"]["type"].as_str()),
        (504, "gateway_timeout", Some("timeout_error"))
    );
    // a stream that starts, then pauses past idle_secs: the client gets what came, then an
    // incomplete body
    let go = Arc::new(Notify::new());
    fake.then(Reply::Stream {
        content_type: "text/event-stream",
        first: Bytes::from_static(b"data: {\"a\":1}\n\n"),
        rest: vec![Bytes::from_static(b"data: [DONE]\n\n")],
        go,
    });
    let mut response =
        client().post(url(&proxy, "/v1/chat/completions")).body(chat("hi")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.chunk().await.unwrap().unwrap(), &b"data: {\"a\":1}\n\n"[..]);
    assert!(response.chunk().await.is_err(), "the cut shows as a broken body");
    still_serving(&proxy).await;
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn upstream_errors_and_cut_streams_reach_the_client_as_they_are() {
    let fake = Fake::start().await;
    let proxy = proxy(config_for(&fake)).await;
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    fake.then(Reply::Whole {
        status: 429,
        headers: vec![
            ("retry-after", "7".into()),
            ("content-type", "application/json".into()),
            ("request-id", "req_9".into()),
        ],
        body: Bytes::from_static(limited.as_bytes()),
    });
    let response = client().post(url(&proxy, "/v1/messages")).body(message("hi")).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    assert_eq!(response.headers()["request-id"], "req_9");
    assert!(!response.headers().contains_key("x-tightfit-error"), "the upstream's answer, not ours");
    assert_eq!(response.text().await.unwrap(), limited);

    fake.then(Reply::Whole { status: 529, headers: vec![], body: Bytes::from_static(b"overloaded") });
    let response = client().post(url(&proxy, "/v1/messages")).body(message("hi")).send().await.unwrap();
    assert_eq!((response.status().as_u16(), response.text().await.unwrap().as_str()), (529, "overloaded"));

    fake.then(Reply::Cut { first: Bytes::from_static(b"data: {\"b\":1}\n\n") });
    let mut response =
        client().post(url(&proxy, "/v1/chat/completions")).body(chat("hi")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut got = Vec::new();
    let broke = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => got.extend_from_slice(&chunk),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(broke, "a stream cut upstream is cut for the client too");
    assert_eq!(got, b"data: {\"b\":1}\n\n");
    still_serving(&proxy).await;
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn client_keys_and_concurrency_bound_who_gets_in() {
    let fake = Fake::start().await;
    let mut config = config_for(&fake);
    config.auth.client_keys_env = "TIGHTFIT_TEST_CLIENT_KEYS_FAULTS".into();
    config.limits.max_concurrency = 1;
    // SAFETY of set_var: this variable is this test's alone
    std::env::set_var("TIGHTFIT_TEST_CLIENT_KEYS_FAULTS", "key-one, key-two");
    let proxy = proxy(config).await;
    let (status, kind, body) = answer(&proxy, "/v1/chat/completions", chat("hi"), &[]).await;
    assert_eq!(
        (status, kind.as_str(), body["error"]["code"].as_str()),
        (401, "unauthorized", Some("invalid_api_key"))
    );
    let (status, _, body) =
        answer(&proxy, "/v1/messages", message("hi"), &[("x-tightfit-key", "key-three")]).await;
    assert_eq!((status, body["error"]["type"].as_str()), (401, Some("authentication_error")));
    let (status, _, _) =
        answer(&proxy, "/v1/chat/completions", chat("hi"), &[("x-tightfit-key", "key-two")]).await;
    assert_eq!(status, 200);
    assert!(!fake.last().headers.contains_key("x-tightfit-key"), "the proxy's key stays here");

    // one request in flight (a stream held open) is the limit: the next is refused at once
    let dropped = fake.stream_until_dropped(Bytes::from_static(b"data: {}\n\n"));
    let mut held = client()
        .post(url(&proxy, "/v1/chat/completions"))
        .header("x-tightfit-key", "key-one")
        .body(chat("hold on"))
        .send()
        .await
        .unwrap();
    held.chunk().await.unwrap();
    let (status, kind, body) =
        answer(&proxy, "/v1/messages", message("me too"), &[("x-tightfit-key", "key-one")]).await;
    assert_eq!(
        (status, kind.as_str(), body["error"]["type"].as_str()),
        (529, "overloaded", Some("overloaded_error"))
    );
    let (status, _, _) =
        answer(&proxy, "/v1/chat/completions", chat("me too"), &[("x-tightfit-key", "key-one")]).await;
    assert_eq!(status, 503);
    drop(held);
    tokio::time::timeout(Duration::from_secs(10), dropped.notified()).await.unwrap();
    // the place is given back once the stream is gone
    let mut freed = false;
    for _ in 0..50 {
        let (status, _, _) =
            answer(&proxy, "/v1/chat/completions", chat("now?"), &[("x-tightfit-key", "key-one")]).await;
        if status == 200 {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(freed);
    proxy.stop().await.unwrap();
}
