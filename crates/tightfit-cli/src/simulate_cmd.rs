//! `tightfit simulate`: replays conversations turn by turn through several policies and
//! prints what each would send and what the provider would bill, one row per policy.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context};
use tightfit::fit::Target;
use tightfit::format::{Conversation, FormatHint};
use tightfit::models::Registry;
use tightfit::simulate::{self, PolicyRow, PolicySpec, Pricing, Stream};
use tightfit::units::{message_ends, turn_ends};

use crate::count_cmd;
use crate::input;

/// What `simulate` was asked to do.
pub struct Options {
    /// `--model`.
    pub model: Option<String>,
    /// `--budget`.
    pub budget: Option<usize>,
    /// `--allow-over-window`.
    pub allow_over_window: bool,
    /// `--policy`, each given; every policy when empty.
    pub policies: Vec<String>,
    /// `--concat`: all conversations back to back as one stream.
    pub concat: bool,
    /// `--line`: only this line (1-based) of each file.
    pub line: Option<usize>,
    /// `--from`: the first request has at least this many messages.
    pub from: usize,
    /// `--to`: the last request has at most this many messages.
    pub to: Option<usize>,
    /// `--turns request`: turns end only where a caller asks the model, instead of after
    /// every message.
    pub by_request: bool,
    /// `--json`.
    pub json: bool,
    /// `--svg`.
    pub svg: Option<PathBuf>,
    /// `--format`.
    pub hint: FormatHint,
}

/// Runs the simulation and prints the table (or JSON); `Ok(false)` when one of tightfit's
/// own policies sent a request over budget, invalid, or removed messages without a trace.
pub fn run(registry: &Registry, files: &[PathBuf], options: &Options) -> anyhow::Result<bool> {
    let policies: Vec<PolicySpec> = if options.policies.is_empty() {
        PolicySpec::all()
    } else {
        options.policies.iter().map(|p| PolicySpec::parse(p)).collect::<Result<_, _>>()?
    };
    // read by their shape (or --format), not by the model: a stream is replayed as it was
    // recorded, whichever model's prices it is billed at
    let conversations = read_all(files, options)?;
    let model_name = match &options.model {
        Some(m) => m.clone(),
        None => conversations
            .first()
            .and_then(|c| c.request.as_ref())
            .and_then(|r| r.model.clone())
            .ok_or_else(|| anyhow!("no model: pass --model, or give request bodies with `model`"))?,
    };
    let model = registry.lookup(&model_name)?;
    let mut target = Target::for_model(model, None);
    if let Some(budget) = options.budget {
        Target::check_budget(model, budget, options.allow_over_window)?;
        target = target.with_budget(budget);
    }
    let pricing = Pricing::of(model).ok_or_else(|| {
        anyhow!("the registry has no input price for {}; add one with --models-file", model.qualified_id())
    })?;
    let streams = streams(conversations, options);
    if streams.iter().all(|s| s.ends.is_empty()) {
        bail!("no turn to replay (check --from and --to)");
    }
    let turns: usize = streams.iter().map(|s| s.ends.len()).sum();
    let progress = input::progress_bar(turns * policies.len());
    let mut rows = Vec::new();
    for policy in &policies {
        let mut merged: Option<PolicyRow> = None;
        for stream in &streams {
            let row = simulate::run(stream, policy, &target, &pricing, &mut || progress.inc(1))?;
            merged = Some(match merged {
                None => row,
                Some(m) => m.merge(row),
            });
        }
        rows.extend(merged);
    }
    progress.finish_and_clear();

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if options.json {
        let report = serde_json::json!({
            "model": model.qualified_id(),
            "budget": target.budget,
            "streams": streams.len(),
            "turns": turns,
            "policies": rows.iter().map(|r| {
                let mut v = serde_json::to_value(r).expect("rows are plain data");
                v.as_object_mut().map(|o| o.remove("per_turn"));
                v
            }).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(
            out,
            "{} · budget {} tokens · {} stream{} · {} turns",
            model.qualified_id(),
            thousands(target.budget),
            streams.len(),
            if streams.len() == 1 { "" } else { "s" },
            thousands(turns)
        )?;
        write_table(&mut out, &rows)?;
    }
    if let Some(path) = &options.svg {
        crate::simulate_svg::draw(path, &rows, target.budget)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    // tightfit's own policies keep their promises, or the exit code says so
    let broken = policies
        .iter()
        .zip(&rows)
        .filter(|(p, _)| p.promises_traces())
        .any(|(_, r)| r.over_budget > 0 || r.invalid > 0 || r.removed_without_trace > 0 || r.failed > 0);
    Ok(!broken)
}

fn read_all(files: &[PathBuf], options: &Options) -> anyhow::Result<Vec<Conversation>> {
    let mut conversations = Vec::new();
    for file in files {
        let (name, records) = input::read(file)?;
        for record in &records {
            if options.line.is_some_and(|line| line != record.line) {
                continue;
            }
            conversations
                .push(input::parse(record, options.hint).with_context(|| format!("{name}:{}", record.line))?);
        }
    }
    if conversations.is_empty() {
        bail!("no conversation to replay{}", if options.line.is_some() { " at that --line" } else { "" });
    }
    Ok(conversations)
}

/// The streams to replay: each conversation, or all of them back to back with `--concat`;
/// requests between `--from` and `--to` messages.
fn streams(conversations: Vec<Conversation>, options: &Options) -> Vec<Stream> {
    let conversations = if options.concat {
        let mut all = conversations.into_iter();
        let mut first = all.next().expect("at least one conversation");
        for next in all {
            first.messages.extend(next.messages);
        }
        vec![first]
    } else {
        conversations
    };
    conversations
        .into_iter()
        .map(|conversation| {
            let ends = if options.by_request {
                turn_ends(&conversation.messages)
            } else {
                message_ends(&conversation.messages)
            };
            let ends = ends
                .into_iter()
                .filter(|&e| e >= options.from && options.to.is_none_or(|to| e <= to))
                .collect();
            Stream { conversation, ends }
        })
        .collect()
}

fn write_table(out: &mut impl Write, rows: &[PolicyRow]) -> anyhow::Result<()> {
    let header = [
        "policy", "turns", "mean tok", "max tok", "util", "reuse", "cached", "$ total", "$/turn", "cuts",
        "untraced", "over", "invalid", "µs/turn",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.policy.clone(),
                thousands(r.turns),
                thousands(r.mean_tokens.round() as usize),
                thousands(r.max_tokens),
                format!("{:.1}%", r.utilisation * 100.0),
                format!("{:.1}%", r.prefix_reuse * 100.0),
                format!("{:.1}%", r.cached_share * 100.0),
                format!("{:.3}", r.dollars),
                format!("{:.5}", r.dollars_per_turn),
                match r.compactions {
                    Some(c) => format!("{} ({c})", r.cuts),
                    None => r.cuts.to_string(),
                },
                r.removed_without_trace.to_string(),
                r.over_budget.to_string(),
                r.invalid.to_string()
                    + &if r.failed > 0 { format!(" +{} failed", r.failed) } else { String::new() },
                format!("{:.0}", r.micros_per_turn),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            body.iter()
                .map(|row| row[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c == 0 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    writeln!(out, "{}", line(header.iter().map(|h| h.to_string()).collect()))?;
    for row in body {
        writeln!(out, "{}", line(row))?;
    }
    for r in rows.iter().filter(|r| r.error.is_some()) {
        writeln!(out, "{}: {}", r.policy, r.error.as_deref().unwrap_or_default())?;
    }
    Ok(())
}

fn thousands(n: usize) -> String {
    count_cmd::thousands(n as u64)
}
