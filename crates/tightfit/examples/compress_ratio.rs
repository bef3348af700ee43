//! Text compression on real transcripts: how much `compress_text` with the built-in scorer
//! keeps, how fast it runs, and whether the exact facts survive.
//!
//! The texts: the tool results of the mini-SWE-agent trajectories
//! (`../shared/data/agent_mini_swe_deepseek.jsonl`: shell output, source files, test runs) and
//! the user and assistant texts of the aider sessions (`../shared/data/chat_aider_sessions.jsonl`:
//! requests, explanations, SEARCH/REPLACE edits), each compressed alone as the step compresses
//! one text part: those longer than `min_chars` (500) characters; and, for prose, the user and
//! assistant texts of the mini-SWE-agent trajectories (the task, the model's reasoning between
//! commands) at every length; and from the second corpus (`../shared/data2`), the tool
//! results of the OpenHands runs and the texts of the Claude Code sessions (Anthropic blocks).
//! For each setting: how many
//! of those texts had words to drop, the share of words kept, o200k_base tokens before and
//! after, the time per KB of text (the compression only, one thread, after a warm-up that
//! builds the scorer's table), and the share of the ledger's facts (`facts_of_text` of each
//! original: paths, URLs, identifiers, numbers, error messages) found verbatim in the
//! compressed text (or, for a fact the ledger writes in its own form, among the compressed
//! text's facts), which must be 100%.
//!
//! ```sh
//! cargo run --release -p tightfit --example compress_ratio
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tightfit::format::{parse_str, FormatHint};
use tightfit::message::{Part, Role};
use tightfit::steps::CompressText;
use tightfit::summary::ledger::facts_of_text;
use tightfit::tokens::{OpenAiEncoding, TokenCounter};

/// The texts of one corpus file (`data/...` or `data2/...`) a step would compress: tool
/// results, or user and assistant texts.
fn texts(file: &str, tool_results: bool) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(file);
    let data = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (the shared corpus must sit beside the repository)", path.display())
    });
    let mut out = Vec::new();
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let conversation = parse_str(line, FormatHint::Auto).expect("a conversation");
        for message in &conversation.messages {
            let result = matches!(message.role, Role::Tool | Role::Function);
            for part in &message.parts {
                match part {
                    Part::Text(t) if result == tool_results && !message.role.is_instruction() => {
                        out.push(t.text.clone())
                    }
                    Part::ToolResult(r) if tool_results => {
                        out.extend(r.parts.iter().filter_map(|p| match p {
                            Part::Text(t) => Some(t.text.clone()),
                            _ => None,
                        }))
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

#[derive(Default)]
struct Row {
    long: usize,
    compressed: usize,
    words: usize,
    kept: usize,
    tokens: usize,
    tokens_after: usize,
    bytes: usize,
    time: Duration,
    facts: usize,
    facts_kept: usize,
}

fn measure(texts: &[String], step: &CompressText, counter: &OpenAiEncoding) -> Row {
    let mut row = Row::default();
    for text in texts.iter().filter(|t| t.chars().count() > step.min_chars) {
        row.long += 1;
        row.bytes += text.len();
        let start = Instant::now();
        let out = step.compress(text, counter).expect("the built-in scorer scores every word");
        row.time += start.elapsed();
        let after = match &out {
            Some(c) => {
                row.compressed += 1;
                row.words += c.words;
                row.kept += c.kept;
                c.text.as_str()
            }
            None => {
                let words = text.split_whitespace().count();
                row.words += words;
                row.kept += words;
                text.as_str()
            }
        };
        row.tokens += counter.count(text);
        row.tokens_after += counter.count(after);
        // verbatim, or (a fact the ledger writes in its own form, `2.4 s` of `2.4\ns`) again
        // a fact of the compressed text
        let facts = facts_of_text(text);
        let mut facts_after = None;
        row.facts += facts.len();
        row.facts_kept += facts
            .iter()
            .filter(|f| {
                after.contains(f.text.as_str())
                    || facts_after.get_or_insert_with(|| facts_of_text(after)).contains(f)
            })
            .count();
    }
    row
}

fn percent(part: usize, whole: usize) -> String {
    format!("{:.1}%", 100.0 * part as f64 / whole.max(1) as f64)
}

fn main() {
    let counter = OpenAiEncoding::O200kBase;
    // the scorer's table is built once per process: not part of the timings
    let _ = CompressText { min_chars: 0, ..CompressText::default() }
        .compress("a warm-up text of a few words for the table", &counter);
    let corpora = [
        ("mini-SWE-agent tool results", texts("data/agent_mini_swe_deepseek.jsonl", true)),
        ("aider user and assistant texts", texts("data/chat_aider_sessions.jsonl", false)),
        ("mini-SWE-agent user and assistant texts", texts("data/agent_mini_swe_deepseek.jsonl", false)),
        ("OpenHands tool results (data2)", texts("data2/agent_openhands.jsonl", true)),
        (
            "Claude Code user and assistant texts (data2)",
            texts("data2/agent_claude_code_sessions_anthropic.jsonl", false),
        ),
    ];
    let all_lengths = |step: CompressText| CompressText { min_chars: 0, ..step };
    let settings = [
        (0, "rate 0.5", CompressText::default()),
        (0, "rate 0.3", CompressText::rate(0.3)),
        (
            0,
            "rate 0.5, keep_code_lines: false",
            CompressText { keep_code_lines: false, ..CompressText::default() },
        ),
        (0, "target_tokens 256", CompressText::tokens(256)),
        (1, "rate 0.5", CompressText::default()),
        (1, "rate 0.3", CompressText::rate(0.3)),
        (
            1,
            "rate 0.5, keep_code_lines: false",
            CompressText { keep_code_lines: false, ..CompressText::default() },
        ),
        (1, "target_tokens 256", CompressText::tokens(256)),
        (2, "rate 0.5, min_chars 0", all_lengths(CompressText::default())),
        (2, "rate 0.3, min_chars 0", all_lengths(CompressText::rate(0.3))),
        (3, "rate 0.5", CompressText::default()),
        (3, "rate 0.3", CompressText::rate(0.3)),
        (4, "rate 0.5", CompressText::default()),
        (4, "rate 0.3", CompressText::rate(0.3)),
    ];
    println!("| texts | setting | texts over min_chars | compressed | words kept | tokens before → after | tokens kept | µs per KB | ledger facts kept |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut facts, mut kept) = (0, 0);
    for (corpus, setting, step) in &settings {
        let (name, texts) = &corpora[*corpus];
        let row = measure(texts, step, &counter);
        facts += row.facts;
        kept += row.facts_kept;
        let per_kb = row.time.as_secs_f64() * 1e6 / (row.bytes as f64 / 1024.0);
        println!(
            "| {name} | {setting} | {} | {} | {} | {} → {} | {} | {per_kb:.0} | {} of {} ({}) |",
            row.long,
            row.compressed,
            percent(row.kept, row.words),
            row.tokens,
            row.tokens_after,
            percent(row.tokens_after, row.tokens),
            row.facts_kept,
            row.facts,
            percent(row.facts_kept, row.facts),
        );
        assert_eq!(row.facts_kept, row.facts, "{name}, {setting}: a fact was lost");
    }
    println!("\nledger facts kept over every row: {kept} of {facts} ({})", percent(kept, facts));
}
