//! Token accounting: exact against tiktoken on the real transcripts, the framing formula
//! against the corpus figures, images, tools, estimates, and caching.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tightfit::format::{self, FormatHint};
use tightfit::message::{Message, Role};
use tightfit::tokens::{
    Calibrated, ChatCounter, CountCache, Estimate, Framing, OpenAiEncoding, RunningCount, TokenCounter,
};

use crate::{data_files, lines, shared};

/// Every string a counter sees in a conversation record: contents, names, tool-call names
/// and arguments, reasoning.
fn texts(record: &Value, out: &mut Vec<String>) {
    for message in record["messages"].as_array().unwrap() {
        for key in ["content", "name", "reasoning_content", "role"] {
            if let Some(s) = message[key].as_str() {
                out.push(s.to_string());
            }
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            out.push(call["function"]["name"].as_str().unwrap().to_string());
            out.push(call["function"]["arguments"].as_str().unwrap().to_string());
        }
    }
}

#[test]
fn counts_equal_tiktoken_on_every_text_of_the_corpus() {
    let reference_o200k = tiktoken_rs::o200k_base().unwrap();
    let reference_cl100k = tiktoken_rs::cl100k_base().unwrap();
    let mut compared = 0usize;
    for file in data_files() {
        let mut all = Vec::new();
        for line in lines(&file) {
            texts(&serde_json::from_str(&line).unwrap(), &mut all);
        }
        for text in &all {
            for (ours, reference) in [
                (OpenAiEncoding::O200kBase, &reference_o200k),
                (OpenAiEncoding::Cl100kBase, &reference_cl100k),
            ] {
                let expected = reference.encode_ordinary(text).len();
                assert_eq!(ours.count(text), expected, "{} differs on {:?}", ours.name(), truncate(text));
            }
            compared += 1;
        }
    }
    assert!(compared > 100_000, "only {compared} texts compared");
}

#[test]
fn counting_till_a_limit_agrees_with_counting_everything() {
    let mut all = Vec::new();
    for file in data_files().into_iter().filter(|f| !f.to_string_lossy().contains("extreme")) {
        for line in lines(&file).into_iter().take(40) {
            texts(&serde_json::from_str(&line).unwrap(), &mut all);
        }
    }
    all.push("A".repeat(5_000)); // one piece far longer than the piece cache takes
    all.push(" ".repeat(3_000) + "x");
    for encoding in [OpenAiEncoding::O200kBase, OpenAiEncoding::Cl100kBase] {
        for text in &all {
            let n = encoding.count(text);
            for limit in [0, 1, 7, 64, n.saturating_sub(1), n, n + 1] {
                let expected = (n <= limit).then_some(n);
                // `_again` remembers: its second answer comes from the cache
                let answers = [
                    ("count_till_limit", encoding.count_till_limit(text, limit)),
                    ("count_till_limit_again", encoding.count_till_limit_again(text, limit)),
                    ("count_till_limit_again, remembered", encoding.count_till_limit_again(text, limit)),
                ];
                for (how, answer) in answers {
                    assert_eq!(
                        answer,
                        expected,
                        "{} {how} with limit {limit} on {:?}",
                        encoding.name(),
                        truncate(text)
                    );
                }
            }
        }
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(80).collect()
}

#[test]
fn special_token_text_counts_as_ordinary_text() {
    let reference = tiktoken_rs::o200k_base().unwrap();
    let text = "a <|endoftext|> b <|im_start|>";
    assert_eq!(OpenAiEncoding::O200kBase.count(text), reference.encode_ordinary(text).len());
    assert!(OpenAiEncoding::O200kBase.count(text) > 5);
}

#[test]
fn conversation_totals_equal_the_corpus_figures_under_openai_framing() {
    // stats.json was written by the corpus converter with Python tiktoken (o200k_base) and the
    // cookbook framing: 3 per message + role + content (+ 1 + name) + per tool call
    // (3 + name + arguments), + 3 per conversation.
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(shared("data/stats.json")).unwrap()).unwrap();
    let counter = ChatCounter::openai(OpenAiEncoding::O200kBase);
    for entry in stats.as_array().unwrap() {
        let file = shared(&format!("data/{}", entry["file"].as_str().unwrap()));
        let mut total = 0;
        for line in lines(&file) {
            let conversation = format::parse_str(&line, FormatHint::Auto).unwrap();
            total += counter.count(&conversation.messages, conversation.tools.as_deref()).total;
        }
        assert_eq!(total as u64, entry["tokens_o200k"].as_u64().unwrap(), "{}", file.display());
    }
}

/// Every text of `parts`, its tool results' included: what a message's count bounds.
fn texts_of(parts: &[tightfit::message::Part]) -> Vec<&str> {
    use tightfit::message::Part;
    parts
        .iter()
        .flat_map(|part| match part {
            Part::Text(t) => vec![t.text.as_str()],
            Part::ToolResult(r) => texts_of(&r.parts),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn a_message_count_bounds_its_texts_on_both_corpora() {
    // steps skip a message too small for them by this bound, without reading its text: it must
    // hold for every message, under both encodings, OpenAI and Anthropic framing alike
    let counters = [
        ChatCounter::openai(OpenAiEncoding::O200kBase),
        ChatCounter::openai(OpenAiEncoding::Cl100kBase),
        ChatCounter::new(Arc::new(OpenAiEncoding::O200kBase), Framing::Anthropic),
    ];
    let mut files = data_files();
    files.extend(crate::jsonl_files("data2"));
    let mut seen = 0usize;
    for file in files {
        for line in lines(&file).iter().take(40) {
            let conversation = format::parse_str(line, FormatHint::Auto).unwrap();
            for message in &conversation.messages {
                let texts = texts_of(&message.parts);
                let bytes: usize = texts.iter().map(|t| t.len()).sum();
                for counter in &counters {
                    let tokens = counter.message_tokens(message);
                    let text_tokens: usize = texts.iter().map(|t| counter.text_counter().count(t)).sum();
                    assert!(counter.max_text_tokens(tokens).unwrap() >= text_tokens, "{}", file.display());
                    let most = counter.max_text_len(tokens).unwrap();
                    assert!(bytes <= most, "{}: {bytes} bytes of text, at most {most}", file.display());
                }
                seen += 1;
            }
        }
    }
    assert!(seen > 10_000, "{seen} messages");
    // a calibrated count may be below the texts' own: no bound then
    let calibrated = ChatCounter::openai(OpenAiEncoding::O200kBase).scaled_by(0.5).unwrap();
    assert_eq!(calibrated.max_text_tokens(100), None);
    assert_eq!(calibrated.max_text_len(100), None);
    // nor for a counter that does not know its longest token
    let estimate = Estimate::new(Arc::new(OpenAiEncoding::O200kBase), 1.1);
    assert_eq!(ChatCounter::new(Arc::new(estimate), Framing::OpenAi).max_text_len(100), None);
}

fn message(value: Value) -> Message {
    format::parse_messages(json!([value]), tightfit::Format::OpenAi).unwrap().remove(0)
}

#[test]
fn openai_framing_counts_names_tool_calls_and_priming() {
    let counter = ChatCounter::openai(OpenAiEncoding::O200kBase);
    let t = |s: &str| OpenAiEncoding::O200kBase.count(s);
    let plain = message(json!({"role": "user", "content": "hello there"}));
    assert_eq!(counter.message_tokens(&plain), 3 + t("user") + t("hello there"));
    let named = message(json!({"role": "user", "name": "ana", "content": "hello there"}));
    assert_eq!(counter.message_tokens(&named), 3 + t("user") + t("hello there") + 1 + t("ana"));
    let calls = message(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"rust\"}"}},
        {"id": "b", "type": "function", "function": {"name": "open", "arguments": "{}"}}]}));
    let expected =
        3 + t("assistant") + (3 + t("search") + t("{\"q\": \"rust\"}")) + (3 + t("open") + t("{}"));
    assert_eq!(counter.message_tokens(&calls), expected);
    let count = counter.count(&[plain.clone(), named], None);
    assert_eq!(count.total, count.per_message.iter().sum::<usize>() + 3);
}

/// A PNG header of the given size as a data URI.
fn png_data_uri(width: u32, height: u32) -> String {
    use base64::Engine;
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    png.extend_from_slice(b"IHDR");
    png.extend_from_slice(&width.to_be_bytes());
    png.extend_from_slice(&height.to_be_bytes());
    png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(&png))
}

#[test]
fn images_are_counted_from_their_dimensions() {
    let openai = ChatCounter::openai(OpenAiEncoding::O200kBase);
    let base = 3 + OpenAiEncoding::O200kBase.count("user");
    let image = |url: &str, detail: &str| {
        message(
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": url, "detail": detail}}]}),
        )
    };
    // 2048×4096 high: fit to 1024×2048, short side to 768 → 768×1536 → 2×3 tiles = 85 + 6·170
    assert_eq!(openai.message_tokens(&image(&png_data_uri(2048, 4096), "high")), base + 1105);
    assert_eq!(openai.message_tokens(&image(&png_data_uri(2048, 4096), "low")), base + 85);
    // a remote URL: the default 1024×1024 (765), or the configured default
    assert_eq!(openai.message_tokens(&image("https://example.com/x.png", "auto")), base + 765);
    let small_default =
        openai.clone().with_default_image(tightfit::tokens::image::Dimensions { width: 512, height: 512 });
    assert_eq!(small_default.message_tokens(&image("https://example.com/x.png", "auto")), base + 255);

    // Claude: the same image as an Anthropic block, w·h/750 after downscaling
    let claude = ChatCounter::for_family(tightfit::models::TokenizerFamily::Claude);
    let body = json!({"system": "s", "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
         "data": png_data_uri(1000, 1000).split_once(',').unwrap().1}}]}]});
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    let role = claude.text_counter().count("user");
    assert_eq!(claude.message_tokens(&conversation.messages[1]), 3 + role + 1334);
}

#[test]
fn tool_schemas_add_tokens_that_grow_with_the_schema() {
    let counter = ChatCounter::openai(OpenAiEncoding::O200kBase);
    let body = |description: &str| {
        json!({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": description,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]})
    };
    let short = format::parse_value(body("Weather."), FormatHint::Auto).unwrap();
    let long = format::parse_value(
        body("Weather for a city, in degrees, with a forecast for the week."),
        FormatHint::Auto,
    )
    .unwrap();
    let short_tools = counter.tools_tokens(short.tools.as_deref().unwrap());
    let long_tools = counter.tools_tokens(long.tools.as_deref().unwrap());
    assert!(short_tools > 15, "{short_tools}");
    assert!(long_tools > short_tools + 10, "{long_tools} vs {short_tools}");
    let count = counter.count(&short.messages, short.tools.as_deref());
    assert_eq!(count.tools, short_tools);
    assert_eq!(count.total, count.per_message[0] + short_tools + 3);
}

#[test]
fn claude_estimate_overcounts_o200k_and_calibrates_from_usage() {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(20);
    let o200k = OpenAiEncoding::O200kBase.count(&text);
    let estimate = Estimate::claude();
    assert_eq!(estimate.count(&text), (o200k as f64 * 1.25).ceil() as usize);
    // the provider said 10% more than we estimated: later counts follow
    let estimated = estimate.count(&text);
    let calibrated = Calibrated::from_usage(estimate.clone(), estimated, estimated * 11 / 10).unwrap();
    let recount = calibrated.count(&text);
    assert!((recount as i64 - (estimated * 11 / 10) as i64).abs() <= 1, "{recount}");
    assert!(Calibrated::from_usage(estimate, 0, 10).is_err());
}

#[test]
fn a_chat_counter_calibrated_from_usage_lands_near_the_reported_count() {
    let line = lines(&shared("data/agent_swe_agent_demos.jsonl")).remove(0);
    let conversation = format::parse_str(&line, FormatHint::Auto).unwrap();
    let claude = ChatCounter::for_family(tightfit::models::TokenizerFamily::Claude);
    let estimated = claude.count(&conversation.messages, None).total;
    // suppose the provider billed 8% less than the estimate
    let reported = estimated * 92 / 100;
    let calibrated = claude.calibrated(estimated, reported).unwrap();
    let recounted = calibrated.count(&conversation.messages, None).total;
    let error = (recounted as f64 - reported as f64).abs() / reported as f64;
    assert!(error < 0.01, "estimated {estimated}, reported {reported}, recounted {recounted}");
    assert_ne!(calibrated.fingerprint(), claude.fingerprint(), "caches must not mix the two");
    assert!(claude.calibrated(0, 5).is_err());
}

/// A counter that records how much text it tokenized.
struct Recording {
    chars: AtomicUsize,
}

impl TokenCounter for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn count(&self, text: &str) -> usize {
        self.chars.fetch_add(text.len(), Ordering::Relaxed);
        OpenAiEncoding::O200kBase.count(text)
    }
}

#[test]
fn recounting_a_grown_conversation_tokenizes_only_the_new_message() {
    let line = lines(&shared("data/agent_tau_bench_airline_gpt4o.jsonl")).remove(0);
    let conversation = format::parse_str(&line, FormatHint::Auto).unwrap();
    let recording = Arc::new(Recording { chars: AtomicUsize::new(0) });
    let counter = ChatCounter::new(recording.clone(), Framing::OpenAi);
    let mut messages = conversation.messages.clone();
    let mut cache = CountCache::new();
    let cold = cache.count(&counter, &messages, None);
    assert_eq!(cold, ChatCounter::openai(OpenAiEncoding::O200kBase).count(&messages, None));

    let appended = Message::text(Role::User, "one more question");
    messages.push(appended.clone());
    let before = recording.chars.load(Ordering::Relaxed);
    let warm = cache.count(&counter, &messages, None);
    let tokenized = recording.chars.load(Ordering::Relaxed) - before;
    assert_eq!(tokenized, "one more question".len());
    assert_eq!(warm.per_message[..cold.per_message.len()], cold.per_message[..]);
    assert_eq!(warm.total, counter.count(&messages, None).total);

    let mut running = RunningCount::new(counter.clone(), None);
    running.extend(&conversation.messages);
    assert_eq!(running.total(), cold.total);
    running.push(&appended);
    assert_eq!(running.count(), warm);
    running.truncate(conversation.messages.len());
    assert_eq!(running.total(), cold.total);
}

#[test]
fn a_cache_used_with_another_counter_does_not_return_stale_counts() {
    let messages = vec![Message::text(Role::User, "héllo wörld, the cache must not mix tokenizers")];
    let mut cache = CountCache::new();
    let o200k = ChatCounter::openai(OpenAiEncoding::O200kBase);
    let cl100k = ChatCounter::openai(OpenAiEncoding::Cl100kBase);
    assert_eq!(cache.count(&o200k, &messages, None), o200k.count(&messages, None));
    assert_eq!(cache.count(&cl100k, &messages, None), cl100k.count(&messages, None));
}

#[cfg(feature = "hf")]
#[test]
fn a_huggingface_tokenizer_file_counts_with_its_vocabulary() {
    let json = r#"{
      "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
      "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
      "model": {"type": "WordLevel", "vocab": {"hello": 0, "world": 1, "[UNK]": 2}, "unk_token": "[UNK]"}
    }"#;
    let path = std::env::temp_dir().join(format!("tightfit-hf-{}.json", std::process::id()));
    std::fs::write(&path, json).unwrap();
    let tokenizer = tightfit::tokens::HfTokenizer::from_file(&path).unwrap();
    assert_eq!(tokenizer.count("hello world hello"), 3);
    assert_eq!(tokenizer.count("hello, unknown"), 3);
    assert!(tokenizer.name().starts_with("hf:"));
    let missing =
        tightfit::tokens::HfTokenizer::from_file(std::path::Path::new("/nonexistent/tokenizer.json"));
    assert!(missing.unwrap_err().to_string().contains("/nonexistent/tokenizer.json"));
    std::fs::remove_file(path).ok();
}

/// A Unigram model's vocabulary holds float scores and a BPE's `dropout` is a float: both are
/// read inside the `tokenizers` crate's untagged enums, which must still accept them with
/// serde_json's `arbitrary_precision` on (it keeps a number as its text).
#[cfg(feature = "hf")]
#[test]
fn huggingface_tokenizers_with_float_fields_load() {
    let unigram = r#"{
      "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
      "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
      "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["hello", -1.5], ["world", -2.25]]}
    }"#;
    let tokenizer = tightfit::tokens::HfTokenizer::from_bytes(unigram.as_bytes()).unwrap();
    assert_eq!(tokenizer.count("hello world hello"), 3);
    let bpe = r#"{
      "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
      "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
      "model": {"type": "BPE", "dropout": 0.25, "unk_token": null, "continuing_subword_prefix": null,
        "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
        "vocab": {"h": 0, "i": 1, "hi": 2}, "merges": ["h i"]}
    }"#;
    let tokenizer = tightfit::tokens::HfTokenizer::from_bytes(bpe.as_bytes()).unwrap();
    assert!(tokenizer.count("hi hi") >= 2);
}

#[test]
fn documents_count_text_as_text_and_binary_by_size() {
    let claude = ChatCounter::for_family(tightfit::models::TokenizerFamily::Claude);
    let prose = "The contract renews every year unless either party objects in writing. ".repeat(200);
    let document = |source: Value| {
        let body = json!({"system": "s", "messages": [{"role": "user", "content": [{"type": "document", "source": source}]}]});
        let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
        claude.message_tokens(&conversation.messages[1]) - (3 + claude.text_counter().count("user"))
    };
    let text = document(json!({"type": "text", "media_type": "text/plain", "data": prose}));
    assert_eq!(text, claude.text_counter().count(&prose), "a text source is counted as text");
    let content = document(json!({"type": "content", "content": [{"type": "text", "text": prose}]}));
    assert_eq!(content, text, "a content source's blocks are counted");
    let pdf =
        document(json!({"type": "base64", "media_type": "application/pdf", "data": "A".repeat(64_000)}));
    assert_eq!(pdf, 64_000 / 4 * 3 / 32, "binary by size");
    let by_id = document(json!({"type": "file", "file_id": "file_abc"}));
    assert_eq!(by_id, tightfit::tokens::DEFAULT_FILE_TOKENS);
}

#[test]
fn a_scaled_estimate_does_not_round_exact_products_up() {
    // 10 × 1.1 is 11.000000000000002 in floating point; the count must stay 11
    let ten_tokens = "one two three four five six seven eight nine ten";
    assert_eq!(OpenAiEncoding::O200kBase.count(ten_tokens), 10);
    assert_eq!(Estimate::open_model().count(ten_tokens), 11);
}

#[test]
fn a_calibrated_counter_scales_framing_too() {
    // many short messages: framing is most of the count, so scaling text alone would fall short
    let messages: Vec<Message> =
        (0..500).map(|i| Message::text(Role::User, format!("message {i}"))).collect();
    let claude = ChatCounter::for_family(tightfit::models::TokenizerFamily::Claude);
    let estimated = claude.count(&messages, None).total;
    let reported = estimated * 3 / 2;
    let recounted = claude.calibrated(estimated, reported).unwrap().count(&messages, None).total;
    assert!(
        recounted >= reported - 3 && recounted <= reported + messages.len(),
        "{estimated} → {reported}: {recounted}"
    );
}
