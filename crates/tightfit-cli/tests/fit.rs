//! `tightfit fit`: the fitted history on standard output in the input's format, the report on
//! standard error, plans on request, JSON Lines in parallel.

use std::path::PathBuf;

use serde_json::Value;
use tightfit::format::{self, FormatHint};
use tightfit::tokens::{ChatCounter, OpenAiEncoding};
use tightfit::validate::validate;

use crate::{root, shared, stderr, stdout, tightfit};

fn o200k() -> ChatCounter {
    ChatCounter::openai(OpenAiEncoding::O200kBase)
}

/// A file in the system's temporary folder, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("tightfit-cli-{}-{name}", std::process::id())))
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
    fn read(&self) -> String {
        std::fs::read_to_string(&self.0).unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).ok();
    }
}

#[test]
fn the_shipped_example_fits_its_budget_and_keeps_its_envelope() {
    let plan = TempFile::new("example.plan.jsonl");
    let output = tightfit(
        &[
            "fit",
            "data/examples/agent_session.json",
            "--budget",
            "300",
            "--report",
            "json",
            "--plan",
            plan.path(),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let input_text = std::fs::read_to_string(root().join("data/examples/agent_session.json")).unwrap();
    let input = format::parse_str(&input_text, FormatHint::Auto).unwrap();
    let fitted = format::parse_str(&stdout(&output), FormatHint::Auto).unwrap();

    // a request body in, a request body out: model and tools are still there
    let body: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(body["model"], "gpt-4o");
    assert!(body["tools"].is_array());
    let total = o200k().count(&fitted.messages, fitted.tools.as_deref()).total;
    assert!(total <= 300, "{total} tokens over the budget");
    assert!(fitted.messages.len() < input.messages.len(), "something had to go");
    assert_eq!(validate(&fitted.messages, tightfit::Format::OpenAi), vec![]);

    let report: Value = serde_json::from_str(stderr(&output).trim()).unwrap();
    assert_eq!(report["compressed_token_count"], total);
    assert_eq!(report["original_token_count"], o200k().count(&input.messages, input.tools.as_deref()).total);
    assert_eq!(report["was_compressed"], true);
    assert_eq!(report["budget"], 300);

    // the plan replays on the input to the same messages
    let plan: tightfit::Plan = serde_json::from_str(plan.read().trim()).unwrap();
    let replayed = plan.replay(&input.messages).unwrap();
    let as_json =
        |m: &[tightfit::Message]| format::messages_to_value(m, tightfit::Format::OpenAi).to_string();
    let replayed: Vec<_> = replayed.into_iter().map(std::borrow::Cow::into_owned).collect();
    assert_eq!(as_json(&replayed), as_json(&fitted.messages));
}

#[test]
fn the_text_report_names_the_steps_that_acted() {
    let output = tightfit(&["fit", "data/examples/agent_session.json", "--budget", "300"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stderr(&output);
    let first = report.lines().next().unwrap();
    assert!(first.contains("tokens") && first.ends_with("budget 300"), "{report}");
    assert!(report.lines().count() > 1, "one line per step that changed something: {report}");
}

#[test]
fn a_history_that_fits_comes_back_unchanged() {
    let input =
        r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!", "name": "ann"}]"#;
    let output = tightfit(&["fit", "-", "--model", "gpt-4o"], Some(input));
    assert!(output.status.success(), "{}", stderr(&output));
    // the same JSON (members are written in tightfit's order: role first)
    let expected: Value = serde_json::from_str(input).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&stdout(&output)).unwrap(), expected);
}

#[test]
fn real_json_lines_fit_in_parallel_in_their_order() {
    let file = shared("data/agent_swe_agent_demos.jsonl");
    let out = TempFile::new("swe.jsonl");
    for budget in [4_096, 32_768] {
        let output = tightfit(
            &[
                "fit",
                file.to_str().unwrap(),
                "--model",
                "gpt-4o",
                "--budget",
                &budget.to_string(),
                "-o",
                out.path(),
            ],
            None,
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let inputs: Vec<Value> = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let outputs: Vec<Value> = out.read().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(inputs.len(), outputs.len());
        let report = stderr(&output);
        assert_eq!(report.lines().count(), inputs.len() + 1, "a report line each, and the closing summary");
        let summary = report.lines().last().unwrap();
        let n = inputs.len();
        assert!(
            summary.contains(&format!("{n} conversations, {n} fitted")) && summary.ends_with(", 0 failed"),
            "{summary}"
        );
        for (i, (input, output)) in inputs.iter().zip(&outputs).enumerate() {
            assert_eq!(input["id"], output["id"], "line {} keeps its place and its other fields", i + 1);
            let fitted = format::parse_value(output.clone(), FormatHint::Auto).unwrap();
            let total = o200k().count(&fitted.messages, fitted.tools.as_deref()).total;
            assert!(total <= budget, "line {}: {total} over {budget}", i + 1);
            assert_eq!(validate(&fitted.messages, tightfit::Format::OpenAi), vec![], "line {}", i + 1);
        }
    }
}

#[test]
fn an_anthropic_request_stays_an_anthropic_request() {
    let output = tightfit(&["fit", "data/examples/anthropic_request.json", "--budget", "2000"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let fitted =
        format::parse_str(&stdout(&output), FormatHint::Exactly(tightfit::Format::Anthropic)).unwrap();
    assert_eq!(validate(&fitted.messages, tightfit::Format::Anthropic), vec![]);
    let body: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert!(body["model"].as_str().unwrap().starts_with("claude"));
}

#[test]
fn a_budget_below_the_protected_part_says_what_is_over() {
    let input = r#"[{"role": "system", "content": "You are a careful assistant who explains every step in detail."}, {"role": "user", "content": "hello"}]"#;
    let output = tightfit(&["fit", "-", "--model", "gpt-4o", "--budget", "10"], Some(input));
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("<stdin>:1:") && err.contains("over"), "{err}");
    assert!(err.contains("system"), "names what could not fit: {err}");
    assert_eq!(stdout(&output), "", "nothing is written for a line that cannot fit");
}

#[test]
fn presets_and_configuration_files_choose_the_pipeline() {
    // llmling's minimal preset has fixed limits (last 5 pairs, results cut at 500 characters)
    // that do not reach 300 tokens here; its last rung, middle_out while over budget, does
    let minimal = tightfit(
        &["fit", "data/examples/agent_session.json", "--budget", "300", "--preset", "minimal"],
        None,
    );
    assert_eq!(minimal.status.code(), Some(0), "{}", stderr(&minimal));
    assert!(stderr(&minimal).contains("-> 300 tokens"), "{}", stderr(&minimal));
    assert!(stderr(&minimal).contains("middle_out:"), "{}", stderr(&minimal));

    let config = TempFile::new("keep_last.yaml");
    std::fs::write(&config.0, "steps:\n  - type: keep_last\n    count: 2\n").unwrap();
    let output = tightfit(
        &["fit", "data/examples/agent_session.json", "--budget", "100000", "--config", config.path()],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let fitted = format::parse_str(&stdout(&output), FormatHint::Auto).unwrap();
    // the system prompt, the newest user turn (protected), and the last two messages, the
    // tool result kept with its call
    let roles: Vec<&str> = fitted.messages.iter().map(|m| m.role_name()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"], "{}", stdout(&output));
    assert_eq!(fitted.messages[1].text_content(), "Go on.");

    let unknown = tightfit(&["fit", "data/examples/agent_session.json", "--preset", "tiny"], None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("tiny"), "{}", stderr(&unknown));

    std::fs::write(&config.0, "steps:\n  - type: keep_lats\n").unwrap();
    let typo = tightfit(&["fit", "data/examples/agent_session.json", "--config", config.path()], None);
    assert_eq!(typo.status.code(), Some(2));
    let err = stderr(&typo);
    assert!(err.contains("steps[0]") && err.contains("keep_last"), "names the key and suggests: {err}");
}

#[test]
fn a_plain_claude_body_is_read_as_anthropic() {
    // the format `fit` reads `input` in, by its plan
    let format_read = |input: &str, extra: &[&str]| {
        let file = TempFile::new("plain-body.json");
        std::fs::write(file.path(), input).unwrap();
        let plan = TempFile::new("plain-body.plan.jsonl");
        let output = tightfit(&[&["fit", file.path(), "--plan", plan.path()][..], extra].concat(), None);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_str::<tightfit::Plan>(plan.read().trim()).unwrap().format
    };
    // nothing in the messages belongs to one format only: the model's API decides
    let body = r#"{"model": "claude-sonnet-4-5", "max_tokens": 512, "messages": [
        {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"},
        {"role": "user", "content": "Tell me more"}]}"#;
    assert_eq!(format_read(body, &[]), "anthropic");
    // the same messages for an OpenAI model stay OpenAI's
    assert_eq!(format_read(&body.replace("claude-sonnet-4-5", "gpt-4o"), &[]), "openai");
    // and `--model` decides for a bare list
    let list = r#"[{"role": "user", "content": "Hello"}]"#;
    assert_eq!(format_read(list, &["--model", "claude-sonnet-4-5"]), "anthropic");
}

#[test]
fn a_budget_past_the_model_window_is_refused_unless_allowed() {
    let args = ["fit", "data/examples/agent_session.json", "--model", "gpt-4o", "--budget", "500000"];
    let output = tightfit(&args, None);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("input limit of 128000 tokens"), "{}", stderr(&output));
    let output = tightfit(&[&args[..], &["--allow-over-window"]].concat(), None);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_json_lines_line_that_fails_keeps_its_place() {
    let lines = [
        r#"{"id": "a", "messages": [{"role": "user", "content": "one"}]}"#,
        r#"{"id": "b", "messages": [{"role": "system", "content": "rule rule rule rule rule rule"}, {"role": "user", "content": "two"}]}"#,
        r#"{"id": "c", "messages": [{"role": "user", "content": "three"}]}"#,
    ];
    let input = TempFile::new("lines.jsonl");
    std::fs::write(input.path(), lines.join("\n")).unwrap();
    // at 12 tokens the system prompt of line 2 alone is over
    let fit = |extra: &[&str]| {
        let args = [&["fit", input.path(), "--model", "gpt-4o", "--budget", "12"][..], extra].concat();
        tightfit(&args, None)
    };
    let output = fit(&[]);
    assert_eq!(output.status.code(), Some(1));
    let out: Vec<Value> = stdout(&output).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(out.len(), 3, "line for line");
    assert_eq!((out[0]["id"].as_str(), out[2]["id"].as_str()), (Some("a"), Some("c")));
    assert_eq!(out[1]["tightfit_error"]["line"], 2);
    assert!(out[1]["tightfit_error"]["error"].as_str().unwrap().contains("system prompt"), "{}", out[1]);
    let summary = stderr(&output).lines().last().unwrap_or_default().to_string();
    assert!(summary.ends_with(": 3 conversations, 2 fitted (16 -> 16 tokens), 1 failed"), "{summary}");
    // --on-error keep: the line as it came
    let kept = fit(&["--on-error", "keep"]);
    assert_eq!(stdout(&kept).lines().nth(1), Some(lines[1]));
    // a JSON report keeps its stream JSON: the error is a JSON line, then the summary
    let json = fit(&["--report", "json"]);
    let reports: Vec<Value> = stderr(&json).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        (reports[0]["line"].as_u64(), reports[0]["id"].as_str()),
        (Some(1), Some("a")),
        "{}",
        reports[0]
    );
    assert_eq!(reports[1]["line"], 2);
    assert!(reports[1]["error"].is_string());
    assert_eq!(reports[3]["summary"]["failed"], 1);
}

/// Fits the SWE-agent demos to 3,000 tokens offloading into `store`, then recalls every
/// handle of the output from it: each gives back its messages as they came.
fn fit_then_recall(store: &str) {
    let file = shared("data/agent_swe_agent_demos.jsonl");
    let output = tightfit(
        &["fit", file.to_str().unwrap(), "--model", "gpt-4o", "--budget", "3000", "--store", store],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let inputs: Vec<Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut recalled = 0;
    for (line, text) in stdout(&output).lines().enumerate() {
        let input = inputs[line]["messages"].as_array().unwrap();
        let mut rest = text;
        while let Some(at) = rest.find("recall(\\\"tf-") {
            let handle = &rest[at + 9..at + 9 + 19];
            rest = &rest[at + 9..];
            let back = tightfit(&["recall", handle, "--store", store], None);
            assert!(back.status.success(), "{handle}: {}", stderr(&back));
            let entries: Vec<Value> = serde_json::from_str(stdout(&back).trim()).unwrap();
            assert!(!entries.is_empty());
            for entry in &entries {
                let index = entry["index"].as_u64().unwrap() as usize;
                assert_eq!(entry["message"], input[index], "line {}: message {index} as it came", line + 1);
            }
            recalled += entries.len();
        }
    }
    assert!(recalled > 50, "{store}: only {recalled} messages recalled");
    // an unknown handle is an error naming it
    let unknown = tightfit(&["recall", "tf-0000000000000000", "--store", store], None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no offloaded content under tf-0000000000000000"),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn with_a_store_what_fit_removes_is_recalled_as_it_came() {
    let store = TempFile::new("offload.db");
    fit_then_recall(store.path());
    // a store that is not there is an error naming it
    let missing = tightfit(&["recall", "tf-0000000000000000", "--store", "no/such/store.db"], None);
    assert!(stderr(&missing).contains("no/such/store.db: no such store"), "{}", stderr(&missing));
    for suffix in ["-wal", "-shm"] {
        std::fs::remove_file(format!("{}{suffix}", store.path())).ok();
    }
}

#[test]
fn offloading_into_redis_or_postgres_is_recalled_from_there() {
    let redis = tightfit_test_servers::Redis::start();
    fit_then_recall(&redis.url());
    let postgres = tightfit_test_servers::Postgres::start();
    fit_then_recall(&postgres.url());
    // a store address this build has no store for names the ones it has
    let output = tightfit(&["recall", "tf-0000000000000000", "--store", "mysql://db/app"], None);
    assert!(stderr(&output).contains("no store for mysql://"), "{}", stderr(&output));
    assert!(stderr(&output).contains("postgres://"), "{}", stderr(&output));
}

#[test]
fn a_summarizer_endpoint_that_refuses_leaves_the_extractive_summary_and_says_why() {
    // a conversation long enough for the summarizing preset (more than 20 messages)
    let demos = std::fs::read_to_string(shared("data/agent_swe_agent_demos.jsonl")).unwrap();
    let long = demos
        .lines()
        .find(|l| serde_json::from_str::<Value>(l).unwrap()["messages"].as_array().unwrap().len() > 30)
        .unwrap();
    let input = TempFile::new("summarize.json");
    std::fs::write(&input.0, long).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let args =
        ["fit", input.path(), "--model", "gpt-4o", "--preset", "summarizing", "--summarizer-url", &url];
    let output =
        tightfit(&[&args[..], &["--summarizer-model", "small", "--summarizer-retries", "0"]].concat(), None);
    assert!(output.status.success(), "{}", stderr(&output));
    let body: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let summary = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|t| t.starts_with("[tightfit: summary of "))
        .expect("a summary")
        .to_string();
    assert!(
        summary.contains(&format!("127.0.0.1:{port}")) && summary.contains("the extractive summary instead"),
        "{summary}"
    );
    assert!(summary.contains("Commands:"), "{summary}");
    // the report on standard error says so too, on the summarize step's line
    let report = stderr(&output);
    assert!(
        report.lines().any(|l| l.trim_start().starts_with("summarize: ")
            && l.contains(&format!("127.0.0.1:{port}"))
            && l.ends_with("the extractive summary stands in")),
        "{report}"
    );
    // a URL without a model is refused before anything runs
    let missing = tightfit(&args, None);
    assert!(
        !missing.status.success() && stderr(&missing).contains("--summarizer-model"),
        "{}",
        stderr(&missing)
    );
}

/// The conversations of a real file, as JSON Lines with a request envelope around each:
/// `meta` first, then the messages, then `model` (not the order tightfit writes a body in).
fn envelopes(file: &str, count: usize) -> Vec<String> {
    std::fs::read_to_string(shared(file))
        .unwrap()
        .lines()
        .take(count)
        .enumerate()
        .map(|(i, line)| {
            let record: Value = serde_json::from_str(line).unwrap();
            format!(
                r#"{{"meta":{{"n":{i},"z":true,"a":false}},"messages":{},"zeta":"last?","model":"gpt-4o","id":"c{i}"}}"#,
                record["messages"]
            )
        })
        .collect()
}

#[test]
fn json_lines_are_streamed_answers_come_before_the_input_ends() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let lines = envelopes("data/agent_tau_bench_airline_gpt4o.jsonl", 12);
    let mut child = Command::new(env!("CARGO_BIN_EXE_tightfit"))
        .args(["fit", "-", "--budget", "2000"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let output = BufReader::new(child.stdout.take().unwrap());
    let (sender, answers_in) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for answer in output.lines() {
            sender.send(answer.unwrap() + "\n").unwrap();
        }
    });
    // The first half goes in; its answers come out while standard input is still open (a
    // reader of the whole input first would never answer: the test would time out).
    for line in &lines[..6] {
        writeln!(input, "{line}").unwrap();
    }
    input.flush().unwrap();
    let mut answers = Vec::new();
    for i in 0..6 {
        let wait = std::time::Duration::from_secs(60);
        let answer =
            answers_in.recv_timeout(wait).unwrap_or_else(|_| panic!("no answer {i} while the input is open"));
        answers.push(answer);
    }
    for line in &lines[6..] {
        writeln!(input, "{line}").unwrap();
    }
    drop(input);
    answers.extend(answers_in.iter());
    assert!(child.wait().unwrap().success());
    assert_eq!(answers.len(), 12);
    for (i, answer) in answers.iter().enumerate() {
        let body: Value = serde_json::from_str(answer).unwrap();
        // in input order, with the envelope's keys where they came
        assert_eq!(body["id"], format!("c{i}"), "answer {i}");
        let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["meta", "messages", "zeta", "model", "id"], "answer {i}");
        assert!(answer.starts_with(&format!(r#"{{"meta":{{"n":{i},"z":true,"a":false}},"messages":"#)));
    }
}

#[test]
fn streamed_json_lines_keep_their_order_on_several_workers() {
    // More lines than one batch, of very different lengths, so that workers finish out of
    // order: the output is still line for line with the input.
    let mut lines = envelopes("data/agent_mini_swe_deepseek.jsonl", 20);
    lines.extend(envelopes("data/chat_hh_rlhf_harmless_test.jsonl", 60));
    let input = lines.join("\n") + "\n";
    let output =
        crate::tightfit_env(&["fit", "-", "--budget", "3000"], Some(&input), &[("RAYON_NUM_THREADS", "3")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let answers: Vec<Value> = stdout(&output).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), lines.len());
    for (i, (answer, line)) in answers.iter().zip(&lines).enumerate() {
        let original: Value = serde_json::from_str(line).unwrap();
        assert_eq!(answer["id"], original["id"], "line {}", i + 1);
        assert_eq!(answer["meta"], original["meta"]);
    }
    assert!(stderr(&output).contains("<stdin>: 80 conversations, 80 fitted"), "{}", stderr(&output));
}

/// There is no default model: a bare `--budget` is counted with o200k_base (the report says
/// so), and with neither a model nor a budget the error says what to pass; `--tokenizer`
/// counts instead of the model's counter, as for `count`.
#[test]
fn a_bare_budget_needs_no_model_and_nothing_at_all_is_an_error() {
    let turns: Vec<Value> = (0..12)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": format!("turn {i}: hello world hello world hello")})
        })
        .collect();
    let input = Value::Array(turns).to_string();
    let output = tightfit(&["fit", "-", "--budget", "60", "--report", "json"], Some(&input));
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(stderr(&output).lines().next().unwrap()).unwrap();
    assert_eq!(report["counter"], "o200k_base");
    assert!(report["compressed_token_count"].as_u64().unwrap() <= 60);

    let output = tightfit(&["fit", "-"], Some(&input));
    assert!(!output.status.success());
    assert!(stderr(&output).contains("no model and no budget: pass --model"), "{}", stderr(&output));

    #[cfg(feature = "hf")]
    {
        // a word-level vocabulary: every word one token
        let json = r#"{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
          "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
          "model": {"type": "WordLevel", "vocab": {"hello": 0, "world": 1, "[UNK]": 2}, "unk_token": "[UNK]"}}"#;
        let file = TempFile::new("words-tokenizer.json");
        std::fs::write(&file.0, json).unwrap();
        let output = tightfit(
            &["fit", "-", "--budget", "60", "--tokenizer", file.path(), "--report", "json"],
            Some(&input),
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let report: Value = serde_json::from_str(stderr(&output).lines().next().unwrap()).unwrap();
        assert!(report["counter"].as_str().unwrap().starts_with("hf:"), "{report}");
        assert!(report["compressed_token_count"].as_u64().unwrap() <= 60);
    }
}

#[test]
fn print_config_writes_the_pipeline_as_the_yaml_that_builds_it() {
    let output = tightfit(&["fit", "--print-config", "--preset", "swarms"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "steps:\n- type: middle_out\n  keep_first: 0\n");
    // the default ladder, read back from what was printed, fits as the ladder does
    let printed = tightfit(&["fit", "--print-config"], None);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ladder.yaml");
    std::fs::write(&config, &printed.stdout).unwrap();
    let args = ["fit", "data/examples/agent_session.json", "--budget", "300"];
    let ladder = tightfit(&args, None);
    let read_back = tightfit(&[&args[..], &["--config", config.to_str().unwrap()]].concat(), None);
    assert!(ladder.status.success() && read_back.status.success(), "{}", stderr(&read_back));
    assert_eq!(ladder.stdout, read_back.stdout);
    // without it, a file is still required
    let missing = tightfit(&["fit", "--preset", "swarms"], None);
    assert!(!missing.status.success());
}
