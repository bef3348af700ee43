//! Where a warm proxy turn spends its time, phase by phase: the phases the proxy's fitting runs
//! for one request (read the body, reusing what the conversation's previous request read; fit
//! it by its session; write the body to forward by splicing), each timed on the same warm turn
//! repeated, for a 100-message and a 1,500-message agent conversation (the overhead
//! benchmark's); beside them, the whole reading and writing the proxy did before, for
//! reference. No HTTP: what is left of the benchmark's added latency is the second hop's.
//!
//! `cargo run --release -p tightfit-proxy --example fit_phases`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tightfit::format::{self, FormatHint};
use tightfit::models::Registry;
use tightfit::session::{Policy, Session, Settings};
use tightfit::store::MemoryStore;
use tightfit::{Format, Message, Target};

#[path = "../benches/corpus/mod.rs"]
mod corpus;

// the allocator of the shipped `tightfit` binary, which `tightfit serve` runs in
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        let body = corpus::conversation(messages);
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
        // the previous turn's body and its reading, as the proxy holds them
        let before = corpus::conversation(messages - 1);
        let mut read_before = format::read_request(&before, Format::OpenAi, None).unwrap();
        let before_listed = read_before.take_listed();
        let before_layout = read_before.layout.unwrap();
        let names = [
            "utf-8",
            "whole: read_json",
            "whole: parse_value",
            "whole: request_to_string",
            "whole: fit_keyed (fresh messages)",
            "read_request, alone",
            "read_request, same body again",
            "read_request, one message more",
            "fit_keyed (messages reused)",
            "splice_request",
            "fit_fingerprinted (as the proxy)",
        ];
        let mut times = vec![Vec::with_capacity(turns); names.len()];
        let mut timed = |phase: usize, t: Instant| times[phase].push(t.elapsed());
        let mut last = None;
        let mut kept: Vec<u128> = Vec::new();
        let mut spliced_len = 0;
        for _ in 0..turns {
            let t = Instant::now();
            let text = std::str::from_utf8(body.as_bytes()).unwrap();
            timed(0, t);
            // the reading and writing the proxy did before splicing, for reference
            let t = Instant::now();
            let value = format::read_json(text).unwrap();
            timed(1, t);
            let t = Instant::now();
            let whole = format::parse_value(value, FormatHint::Exactly(Format::OpenAi)).unwrap();
            timed(2, t);
            let t = Instant::now();
            let fitted = session.fit_keyed(Some(key), &whole).unwrap();
            timed(4, t);
            let t = Instant::now();
            black_box(format::request_to_string(&fitted.messages, &whole));
            timed(3, t);
            drop(fitted);
            let t = Instant::now();
            black_box(format::read_request(text, Format::OpenAi, None).unwrap());
            timed(5, t);
            let listed = before_listed.clone();
            let previous = format::Previous { text: &before, layout: &before_layout, listed };
            let t = Instant::now();
            let grown = format::read_request(text, Format::OpenAi, Some(previous)).unwrap();
            timed(7, t);
            assert_eq!(grown.reused, messages - 1);
            drop(grown);
            // the same body again, as the overhead benchmark sends it
            let t = Instant::now();
            let previous =
                last.as_mut().map(|(layout, listed): &mut (format::RequestLayout, Vec<Message>)| {
                    format::Previous { text, layout, listed: std::mem::take(listed) }
                });
            let mut read = format::read_request(text, Format::OpenAi, previous).unwrap();
            timed(6, t);
            let conversation = &read.conversation;
            let t = Instant::now();
            let fitted = session.fit_keyed(Some(key), conversation).unwrap();
            timed(8, t);
            drop(fitted);
            // as the proxy fits: the fingerprints of the messages taken from the previous
            // reading kept from it (here every message: the same body again)
            if kept.len() != conversation.messages.len() {
                kept = conversation.messages.iter().map(tightfit::tokens::message_fingerprint).collect();
            }
            let t = Instant::now();
            let fitted = session.fit_fingerprinted(Some(key), conversation, kept.clone()).unwrap();
            timed(10, t);
            let info = fitted.report.session.as_ref().unwrap();
            assert!(!info.compacted, "a warm turn compacted (epoch {})", info.epoch);
            let t = Instant::now();
            let layout = read.layout.as_ref().unwrap();
            let spliced = format::splice_request(text, layout, &fitted.messages, conversation);
            timed(9, t);
            spliced_len = black_box(spliced).expect("a spliced body").len();
            drop(fitted);
            let listed = read.take_listed();
            last = Some((read.layout.take().unwrap(), listed));
        }
        println!(
            "{messages} messages ({:.2} MB), warm turn, median of {turns} (spliced body {spliced_len} bytes):",
            body.len() as f64 / 1e6
        );
        for (name, times) in names.iter().zip(&mut times) {
            println!("  {name:<36} {:>7.3} ms", median(times).as_secs_f64() * 1e3);
        }
    }
}
