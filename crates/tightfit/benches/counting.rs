//! Counting benchmarks on the real transcripts of `../shared/data`.
//!
//! - `throughput/*`: tokens of every text of the corpus (contents, names, tool-call names and
//!   arguments), tightfit's o200k_base counter against tiktoken-rs in the same run.
//! - `long_history/*`: the 1M-token history of `extreme_long.jsonl` counted cold (every
//!   message tokenized), then again after one message is appended, through the per-message
//!   cache (hashes every message, tokenizes one) and through a running count (tokenizes one).
//!
//! Run: `cargo bench -p tightfit --bench counting`.

/// The allocator the command line and the Python module ship with (see the workspace
/// manifest), so that the figures are theirs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::Value;
use tightfit::format::{self, FormatHint};
use tightfit::message::{Message, Role};
use tightfit::tokens::{ChatCounter, CountCache, OpenAiEncoding, RunningCount, TokenCounter};

fn shared(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(relative)
}

/// Every string a counter sees in the corpus.
fn corpus_texts() -> Vec<String> {
    let mut texts = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(shared("data"))
        .expect("the shared corpus beside the repository")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            for message in record["messages"].as_array().unwrap() {
                for key in ["content", "name", "reasoning_content"] {
                    if let Some(s) = message[key].as_str() {
                        texts.push(s.to_string());
                    }
                }
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    texts.push(call["function"]["name"].as_str().unwrap().to_string());
                    texts.push(call["function"]["arguments"].as_str().unwrap().to_string());
                }
            }
        }
    }
    texts
}

fn throughput(c: &mut Criterion) {
    let texts = corpus_texts();
    let bytes: usize = texts.iter().map(String::len).sum();
    let reference = tiktoken_rs::o200k_base().unwrap();
    let mut group = c.benchmark_group("throughput");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("tightfit_o200k", |b| {
        b.iter(|| texts.iter().map(|t| OpenAiEncoding::O200kBase.count(t)).sum::<usize>())
    });
    group.bench_function("tiktoken_rs_o200k", |b| {
        b.iter(|| texts.iter().map(|t| reference.encode_ordinary(t).len()).sum::<usize>())
    });
    group.finish();
}

fn long_history(c: &mut Criterion) {
    let text = std::fs::read_to_string(shared("data/extreme_long.jsonl")).unwrap();
    let line = text.lines().find(|l| l.contains("\"concat/mini-swe-deepseek/1M\"")).expect("the 1M history");
    let messages = format::parse_str(line, FormatHint::Auto).unwrap().messages;
    let counter = ChatCounter::openai(OpenAiEncoding::O200kBase);
    let appended = Message::text(Role::User, "Please also run the full test suite and report the failures.");
    let mut grown = messages.clone();
    grown.push(appended.clone());

    let mut group = c.benchmark_group("long_history");
    group.sample_size(10);
    group.bench_function("cold", |b| {
        b.iter_batched(
            CountCache::new,
            |mut cache| cache.count(&counter, &messages, None).total,
            BatchSize::LargeInput,
        )
    });
    let mut cache = CountCache::new();
    cache.count(&counter, &messages, None);
    group.bench_function("appended_via_cache", |b| {
        b.iter_batched(
            || cache.clone(),
            |mut cache| cache.count(&counter, &grown, None).total,
            BatchSize::LargeInput,
        )
    });
    let mut running = RunningCount::new(counter.clone(), None);
    running.extend(&messages);
    group.bench_function("appended_via_running_count", |b| {
        b.iter(|| {
            running.push(&appended);
            let total = running.total();
            running.truncate(messages.len());
            total
        })
    });
    group.finish();
}

criterion_group!(benches, throughput, long_history);
criterion_main!(benches);
