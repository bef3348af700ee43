//! `tightfit replay`: a saved plan applied to the same input gives the fit's bytes; applied to
//! another input, an error that says what differs.

use std::path::PathBuf;

use crate::{shared, stderr, stdout, tightfit};

/// A file in the test's own temporary directory (inside the target directory).
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Fits `file` (with `args`) writing the output and the plans, replays the plans on `file`,
/// and checks the bytes are the same.
fn fit_then_replay(file: &str, args: &[&str], name: &str) {
    let (fitted, plans, replayed) = (
        scratch(&format!("{name}.fit")),
        scratch(&format!("{name}.plans")),
        scratch(&format!("{name}.replay")),
    );
    let mut all = vec!["fit", file, "-o", fitted.to_str().unwrap(), "--plan", plans.to_str().unwrap()];
    all.extend_from_slice(args);
    let fit = tightfit(&all, None);
    assert!(fit.status.success(), "{name}: {}", stderr(&fit));
    let replay = tightfit(
        &["replay", plans.to_str().unwrap(), "--input", file, "-o", replayed.to_str().unwrap()],
        None,
    );
    assert!(replay.status.success(), "{name}: {}", stderr(&replay));
    let (fitted, replayed) = (std::fs::read(fitted).unwrap(), std::fs::read(replayed).unwrap());
    assert!(!fitted.is_empty());
    assert!(fitted == replayed, "{name}: the replay's bytes differ from the fit's");
}

#[test]
fn a_replayed_plan_gives_the_fits_bytes_on_real_transcripts() {
    for (file, model, budget) in [
        ("data/agent_swe_agent_demos.jsonl", "gpt-4o", "6000"),
        ("data/agent_tau_bench_airline_gpt4o.jsonl", "gpt-4o", "2000"),
        ("data/agent_mini_swe_deepseek_reasoner.jsonl", "gpt-4o", "4000"),
        ("data2/agent_moatless_claude35_anthropic.jsonl", "claude-sonnet-4-5", "8000"),
        ("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl", "claude-sonnet-4-5", "6000"),
        ("data2/agent_openhands.jsonl", "gpt-4o", "8000"),
    ] {
        let path = shared(file);
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        fit_then_replay(path.to_str().unwrap(), &["--model", model, "--budget", budget], &name);
    }
    // a request body in, a request body out, through a summarizing pipeline
    fit_then_replay(
        "data/examples/agent_session.json",
        &["--budget", "300", "--preset", "summarizing"],
        "example",
    );
}

#[test]
fn a_plan_for_another_history_is_an_error_naming_what_differs() {
    let plans = scratch("example.plans");
    let fit = tightfit(
        &["fit", "data/examples/agent_session.json", "--budget", "300", "--plan", plans.to_str().unwrap()],
        None,
    );
    assert!(fit.status.success(), "{}", stderr(&fit));
    // another number of messages
    let replay = tightfit(
        &["replay", plans.to_str().unwrap(), "--input", "data/examples/anthropic_request.json"],
        None,
    );
    assert_eq!(replay.status.code(), Some(1));
    assert_eq!(stdout(&replay), "", "no output for a history the plan was not made for");
    assert!(stderr(&replay).contains("the plan was made for a history of "), "{}", stderr(&replay));
    // as many messages, one changed
    let mut body: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::root().join("data/examples/agent_session.json")).unwrap(),
    )
    .unwrap();
    body["messages"][1]["content"] = "something else".into();
    let edited = scratch("edited.json");
    std::fs::write(&edited, body.to_string()).unwrap();
    let replay = tightfit(&["replay", plans.to_str().unwrap(), "--input", edited.to_str().unwrap()], None);
    assert_eq!(replay.status.code(), Some(1));
    assert!(stderr(&replay).contains("but their content differs"), "{}", stderr(&replay));
    // not a plan at all
    let replay =
        tightfit(&["replay", "data/examples/agent_session.json", "--input", edited.to_str().unwrap()], None);
    assert_eq!(replay.status.code(), Some(2));
    assert!(stderr(&replay).contains("agent_session.json:1: not a plan: "), "{}", stderr(&replay));
}

#[test]
fn json_lines_without_their_plan_become_error_records_and_the_rest_replays() {
    let file = shared("data/agent_swe_agent_demos.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().take(4).collect();
    let input = scratch("four.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let (fitted, plans) = (scratch("four.fit"), scratch("four.plans"));
    let fit = tightfit(
        &[
            "fit",
            input.to_str().unwrap(),
            "--model",
            "gpt-4o",
            "--budget",
            "4000",
            "-o",
            fitted.to_str().unwrap(),
            "--plan",
            plans.to_str().unwrap(),
        ],
        None,
    );
    assert!(fit.status.success(), "{}", stderr(&fit));
    // a line nobody fitted, put second: it has no plan, the lines after it still replay
    let stranger = r#"{"messages": [{"role": "user", "content": "a stranger"}]}"#;
    let shifted = scratch("shifted.jsonl");
    std::fs::write(&shifted, format!("{}\n{stranger}\n{}\n", lines[0], lines[1..].join("\n"))).unwrap();
    let replay = tightfit(&["replay", plans.to_str().unwrap(), "--input", shifted.to_str().unwrap()], None);
    assert_eq!(replay.status.code(), Some(1), "{}", stderr(&replay));
    assert!(stderr(&replay).contains(":2: the plan was made for a history of "), "{}", stderr(&replay));
    let out = stdout(&replay);
    let out: Vec<&str> = out.lines().collect();
    let fitted = std::fs::read_to_string(fitted).unwrap();
    let fitted: Vec<&str> = fitted.lines().collect();
    assert_eq!(out.len(), 5);
    assert!(out[1].starts_with(r#"{"tightfit_error":{"line":2,"#), "{}", out[1]);
    assert_eq!([out[0], out[2], out[3], out[4]], [fitted[0], fitted[1], fitted[2], fitted[3]]);
    // fewer conversations than plans: the plans left over are named
    let replay = tightfit(&["replay", plans.to_str().unwrap(), "--input", input.to_str().unwrap()], None);
    assert!(replay.status.success());
    std::fs::write(&shifted, lines[..3].join("\n") + "\n").unwrap();
    let replay = tightfit(&["replay", plans.to_str().unwrap(), "--input", shifted.to_str().unwrap()], None);
    assert_eq!(replay.status.code(), Some(1));
    assert!(stderr(&replay).contains("1 plan left over"), "{}", stderr(&replay));
}
