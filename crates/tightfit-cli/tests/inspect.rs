//! `tightfit inspect`, and its page in a real headless browser (Debian's `chromium`, which
//! `.ci/run` installs).
//!
//! How the browser is asked: `chromium --headless --dump-dom` prints the DOM after the page's
//! script ran (the rows, their actions, what the filter script wrote), and with
//! `--enable-logging=stderr --v=0` it prints every console message — `console.*` calls,
//! uncaught exceptions, refusals by the page's Content-Security-Policy — as an `INFO:CONSOLE`
//! line on standard error. The page writes nothing to the console, so any such line is a
//! failure; a control page that throws shows the detector sees errors on this Chromium. No
//! DevTools client is needed, and every run is bounded: its own profile directory, its own
//! process group, killed when it outlives [`BROWSER_TIMEOUT`]. The filters are set by the
//! page's address (`#actions=...&roles=...`), so a run can check what they hide. Five runs
//! in all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{stderr, tightfit};

/// The longest a browser run may take before it is killed (a cold start takes about 2 s).
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the tests' pages and screenshots go: the target directory, not the repository.
fn artifacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspect");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What a browser run printed: the DOM (with `--dump-dom`) and its log.
struct BrowserRun {
    stdout: String,
    log: String,
}

impl BrowserRun {
    /// The console messages of the page (errors, warnings and logs alike).
    fn console(&self) -> Vec<&str> {
        self.log.lines().filter(|l| l.contains(":CONSOLE")).collect()
    }
}

/// Runs headless Chromium on `page` (with `hash` after its address) with `args`, bounded by
/// [`BROWSER_TIMEOUT`].
fn chromium(page: &Path, hash: &str, args: &[&str]) -> BrowserRun {
    let binary = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("chromium is not installed: apt-get install chromium (.ci/run installs it)");
    let profile = tempfile::tempdir().unwrap();
    let out = profile.path().join("stdout");
    let log = profile.path().join("stderr");
    let mut command = Command::new(binary);
    command
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.path().join("profile").display()))
        .args(args)
        .arg(format!("file://{}{hash}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&log).unwrap());
    // its own process group, so a timeout kills its helpers (renderer, zygote) with it
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = Command::new("kill").args(["-KILL", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            panic!("chromium took longer than {BROWSER_TIMEOUT:?} on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = BrowserRun {
        stdout: std::fs::read_to_string(&out).unwrap(),
        log: std::fs::read_to_string(&log).unwrap(),
    };
    assert!(status.success(), "chromium failed ({status}):\n{}", run.log);
    run
}

/// The page of `args` (an `inspect` run without `--html`), written to `name` among the
/// artifacts.
fn inspect(args: &[&str], name: &str) -> (PathBuf, String) {
    let page = artifacts().join(name);
    let mut all = vec!["inspect"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--html", page.to_str().unwrap()]);
    let output = tightfit(&all, None);
    assert!(output.status.success(), "{}", stderr(&output));
    let html = std::fs::read_to_string(&page).unwrap();
    (page, html)
}

/// The rows a plan should give, by action: one per unit with its action, one per message a
/// step wrote.
fn expected_rows(plan: &Value) -> BTreeMap<String, usize> {
    let mut rows = BTreeMap::new();
    for unit in plan["units"].as_array().unwrap() {
        *rows.entry(unit["action"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    let written = plan["output"].as_array().unwrap().iter().filter(|e| e.get("input").is_none()).count();
    if written > 0 {
        rows.insert("inserted".to_string(), written);
    }
    rows
}

/// The rows of `html` (a page or a DOM), by their `data-action`.
fn rows_by_action(html: &str) -> BTreeMap<String, usize> {
    let mut rows = BTreeMap::new();
    for piece in html.split("<details class=\"tf-row ").skip(1) {
        let action = piece.split("data-action=\"").nth(1).unwrap().split('"').next().unwrap();
        *rows.entry(action.to_string()).or_insert(0) += 1;
    }
    rows
}

/// The rows of `html` in order: their action, their roles, and whether they are hidden.
fn rows_shown(html: &str) -> Vec<(String, Vec<String>, bool)> {
    html.split("<details class=\"tf-row ")
        .skip(1)
        .map(|piece| {
            let tag = &piece[..piece.find('>').unwrap()];
            let attribute =
                |name: &str| tag.split(&format!("{name}=\"")).nth(1).unwrap().split('"').next().unwrap();
            let roles = attribute("data-roles").split(' ').map(String::from).collect();
            (attribute("data-action").to_string(), roles, tag.contains(" hidden"))
        })
        .collect()
}

/// The shipped example's fit at a budget of 300 tokens: its plan, from `fit --plan`.
fn example_plan() -> Value {
    let plan = artifacts().join("example.plan.jsonl");
    let output = tightfit(
        &["fit", "data/examples/agent_session.json", "--budget", "300", "--plan", plan.to_str().unwrap()],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(std::fs::read_to_string(plan).unwrap().trim()).unwrap()
}

#[test]
fn the_page_has_a_row_per_unit_with_what_the_plan_says_happened() {
    let plan = example_plan();
    let (_, html) = inspect(&["data/examples/agent_session.json", "--budget", "300"], "example.html");
    let expected = expected_rows(&plan);
    assert!(expected.get("dropped").is_some_and(|&n| n > 0), "{expected:?}");
    assert_eq!(rows_by_action(&html), expected);
    assert!(html.contains("budget 300"));
    // one section, no index
    assert_eq!(html.matches("<section class=\"tf-conversation\"").count(), 1);
    assert!(!html.contains("<nav class=\"tf-index\""));
}

#[test]
fn json_lines_give_a_section_per_conversation_with_an_index() {
    let file = crate::shared("data/agent_swe_agent_demos.jsonl");
    let out = artifacts().join("swe.plans.jsonl");
    let fit = tightfit(
        &[
            "fit",
            file.to_str().unwrap(),
            "--model",
            "gpt-4o",
            "--budget",
            "4000",
            "--plan",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(fit.status.success(), "{}", stderr(&fit));
    let (_, html) = inspect(&[file.to_str().unwrap(), "--model", "gpt-4o", "--budget", "4000"], "swe.html");
    let plans: Vec<Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(plans.len(), 22);
    assert_eq!(html.matches("<section class=\"tf-conversation\"").count(), 22);
    // the index links every section, titled with its line and id
    assert!(html.contains("<nav class=\"tf-index\""));
    assert_eq!(html.matches("<a href=\"#tf-conv-").count(), 22);
    assert!(html.contains("line 1 \u{b7} "), "titles name the line and the id");
    // section by section, the rows are the plan's
    let sections: Vec<&str> = html.split("<section class=\"tf-conversation\"").skip(1).collect();
    for (section, plan) in sections.iter().zip(&plans) {
        assert_eq!(rows_by_action(section), expected_rows(plan));
    }
}

#[test]
fn a_line_that_cannot_be_fitted_gets_a_section_saying_why() {
    let input = format!(
        "{}\n{}\n",
        r#"{"messages": [{"role": "user", "content": "Hi!"}]}"#,
        serde_json::json!({"messages": [{"role": "user", "content": "word ".repeat(500)}]})
    );
    let file = artifacts().join("one-too-long.jsonl");
    std::fs::write(&file, input).unwrap();
    let page = artifacts().join("one-too-long.html");
    let output = tightfit(
        &[
            "inspect",
            file.to_str().unwrap(),
            "--model",
            "gpt-4o",
            "--budget",
            "100",
            "--html",
            page.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("one-too-long.jsonl:2: the newest user turn"),
        "the failure names its line: {}",
        stderr(&output)
    );
    let html = std::fs::read_to_string(page).unwrap();
    assert_eq!(html.matches("<section class=\"tf-conversation\"").count(), 2);
    assert!(html.contains("could not be fitted: "), "{html}");
}

#[test]
fn the_page_loads_in_headless_chromium_without_console_errors() {
    // the detector: a page that throws is seen (on this Chromium, in this log format)
    let control = artifacts().join("control.html");
    std::fs::write(&control, "<!DOCTYPE html><p>x</p><script>throw new Error('control error')</script>")
        .unwrap();
    let seen = chromium(&control, "", &["--dump-dom"]);
    assert!(
        seen.console().iter().any(|l| l.contains("Uncaught Error: control error")),
        "the console detector does not see a thrown error:\n{}",
        seen.log
    );

    // the known fit: no console message, the script ran, the rows and actions are the plan's
    let plan = example_plan();
    let (page, _) = inspect(&["data/examples/agent_session.json", "--budget", "300"], "browser.html");
    let run = chromium(&page, "", &["--dump-dom"]);
    assert_eq!(run.console(), Vec::<&str>::new(), "console messages:\n{}", run.log);
    let dom = &run.stdout;
    assert!(
        dom.contains("class=\"tf-inspect\" data-ready=\"true\""),
        "the script did not run to its end:\n{dom}"
    );
    let expected = expected_rows(&plan);
    let rows: usize = expected.values().sum();
    assert_eq!(rows_by_action(dom), expected);
    assert!(dom.contains(&format!("{rows} of {rows} rows shown")), "the filter did not count the rows");

    // the filters, as a link names them: the rows of those actions and roles show, no other
    let written = std::fs::read_to_string(&page).unwrap();
    let run = chromium(&page, "#actions=dropped,kept&roles=user,system", &["--dump-dom"]);
    assert_eq!(run.console(), Vec::<&str>::new(), "console messages:\n{}", run.log);
    let shown = rows_shown(&run.stdout);
    let expected: Vec<_> = rows_shown(&written)
        .into_iter()
        .map(|(action, roles, _)| {
            let show = ["dropped", "kept"].contains(&action.as_str())
                && roles.iter().any(|r| r == "user" || r == "system");
            (action, roles, !show)
        })
        .collect();
    assert_eq!(shown, expected);
    let visible = expected.iter().filter(|(_, _, hidden)| !hidden).count();
    assert!(visible > 0 && visible < rows, "{expected:?}");
    assert!(run.stdout.contains(&format!("{visible} of {rows} rows shown")));

    // a screenshot of it, kept with the test's artifacts
    let shot = artifacts().join("inspect.png");
    let _ = std::fs::remove_file(&shot);
    let arg = format!("--screenshot={}", shot.display());
    chromium(&page, "", &[&arg, "--window-size=1280,900", "--hide-scrollbars"]);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000, "{} bytes", png.len());
}

#[test]
fn conversation_text_stays_text_in_the_browser() {
    let hostile =
        r#"</script><img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>"#;
    let input = serde_json::json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": hostile},
        {"role": "assistant", "content": "No."},
        {"role": "user", "content": "again"},
    ]);
    let file = artifacts().join("hostile.json");
    std::fs::write(&file, input.to_string()).unwrap();
    let (page, html) = inspect(&[file.to_str().unwrap(), "--model", "gpt-4o"], "hostile.html");
    assert_eq!(html.matches("<script").count(), 1, "only the page's own script");
    let run = chromium(&page, "", &["--dump-dom"]);
    assert_eq!(run.console(), Vec::<&str>::new(), "console messages:\n{}", run.log);
    let dom = &run.stdout;
    assert!(!dom.contains("<img") && !dom.contains("pwned</title>"), "{dom}");
    assert!(dom.contains("&lt;/script&gt;&lt;img src=x onerror="), "{dom}");
    assert_eq!(rows_by_action(dom).values().sum::<usize>(), 4);
}
