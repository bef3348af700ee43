//! The inspect page's rows, on real transcripts: every unit and every message sent has its
//! row, the figures add up to the report's, removals are told apart by where they went, and
//! the page escapes whatever the conversation says.

use tightfit::fit::{Fitter, Services};
use tightfit::format::{parse_str, Conversation, FormatHint};
use tightfit::inspect::{Inspection, Page, RowAction, Section};
use tightfit::models::Registry;
use tightfit::plan::{PlanError, UnitAction};
use tightfit::session::MemoryStore;
use tightfit::{Fitted, Target};

use crate::{lines, shared};

fn target(model: &str, budget: usize) -> Target {
    Target::for_model(Registry::embedded().lookup(model).unwrap(), None).with_budget(budget)
}

/// A handful of real conversations, the longest of their files: OpenAI agent runs with tool
/// calls, Anthropic ones.
fn transcripts() -> Vec<(String, Conversation, &'static str)> {
    let mut out = Vec::new();
    for (file, model, take) in [
        ("data/agent_swe_agent_demos.jsonl", "gpt-4o", 3),
        ("data/agent_tau_bench_airline_gpt4o.jsonl", "gpt-4o", 2),
        ("data2/agent_moatless_claude35_anthropic.jsonl", "claude-sonnet-4-5", 2),
    ] {
        let mut all = lines(&shared(file));
        all.sort_by_key(|line| std::cmp::Reverse(line.len()));
        for (i, line) in all.iter().take(take).enumerate() {
            let hint = if model.starts_with("claude") {
                FormatHint::Prefer(tightfit::Format::Anthropic)
            } else {
                FormatHint::Auto
            };
            out.push((format!("{file}, longest {}", i + 1), parse_str(line, hint).unwrap(), model));
        }
    }
    out
}

#[test]
fn every_unit_and_every_message_sent_has_its_row_and_the_figures_add_up() {
    for (what, conversation, model) in transcripts() {
        let target = target(model, 4_000);
        let fitted = Fitter::new().fit(&conversation, &target, None).unwrap();
        let inspection =
            Inspection::new(&conversation.messages, &fitted.plan, &fitted.report, &target.counter).unwrap();
        let unit_rows: Vec<_> = inspection.rows.iter().filter(|r| r.unit.is_some()).collect();
        assert_eq!(unit_rows.len(), fitted.plan.units.len(), "{what}");
        // each output message is in exactly one row, in the output's order
        let sent: Vec<usize> = inspection.rows.iter().flat_map(|r| r.output.iter().copied()).collect();
        assert_eq!(sent, (0..fitted.messages.len()).collect::<Vec<_>>(), "{what}");
        // the rows' tokens are the messages' tokens: the report's, less tools and priming
        let count = target.counter.count(&conversation.messages, conversation.tools.as_deref());
        let before: usize = inspection.rows.iter().map(|r| r.tokens_before).sum();
        assert_eq!(before, count.per_message.iter().sum::<usize>(), "{what}");
        let overhead = count.tools + count.priming;
        let after: usize = inspection.rows.iter().map(|r| r.tokens_after).sum();
        assert_eq!(after + overhead, fitted.report.compressed_token_count, "{what}");
        assert_eq!(before + overhead, fitted.report.original_token_count, "{what}");
        // the rows say what the plan says
        for (row, unit) in unit_rows.iter().zip(&fitted.plan.units) {
            let expected = match unit.action {
                UnitAction::Kept => RowAction::Kept,
                UnitAction::Dropped => RowAction::Dropped,
                UnitAction::Truncated => RowAction::Truncated,
                UnitAction::Replaced => RowAction::Replaced,
                UnitAction::Edited => RowAction::Edited,
            };
            assert_eq!(row.action, expected, "{what}: unit {:?}", row.unit);
            assert!(row.steps.iter().map(String::as_str).eq(unit.steps.iter().map(|s| &**s)), "{what}");
            assert_eq!(row.output.is_empty(), row.action == RowAction::Dropped, "{what}: {row:?}");
        }
        assert!(inspection.count(RowAction::Dropped) > 0, "{what}: a budget of 4,000 drops something");
    }
}

#[test]
fn summarized_units_are_told_apart_and_the_summary_is_labelled_with_its_step() {
    let (what, conversation, model) = transcripts().swap_remove(0);
    let target = target(model, 6_000);
    let pipeline = tightfit::presets::by_name("summarizing").unwrap();
    let fitted = Fitter::new().fit(&conversation, &target, Some(&pipeline)).unwrap();
    let inspection =
        Inspection::new(&conversation.messages, &fitted.plan, &fitted.report, &target.counter).unwrap();
    let first_summarized = inspection.rows.iter().position(|r| r.action == RowAction::Summarized);
    let summary = inspection.rows.iter().position(|r| r.action == RowAction::Inserted);
    let (Some(first_summarized), Some(summary)) = (first_summarized, summary) else {
        panic!("{what}: expected summarized units and a summary: {:?}", inspection.rows)
    };
    let row = &inspection.rows[summary];
    assert_eq!(row.steps[0], "summarize", "{what}");
    assert!(row.details[0].starts_with("written by summarize: summary of the "), "{what}: {:?}", row.details);
    assert!(row.tokens_after > 0 && row.tokens_before == 0 && row.input.is_empty(), "{what}");
    // the summary stands where the units it replaced were
    assert_eq!(summary + 1, first_summarized, "{what}");
}

#[test]
fn offloaded_units_are_told_apart_and_name_their_handles() {
    let (what, conversation, model) = transcripts().swap_remove(0);
    let target = target(model, 4_000);
    let store = MemoryStore::new();
    let fitted: Fitted<'_> = Fitter::new()
        .fit_with(&conversation, &target, None, Services::default().with_offload(&store))
        .unwrap();
    let inspection =
        Inspection::new(&conversation.messages, &fitted.plan, &fitted.report, &target.counter).unwrap();
    let offloaded: Vec<_> = inspection.rows.iter().filter(|r| r.action == RowAction::Offloaded).collect();
    assert!(!offloaded.is_empty(), "{what}: {:?}", fitted.report.offloaded);
    let handles: Vec<&str> = fitted.report.offloaded.iter().map(|o| o.handle.as_str()).collect();
    for row in offloaded {
        assert!(row.output.is_empty(), "{what}");
        assert!(
            !row.handles.is_empty() && row.handles.iter().all(|h| handles.contains(&h.as_str())),
            "{what}"
        );
    }
    // nothing is merely dropped when a store keeps it
    assert_eq!(inspection.count(RowAction::Dropped), 0, "{what}");
}

#[test]
fn a_plan_for_another_history_is_refused() {
    let all = transcripts();
    let (_, conversation, model) = &all[0];
    let target = target(model, 4_000);
    let fitted = Fitter::new().fit(conversation, &target, None).unwrap();
    let (_, other, _) = &all[1];
    let err = Inspection::new(&other.messages, &fitted.plan, &fitted.report, &target.counter).unwrap_err();
    assert!(matches!(err, PlanError::OtherInput { .. }), "{err}");
}

#[test]
fn the_page_escapes_what_the_conversation_says() {
    let hostile = r#"</script><img src=x onerror="alert(1)"><b>bold</b> & "quoted""#;
    let conversation = parse_str(
        &serde_json::json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": hostile, "name": "<i>mallory</i>"},
            {"role": "assistant", "content": "No."},
            {"role": "user", "content": "x".repeat(4_000)},
        ])
        .to_string(),
        FormatHint::Auto,
    )
    .unwrap();
    let target = target("gpt-4o", 1_100);
    let fitted = Fitter::new().fit(&conversation, &target, None).unwrap();
    let inspection =
        Inspection::new(&conversation.messages, &fitted.plan, &fitted.report, &target.counter).unwrap();
    let page = Page::new("<title>").with(Section::fitted("</h2><script>", &inspection)).to_document();
    // the page's own script and nothing else; no element from the conversation
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert_eq!(page.matches("</script>").count(), 1);
    for tag in ["<img", "<b>", "<i>", "<title><", "</h2><"] {
        assert!(!page.contains(tag), "{tag} came through");
    }
    assert!(page.contains(
        "&lt;/script&gt;&lt;img src=x onerror=\"alert(1)\"&gt;&lt;b&gt;bold&lt;/b&gt; &amp; \"quoted\""
    ));
    assert!(page.contains("&lt;i&gt;mallory&lt;/i&gt;"));
    // nothing is loaded from anywhere
    assert!(page.contains("default-src 'none'"));
    assert!(!page.contains(" src=\"") && !page.contains("<link"), "{page}");
}
