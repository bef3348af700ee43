//! The `tightfit` binary, run as a user runs it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod count_open;
mod fit;
mod gemini;
mod inspect;
mod numbers;
mod replay;
mod responses;
mod serve;
mod simulate;
mod validate;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shared(relative: &str) -> PathBuf {
    let path = root().join("../shared").join(relative);
    assert!(path.exists(), "missing {}", path.display());
    path
}

fn tightfit(args: &[&str], stdin: Option<&str>) -> Output {
    tightfit_env(args, stdin, &[])
}

/// As [`tightfit`], with these environment variables set.
fn tightfit_env(args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tightfit"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // written from another thread: a command that answers while it reads (JSON Lines are
    // streamed) fills its output pipe before it has read the whole input
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.unwrap_or("").to_string();
    let writer = std::thread::spawn(move || {
        // a command that fails before reading everything closes its input: not our error
        let _ = input.write_all(stdin.as_bytes());
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn count_of_the_shipped_example_matches_the_engine() {
    let output = tightfit(&["count", "data/examples/agent_session.json", "--json"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();

    let text = std::fs::read_to_string(root().join("data/examples/agent_session.json")).unwrap();
    let conversation = tightfit::format::parse_str(&text, Default::default()).unwrap();
    let model = tightfit::models::Registry::embedded().lookup("gpt-4o").unwrap();
    let count = tightfit::tokens::ChatCounter::for_family(model.tokenizer)
        .count(&conversation.messages, conversation.tools.as_deref());
    assert_eq!(report["model"], "openai/gpt-4o", "the request body's model is used");
    assert_eq!(report["total"], count.total);
    assert_eq!(report["tools"], count.tools);
    assert!(count.tools > 0);
    let per_message: Vec<u64> =
        report["messages"].as_array().unwrap().iter().map(|m| m["tokens"].as_u64().unwrap()).collect();
    assert_eq!(per_message, count.per_message.iter().map(|&n| n as u64).collect::<Vec<_>>());
    assert_eq!(report["messages"][3]["role"], "tool");
    // shares are percentages, and say so: of the model's window, of the conversation
    let percent = report["window_percent"].as_f64().unwrap();
    assert!((percent - count.total as f64 * 100.0 / 128_000.0).abs() < 0.01, "{percent}");
    let of_total: f64 =
        report["messages"].as_array().unwrap().iter().map(|m| m["percent"].as_f64().unwrap()).sum();
    assert!(
        (of_total - 100.0 * per_message_total(&count) as f64 / count.total as f64).abs() < 0.1,
        "{of_total}"
    );
    let by_role_sum: u64 = report["by_role"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(by_role_sum, per_message.iter().sum::<u64>());

    // the human table says the same total
    let table = tightfit(&["count", "data/examples/agent_session.json"], None);
    assert!(stdout(&table).contains(&format!("total {} tokens", count.total)), "{}", stdout(&table));
}

#[test]
fn count_of_the_extreme_histories_equals_the_corpus_figures() {
    let path = shared("data/extreme_long.jsonl");
    let output = tightfit(&["count", path.to_str().unwrap(), "--model", "gpt-4o", "--json"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let totals: Vec<(String, u64)> = stdout(&output)
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            (v["id"].as_str().unwrap().to_string(), v["total"].as_u64().unwrap())
        })
        .collect();
    // per-conversation o200k figures of the corpus README (Python tiktoken, cookbook framing)
    assert_eq!(
        totals,
        vec![
            ("aider/chat-history/ALL-SESSIONS".to_string(), 388_825),
            ("concat/mini-swe-deepseek/250k".to_string(), 289_272),
            ("concat/mini-swe-deepseek/1M".to_string(), 1_006_590),
            ("concat/tau-bench-airline/250k".to_string(), 251_091),
        ]
    );
}

#[test]
fn standard_input_and_anthropic_input_are_counted() {
    let text = std::fs::read_to_string(root().join("data/examples/anthropic_request.json")).unwrap();
    let output = tightfit(&["count", "-", "--json"], Some(&text));
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(report["messages"][0]["role"], "system");
    assert!(report["tools"].as_u64().unwrap() > 346, "tool schemas include the tool-use prompt");
}

#[test]
fn an_unknown_model_is_an_error_with_suggestions() {
    let output = tightfit(&["count", "data/examples/agent_session.json", "--model", "gpt-4oo"], None);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("unknown model \"gpt-4oo\""), "{err}");
    assert!(err.contains("gpt-4o"), "{err}");
}

#[test]
fn a_bare_message_list_needs_a_model() {
    let output = tightfit(&["count", "-"], Some(r#"[{"role": "user", "content": "hi"}]"#));
    assert!(!output.status.success());
    assert!(stderr(&output).contains("no model: pass --model"), "{}", stderr(&output));
}

#[test]
fn bad_lines_of_json_lines_are_named_and_the_rest_is_counted() {
    let input = concat!(
        r#"{"messages": [{"role": "user", "content": "one"}]}"#,
        "\n",
        r#"{"messages": [{"role": "user", "content": "two"},,]}"#,
        "\n\n",
        r#"{"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": 3}}]}]}"#,
        "\n",
        r#"{"messages": [{"role": "user", "content": "four"}]}"#,
        "\n",
    );
    let output = tightfit(&["count", "-", "--model", "gpt-4o", "--json"], Some(input));
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("<stdin>:2: invalid JSON at line 2, column"), "{err}");
    assert!(
        err.contains(
            "<stdin>:4: messages[0].tool_calls[0].function.arguments: expected a string, found a number"
        ),
        "{err}"
    );
    let lines: Vec<u64> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![1, 5]);
}

#[test]
fn a_line_that_is_not_utf8_is_that_line_s_error() {
    let path = std::env::temp_dir().join(format!("tightfit-cli-{}-not-utf8.jsonl", std::process::id()));
    let mut bytes = br#"[{"role": "user", "content": "one"}]"#.to_vec();
    bytes.extend_from_slice(b"\n[{\"role\": \"user\", \"content\": \"tw\xffo\"}]\r\n");
    bytes.extend_from_slice(br#"[{"role": "user", "content": "three"}]"#);
    std::fs::write(&path, bytes).unwrap();
    let output = tightfit(&["count", path.to_str().unwrap(), "--model", "gpt-4o", "--json"], None);
    std::fs::remove_file(&path).ok();
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains(":2: not UTF-8 text: an invalid byte at byte"), "{}", stderr(&output));
    let lines: Vec<u64> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![1, 3]);
}

#[test]
fn a_reader_that_stops_early_ends_it_quietly() {
    use std::io::{BufRead, BufReader};
    let path = shared("data/extreme_long.jsonl");
    for args in [
        vec!["count", path.to_str().unwrap(), "--model", "gpt-4o", "--json"],
        vec!["fit", path.to_str().unwrap(), "--model", "gpt-4o", "--budget", "100000"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tightfit"))
            .args(&args)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -1`: one line read, then the pipe is closed
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.starts_with('{'), "{first}");
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{args:?}: {:?}", output.status);
        let err = stderr(&output);
        assert!(!err.contains("Broken pipe") && !err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn json_lines_with_a_broken_first_line_still_count_the_rest() {
    let input = concat!(
        r#"{"messages": [{"role": "user""#,
        "\n",
        r#"{"messages": [{"role": "user", "content": "two"}]}"#,
        "\n",
    );
    let output = tightfit(&["count", "-", "--model", "gpt-4o", "--json"], Some(input));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("<stdin>:1: invalid JSON"), "{}", stderr(&output));
    assert_eq!(stdout(&output).lines().count(), 1);
}

#[test]
fn models_lists_and_resolves() {
    let output = tightfit(&["models", "gpt-4o-2024-08-06"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("gpt-4o"), "{}", stdout(&output));
    let output = tightfit(&["models", "claude-sonnet-4-5", "--json"], None);
    assert!(output.status.success());
    let first: Value = serde_json::from_str(stdout(&output).lines().next().unwrap()).unwrap();
    assert_eq!(first["context_window"], 200_000);
}

#[cfg(feature = "hf")]
#[test]
fn a_huggingface_tokenizer_file_replaces_the_model_counter() {
    let json = r#"{
      "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
      "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
      "model": {"type": "WordLevel", "vocab": {"hello": 0, "world": 1, "[UNK]": 2}, "unk_token": "[UNK]"}
    }"#;
    let path = std::env::temp_dir().join(format!("tightfit-cli-hf-{}.json", std::process::id()));
    std::fs::write(&path, json).unwrap();
    let input = r#"[{"role": "user", "content": "hello world hello"}]"#;
    let output = tightfit(
        &["count", "-", "--model", "gpt-4o", "--tokenizer", path.to_str().unwrap(), "--json"],
        Some(input),
    );
    std::fs::remove_file(&path).ok();
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    // 3 framing + role "user" (1 word) + 3 words, then 3 of reply priming
    assert_eq!(report["messages"][0]["tokens"], 3 + 1 + 3);
    assert_eq!(report["total"], 3 + 1 + 3 + 3);
    assert!(report["counter"].as_str().unwrap().starts_with("hf:"));
    assert_eq!(report["exact"], true);
}

fn per_message_total(count: &tightfit::tokens::Count) -> usize {
    count.per_message.iter().sum()
}

/// A models.dev `api.json` of one provider, as `tightfit models --refresh` reads it.
const SNAPSHOT: &str = r#"{"acme": {"name": "Acme", "models": {
  "acme-large-20300101": {"id": "acme-large-20300101", "name": "Acme Large",
    "modalities": {"input": ["text"], "output": ["text"]},
    "limit": {"context": 262144, "output": 16384}, "cost": {"input": 1.25, "output": 5}}}}}"#;

#[test]
fn models_refresh_writes_a_table_that_models_file_reads() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("api.json");
    std::fs::write(&snapshot, SNAPSHOT).unwrap();
    let table = dir.path().join("models.json");
    let (snapshot_arg, table_arg) = (snapshot.to_str().unwrap(), table.to_str().unwrap());
    let output = tightfit(
        &["models", "--refresh", snapshot_arg, "-o", table_arg, "--snapshot-version", "2030.1"],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("1 providers from"), "{}", stderr(&output));
    let text = std::fs::read_to_string(&table).unwrap();
    assert!(text.contains("see MODELS_LICENSE"), "the licence notice is kept");
    assert!(text.contains(r#"{"id":"acme-large-20300101","name":"Acme Large","context":262144,"max_output":16384,"prices":[1.25,null,null,5],"aliases":["acme-large"]}"#));

    // The table replaces the embedded one: the new model resolves, by its undated name too,
    // and the embedded providers are still there.
    let listed = tightfit(&["models", "acme-large", "--models-file", table_arg], None);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("--model acme-large resolves to acme/acme-large-20300101"),
        "{}",
        stdout(&listed)
    );
    let counted = tightfit(
        &["count", "-", "--model", "gpt-4o", "--models-file", table_arg, "--json"],
        Some(r#"[{"role":"user","content":"hi"}]"#),
    );
    assert!(counted.status.success(), "{}", stderr(&counted));

    // Refreshing the refreshed table again by the same snapshot gives the same bytes.
    let again = tightfit(
        &["models", "--refresh", snapshot_arg, "--models-file", table_arg, "--snapshot-version", "2030.1"],
        None,
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again), text);

    // A snapshot that is not models.dev's says where.
    std::fs::write(&snapshot, r#"{"acme": {"models": {"m": {"name": "x"}}}}"#).unwrap();
    let bad = tightfit(&["models", "--refresh", snapshot_arg], None);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("invalid models.dev snapshot: acme.models.m: no `id`"), "{}", stderr(&bad));
}
