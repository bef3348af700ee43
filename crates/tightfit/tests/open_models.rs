//! Open models: the embedded Qwen, DeepSeek and tekken counters against each family's own
//! tokenizer (counts precomputed by `scripts/gen_open_token_fixture.py` into
//! `tests/fixtures/open_counts.json`) on every string of the shared transcripts and on crafted
//! strings; which model ids select them; their chat framing. Llama 3, whose vocabulary cannot
//! ship here, is held to the same fixture by the Python tests (which install `llama-models`).

use std::sync::Arc;

use serde_json::Value;
use tightfit::format::{parse_str, FormatHint};
use tightfit::models::{Registry, TokenizerFamily};
use tightfit::tokens::{ChatCounter, Framing, OpenFamily, OpenTokenizer, TokenCounter};

use crate::{jsonl_files, lines, shared};

const SKIPPED_KEYS: [&str; 4] = ["role", "id", "tool_call_id", "type"];

/// The embedded families and their column in the fixture.
fn embedded() -> Vec<(&'static str, Arc<OpenTokenizer>)> {
    [
        ("qwen", OpenFamily::Qwen),
        ("deepseek_v3", OpenFamily::DeepSeekV3),
        ("mistral_tekken", OpenFamily::MistralTekken),
    ]
    .into_iter()
    .map(|(column, family)| (column, OpenTokenizer::embedded(family).unwrap()))
    .collect()
}

fn fixture() -> Value {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/open_counts.json"))
            .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every counted string under `value`, as the fixture's generator walks it.
fn strings<'v>(value: &'v Value, key: Option<&str>, out: &mut Vec<&'v str>) {
    match value {
        Value::String(s) if !s.is_empty() && !key.is_some_and(|k| SKIPPED_KEYS.contains(&k)) => out.push(s),
        Value::Object(map) => {
            for (k, v) in map.iter().filter(|(k, _)| !SKIPPED_KEYS.contains(&k.as_str())) {
                strings(v, Some(k), out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| strings(v, None, out)),
        _ => {}
    }
}

fn short(text: &str) -> String {
    text.chars().take(80).collect()
}

#[test]
fn embedded_families_equal_their_reference_on_every_string_of_the_corpus() {
    let fixture = fixture();
    let counters = embedded();
    let expected_files = fixture["files"].as_array().unwrap();
    let files: Vec<_> = jsonl_files("data").into_iter().chain(jsonl_files("data2")).collect();
    assert_eq!(files.len(), expected_files.len(), "the corpus has other files than the fixture");
    let mut compared = 0;
    for (path, expected) in files.iter().zip(expected_files) {
        let name = expected["file"].as_str().unwrap();
        assert!(path.ends_with(name), "{} is not {name}", path.display());
        let records: Vec<Value> = lines(path).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        let mut texts = Vec::new();
        for record in &records {
            strings(&record["messages"], None, &mut texts);
        }
        assert_eq!(texts.len() as u64, expected["strings"].as_u64().unwrap(), "{name}: strings");
        for (column, counter) in &counters {
            let total: usize = texts.iter().map(|t| counter.count(t)).sum();
            assert_eq!(total as u64, expected[column].as_u64().unwrap(), "{name}: {column} total");
        }
        compared += texts.len();
    }
    assert!(compared > 100_000, "only {compared} strings compared");
}

#[test]
fn embedded_families_equal_their_reference_on_sampled_strings_and_count_till_limit_agrees() {
    let fixture = fixture();
    let counters = embedded();
    let samples = fixture["samples"].as_array().unwrap();
    assert!(samples.len() > 300);
    let mut file_lines: std::collections::HashMap<String, Vec<String>> = Default::default();
    for sample in samples {
        let file = sample["file"].as_str().unwrap();
        let lines = file_lines.entry(file.to_string()).or_insert_with(|| lines(&shared(file)));
        let record: Value =
            serde_json::from_str(&lines[sample["line"].as_u64().unwrap() as usize - 1]).unwrap();
        let text = record.pointer(sample["pointer"].as_str().unwrap()).and_then(Value::as_str).unwrap();
        assert_eq!(text.chars().count() as u64, sample["chars"].as_u64().unwrap(), "{sample}");
        for (column, counter) in &counters {
            let expected = sample[column].as_u64().unwrap() as usize;
            assert_eq!(counter.count(text), expected, "{column} on {file}{}", sample["pointer"]);
            assert_eq!(counter.count_till_limit(text, expected), Some(expected), "{column}: at the limit");
            if expected > 0 {
                assert_eq!(counter.count_till_limit(text, expected - 1), None, "{column}: one under");
            }
        }
    }
}

#[test]
fn crafted_strings_count_as_the_reference_counts_them() {
    // CJK, emoji with ZWJ, digit and whitespace runs, control characters, NFC-sensitive text
    // (Qwen normalizes), and special-token text: one token for an added token of the family
    // (`<|im_start|>` in Qwen, `<｜User｜>` in DeepSeek), plain text for every other family
    // and always for tekken (`[INST]`), as mistral-common encodes text
    let fixture = fixture();
    let crafted = fixture["crafted"].as_array().unwrap();
    assert!(crafted.len() >= 20);
    for (column, counter) in embedded() {
        for case in crafted {
            let text = case["text"].as_str().unwrap();
            assert_eq!(
                counter.count(text) as u64,
                case[column].as_u64().unwrap(),
                "{column} on {:?}",
                short(text)
            );
        }
    }
}

#[test]
fn special_token_text_is_one_token_only_in_its_own_family() {
    let qwen = OpenTokenizer::embedded(OpenFamily::Qwen).unwrap();
    let deepseek = OpenTokenizer::embedded(OpenFamily::DeepSeekV3).unwrap();
    let tekken = OpenTokenizer::embedded(OpenFamily::MistralTekken).unwrap();
    assert_eq!(qwen.count("<|im_start|>"), 1);
    assert_eq!(qwen.count("<think>"), 1);
    assert!(deepseek.count("<|im_start|>") > 1);
    assert_eq!(deepseek.count("<｜User｜>"), 1);
    assert!(qwen.count("<｜User｜>") > 1);
    assert!(tekken.count("[INST]") > 1, "tekken encodes control-token text as text");
    // the text around an added token is counted on its own: "a" + token + "b"
    assert_eq!(qwen.count("a<|im_end|>b"), 3);
}

#[test]
fn model_ids_select_the_exact_family_only_where_the_vocabulary_is_known() {
    use TokenizerFamily::*;
    let cases = [
        ("meta-llama/Llama-3.3-70B-Instruct", Llama3),
        ("meta.llama3-1-70b-instruct-v1:0", Llama3),
        ("llama3.1-8b", Llama3),
        ("meta-llama-3_3-70b-instruct", Llama3),
        ("hermes-3-llama-3.1-405b", Llama3),
        ("llama-4-scout-17b-16e-instruct", Other),
        ("llama-2-7b-chat-fp16", Other),
        ("llama-guard-3-8b", Other),
        ("qwen3-235b-a22b", Qwen),
        ("Qwen/Qwen2.5-72B-Instruct", Qwen),
        ("qwen2-5-14b-instruct", Qwen),
        ("qwen-2.5-coder-32b", Qwen),
        ("qwen3-1.7b", Qwen),
        ("Qwen/QwQ-32B", Qwen),
        ("qwen-max-latest", Qwen),
        ("qwen3-coder-plus", Qwen),
        ("qwen3.5-plus", Other),
        ("qwen3-5-35b-a3b", Other),
        ("qwen-3-6-plus", Other),
        ("qwen-vl-max", Other),
        ("deepseek-chat", DeepSeekV3),
        ("deepseek-reasoner", DeepSeekV3),
        ("deepseek-ai/DeepSeek-V3.2", DeepSeekV3),
        ("deepseek.r1-v1:0", DeepSeekV3),
        ("deepseek-v4-flash", DeepSeekV3),
        ("deepseek-r1-distill-qwen-32b", Other),
        ("deepseek-r1-distill-llama-70b", Other),
        ("deepseek-ai/deepseek-vl2", Other),
        ("open-mistral-nemo", MistralTekken),
        ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", MistralTekken),
        ("mistral-small-2503", MistralTekken),
        ("pixtral-12b-2409", MistralTekken),
        ("ministral-8b-2410", MistralTekken),
        ("magistral-small-2509", MistralTekken),
        ("devstral-small-2505", MistralTekken),
        ("mistral-large-2411", Other),
        ("pixtral-large-2411", Other),
        ("mistral-7b-instruct-v0.3", Other),
        ("mixtral-8x7B-instruct-v0.1", Other),
        ("codestral-2501", Other),
        ("mistral-small-2402", Other),
        ("gpt-4o", O200kBase),
    ];
    for (id, family) in cases {
        assert_eq!(TokenizerFamily::for_model_id(id), family, "{id}");
    }
    // the registry tells the family of rows that do not name one from the id
    let registry = Registry::embedded();
    assert_eq!(registry.lookup("deepseek/deepseek-chat").unwrap().tokenizer, DeepSeekV3);
    assert_eq!(registry.lookup("alibaba/qwen3-32b").unwrap().tokenizer, Qwen);
    for family in [Llama3, Qwen, DeepSeekV3, MistralTekken] {
        assert_eq!(TokenizerFamily::from_name(family.as_str()), Some(family));
        assert_eq!(serde_json::to_value(family).unwrap(), family.as_str());
    }
}

#[test]
fn open_models_count_exactly_with_their_chat_framing() {
    let conversation = parse_str(
        r#"[{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi!"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
              "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]"#,
        FormatHint::Auto,
    )
    .unwrap();
    let qwen = ChatCounter::for_family(TokenizerFamily::Qwen);
    assert_eq!(qwen.framing(), Framing::ChatMl);
    assert_eq!(qwen.text_counter().name(), "qwen2");
    assert_eq!(qwen.estimate_reason(), None);
    let text = qwen.text_counter();
    let count = qwen.count(&conversation.messages, None);
    // `<|im_start|>system\nBe brief.<|im_end|>\n`: 4 around, the role, the text
    assert_eq!(count.per_message[0], 4 + 1 + text.count("Be brief."));
    // an assistant turn with one call: 12 around the call's name and arguments
    assert_eq!(
        count.per_message[2],
        4 + 1 + 12 + text.count("get_weather") + text.count("{\"city\": \"Paris\"}")
    );
    // a tool result: `\n<tool_response>\n…\n</tool_response>` in its turn
    assert_eq!(count.per_message[3], 4 + 1 + 5 + text.count("sunny"));
    assert_eq!(count.priming, 3);

    // DeepSeek writes no role names: `<｜User｜>Hi!`
    let deepseek = ChatCounter::for_family(TokenizerFamily::DeepSeekV3);
    let count = deepseek.count(&conversation.messages, None);
    assert_eq!(count.per_message[0], deepseek.text_counter().count("Be brief."));
    assert_eq!(count.per_message[1], 1 + deepseek.text_counter().count("Hi!"));
    // Mistral: `[INST]Hi![/INST]`
    let mistral = ChatCounter::for_family(TokenizerFamily::MistralTekken);
    assert_eq!(mistral.framing(), Framing::Mistral);
    assert_eq!(
        mistral.count(&conversation.messages, None).per_message[1],
        2 + mistral.text_counter().count("Hi!")
    );
}

#[test]
fn claude_and_unknown_models_stay_estimates_and_say_why() {
    let claude = ChatCounter::for_family(TokenizerFamily::Claude);
    assert!(claude.estimate_reason().unwrap().contains("Claude's tokenizer is not public"));
    let calibrated = claude.calibrated(1000, 1100).unwrap();
    assert!(calibrated.estimate_reason().is_some());
    let other = ChatCounter::for_family(TokenizerFamily::Other);
    assert!(other.estimate_reason().unwrap().contains("o200k_base × 1.1"));
    // an exact counter that was calibrated is no longer exact
    let qwen = ChatCounter::for_family(TokenizerFamily::Qwen);
    assert!(qwen
        .calibrated(100, 90)
        .unwrap()
        .estimate_reason()
        .unwrap()
        .starts_with("calibrated from usage"));
}
