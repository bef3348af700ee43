//! Fitting benchmarks on the real transcripts of `../shared/data`, with the default ladder.
//!
//! - `extreme/*`: each `extreme_long.jsonl` history (251k–1M tokens) fitted to 32k and 128k:
//!   `cold` parses the JSON, counts every message and fits; `warm` fits with the counts of an
//!   earlier call cached (the agent-loop case). The cold run is the reference of the warm one.
//! - `scaling/*`: histories of about 1k to 100k messages (real tau-bench turns repeated, call
//!   ids made unique, ending on a whole step as a history about to be sent does) fitted to 32k, cold and warm, and read once (every message hashed, the
//!   reference): the cost should grow linearly, and warm / read stay flat. The sizes between
//!   show where the cost per message steps up: where the history and what a fit makes of it
//!   outgrow the processor's caches (reading once steps up there too). `warm_in_turn` and
//!   `read_in_turn` take 100,000 messages' worth of histories of the size in turn, so that
//!   each is no longer in the caches when its turn comes (a server of many conversations, an
//!   agent loop with a model call between two fits): small histories lose the advantage of
//!   being fitted back to back from the caches.
//! - `agent_loop/*`: 500 turns of an agent loop, each appending one message and fitting again
//!   to 32k, with one `Fitter` (counts cached) against a fresh one each turn (the reference).
//!
//! - `session/*`: a warm session turn (one message appended to a 1,500-message history the
//!   session has seen, fitted to 32k by a `Session` with the `cache` policy); then 100 turns
//!   in a row, compactions included where they fall, against stateless warm `fit` of the same
//!   turns (the reference).
//!
//! - `parallel_calls/*`: one assistant message with 80,000 parallel tool calls and their
//!   80,000 results (OpenAI: a tool message each; Anthropic: one user message of
//!   `tool_result` blocks), validated and fitted to 32k: every call/result lookup must be
//!   O(1) for this to stay linear.
//!
//! Run: `cargo bench -p tightfit --bench fit`.

/// The allocator the command line and the Python module ship with (see the workspace
/// manifest), so that the figures are theirs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::{json, Value};
use tightfit::fit::{Fitter, Target};
use tightfit::format::{self, Conversation, Format, FormatHint};
use tightfit::session::{MemoryStore, Policy, Session};
use tightfit::tokens::{message_fingerprint, ChatCounter, OpenAiEncoding};

#[path = "common/histories.rs"]
mod histories;
use histories::{extreme_lines, repeated, repeated_whole};

fn target(budget: usize) -> Target {
    Target::budget(budget, ChatCounter::openai(OpenAiEncoding::O200kBase))
}

fn extreme(c: &mut Criterion) {
    let mut group = c.benchmark_group("extreme");
    group.sample_size(10).measurement_time(Duration::from_secs(4));
    for (id, line) in extreme_lines() {
        let name = id.replace('/', "-");
        for (label, budget) in [("32k", 32_768), ("128k", 131_072)] {
            let target = target(budget);
            group.bench_function(format!("{name}/{label}/cold"), |b| {
                b.iter(|| {
                    let conversation = format::parse_str(&line, FormatHint::Auto).unwrap();
                    Fitter::new().fit(&conversation, &target, None).unwrap().report.compressed_token_count
                })
            });
            let conversation = format::parse_str(&line, FormatHint::Auto).unwrap();
            let mut fitter = Fitter::new();
            fitter.fit(&conversation, &target, None).unwrap();
            group.bench_function(format!("{name}/{label}/warm"), |b| {
                b.iter(|| fitter.fit(&conversation, &target, None).unwrap().report.compressed_token_count)
            });
        }
    }
    group.finish();
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10).measurement_time(Duration::from_secs(4));
    let target = target(32_768);
    for n in [1_000, 5_000, 10_000, 20_000, 50_000, 100_000] {
        let conversation = repeated_whole(n);
        group.bench_function(format!("{n}_messages/cold"), |b| {
            b.iter(|| Fitter::new().fit(&conversation, &target, None).unwrap().report.compressed_token_count)
        });
        let mut fitter = Fitter::new();
        fitter.fit(&conversation, &target, None).unwrap();
        group.bench_function(format!("{n}_messages/warm"), |b| {
            b.iter(|| fitter.fit(&conversation, &target, None).unwrap().report.compressed_token_count)
        });
        // the reference: reading the history once (hashing every message, the least a warm
        // fit must do to know its input), in the same run; warm / read says how many reads of
        // its input a warm fit costs, which the processor's caches do not change
        group.bench_function(format!("{n}_messages/read"), |b| {
            b.iter(|| conversation.messages.iter().fold(0u128, |x, m| x ^ message_fingerprint(m)))
        });
        // the same fits, but of 100,000 messages' worth of conversations of this size taken in
        // turn, each by its own warm fitter: what a server of many conversations (or an agent
        // loop, whose model call runs between two fits) sees, a history no longer in the
        // processor's caches; against reading them once in the same turn (the reference)
        let copies = (100_000 / n).max(1);
        let many: Vec<Conversation> = (0..copies).map(|_| conversation.clone()).collect();
        let mut fitters: Vec<Fitter> = many
            .iter()
            .map(|c| {
                let mut fitter = Fitter::new();
                fitter.fit(c, &target, None).unwrap();
                fitter
            })
            .collect();
        let mut next = 0;
        group.bench_function(format!("{n}_messages/warm_in_turn"), |b| {
            b.iter(|| {
                next = (next + 1) % copies;
                fitters[next].fit(&many[next], &target, None).unwrap().report.compressed_token_count
            })
        });
        group.bench_function(format!("{n}_messages/read_in_turn"), |b| {
            b.iter(|| {
                next = (next + 1) % copies;
                many[next].messages.iter().fold(0u128, |x, m| x ^ message_fingerprint(m))
            })
        });
    }
    group.finish();
}

fn agent_loop(c: &mut Criterion) {
    let mut group = c.benchmark_group("agent_loop");
    group.sample_size(10).measurement_time(Duration::from_secs(6));
    let full = repeated(3_000);
    let start = full.messages.len() - 500;
    let target = target(32_768);
    let turns = |fresh: bool| {
        let mut fitter = Fitter::new();
        let mut total = 0;
        for end in start..full.messages.len() {
            let conversation = Conversation { messages: full.messages[..end].to_vec(), ..full.clone() };
            if fresh {
                fitter = Fitter::new();
            }
            // a turn that stops between a call and its result is repaired, then fitted
            total += fitter.fit(&conversation, &target, None).map_or(0, |f| f.report.compressed_token_count);
        }
        total
    };
    group.bench_function("500_turns/one_fitter", |b| {
        b.iter_batched(|| (), |()| turns(false), BatchSize::PerIteration)
    });
    group.bench_function("500_turns/fresh_fitter_each_turn", |b| {
        b.iter_batched(|| (), |()| turns(true), BatchSize::PerIteration)
    });
    group.finish();
}

fn session(c: &mut Criterion) {
    let mut group = c.benchmark_group("session");
    group.sample_size(10).measurement_time(Duration::from_secs(8));
    const START: usize = 1_500;
    const TURNS: usize = 100;
    let full = repeated(START + TURNS);
    let target = target(32_768);
    let turns: Vec<Conversation> = (START + 1..=START + TURNS)
        .map(|end| Conversation { messages: full.messages[..end].to_vec(), ..full.clone() })
        .collect();
    let first = Conversation { messages: full.messages[..START].to_vec(), ..full.clone() };
    // a warm turn: the session has fitted the 1,501 messages before and fits them again (the
    // steady state of an agent loop's turn, less tokenizing the one new message); checked to
    // be a replay of the epoch's decision, not a compaction
    let warm = Session::new(target.clone(), Policy::cache(), Arc::new(MemoryStore::new()));
    let _ = warm.fit(&first);
    let _ = warm.fit(&turns[0]);
    let replayed = warm.fit(&turns[0]).expect("the turn fits");
    assert!(!replayed.report.session.as_ref().is_some_and(|s| s.compacted), "a warm turn replays");
    drop(replayed);
    group.bench_function(format!("{START}_messages/warm_turn"), |b| {
        b.iter(|| warm.fit(&turns[0]).map_or(0, |f| f.report.compressed_token_count))
    });
    // one iteration = TURNS turns, compactions included where they fall; the figure per turn
    // is the time over TURNS
    group.bench_function(format!("{START}_messages/{TURNS}_turns/session"), |b| {
        b.iter_batched_ref(
            || {
                let session = Session::new(target.clone(), Policy::cache(), Arc::new(MemoryStore::new()));
                let _ = session.fit(&first);
                session
            },
            |session| {
                turns
                    .iter()
                    .map(|t| session.fit(t).map_or(0, |f| f.report.compressed_token_count))
                    .sum::<usize>()
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function(format!("{START}_messages/{TURNS}_turns/stateless_fit"), |b| {
        b.iter_batched_ref(
            || {
                let mut fitter = Fitter::new();
                let _ = fitter.fit(&first, &target, None);
                fitter
            },
            |fitter| {
                turns
                    .iter()
                    .map(|t| fitter.fit(t, &target, None).map_or(0, |f| f.report.compressed_token_count))
                    .sum::<usize>()
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// A system prompt, a user turn, one assistant message making `n` parallel calls, their `n`
/// results, and a user turn after them, in `format`'s wire shape.
fn parallel_calls(n: usize, format: Format) -> Conversation {
    let result = |i: usize| format!("{{\"id\": {i}, \"status\": \"ok\", \"rows\": [{}]}}", i % 97);
    let messages = match format {
        Format::OpenAi => {
            let calls: Vec<Value> = (0..n)
                .map(|i| {
                    json!({"id": format!("call_{i}"), "type": "function",
                    "function": {"name": "lookup", "arguments": format!("{{\"key\": {i}}}")}})
                })
                .collect();
            let mut messages = vec![
                json!({"role": "system", "content": "You look things up."}),
                json!({"role": "user", "content": "Look up every key."}),
                json!({"role": "assistant", "content": null, "tool_calls": calls}),
            ];
            messages.extend(
                (0..n).map(
                    |i| json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": result(i)}),
                ),
            );
            messages.push(json!({"role": "user", "content": "Summarize what you found."}));
            json!(messages)
        }
        _ => {
            let uses: Vec<Value> = (0..n)
                .map(|i| json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": "lookup", "input": {"key": i}}))
                .collect();
            let results: Vec<Value> = (0..n)
                .map(|i| json!({"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": result(i)}))
                .collect();
            json!({"system": "You look things up.", "messages": [
                {"role": "user", "content": "Look up every key."},
                {"role": "assistant", "content": uses},
                {"role": "user", "content": results},
                {"role": "assistant", "content": "I have them all."},
                {"role": "user", "content": "Summarize what you found."},
            ]})
        }
    };
    format::parse_value(messages, FormatHint::Auto).unwrap()
}

fn parallel(c: &mut Criterion) {
    let mut group = c.benchmark_group("parallel_calls");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    let target = target(32_768);
    for format in [Format::OpenAi, Format::Anthropic] {
        let conversation = parallel_calls(80_000, format);
        let name = format.as_str();
        group.bench_function(format!("80000/{name}/validate"), |b| {
            b.iter(|| tightfit::validate(&conversation.messages, format).len())
        });
        group.bench_function(format!("80000/{name}/fit"), |b| {
            b.iter(|| Fitter::new().fit(&conversation, &target, None).unwrap().report.compressed_token_count)
        });
    }
    group.finish();
}

criterion_group!(benches, extreme, scaling, agent_loop, session, parallel);
criterion_main!(benches);
