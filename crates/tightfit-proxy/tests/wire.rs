//! What goes through: bytes, headers, streams, fitted bodies.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};
use tightfit::format::{convert, messages_to_value, parse_str, Format, FormatHint};
use tightfit::models::Registry;
use tightfit::validate::validate;
use tightfit::Target;
use tokio::sync::Notify;

use crate::support::{capped, client, config_for, corpus, proxy, url, Fake, Reply};

/// The tokens of a forwarded body, counted for `model`, and its rule violations.
fn check_forwarded(body: &[u8], api: Format, model: &str) -> (usize, usize) {
    let conversation = parse_str(std::str::from_utf8(body).unwrap(), FormatHint::Exactly(api)).unwrap();
    let counter = Target::for_model(Registry::embedded().lookup(model).unwrap(), None).counter;
    let tokens = counter.count(&conversation.messages, conversation.tools.as_deref()).total;
    (tokens, validate(&conversation.messages, api).len())
}

#[tokio::test]
async fn a_request_with_nothing_to_do_goes_on_byte_for_byte() {
    let fake = Fake::start().await;
    let proxy = proxy(config_for(&fake)).await;
    // odd spacing, key order and number spelling: only the same bytes pass this
    let body = "{\"messages\": [ {\"content\": \"Hi!\", \"role\": \"user\"} ],\n \"model\":\"gpt-4o\", \"temperature\": 5e-1}";
    let response = client()
        .post(url(&proxy, "/v1/chat/completions?api-version=1"))
        .header("authorization", "Bearer sk-test")
        .header("content-type", "application/json")
        .header("x-stainless-lang", "python")
        .header("openai-organization", "org-1")
        .header("x-tightfit-session", "chat-7")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["x-tightfit-actions"], "none");
    assert_eq!(headers["x-tightfit-tokens-before"], headers["x-tightfit-tokens-after"]);
    assert_eq!(headers["x-tightfit-epoch"], "0");
    assert_eq!(headers["x-tightfit-policy"], "cache");
    assert!(headers.contains_key("x-tightfit-request-id"));
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "ok");
    let got = fake.last();
    assert_eq!(got.path, "/v1/chat/completions");
    assert_eq!(got.body, body.as_bytes());
    assert_eq!(got.headers["authorization"], "Bearer sk-test");
    assert_eq!(got.headers["x-stainless-lang"], "python");
    assert_eq!(got.headers["openai-organization"], "org-1");
    assert!(!got.headers.contains_key("x-tightfit-session"), "the proxy's own headers stay here");
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn an_agent_run_over_the_budget_is_fitted_valid_and_within_it() {
    let (fake, proxy) = capped(8_000).await;
    let record = &corpus("data/agent_mini_swe_deepseek.jsonl")[2];
    let body = json!({"model": "gpt-4o", "messages": record["messages"], "stream": false}).to_string();
    let response =
        client().post(url(&proxy, "/v1/chat/completions")).body(body.clone()).send().await.unwrap();
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    let before: usize = response.headers()["x-tightfit-tokens-before"].to_str().unwrap().parse().unwrap();
    let after: usize = response.headers()["x-tightfit-tokens-after"].to_str().unwrap().parse().unwrap();
    assert!(before > 8_000 && after <= 8_000, "{before} -> {after}");
    assert_eq!(response.headers()["x-tightfit-epoch"], "1");
    let sent = fake.last();
    let (tokens, violations) = check_forwarded(&sent.body, Format::OpenAi, "gpt-4o");
    assert_eq!((tokens, violations), (after, 0));
    // the request's other fields go on as they came
    assert_eq!(sent.json()["stream"], false);
    assert_eq!(sent.json()["model"], "gpt-4o");
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn a_responses_api_agent_run_over_the_budget_is_fitted_valid_and_within_it() {
    let (fake, proxy) = capped(8_000).await;
    // a real agent run, written as Responses API input items (function_call and
    // function_call_output paired by call_id)
    let record = &corpus("data/agent_mini_swe_deepseek.jsonl")[2];
    let chat = parse_str(&json!({"messages": record["messages"]}).to_string(), FormatHint::Auto).unwrap();
    let items = convert(&chat, Format::Responses).conversation.messages;
    let body =
        json!({"model": "gpt-4o", "input": messages_to_value(&items, Format::Responses), "store": false});
    let response = client().post(url(&proxy, "/v1/responses")).body(body.to_string()).send().await.unwrap();
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    let before: usize = response.headers()["x-tightfit-tokens-before"].to_str().unwrap().parse().unwrap();
    let after: usize = response.headers()["x-tightfit-tokens-after"].to_str().unwrap().parse().unwrap();
    assert!(before > 8_000 && after <= 8_000, "{before} -> {after}");
    let sent = fake.last();
    assert_eq!(sent.path, "/v1/responses");
    let (tokens, violations) = check_forwarded(&sent.body, Format::Responses, "gpt-4o");
    assert_eq!((tokens, violations), (after, 0));
    assert!(sent.json()["input"].as_array().unwrap().iter().any(|i| i["type"] == "function_call_output"));
    assert_eq!(sent.json()["store"], false, "the request's other fields go on as they came");
    // an overflow nothing can fix is OpenAI's context_length_exceeded, not a 5xx
    let (_fake, tiny) = capped(10).await;
    let response = client().post(url(&tiny, "/v1/responses")).body(body.to_string()).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "context_length_exceeded");
    tiny.stop().await.unwrap();
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn anthropic_thinking_signatures_go_on_untouched() {
    let (fake, proxy) = capped(6_000).await;
    let records = corpus("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl");
    let record = records.iter().max_by_key(|r| r["messages"].as_array().unwrap().len()).unwrap();
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": record["system"], "messages": record["messages"]});
    let response = client()
        .post(url(&proxy, "/v1/messages"))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "interleaved-thinking-2025-05-14")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let sent = fake.last();
    assert_eq!(sent.headers["anthropic-beta"], "interleaved-thinking-2025-05-14");
    let (tokens, violations) = check_forwarded(&sent.body, Format::Anthropic, "claude-sonnet-4-5");
    assert!(tokens <= 6_000, "{tokens}");
    assert_eq!(violations, 0);
    // every thinking block forwarded is one of the input's, signature and all
    let input_blocks: Vec<&Value> = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "thinking")
        .collect();
    assert!(!input_blocks.is_empty());
    let forwarded = sent.json();
    let sent_blocks: Vec<&Value> = forwarded["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "thinking")
        .collect();
    for block in &sent_blocks {
        assert!(input_blocks.contains(block), "a thinking block was altered");
    }
    proxy.stop().await.unwrap();
}

const OPENAI_STREAM: &[&str] = &[
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null,\"obfuscation\":\"x1\"}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\ndata: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1300,\"completion_tokens\":2,\"total_tokens\":1302,\"prompt_tokens_details\":{\"cached_tokens\":1152}}}\n\n",
    "data: [DONE]\n\n",
];

const RESPONSES_STREAM: &[&str] = &[
    "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n",
    "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi\"}]}],\"usage\":{\"input_tokens\":2100,\"input_tokens_details\":{\"cached_tokens\":2048},\"output_tokens\":7,\"total_tokens\":2107}}}\n\n",
];

const ANTHROPIC_STREAM: &[&str] = &[
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":4000,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: brand_new_event\ndata: {\"type\":\"brand_new_event\",\"whatever\":[1,2]}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":30}}\n\n",
    "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
];

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .map_or(0, |v| v.parse().unwrap())
}

#[tokio::test]
async fn streams_pass_chunk_by_chunk_byte_identical_and_their_usage_is_read() {
    let fake = Fake::start().await;
    let proxy = proxy(config_for(&fake)).await;
    let cases = [
        (
            "/v1/chat/completions",
            json!({"model": "gpt-4o", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "Hi"}]}),
            OPENAI_STREAM,
        ),
        (
            "/v1/messages",
            json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": "Hi"}]}),
            ANTHROPIC_STREAM,
        ),
        ("/v1/responses", json!({"model": "gpt-4o", "stream": true, "input": "Hi"}), RESPONSES_STREAM),
    ];
    for (path, body, stream) in cases {
        let go = Arc::new(Notify::new());
        fake.then(Reply::Stream {
            content_type: "text/event-stream; charset=utf-8",
            first: Bytes::from_static(stream[0].as_bytes()),
            rest: stream[1..].iter().map(|s| Bytes::from_static(s.as_bytes())).collect(),
            go: Arc::clone(&go),
        });
        let mut response = client().post(url(&proxy, path)).body(body.to_string()).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream; charset=utf-8");
        // the first chunk arrives while the upstream has not yet written the rest: nothing
        // is gathered on the way
        let first = response.chunk().await.unwrap().unwrap();
        assert_eq!(first, stream[0].as_bytes());
        go.notify_one();
        let mut all = first.to_vec();
        while let Some(chunk) = response.chunk().await.unwrap() {
            all.extend_from_slice(&chunk);
        }
        assert_eq!(String::from_utf8(all).unwrap(), stream.concat(), "{path}");
    }
    let metrics = client().get(url(&proxy, "/metrics")).send().await.unwrap().text().await.unwrap();
    assert_eq!(metric(&metrics, "tightfit_upstream_input_tokens_total{route=\"openai\"}"), 1300);
    assert_eq!(metric(&metrics, "tightfit_upstream_cached_input_tokens_total{route=\"openai\"}"), 1152);
    assert_eq!(metric(&metrics, "tightfit_upstream_input_tokens_total{route=\"anthropic\"}"), 4012);
    assert_eq!(metric(&metrics, "tightfit_upstream_output_tokens_total{route=\"anthropic\"}"), 30);
    assert_eq!(metric(&metrics, "tightfit_upstream_input_tokens_total{route=\"responses\"}"), 2100);
    assert_eq!(metric(&metrics, "tightfit_upstream_cached_input_tokens_total{route=\"responses\"}"), 2048);
    assert_eq!(metric(&metrics, "tightfit_upstream_output_tokens_total{route=\"responses\"}"), 7);
    assert_eq!(metric(&metrics, "tightfit_in_flight_requests"), 0);
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn the_clients_disconnect_cancels_the_upstream_request() {
    let fake = Fake::start().await;
    let proxy = proxy(config_for(&fake)).await;
    let dropped = fake.stream_until_dropped(Bytes::from_static(b"data: {\"n\":1}\n\n"));
    let body = json!({"model": "gpt-4o", "stream": true, "messages": [{"role": "user", "content": "Hi"}]});
    let mut response =
        client().post(url(&proxy, "/v1/chat/completions")).body(body.to_string()).send().await.unwrap();
    assert_eq!(response.chunk().await.unwrap().unwrap(), &b"data: {\"n\":1}\n\n"[..]);
    drop(response);
    tokio::time::timeout(std::time::Duration::from_secs(10), dropped.notified())
        .await
        .expect("the upstream's stream is dropped once the client is gone");
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn count_tokens_is_the_upstreams_with_ours_beside_it() {
    let fake = Fake::start().await;
    let proxy = proxy(config_for(&fake)).await;
    let body = json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "How many tokens is this?"}]});
    let response =
        client().post(url(&proxy, "/v1/messages/count_tokens")).body(body.to_string()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let ours: usize = response.headers()["x-tightfit-input-tokens"].to_str().unwrap().parse().unwrap();
    assert!(ours > 5 && ours < 40, "{ours}");
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"input_tokens": 42}));
    assert_eq!(fake.last().body, body.to_string().as_bytes());
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn other_paths_pass_through_to_the_upstream() {
    let fake = Fake::start().await;
    let proxy = proxy(config_for(&fake)).await;
    let models =
        client().get(url(&proxy, "/v1/models")).header("authorization", "Bearer sk-1").send().await.unwrap();
    assert_eq!(models.status(), 200);
    assert_eq!(models.json::<Value>().await.unwrap()["data"][0]["id"], "gpt-4o");
    let unknown = client().post(url(&proxy, "/v1/nowhere")).body("{}").send().await.unwrap();
    assert_eq!(unknown.status(), 404, "the upstream's answer");
    assert_eq!(unknown.json::<Value>().await.unwrap()["error"]["message"], "no such route");
    let got = fake.received();
    assert_eq!((got[0].method.as_str(), got[0].path.as_str()), ("GET", "/v1/models"));
    assert_eq!(got[0].headers["authorization"], "Bearer sk-1");
    assert_eq!(
        (got[1].method.as_str(), got[1].path.as_str(), &got[1].body[..]),
        ("POST", "/v1/nowhere", &b"{}"[..])
    );
    let health = client().get(url(&proxy, "/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    proxy.stop().await.unwrap();
}
