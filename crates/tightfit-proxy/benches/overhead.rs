//! The latency the proxy adds, against calling the same fake upstream directly in the same
//! run, at 1, 16 and 64 concurrent clients, for a 100-message and a 1,500-message agent
//! conversation (each client its own conversation, `x-tightfit-session`; every request after
//! the first is a warm session turn: the decision replayed). Then memory over many requests.
//!
//! `cargo bench -p tightfit-proxy --bench overhead` (loopback only; bounded: set
//! `TIGHTFIT_BENCH_REQUESTS` to scale the request counts, `TIGHTFIT_BENCH_MEMORY` for the
//! memory run's count, default 100,000).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use serde_json::{json, Value};
use tokio::net::TcpListener;

// the allocator of the shipped `tightfit` binary, which `tightfit serve` runs in
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ANSWER: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}"#;

/// A fake upstream that reads the body and answers at once.
async fn fake_upstream() -> String {
    async fn answer(request: Request) -> Response {
        let _ = axum::body::to_bytes(request.into_body(), usize::MAX).await;
        let mut response = Response::new(Body::from(ANSWER));
        response.headers_mut().insert("content-type", "application/json".parse().unwrap());
        response
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().fallback(answer)).await });
    format!("http://{addr}")
}

fn conversation(messages: usize) -> String {
    let path = format!("{}/../../../shared/data/extreme_long.jsonl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let record: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["id"].as_str().is_some_and(|id| id.contains("mini-swe")))
        .expect("a mini-swe concatenation");
    let all = record["messages"].as_array().unwrap();
    json!({"model": "gpt-4o", "max_tokens": 1024, "messages": &all[..messages.min(all.len())]}).to_string()
}

/// Latencies of `per_client` requests by each of `clients` concurrent clients, each its own
/// conversation, sorted.
async fn latencies(url: &str, body: &str, clients: usize, per_client: usize) -> Vec<Duration> {
    let client = reqwest::Client::builder().pool_max_idle_per_host(256).build().unwrap();
    let body = Arc::new(body.to_string());
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (client, body, url) = (client.clone(), Arc::clone(&body), url.to_string());
        tasks.push(tokio::spawn(async move {
            let session = format!("bench-{c}");
            let send = || {
                client
                    .post(&url)
                    .header("x-tightfit-session", &session)
                    .body(body.as_str().to_string())
                    .send()
            };
            // the first turn of each conversation (the compaction) is not timed: the figures
            // are warm turns
            let first = send().await.unwrap();
            assert_eq!(first.status(), 200, "{:?}", first.text().await);
            let mut times = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                let start = Instant::now();
                let response = send().await.unwrap();
                let _ = response.bytes().await.unwrap();
                times.push(start.elapsed());
            }
            times
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort();
    all
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let scale: f64 =
        std::env::var("TIGHTFIT_BENCH_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0);
    let memory_requests: usize =
        std::env::var("TIGHTFIT_BENCH_MEMORY").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let upstream = fake_upstream().await;
        let mut config = tightfit_proxy::Config {
            listen: "127.0.0.1:0".into(),
            store: "memory".into(),
            ..Default::default()
        };
        config.upstream.openai = Some(upstream.clone());
        config.log.level = "warn".into();
        let proxy = tightfit_proxy::start(config).await.unwrap();
        let via = format!("http://{}/v1/chat/completions", proxy.addr);
        let direct = format!("{upstream}/v1/chat/completions");
        println!(
            "added latency of the proxy (warm session turns), against the fake upstream called directly"
        );
        println!(
            "{:>9} {:>8} {:>9} | {:>10} {:>10} | {:>10} {:>10} | {:>10} {:>10}",
            "messages", "clients", "requests", "direct p50", "p99", "proxy p50", "p99", "added p50", "p99"
        );
        for messages in [100, 1500] {
            let body = conversation(messages);
            let total = ((if messages == 100 { 4_000.0 } else { 640.0 }) * scale) as usize;
            for clients in [1, 16, 64] {
                let per_client = (total / clients).max(5);
                let d = latencies(&direct, &body, clients, per_client).await;
                let p = latencies(&via, &body, clients, per_client).await;
                let (d50, d99, p50, p99) =
                    (percentile(&d, 0.5), percentile(&d, 0.99), percentile(&p, 0.5), percentile(&p, 0.99));
                let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
                let added =
                    |a: Duration, b: Duration| format!("{:.0} µs", (a.as_secs_f64() - b.as_secs_f64()) * 1e6);
                println!(
                    "{messages:>9} {clients:>8} {:>9} | {:>10} {:>10} | {:>10} {:>10} | {:>10} {:>10}",
                    p.len(),
                    us(d50),
                    us(d99),
                    us(p50),
                    us(p99),
                    added(p50, d50),
                    added(p99, d99)
                );
            }
        }
        // memory: many warm turns of 16 conversations
        let body = conversation(100);
        let _ = latencies(&via, &body, 16, 1_000).await;
        let before = rss_kib();
        let _ = latencies(&via, &body, 16, memory_requests / 16).await;
        let after = rss_kib();
        println!(
            "memory over {memory_requests} more requests (16 clients, 100 messages): RSS {} MiB -> {} MiB",
            before / 1024,
            after / 1024
        );
        proxy.stop().await.unwrap();
    });
}
