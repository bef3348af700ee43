//! The latency the proxy adds, against calling the same fake upstream directly in the same
//! run, at 1, 16 and 64 concurrent clients, for a 100-message and a 1,500-message agent
//! conversation (each client its own conversation, `x-tightfit-session`; every request after
//! the first is a warm session turn, the same body again; each row's first 64 of them are not
//! timed). Beside each fitted row, the same requests through the proxy with
//! `x-tightfit-policy: off` (forwarded untouched): the cost of the second hop alone, the floor
//! no fitting can go under. Each client sends its direct, off and fitted requests in turn, so
//! that the machine's stalls fall on all three alike. Then one client on an SQLite file (the
//! proxy's default store), a real Redis and a real PostgreSQL store (each warm turn checks the
//! version of the conversation's checkpoint in the store), and memory over many requests.
//!
//! `cargo bench -p tightfit-proxy --bench overhead` (loopback only; bounded: set
//! `TIGHTFIT_BENCH_REQUESTS` to scale the request counts, `TIGHTFIT_BENCH_MEMORY` for the
//! memory run's count, default 100,000). The shared-store rows need `redis-server` and
//! PostgreSQL (Debian's `redis-server` and `postgresql` packages): without them the bench
//! stops with an error naming the missing one, it skips nothing.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use tokio::net::TcpListener;

mod corpus;

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

/// How a request goes.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// To the fake upstream itself.
    Direct,
    /// Through the proxy, `x-tightfit-policy: off`.
    Off,
    /// Through the proxy, fitted by its session.
    Fitted,
}

/// Requests of each row sent, untimed, after every conversation's first turn (spread over its
/// clients).
const WARM_UP_REQUESTS: usize = 64;

/// Latencies of `per_client` requests by each of `clients` concurrent clients, each its own
/// conversation, for each of `ways` (URL and way), sorted, one list per way. Each client sends
/// its requests of the ways in turn (direct, off, fitted, direct, ...), so that the machine's
/// own stalls (on 2 shared cores, a time slice now and then, to calls made directly too) fall
/// on every way alike instead of on whichever was measured while they happened. Every
/// conversation's first turn (its compaction) is sent, and answered, before any is timed: the
/// figures are warm turns, not warm turns queued behind other conversations' compactions.
async fn latencies(
    ways: &[(String, Way)],
    body: &str,
    clients: usize,
    per_client: usize,
) -> Vec<Vec<Duration>> {
    let client = reqwest::Client::builder().pool_max_idle_per_host(256).build().unwrap();
    let body = Arc::new(body.to_string());
    let ways = Arc::new(ways.to_vec());
    let first_turns = Arc::new(tokio::sync::Barrier::new(clients));
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (client, body, ways) = (client.clone(), Arc::clone(&body), Arc::clone(&ways));
        let first_turns = Arc::clone(&first_turns);
        tasks.push(tokio::spawn(async move {
            let session = format!("bench-{}-{clients}-{c}", body.len());
            let send = |(url, way): &(String, Way)| {
                let request = client.post(url).header("x-tightfit-session", &session);
                let request = match way {
                    Way::Off => request.header("x-tightfit-policy", "off"),
                    Way::Direct | Way::Fitted => request,
                };
                request.body(body.as_str().to_string()).send()
            };
            for way in ways.iter() {
                let first = send(way).await.unwrap();
                assert_eq!(first.status(), 200, "{:?}", first.text().await);
            }
            first_turns.wait().await;
            // a fresh proxy's first turns are slow (among the first 40 warm turns of the
            // 1.2 MB body, eight took 15 to 20 ms: its heap and blocking pool growing); a
            // long-running proxy is past them, so they are not timed
            for _ in 0..WARM_UP_REQUESTS.div_ceil(clients) {
                for way in ways.iter() {
                    let response = send(way).await.unwrap();
                    let _ = response.bytes().await.unwrap();
                }
            }
            let mut times = vec![Vec::with_capacity(per_client); ways.len()];
            for _ in 0..per_client {
                for (way, times) in ways.iter().zip(&mut times) {
                    let start = Instant::now();
                    let response = send(way).await.unwrap();
                    assert_eq!(response.status(), 200);
                    let _ = response.bytes().await.unwrap();
                    times.push(start.elapsed());
                }
            }
            times
        }));
    }
    let mut all = vec![Vec::new(); ways.len()];
    for task in tasks {
        for (all, times) in all.iter_mut().zip(task.await.unwrap()) {
            all.extend(times);
        }
    }
    for times in &mut all {
        times.sort();
    }
    all
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn ms(d: f64) -> String {
    format!("{:.2} ms", d * 1e3)
}

/// The p50 and p99 of `way` minus those of `direct`.
fn added(way: &[Duration], direct: &[Duration]) -> [String; 2] {
    [0.5, 0.99].map(|p| ms(percentile(way, p).as_secs_f64() - percentile(direct, p).as_secs_f64()))
}

/// Measures direct, off and fitted requests of `body` at `clients` clients and prints a row.
async fn row(
    store: &str,
    upstream: &str,
    proxy: &str,
    messages: usize,
    body: &str,
    clients: usize,
    total: usize,
) {
    let per_client = (total / clients).max(5);
    let ways = [
        (upstream.to_string(), Way::Direct),
        (proxy.to_string(), Way::Off),
        (proxy.to_string(), Way::Fitted),
    ];
    let [direct, off, fitted]: [Vec<Duration>; 3] =
        latencies(&ways, body, clients, per_client).await.try_into().expect("one list per way");
    let [d50, d99] = [0.5, 0.99].map(|p| ms(percentile(&direct, p).as_secs_f64()));
    let [o50, o99] = added(&off, &direct);
    let [f50, f99] = added(&fitted, &direct);
    println!(
        "{store:>8} {messages:>8} {clients:>7} {:>8} | {d50:>9} {d99:>9} | {o50:>9} {o99:>9} | {f50:>9} {f99:>9}",
        fitted.len(),
    );
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

/// Starts a proxy in front of `upstream` on `store`; returns it and its chat URL.
async fn proxy_on(store: &str, upstream: &str) -> (tightfit_proxy::Running, String) {
    let mut config =
        tightfit_proxy::Config { listen: "127.0.0.1:0".into(), store: store.into(), ..Default::default() };
    config.upstream.openai = Some(upstream.to_string());
    config.log.level = "warn".into();
    let proxy = tightfit_proxy::start(config).await.unwrap_or_else(|e| panic!("the proxy on {store}: {e}"));
    let url = format!("http://{}/v1/chat/completions", proxy.addr);
    (proxy, url)
}

/// Starts a shared-store server, or ends the bench with an error saying what is missing.
fn server<T>(what: &str, start: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(AssertUnwindSafe(start)).unwrap_or_else(|_| {
        eprintln!(
            "error: the shared-store rows need a real {what} server (Debian's `redis-server` and \
             `postgresql` packages); see the message above"
        );
        std::process::exit(1)
    })
}

fn main() {
    let scale: f64 =
        std::env::var("TIGHTFIT_BENCH_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0);
    let memory_requests: usize =
        std::env::var("TIGHTFIT_BENCH_MEMORY").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    // started first: a missing server ends the bench before anything is measured
    let redis = server("Redis", tightfit_test_servers::Redis::start);
    let postgres = server("PostgreSQL", tightfit_test_servers::Postgres::start);
    // the runtime `tightfit serve` runs on (its blocking pool bounded as configured)
    let runtime = tightfit_proxy::runtime(&tightfit_proxy::Config::default().limits).unwrap();
    runtime.block_on(async {
        let upstream = fake_upstream().await;
        let direct = format!("{upstream}/v1/chat/completions");
        let bodies: Vec<(usize, String)> = [100, 1500].map(|n| (n, corpus::conversation(n))).into();
        let total = |messages: usize| ((if messages == 100 { 4_000.0 } else { 640.0 }) * scale) as usize;
        for (messages, body) in &bodies {
            println!("{messages} messages: {:.2} MB of JSON", body.len() as f64 / 1e6);
        }
        println!("latency added by the proxy (warm session turns) over the fake upstream called directly");
        println!(
            "{:>8} {:>8} {:>7} {:>8} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9}",
            "store",
            "messages",
            "clients",
            "requests",
            "direct50",
            "direct99",
            "off +p50",
            "off +p99",
            "fit +p50",
            "fit +p99"
        );
        for (messages, body) in &bodies {
            let (proxy, via) = proxy_on("memory", &upstream).await;
            for clients in [1, 16, 64] {
                row("memory", &direct, &via, *messages, body, clients, total(*messages)).await;
            }
            proxy.stop().await.unwrap();
        }
        // the default store: an SQLite file, read back every turn like a server; and memory
        // again beside them, the same rows at the same point of the run (a process that ran
        // the 64-client rows before is not the fresh one of the first rows)
        let directory = tempfile::tempdir().unwrap();
        let sqlite = format!("sqlite:{}", directory.path().join("proxy.db").display());
        let stores = [
            ("memory", "memory".to_string()),
            ("sqlite", sqlite),
            ("redis", redis.url()),
            ("postgres", postgres.url()),
        ];
        for (name, url) in stores {
            let (shared, via_shared) = proxy_on(&url, &upstream).await;
            for (messages, body) in &bodies {
                row(name, &direct, &via_shared, *messages, body, 1, total(*messages) / 2).await;
            }
            shared.stop().await.unwrap();
        }
        // memory: many warm turns of 16 conversations
        let (proxy, via) = proxy_on("memory", &upstream).await;
        let body = &bodies[0].1;
        let fitted = [(via.clone(), Way::Fitted)];
        let _ = latencies(&fitted, body, 16, 1_000).await;
        let before = rss_kib();
        let _ = latencies(&fitted, body, 16, memory_requests / 16).await;
        let after = rss_kib();
        println!(
            "memory over {memory_requests} more requests (16 clients, 100 messages): RSS {} MiB -> {} MiB",
            before / 1024,
            after / 1024
        );
        proxy.stop().await.unwrap();
    });
}
