//! Reading the conversations of an input file: one JSON document, or JSON Lines.

use std::io::{IsTerminal, Read};
use std::path::Path;

use anyhow::{anyhow, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use tightfit::format::{self, Conversation, Format, FormatHint};
use tightfit::models::{ModelInfo, Registry};

/// One conversation's text and where it came from.
pub struct Record {
    /// The 1-based line it starts on (1 for a single document).
    pub line: usize,
    /// Its JSON text, or why its bytes are not text (that record's error: the other lines of
    /// a JSON Lines file are read as usual).
    pub text: Result<String, String>,
}

/// `bytes` (a line, or the whole file) as text, or where they stop being UTF-8.
fn utf8(bytes: Vec<u8>, of: &str) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        format!("not UTF-8 text: an invalid byte at byte {} of the {of}", e.utf8_error().valid_up_to() + 1)
    })
}

/// Reads `path` (`-` for standard input) into records.
///
/// A file is JSON Lines when its name ends in `.jsonl` or `.ndjson`, or when it is not one
/// JSON document but its first line is; blank lines are skipped. Otherwise it is one document.
pub fn read(path: &Path) -> anyhow::Result<(String, Vec<Record>)> {
    let (name, bytes) = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).context("cannot read standard input")?;
        ("<stdin>".to_string(), bytes)
    } else {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        (path.display().to_string(), bytes)
    };
    let by_extension = path.extension().is_some_and(|e| e == "jsonl" || e == "ndjson");
    let records = if by_extension || looks_like_json_lines(&String::from_utf8_lossy(&bytes)) {
        bytes
            .split(|&b| b == b'\n')
            .enumerate()
            .filter(|(_, line)| !line.trim_ascii().is_empty())
            .map(|(i, line)| {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                Record { line: i + 1, text: utf8(line.to_vec(), "line") }
            })
            .collect()
    } else {
        vec![Record { line: 1, text: utf8(bytes, "file") }]
    };
    Ok((name, records))
}

/// Whether `text` is several JSON documents, one per line, rather than one document: it is
/// not one document, and one of its first three lines is a whole document by itself (so a
/// broken first line does not hide the good ones).
fn looks_like_json_lines(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(3).collect();
    lines.len() >= 2
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
        && lines.iter().any(|line| serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok())
}

/// Reads one record as a conversation; a syntax error names the line of the file.
pub fn parse(record: &Record, hint: FormatHint) -> anyhow::Result<Conversation> {
    format::parse_str(text(record)?, hint).map_err(|e| located(e, record))
}

/// Reads one record as a conversation for its model (`fixed`, else the request body's
/// `model`): messages whose shape decides no format are read in the one the model's API takes
/// (a `claude-*` body of plain text is Anthropic's).
pub fn parse_for_model(
    record: &Record,
    hint: FormatHint,
    registry: &Registry,
    fixed: Option<&ModelInfo>,
) -> anyhow::Result<Conversation> {
    let value = format::read_json(text(record)?).map_err(|e| located(e, record))?;
    let hint = match hint {
        FormatHint::Auto => {
            let named = || value.get("model").and_then(Value::as_str).and_then(|m| registry.lookup(m).ok());
            match fixed.or_else(named) {
                Some(model) if model.speaks_anthropic() => FormatHint::Prefer(Format::Anthropic),
                Some(model) if model.speaks_gemini() => FormatHint::Prefer(Format::Gemini),
                _ => FormatHint::Auto,
            }
        }
        other => other,
    };
    format::parse_value(value, hint).map_err(|e| located(e, record))
}

/// A record's text, or its error.
fn text(record: &Record) -> anyhow::Result<&str> {
    record.text.as_deref().map_err(|reason| anyhow!("{reason}"))
}

/// An error of a record, a syntax error at the line of the file.
fn located(error: format::FormatError, record: &Record) -> anyhow::Error {
    match error {
        // a JSON Lines record's own line 1 is the file's line `record.line`
        format::FormatError::Syntax { line, column, reason } => {
            anyhow!("invalid JSON at line {}, column {column}: {reason}", record.line + line - 1)
        }
        other => anyhow!(other),
    }
}

/// The model a conversation is for: `--model` if given, else the request body's `model`.
pub fn model<'r>(
    registry: &'r Registry,
    fixed: Option<&'r ModelInfo>,
    conversation: &Conversation,
) -> anyhow::Result<&'r ModelInfo> {
    if let Some(model) = fixed {
        return Ok(model);
    }
    let name = conversation
        .request
        .as_ref()
        .and_then(|r| r.model.as_deref())
        .ok_or_else(|| anyhow!("no model: pass --model, or give a request body with `model`"))?;
    Ok(registry.lookup(name)?)
}

/// A progress bar on standard error for `len` conversations, hidden unless standard error is
/// a terminal and there are several.
pub fn progress_bar(len: usize) -> ProgressBar {
    if len < 2 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} conversations {eta}") {
        bar.set_style(style);
    }
    bar
}
