//! `tightfit simulate`: one row per policy, measured in one run, on a real agent run; the
//! session keeps its promises (within budget, valid, nothing removed without a trace) and
//! reuses its previous request where stateless `fit` does not.

use serde_json::Value;

use crate::{shared, stderr, stdout, tightfit};

fn row<'a>(report: &'a Value, policy: &str) -> &'a Value {
    report["policies"].as_array().unwrap().iter().find(|r| r["policy"] == policy).unwrap()
}

#[test]
fn a_real_agent_run_is_replayed_through_every_policy_asked() {
    let file = shared("data/agent_mini_swe_deepseek.jsonl");
    let svg = std::env::temp_dir().join(format!("tightfit-cli-{}-simulate.svg", std::process::id()));
    let output = tightfit(
        &[
            "simulate",
            file.to_str().unwrap(),
            "--line",
            "1",
            "--model",
            "gpt-4o",
            "--budget",
            "6000",
            "--policy",
            "session:cache",
            "--policy",
            "fit",
            "--policy",
            "hysteresis:0.5",
            "--policy",
            "langchain-trim",
            "--json",
            "--svg",
            svg.to_str().unwrap(),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["model"], "openai/gpt-4o");
    assert_eq!(report["budget"], 6000);
    let turns = report["turns"].as_u64().unwrap();
    assert!(turns > 10, "a mini-swe run has many turns");
    let policies: Vec<&str> =
        report["policies"].as_array().unwrap().iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["session:cache", "fit", "hysteresis:0.5", "langchain-trim"]);

    let session = row(&report, "session:cache");
    let stateless = row(&report, "fit");
    for r in [session, stateless] {
        assert_eq!(r["turns"], turns);
        assert_eq!((r["over_budget"].as_u64(), r["invalid"].as_u64()), (Some(0), Some(0)), "{r}");
        assert!(r["max_tokens"].as_u64().unwrap() <= 6000);
    }
    assert_eq!(session["removed_without_trace"], 0, "{session}");
    assert!(session["compactions"].as_u64().unwrap() >= 1, "the run outgrows 6,000 tokens: {session}");
    let reuse = |r: &Value| r["prefix_reuse"].as_f64().unwrap();
    assert!(reuse(session) > reuse(stateless) + 0.2, "{} vs {}", reuse(session), reuse(stateless));
    assert!(row(&report, "hysteresis:0.5")["removed_without_trace"].as_u64().unwrap() > 0);

    let drawn = std::fs::read_to_string(&svg).unwrap();
    std::fs::remove_file(&svg).ok();
    assert!(drawn.starts_with("<svg") && drawn.contains("session:cache"), "an SVG with the policies");
}

#[test]
fn the_table_has_a_row_per_policy() {
    let file = shared("data/agent_tau_bench_airline_gpt4o.jsonl");
    let output = tightfit(
        &[
            "simulate",
            file.to_str().unwrap(),
            "--line",
            "2",
            "--model",
            "gpt-4o",
            "--budget",
            "3000",
            "--policy",
            "session",
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(table.starts_with("openai/gpt-4o · budget 3,000 tokens · 1 stream"), "{table}");
    assert!(table.lines().nth(1).unwrap().starts_with("policy"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("session:cache ")), "{table}");
}

#[test]
fn an_unknown_policy_is_an_error_naming_it_and_the_known_ones() {
    let file = shared("data/agent_tau_bench_airline_gpt4o.jsonl");
    let output = tightfit(
        &["simulate", file.to_str().unwrap(), "--model", "gpt-4o", "--policy", "sliding-window"],
        None,
    );
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("unknown policy \"sliding-window\""), "{err}");
    assert!(err.contains("hysteresis"), "{err}");
}

#[test]
fn a_trace_folded_into_a_neighbouring_anthropic_turn_still_counts_as_a_trace() {
    // Claude runs at a small budget: compactions put their trace next to a user turn, and
    // Anthropic's same-role merge folds it into that turn
    let file = shared("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl");
    let output = tightfit(
        &[
            "simulate",
            file.to_str().unwrap(),
            "--model",
            "claude-sonnet-4-5",
            "--budget",
            "8000",
            "--policy",
            "session:cache",
            "--json",
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let session = row(&report, "session:cache");
    assert!(session["compactions"].as_u64().unwrap() > 0, "{session}");
    assert_eq!(session["removed_without_trace"], 0, "{session}");
    assert_eq!((session["over_budget"].as_u64(), session["invalid"].as_u64()), (Some(0), Some(0)));
}

#[test]
fn turns_append_one_message_each_or_end_only_where_the_model_is_asked() {
    let file = shared("data/agent_mini_swe_deepseek.jsonl");
    let first: Value =
        serde_json::from_str(std::fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
    let messages = first["messages"].as_array().unwrap();
    let asked = messages.iter().filter(|m| m["role"] != "assistant").count();
    let turns = |by: &[&str]| {
        let mut args = vec!["simulate", file.to_str().unwrap(), "--line", "1", "--model", "gpt-4o"];
        args.extend(["--budget", "6000", "--policy", "session:cache", "--json"]);
        args.extend(by);
        let output = tightfit(&args, None);
        assert!(output.status.success(), "{}", stderr(&output));
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        let session = row(&report, "session:cache").clone();
        // a turn that ends on the assistant's call is sent with the call answered: valid
        assert_eq!((session["over_budget"].as_u64(), session["invalid"].as_u64()), (Some(0), Some(0)));
        report["turns"].as_u64().unwrap() as usize
    };
    // mini-swe makes one call a step: every message is a turn of its own
    assert_eq!(turns(&[]), messages.len());
    assert_eq!(turns(&["--turns", "request"]), asked);
}
