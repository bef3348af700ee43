//! Reading the conversations of an input file: one JSON document, or JSON Lines.

use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};

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
    Ok((name, records_of(bytes, by_extension)))
}

/// The conversations of an input, read on a thread of their own as they are needed: JSON
/// Lines are read a line at a time, so what is held at once is a few lines per worker, not
/// the file (see [`stream`]).
pub struct Stream {
    /// The input's name for messages (`<stdin>` or the path).
    pub name: String,
    records: Receiver<anyhow::Result<Record>>,
    /// How many records a batch holds at most.
    batch: usize,
}

impl Stream {
    /// The next batch of records, in input order: it waits for one, then takes what else is
    /// already read, up to the batch size, without waiting (so a slow producer on standard
    /// input gets each answer as soon as its line is in). `None` at the end of the input.
    ///
    /// # Errors
    ///
    /// When the input could not be read; the records before the failure came in earlier
    /// batches.
    pub fn next_batch(&mut self) -> anyhow::Result<Option<Vec<Record>>> {
        let Ok(first) = self.records.recv() else {
            return Ok(None);
        };
        let mut batch = vec![first?];
        while batch.len() < self.batch {
            match self.records.try_recv() {
                Ok(record) => batch.push(record?),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        Ok(Some(batch))
    }

    /// Whether the input holds exactly `first` and nothing more: waits for the next record
    /// or the end (a single conversation is reported in detail, not as a line of a file).
    /// Reads ahead by one record at most; the record read is kept for the next batch.
    pub fn only(&mut self, first: &mut Vec<Record>) -> anyhow::Result<bool> {
        if first.len() != 1 {
            return Ok(false);
        }
        match self.records.recv() {
            Ok(next) => {
                first.push(next?);
                Ok(false)
            }
            Err(_) => Ok(true),
        }
    }
}

/// Starts reading `path` (`-` for standard input) as [`read`] does, on a thread of its own.
///
/// JSON Lines (by the name's `.jsonl` or `.ndjson`, or a first non-blank line that is a
/// whole JSON document) are read a line at a time and handed over in batches of at most
/// `batch` records, at most `2 × batch` read ahead: memory is bounded by the longest lines
/// times the batch, not by the file. Anything else (one pretty-printed document, or JSON
/// Lines whose first line is broken) is read whole, as [`read`] reads it.
pub fn stream(path: &Path, batch: usize) -> anyhow::Result<Stream> {
    let batch = batch.max(1);
    let (name, source): (String, Box<dyn BufRead + Send>) = if path == Path::new("-") {
        ("<stdin>".to_string(), Box::new(BufReader::new(std::io::stdin())))
    } else {
        let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        (path.display().to_string(), Box::new(BufReader::new(file)))
    };
    let by_extension = path.extension().is_some_and(|e| e == "jsonl" || e == "ndjson");
    let (sender, records) = mpsc::sync_channel(batch);
    let what = name.clone();
    std::thread::Builder::new()
        .name("tightfit-input".into())
        .spawn(move || read_records(source, by_extension, &what, &sender))
        .context("cannot start the input reader")?;
    Ok(Stream { name, records, batch })
}

/// The reader thread: sends the records of `source` until the end, an error, or the
/// receiver hangs up.
fn read_records(
    mut source: Box<dyn BufRead + Send>,
    jsonl: bool,
    name: &str,
    out: &SyncSender<anyhow::Result<Record>>,
) {
    let mut number = 0;
    let mut head = Vec::new();
    let mut line = Vec::new();
    let mut lines_mode = jsonl;
    loop {
        line.clear();
        match source.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = out.send(Err(anyhow!(e).context(format!("cannot read {name}"))));
                return;
            }
        }
        number += 1;
        if !lines_mode {
            head.extend_from_slice(&line);
            if line.trim_ascii().is_empty() {
                continue;
            }
            // The first non-blank line decides: a whole document by itself means JSON Lines
            // (one line and nothing more is one record either way); else read it all.
            if serde_json::from_slice::<serde::de::IgnoredAny>(line.trim_ascii()).is_err() {
                if let Err(e) = source.read_to_end(&mut head) {
                    let _ = out.send(Err(anyhow!(e).context(format!("cannot read {name}"))));
                    return;
                }
                for record in records_of(head, false) {
                    if out.send(Ok(record)).is_err() {
                        return;
                    }
                }
                return;
            }
            lines_mode = true;
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if out.send(Ok(Record { line: number, text: utf8(bytes.to_vec(), "line") })).is_err() {
            return;
        }
    }
    if !lines_mode {
        // nothing but blank lines: one (empty) document, as `read` has it
        for record in records_of(head, false) {
            if out.send(Ok(record)).is_err() {
                return;
            }
        }
    }
}

/// The records of a whole input: JSON Lines when `jsonl` or when it looks like them, else
/// one document.
fn records_of(bytes: Vec<u8>, jsonl: bool) -> Vec<Record> {
    if jsonl || looks_like_json_lines(&String::from_utf8_lossy(&bytes)) {
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
    }
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

/// The model a conversation names: `--model` if given, else the request body's `model`;
/// `None` when neither names one (a fit to a bare `--budget`).
pub fn model_if_named<'r>(
    registry: &'r Registry,
    fixed: Option<&'r ModelInfo>,
    conversation: &Conversation,
) -> anyhow::Result<Option<&'r ModelInfo>> {
    match (fixed, conversation.request.as_ref().and_then(|r| r.model.as_deref())) {
        (Some(model), _) => Ok(Some(model)),
        (None, Some(name)) => Ok(Some(registry.lookup(name)?)),
        (None, None) => Ok(None),
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

/// A progress counter on standard error for conversations read as a stream (their number
/// unknown ahead), hidden unless standard error is a terminal.
pub fn progress_counter() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {pos} conversations {elapsed}") {
        bar.set_style(style);
    }
    bar
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
