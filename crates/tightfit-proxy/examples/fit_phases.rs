//! Where a warm proxy turn spends its time, phase by phase: the phases the proxy's fitting runs
//! for one request (read the JSON, read it as a conversation, fit it by its session, write the
//! body to forward), each timed on the same warm turn repeated, for a 100-message and a
//! 1,500-message agent conversation (the overhead benchmark's). No HTTP: what is left of the
//! benchmark's added latency is the second hop's.
//!
//! `cargo run --release -p tightfit-proxy --example fit_phases`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tightfit::format::{self, FormatHint};
use tightfit::models::Registry;
use tightfit::session::{Policy, Session, Settings};
use tightfit::store::MemoryStore;
use tightfit::{Format, Target};

// the allocator of the shipped `tightfit` binary, which `tightfit serve` runs in
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn conversation(messages: usize) -> String {
    let path = format!("{}/../../../shared/data/extreme_long.jsonl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let record: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["id"] == "concat/mini-swe-deepseek/1M")
        .expect("the mini-swe concatenation of 1M tokens");
    let all = record["messages"].as_array().unwrap();
    json!({"model": "gpt-4o", "max_tokens": 1024, "messages": &all[..messages]}).to_string()
}

/// The median of `times`.
fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    // `TIGHTFIT_PHASE_TURNS`: more turns, for a profiler (the start-up builds the vocabulary)
    let turns: usize = std::env::var("TIGHTFIT_PHASE_TURNS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let model = Registry::embedded().lookup("gpt-4o").unwrap();
    for messages in [100, 1500] {
        let body = conversation(messages);
        let session = Session::new(
            Target::for_model(model, Some(1024)).with_provider(Format::OpenAi),
            Policy::cache(),
            Arc::new(MemoryStore::new()),
        )
        .with_settings(Settings::default())
        .unwrap();
        let key = "bench";
        // the first turn compacts; the timed ones replay its decision
        let first = format::parse_str(&body, FormatHint::Exactly(Format::OpenAi)).unwrap();
        session.fit_keyed(Some(key), &first).unwrap();
        let names = [
            "utf-8",
            "read_json",
            "parse_value",
            "fit_keyed",
            "request_to_string",
            "layout",
            "splice_request",
        ];
        let mut times = vec![Vec::with_capacity(turns); names.len()];
        let mut spliced_len = 0;
        for _ in 0..turns {
            let t = Instant::now();
            let text = std::str::from_utf8(body.as_bytes()).unwrap();
            times[0].push(t.elapsed());
            let t = Instant::now();
            let value = format::read_json(text).unwrap();
            times[1].push(t.elapsed());
            let t = Instant::now();
            let conversation = format::parse_value(value, FormatHint::Exactly(Format::OpenAi)).unwrap();
            times[2].push(t.elapsed());
            let t = Instant::now();
            let fitted = session.fit_keyed(Some(key), &conversation).unwrap();
            times[3].push(t.elapsed());
            let info = fitted.report.session.as_ref().unwrap();
            assert!(!info.compacted, "a warm turn compacted (epoch {})", info.epoch);
            let t = Instant::now();
            black_box(format::request_to_string(&fitted.messages, &conversation));
            times[4].push(t.elapsed());
            let t = Instant::now();
            let layout = format::RequestLayout::find(text, Format::OpenAi).unwrap();
            times[5].push(t.elapsed());
            let t = Instant::now();
            let spliced = format::splice_request(text, &layout, &fitted.messages, &conversation);
            times[6].push(t.elapsed());
            spliced_len = black_box(spliced).expect("a spliced body").len();
            black_box(fitted);
        }
        println!(
            "{messages} messages ({:.2} MB), warm turn, median of {turns} (spliced body {spliced_len} bytes):",
            body.len() as f64 / 1e6
        );
        for (name, times) in names.iter().zip(&mut times) {
            println!("  {name:<18} {:>9.3} ms", median(times).as_secs_f64() * 1e3);
        }
    }
}
