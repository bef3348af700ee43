//! Fact retention: of the exact facts in what a fit removed or cut, the share still in what it
//! sends — in a summary verbatim, or recallable through a handle it names.
//!
//! Over the real agent trajectories of `../shared/data` and `../shared/data2`, each fitted to
//! 8k and 32k tokens with the `summarizing` preset (offloading into a store), beside two
//! baselines on the same conversations: the default ladder (`middle_out`: removed messages
//! leave nothing), and the summarizing run's removed messages replaced by the first line of
//! each (a "first lines" summary). Facts are those of the ledger rule
//! (`tightfit::summary::ledger`: paths, URLs, error names with their message, identifiers,
//! numbers of 3+ digits or with a unit), counted once per conversation, split by where they
//! were: the user's own words, tool calls and results, the assistant's words.
//!
//! ```sh
//! cargo run --release -p tightfit --example fact_retention
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use tightfit::fit::{FitError, Fitter, RunOptions, Services};
use tightfit::format::{parse_str, Conversation, Format, FormatHint};
use tightfit::message::{Message, Role};
use tightfit::models::Registry;
use tightfit::offload;
use tightfit::store::MemoryStore;
use tightfit::summary::ledger::{facts_of_messages, texts, Fact};
use tightfit::summary::SUMMARY_PREFIX;
use tightfit::{presets, Target};

/// Where a fact was.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    User,
    Tool,
    Assistant,
}

#[derive(Default, Clone, Copy)]
struct Tally {
    facts: [usize; 3],
    verbatim: [usize; 3],
    with_handles: [usize; 3],
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        for k in 0..3 {
            self.facts[k] += other.facts[k];
            self.verbatim[k] += other.verbatim[k];
            self.with_handles[k] += other.with_handles[k];
        }
    }
}

#[derive(Default)]
struct Row {
    conversations: usize,
    fitted: usize,
    within_budget: usize,
    summary_tokens: Vec<usize>,
    tally: Tally,
}

fn source_of(message: &Message) -> Source {
    match message.role {
        Role::User if message.is_tool_result() => Source::Tool,
        Role::User => Source::User,
        Role::Tool | Role::Function => Source::Tool,
        _ => Source::Assistant,
    }
}

/// The facts of a message, split into the assistant's words and its tool calls.
fn facts_by_source(message: &Message) -> Vec<(Source, Fact)> {
    let source = source_of(message);
    if source != Source::Assistant {
        return facts_of_messages([message]).into_iter().map(|f| (source, f)).collect();
    }
    let words = Message::text(Role::Assistant, message.text_content());
    let mut out: Vec<(Source, Fact)> =
        facts_of_messages([&words]).into_iter().map(|f| (Source::Assistant, f)).collect();
    let calls: Vec<String> = message.tool_calls().map(|c| c.arguments.to_json_string()).collect();
    let calls = Message::text(Role::Tool, calls.join("\n"));
    out.extend(facts_of_messages([&calls]).into_iter().map(|f| (Source::Tool, f)));
    out
}

/// Counts the facts of the messages not sent as they came, and which of them are in `sent`
/// (verbatim) or recallable.
fn tally(conversation: &Conversation, sent_as_is: &[bool], sent: &str, recallable: &HashSet<usize>) -> Tally {
    let mut t = Tally::default();
    let mut seen = HashSet::new();
    for (i, message) in conversation.messages.iter().enumerate() {
        if sent_as_is[i] {
            continue;
        }
        for (source, fact) in facts_by_source(message) {
            if !seen.insert(fact.text.clone()) {
                continue;
            }
            let k = source as usize;
            t.facts[k] += 1;
            let verbatim = sent.contains(&fact.text);
            t.verbatim[k] += verbatim as usize;
            t.with_handles[k] += (verbatim || recallable.contains(&i)) as usize;
        }
    }
    t
}

fn all_text(messages: &[Message]) -> String {
    messages.iter().flat_map(texts).collect::<Vec<_>>().join("\n")
}

fn agent_files(shared: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    for corpus in ["data", "data2"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(shared.join(corpus))
            .unwrap_or_else(|e| {
                panic!("{}: {e} (the shared corpus must sit beside the repository)", shared.display())
            })
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with("agent_") && name.ends_with(".jsonl")
            })
            .collect();
        found.sort();
        files.extend(found.into_iter().map(|p| (corpus.to_string(), p)));
    }
    files
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

fn main() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let registry = Registry::embedded();
    let summarizing = presets::by_name("summarizing").unwrap();
    let ladder = presets::ladder();
    println!("| corpus | budget | policy | conversations | within budget | user facts kept | tool facts kept | assistant facts kept | (verbatim only: user / tool) | summary tokens mean / max |");
    println!("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |");
    for corpus in ["data", "data2"] {
        for budget in [8_000, 32_000] {
            let mut rows: [Row; 3] = Default::default();
            for (_, file) in agent_files(&shared).into_iter().filter(|(c, _)| c == corpus) {
                let text = std::fs::read_to_string(&file).unwrap();
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let conversation = parse_str(line, FormatHint::Auto).unwrap();
                    let model =
                        if conversation.format == Format::Anthropic { "claude-sonnet-4-5" } else { "gpt-4o" };
                    let target = Target::for_model(registry.lookup(model).unwrap(), None).with_budget(budget);
                    let counter = &target.counter;
                    if counter.count(&conversation.messages, None).total <= budget {
                        continue; // nothing to remove
                    }
                    // summarizing, offloading
                    let store = MemoryStore::new();
                    let options = RunOptions::transform().with_budget(Some(budget));
                    let run = Fitter::new().run_with(
                        &conversation,
                        counter,
                        Some(&summarizing),
                        &options,
                        Services::default().with_offload(&store),
                    );
                    let Ok(fitted) = run else { continue };
                    let sent_as_is = sent_as_is_of(&conversation, &fitted.plan);
                    let out = fitted.clone().into_messages();
                    let sent = all_text(&out);
                    let mut recallable = HashSet::new();
                    for entry in &fitted.report.offloaded {
                        if sent.contains(&entry.handle) {
                            let back = offload::recall(&store, &entry.handle).unwrap();
                            recallable.extend(back.messages.into_iter().map(|(i, _)| i));
                        }
                    }
                    let row = &mut rows[0];
                    row.conversations += 1;
                    row.fitted += 1;
                    row.within_budget += (fitted.report.compressed_token_count <= budget) as usize;
                    for m in out.iter().filter(|m| m.text_content().starts_with(SUMMARY_PREFIX)) {
                        row.summary_tokens.push(counter.text_counter().count(&m.text_content()));
                    }
                    row.tally.add(&tally(&conversation, &sent_as_is, &sent, &recallable));

                    // first lines of the same removed messages, instead of the summary
                    let kept: Vec<Message> = out
                        .iter()
                        .filter(|m| !m.text_content().starts_with(SUMMARY_PREFIX))
                        .cloned()
                        .collect();
                    let mut first_lines = all_text(&kept);
                    for (i, m) in conversation.messages.iter().enumerate() {
                        if !sent_as_is[i] {
                            let whole = texts(m).join("\n");
                            first_lines.push('\n');
                            first_lines.push_str(whole.lines().find(|l| !l.trim().is_empty()).unwrap_or(""));
                        }
                    }
                    rows[2].conversations += 1;
                    rows[2].fitted += 1;
                    rows[2].tally.add(&tally(&conversation, &sent_as_is, &first_lines, &HashSet::new()));

                    // the default ladder (middle_out), held to the budget
                    rows[1].conversations += 1;
                    match Fitter::new().run(&conversation, counter, Some(&ladder), &RunOptions::fit(budget)) {
                        Ok(fitted) => {
                            let sent_as_is = sent_as_is_of(&conversation, &fitted.plan);
                            let out = fitted.into_messages();
                            rows[1].fitted += 1;
                            rows[1].within_budget += 1;
                            rows[1].tally.add(&tally(
                                &conversation,
                                &sent_as_is,
                                &all_text(&out),
                                &HashSet::new(),
                            ));
                        }
                        Err(FitError::CannotFit { .. }) => {}
                        Err(e) => panic!("{}: {e}", file.display()),
                    }
                }
            }
            for (name, row) in
                ["summarizing (+ offload)", "middle_out (ladder)", "first lines"].iter().zip(&rows)
            {
                let t = &row.tally;
                let summary = if row.summary_tokens.is_empty() {
                    "-".to_string()
                } else {
                    format!(
                        "{} / {}",
                        row.summary_tokens.iter().sum::<usize>() / row.summary_tokens.len(),
                        row.summary_tokens.iter().max().unwrap()
                    )
                };
                println!(
                    "| {corpus} | {}k | {name} | {} | {} | {} | {} | {} | {} / {} | {summary} |",
                    budget / 1000,
                    row.conversations,
                    // (the first-lines baseline is a measure, not a fit)
                    if *name == "first lines" {
                        "-".into()
                    } else {
                        percent(row.within_budget, row.conversations)
                    },
                    percent(t.with_handles[0], t.facts[0]),
                    percent(t.with_handles[1], t.facts[1]),
                    percent(t.with_handles[2], t.facts[2]),
                    percent(t.verbatim[0], t.facts[0]),
                    percent(t.verbatim[1], t.facts[1]),
                );
            }
        }
    }
}

/// Per input message: sent as it came.
fn sent_as_is_of(conversation: &Conversation, plan: &tightfit::Plan) -> Vec<bool> {
    let mut sent = vec![false; conversation.messages.len()];
    for entry in &plan.output {
        if let (Some(i), None) = (entry.input, &entry.message) {
            sent[i] = true;
        }
    }
    sent
}
