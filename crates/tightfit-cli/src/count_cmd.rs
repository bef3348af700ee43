//! `tightfit count`: tokens per message, per role, in total, and as a share of the window.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use rayon::prelude::*;
use serde_json::{json, Value};
use tightfit::format::FormatHint;
use tightfit::models::{ModelInfo, Registry};
use tightfit::tokens::{ChatCounter, Count};

pub(crate) use tightfit::text::thousands;

use crate::input::{self, Record};

/// What `count` was asked to do.
pub struct Options {
    /// `--model`, or `None` to use each request's `model`.
    pub model: Option<String>,
    /// `--format`.
    pub hint: FormatHint,
    /// `--json`.
    pub json: bool,
    /// `--tokenizer`: a tokenizer file to count with (Llama 3's `tokenizer.model`, a
    /// HuggingFace `tokenizer.json`).
    pub tokenizer: Option<std::path::PathBuf>,
}

/// One counted conversation.
struct Counted<'r> {
    line: usize,
    id: Option<String>,
    model: &'r ModelInfo,
    roles: Vec<String>,
    count: Count,
    /// The text counter's name (`o200k_base`, `o200k_base*1.25`, `qwen2`, `hf:…`).
    counter: String,
    /// Why the count is an estimate, or `None` when it is the model's own tokenizer's.
    estimate: Option<String>,
}

/// Counts every conversation of `file`; returns `Ok(false)` when some could not be read
/// (each is reported on standard error with its line), after printing the others.
pub fn run(registry: &Registry, file: &Path, options: &Options) -> anyhow::Result<bool> {
    let (name, records) = input::read(file)?;
    let fixed_model = options.model.as_deref().map(|m| registry.lookup(m)).transpose()?;
    let counters =
        Counters { fixed: options.tokenizer.as_deref().map(file_counter).transpose()?, ..Default::default() };
    let progress = input::progress_bar(records.len());
    let results: Vec<Result<Counted, String>> = records
        .par_iter()
        .map(|record| {
            let result = count_record(registry, fixed_model, &counters, record, options.hint);
            progress.inc(1);
            result.map_err(|e| format!("{name}:{}: {e:#}", record.line))
        })
        .collect();
    progress.finish_and_clear();

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut ok = true;
    let counted: Vec<&Counted> = results
        .iter()
        .filter_map(|r| match r {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("tightfit: {e}");
                ok = false;
                None
            }
        })
        .collect();
    if options.json {
        for c in &counted {
            serde_json::to_writer(&mut out, &to_json(c))?;
            out.write_all(b"\n")?;
        }
    } else if records.len() == 1 {
        if let Some(c) = counted.first() {
            write_detail(c, &mut out)?;
        }
    } else {
        write_summary(&counted, &mut out)?;
    }
    out.flush()?;
    Ok(ok)
}

/// One counter per model, shared by the worker threads; or one for all, from `--tokenizer`.
#[derive(Default)]
struct Counters {
    fixed: Option<ChatCounter>,
    by_model: Mutex<HashMap<String, ChatCounter>>,
}

impl Counters {
    fn get(&self, model: &ModelInfo) -> ChatCounter {
        if let Some(counter) = &self.fixed {
            return counter.clone();
        }
        let mut map = self.by_model.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(model.qualified_id()).or_insert_with(|| ChatCounter::for_family(model.tokenizer)).clone()
    }
}

/// The counter of a tokenizer file: the exact BPE with the family's chat framing when the file
/// holds a vocabulary tightfit knows (Llama 3's `tokenizer.model` or `tokenizer.json`, Qwen's,
/// DeepSeek's), else the HuggingFace backend.
pub(crate) fn file_counter(path: &Path) -> anyhow::Result<ChatCounter> {
    match tightfit::tokens::recognize_file(path)? {
        Some(open) => Ok(ChatCounter::for_open(open)),
        None => hf_counter(path),
    }
}

/// A counter from a `tokenizer.json`, with OpenAI-style framing (what OpenAI-compatible
/// servers of open models bill closest to).
#[cfg(feature = "hf")]
fn hf_counter(path: &Path) -> anyhow::Result<ChatCounter> {
    let tokenizer = tightfit::tokens::HfTokenizer::from_file(path)?;
    Ok(ChatCounter::new(std::sync::Arc::new(tokenizer), tightfit::tokens::Framing::OpenAi))
}

#[cfg(not(feature = "hf"))]
fn hf_counter(path: &Path) -> anyhow::Result<ChatCounter> {
    anyhow::bail!(
        "cannot count with {}: this build has no HuggingFace tokenizer support (build with `--features hf`)",
        path.display()
    )
}

fn count_record<'r>(
    registry: &'r Registry,
    fixed_model: Option<&'r ModelInfo>,
    counters: &Counters,
    record: &Record,
    hint: FormatHint,
) -> anyhow::Result<Counted<'r>> {
    let conversation = input::parse_for_model(record, hint, registry, fixed_model)?;
    let request = conversation.request.as_ref();
    let model = input::model(registry, fixed_model, &conversation)?;
    let counter = counters.get(model);
    let count = counter.count(&conversation.messages, conversation.tools.as_deref());
    let id = request.and_then(|r| r.extra.get("id")).and_then(Value::as_str).map(String::from);
    let roles = conversation.messages.iter().map(|m| m.role_name().to_string()).collect();
    let estimate = counter.estimate_reason();
    let name = counter.text_counter().name().to_string();
    Ok(Counted { line: record.line, id, model, roles, count, counter: name, estimate })
}

fn share(part: usize, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Tokens per role, in order of first appearance.
fn by_role(c: &Counted) -> Vec<(String, usize)> {
    let mut totals: Vec<(String, usize)> = Vec::new();
    for (role, tokens) in c.roles.iter().zip(&c.count.per_message) {
        match totals.iter_mut().find(|(r, _)| r == role) {
            Some((_, total)) => *total += tokens,
            None => totals.push((role.clone(), *tokens)),
        }
    }
    totals
}

fn to_json(c: &Counted) -> Value {
    let total = c.count.total;
    let messages: Vec<Value> = c
        .roles
        .iter()
        .zip(&c.count.per_message)
        .enumerate()
        .map(|(index, (role, tokens))| {
            json!({"index": index, "role": role, "tokens": tokens, "percent": round(share(*tokens, total as u64))})
        })
        .collect();
    let roles: serde_json::Map<String, Value> =
        by_role(c).into_iter().map(|(role, tokens)| (role, json!(tokens))).collect();
    json!({
        "line": c.line,
        "id": c.id,
        "model": c.model.qualified_id(),
        "context_window": c.model.context_window,
        "counter": c.counter,
        "exact": c.estimate.is_none(),
        "estimate": c.estimate,
        "total": total,
        "window_percent": round(share(total, c.model.context_window)),
        "tools": c.count.tools,
        "priming": c.count.priming,
        "by_role": roles,
        "messages": messages,
    })
}

fn round(percent: f64) -> f64 {
    (percent * 100.0).round() / 100.0
}

fn write_detail(c: &Counted, out: &mut impl Write) -> std::io::Result<()> {
    let total = c.count.total;
    let window = c.model.context_window;
    let counted_with = match &c.estimate {
        None => "exact".to_string(),
        Some(reason) => format!("estimated: {reason}"),
    };
    writeln!(
        out,
        "{}  ·  window {} tokens  ·  {} ({counted_with})",
        c.model.qualified_id(),
        thousands(window),
        c.counter
    )?;
    writeln!(out, "{:>6}  {:<10} {:>10} {:>7}", "#", "role", "tokens", "share")?;
    for (index, (role, tokens)) in c.roles.iter().zip(&c.count.per_message).enumerate() {
        writeln!(
            out,
            "{index:>6}  {role:<10} {:>10} {:>6.1}%",
            thousands(*tokens as u64),
            share(*tokens, total as u64)
        )?;
    }
    let roles: Vec<String> = by_role(c)
        .into_iter()
        .map(|(role, tokens)| {
            format!("{role} {} ({:.1}%)", thousands(tokens as u64), share(tokens, total as u64))
        })
        .collect();
    writeln!(out, "by role: {}", roles.join("  ·  "))?;
    writeln!(out, "tool schemas {}  ·  reply priming {}", c.count.tools, c.count.priming)?;
    writeln!(
        out,
        "total {} tokens  ·  {:.1}% of the {}-token window",
        thousands(total as u64),
        share(total, window),
        thousands(window)
    )
}

fn write_summary(counted: &[&Counted], out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "{:>6}  {:<40} {:>8} {:>12} {:>8}", "line", "id", "messages", "tokens", "window")?;
    let (mut messages, mut tokens) = (0usize, 0usize);
    for c in counted {
        let id = c.id.as_deref().unwrap_or("-");
        let id: String = if id.chars().count() > 40 {
            id.chars().take(39).chain(['…']).collect()
        } else {
            id.to_string()
        };
        writeln!(
            out,
            "{:>6}  {:<40} {:>8} {:>12} {:>7.1}%",
            c.line,
            id,
            c.roles.len(),
            thousands(c.count.total as u64),
            share(c.count.total, c.model.context_window)
        )?;
        messages += c.roles.len();
        tokens += c.count.total;
    }
    writeln!(
        out,
        "{} conversations  ·  {} messages  ·  {} tokens",
        thousands(counted.len() as u64),
        thousands(messages as u64),
        thousands(tokens as u64)
    )
}
