//! `tightfit count` for open models: exact for the embedded families, Llama 3 estimated (and
//! saying why) when its vocabulary is not found, Claude estimated.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::{root, stderr, stdout, tightfit};

const MESSAGES: &str = r#"[{"role": "user", "content": "Fix the failing test in src/lib.rs, please."}]"#;

fn count_json(model: &str) -> Value {
    let output = tightfit(&["count", "-", "--model", model, "--json"], Some(MESSAGES));
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

#[test]
fn embedded_open_families_are_counted_exactly() {
    for (model, counter) in
        [("qwen3-32b", "qwen2"), ("deepseek-chat", "deepseek_v3"), ("mistral-small-2506", "tekken")]
    {
        let report = count_json(model);
        assert_eq!(report["counter"], counter, "{model}");
        assert_eq!(report["exact"], true, "{model}");
        assert_eq!(report["estimate"], Value::Null, "{model}");
    }
    let output = tightfit(&["count", "-", "--model", "deepseek-chat"], Some(MESSAGES));
    assert!(stdout(&output).contains("deepseek_v3 (exact)"), "{}", stdout(&output));
}

#[test]
fn claude_is_an_estimate_that_says_why() {
    let report = count_json("claude-sonnet-4-5");
    assert_eq!(report["exact"], false);
    assert!(report["estimate"].as_str().unwrap().contains("Claude's tokenizer is not public"));
}

#[test]
fn llama_without_its_vocabulary_is_an_estimate_that_says_what_to_do() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tightfit"))
        .args(["count", "-", "--model", "llama-3.3-70b-instruct"])
        .current_dir(root())
        .env("TIGHTFIT_LLAMA3_TOKENIZER", root().join("no-such-tokenizer.model"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), MESSAGES.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let header = stdout(&output).lines().next().unwrap().to_string();
    assert!(header.contains("(estimated: Llama 3 tokenizer not found; pass --tokenizer"), "{header}");
}

#[test]
fn a_tokenizer_file_that_is_no_tokenizer_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, "not a tokenizer").unwrap();
    let output =
        tightfit(&["count", "-", "--model", "gpt-4o", "--tokenizer", path.to_str().unwrap()], Some(MESSAGES));
    assert!(!output.status.success());
    assert!(stderr(&output).contains("tokenizer.json"), "{}", stderr(&output));
}
