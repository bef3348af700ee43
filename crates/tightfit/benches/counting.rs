//! Counting benchmarks on the real transcripts of `../shared/data`.
//!
//! - `throughput/*`: tokens of every text of the corpus (contents, names, tool-call names and
//!   arguments), tightfit's o200k_base counter against tiktoken-rs in the same run.
//! - `long_history/*`: the 1M-token history of `extreme_long.jsonl` counted cold (every
//!   message tokenized), then again after one message is appended, through the per-message
//!   cache (hashes every message, tokenizes one) and through a running count (tokenizes one).
//!
//! - `open_models/*`: the open families (Qwen, DeepSeek V3, Mistral tekken; Llama 3 when its
//!   vocabulary is found, see `tokens::llama3`) on the first 4 MB of those texts, against
//!   their reference implementations in the same run: tiktoken (tiktoken-rs `CoreBPE`, built
//!   from the same token list and the family's pattern: what mistral-common, `llama_models`
//!   and Alibaba's `dashscope` count with) and, with `--features hf` and
//!   `TIGHTFIT_BENCH_HF_DIR` naming a folder of `tokenizer.json` files (`qwen.json`,
//!   `deepseek_v3.json`, `mistral_tekken.json`, `llama3.json`), the HuggingFace `tokenizers`
//!   crate (the reference of DeepSeek, whose pre-tokenizer tiktoken cannot express).
//!
//! Run: `cargo bench -p tightfit --bench counting` (add `--features hf` and
//! `TIGHTFIT_BENCH_HF_DIR=…` for the HuggingFace comparisons).

/// The allocator the command line and the Python module ship with (see the workspace
/// manifest), so that the figures are theirs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::Value;
use tightfit::format::{self, FormatHint};
use tightfit::message::{Message, Role};
use tightfit::tokens::{
    ChatCounter, CountCache, OpenAiEncoding, OpenFamily, OpenTokenizer, RunningCount, TokenCounter,
};

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

/// The first `bytes` bytes' worth of the corpus texts.
fn corpus_prefix(bytes: usize) -> Vec<String> {
    let mut total = 0;
    corpus_texts()
        .into_iter()
        .take_while(|t| {
            total += t.len();
            total <= bytes
        })
        .collect()
}

/// An embedded token list (`vocab/*.tokens.gz`: a length byte and the bytes of each token).
fn embedded_tokens(name: &str) -> Vec<Vec<u8>> {
    use std::io::Read;
    let gz = std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vocab").join(name)).unwrap();
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut raw).unwrap();
    let (mut tokens, mut rest) = (Vec::new(), raw.as_slice());
    while let Some((&len, tail)) = rest.split_first() {
        tokens.push(tail[..len as usize].to_vec());
        rest = &tail[len as usize..];
    }
    tokens
}

/// tiktoken over a token list with a family's pattern (the families' own reference code is
/// tiktoken with these: mistral-common's tekken, Alibaba's qwen.tiktoken, Meta's llama3).
fn tiktoken_reference(tokens: Vec<Vec<u8>>, pattern: &str) -> tiktoken_rs::CoreBPE {
    let ranks = tokens.into_iter().enumerate().map(|(rank, token)| (token, rank as u32)).collect();
    tiktoken_rs::CoreBPE::new(ranks, Default::default(), pattern).unwrap()
}

const QWEN_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const TEKKEN_PATTERN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn open_models(c: &mut Criterion) {
    let texts = corpus_prefix(4 << 20);
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut families: Vec<(&str, std::sync::Arc<OpenTokenizer>)> = vec![
        ("qwen", OpenTokenizer::embedded(OpenFamily::Qwen).unwrap()),
        ("deepseek_v3", OpenTokenizer::embedded(OpenFamily::DeepSeekV3).unwrap()),
        ("mistral_tekken", OpenTokenizer::embedded(OpenFamily::MistralTekken).unwrap()),
    ];
    match tightfit::tokens::llama3() {
        Ok(llama) => families.push(("llama3", llama)),
        Err(reason) => eprintln!("open_models: no llama3 ({reason})"),
    }
    let mut references: Vec<(&str, tiktoken_rs::CoreBPE)> = vec![
        ("qwen", tiktoken_reference(embedded_tokens("qwen.tokens.gz"), QWEN_PATTERN)),
        ("mistral_tekken", tiktoken_reference(embedded_tokens("tekken.tokens.gz"), TEKKEN_PATTERN)),
    ];
    let llama_file = std::env::var_os("TIGHTFIT_LLAMA3_TOKENIZER")
        .map(PathBuf::from)
        .or_else(|| tightfit::tokens::llama3_candidates().into_iter().next());
    if let Some(path) = llama_file.filter(|_| families.iter().any(|(name, _)| *name == "llama3")) {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if !text.trim_start().starts_with('{') {
            let tokens = text
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(|b| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b).unwrap())
                .collect();
            references.push(("llama3", tiktoken_reference(tokens, LLAMA3_PATTERN)));
        }
    }
    // the same counts first: a speed comparison of different answers would mean nothing
    for (name, reference) in &references {
        let (_, ours) = families.iter().find(|(n, _)| n == name).expect("a family per reference");
        let expected: usize = texts.iter().map(|t| reference.encode_ordinary(t).len()).sum();
        assert_eq!(texts.iter().map(|t| ours.count(t)).sum::<usize>(), expected, "{name}");
    }
    let mut group = c.benchmark_group("open_models");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    for (name, counter) in &families {
        group.bench_function(format!("tightfit_{name}"), |b| {
            b.iter(|| texts.iter().map(|t| counter.count(t)).sum::<usize>())
        });
    }
    for (name, reference) in &references {
        group.bench_function(format!("tiktoken_rs_{name}"), |b| {
            b.iter(|| texts.iter().map(|t| reference.encode_ordinary(t).len()).sum::<usize>())
        });
    }
    #[cfg(feature = "hf")]
    if let Some(dir) = std::env::var_os("TIGHTFIT_BENCH_HF_DIR").map(PathBuf::from) {
        for (name, _) in &families {
            let Ok(reference) = tokenizers::Tokenizer::from_file(dir.join(format!("{name}.json"))) else {
                eprintln!("open_models: no {name}.json in {}", dir.display());
                continue;
            };
            group.bench_function(format!("hf_tokenizers_{name}"), |b| {
                b.iter(|| {
                    texts
                        .iter()
                        .map(|t| reference.encode_fast(t.as_str(), false).unwrap().len())
                        .sum::<usize>()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, throughput, long_history, open_models);
criterion_main!(benches);
