//! The ledger of exact facts: what a summary must carry verbatim, and what the fact-retention
//! benchmark counts.
//!
//! The rule, applied to each message's text (text parts, tool results, tool call arguments):
//!
//! | kind | what | example |
//! | --- | --- | --- |
//! | `url` | `http://` or `https://` up to a space, quote or bracket | `https://example.com/a?b=1` |
//! | `path` | a word with a `/` between name characters, or `name.ext` with a 1–5 letter extension (not a number, not a URL) | `src/app.py`, `setup.cfg` |
//! | `error` | a word ending in `Error` or `Exception` (capitalised), with the rest of its line up to 120 characters | `ValueError: day is out of range` |
//! | `identifier` | a word with `_`, `::` or a `.` between letters, camelCase inside a word, or letters and digits mixed (7+ characters) | `separability_matrix`, `m.Linear1D`, `call_00_abc` |
//! | `number` | 3 or more digits (with `.`/`,` groups), or a number with a unit | `12907`, `2024-02-29`, `128 ms` |
//!
//! Words are split on whitespace and trimmed of surrounding punctuation; each fact is kept once,
//! URLs and errors first, then the other kinds word by word, each kind in order of first
//! appearance. Deterministic; no network. Cost: one pass over the text with a
//! few compiled regular expressions.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;

use crate::message::{Arguments, Message, Part};

/// What sort of fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FactKind {
    /// A URL.
    Url,
    /// A file path.
    Path,
    /// An error name, with its message.
    Error,
    /// An identifier: a function, a variable, an id.
    Identifier,
    /// A number of 3+ digits, or with a unit.
    Number,
}

impl FactKind {
    /// Its name in a summary's ledger.
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Url => "urls",
            FactKind::Path => "paths",
            FactKind::Error => "errors",
            FactKind::Identifier => "identifiers",
            FactKind::Number => "numbers",
        }
    }

    /// Every kind, in the order a ledger lists them.
    pub const ALL: [FactKind; 5] =
        [FactKind::Error, FactKind::Path, FactKind::Url, FactKind::Identifier, FactKind::Number];
}

/// One exact fact.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fact {
    /// What sort.
    pub kind: FactKind,
    /// The fact, verbatim.
    pub text: String,
}

struct Patterns {
    url: Regex,
    error: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| Patterns {
        url: Regex::new(r#"https?://[^\s"'<>()\[\]{}`]+"#).expect("valid"),
        error: Regex::new(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception))\b([^\n]{0,120})").expect("valid"),
    })
}

/// The facts of `text`, each once (URLs and errors first, then the rest in order).
pub fn facts_of_text(text: &str) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    collect(text, &mut out, &mut seen);
    out
}

/// The facts of `messages`, in order, each once.
pub fn facts_of_messages<'m>(messages: impl IntoIterator<Item = &'m Message>) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for message in messages {
        for text in texts(message) {
            collect(&text, &mut out, &mut seen);
        }
    }
    out
}

/// The texts of a message a fact may sit in: its text, its tool results' text, its tool calls'
/// arguments (borrowed, but for arguments held as a JSON value).
pub fn texts(message: &Message) -> Vec<Cow<'_, str>> {
    fn of_parts<'m>(parts: &'m [Part], out: &mut Vec<Cow<'m, str>>) {
        for part in parts {
            match part {
                Part::Text(t) => out.push(Cow::Borrowed(&t.text)),
                Part::ToolCall(c) => out.push(match &c.arguments {
                    Arguments::Text(text) => Cow::Borrowed(text),
                    Arguments::Json(value) => Cow::Owned(value.to_string()),
                }),
                Part::ToolResult(r) => of_parts(&r.parts, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    of_parts(&message.parts, &mut out);
    out
}

fn collect(text: &str, out: &mut Vec<Fact>, seen: &mut HashSet<(FactKind, String)>) {
    let p = patterns();
    let mut push = |kind: FactKind, fact: &str| {
        let fact = fact.trim();
        if !fact.is_empty() && seen.insert((kind, fact.to_string())) {
            out.push(Fact { kind, text: fact.to_string() });
        }
    };
    // the regular expressions run only where their anchor is (most texts have neither)
    let has_url = text.contains("http");
    if has_url {
        for m in p.url.find_iter(text) {
            push(FactKind::Url, m.as_str().trim_end_matches(['.', ',', ';', ':']));
        }
    }
    if text.contains("Error") || text.contains("Exception") {
        for c in p.error.captures_iter(text) {
            // the message after `Name:`, not whatever follows the name (`RuntimeError(`)
            let rest = c.get(2).map_or("", |m| m.as_str()).trim_end();
            let rest = if rest.starts_with(':') { rest } else { "" };
            push(FactKind::Error, &format!("{}{rest}", &c[1]));
        }
    }
    // the rest, word by word (URLs taken out; JSON escapes and code punctuation split words)
    let rest: Cow<'_, str> =
        if has_url { Cow::Owned(p.url.replace_all(text, " ").into_owned()) } else { Cow::Borrowed(text) };
    let splits = |c: char| c.is_whitespace() || "\"'`\\()[]{}<>,;=:|".contains(c);
    let mut words = rest.split(splits).filter(|w| !w.is_empty()).peekable();
    while let Some(raw) = words.next() {
        let word = raw
            .trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '/' || c == '.'))
            .trim_end_matches('.');
        // a number with its unit: `128 ms`, `4.5GB`, `80%`
        if let Some(number) = number_with_unit(word, words.peek().copied()) {
            if number.1 {
                words.next();
            }
            push(FactKind::Number, &number.0);
            continue;
        }
        if word.len() < 3 {
            continue;
        }
        if let Some(kind) = classify(word) {
            push(kind, word);
        }
    }
}

/// The units a number may carry.
const UNITS: &[&str] = &[
    "ms", "µs", "us", "ns", "s", "sec", "secs", "seconds", "min", "minutes", "h", "hours", "days", "kb",
    "mb", "gb", "tb", "kib", "mib", "gib", "bytes", "tokens", "px", "%", "°c", "usd", "eur",
];

/// `word` (and the `next` word, when it is the unit) as a number with a unit, and whether the
/// unit was the next word.
fn number_with_unit(word: &str, next: Option<&str>) -> Option<(String, bool)> {
    let digits_end = word.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(word.len());
    let (number, unit) = word.split_at(digits_end);
    if number.is_empty() || !number.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if !unit.is_empty() {
        return UNITS.contains(&unit.to_lowercase().as_str()).then(|| (word.to_string(), false));
    }
    let next = next?.trim_matches(|c: char| c == '.' || c == ',' || c == ')');
    UNITS.contains(&next.to_lowercase().as_str()).then(|| (format!("{number} {next}"), true))
}

/// The extensions that make `name.ext` a file name rather than an attribute.
const FILE_EXTENSIONS: &[&str] = &[
    "py",
    "pyi",
    "ipynb",
    "rs",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "json",
    "jsonl",
    "yaml",
    "yml",
    "toml",
    "md",
    "rst",
    "txt",
    "cfg",
    "ini",
    "conf",
    "env",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "go",
    "java",
    "kt",
    "rb",
    "php",
    "cs",
    "swift",
    "sh",
    "bash",
    "zsh",
    "html",
    "htm",
    "css",
    "scss",
    "xml",
    "csv",
    "tsv",
    "sql",
    "lock",
    "log",
    "patch",
    "diff",
    "vue",
    "svelte",
    "lua",
    "r",
    "jl",
    "scala",
    "pl",
    "proto",
    "tf",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "pdf",
    "zip",
    "gz",
    "tar",
    "whl",
    "db",
    "sqlite",
    "so",
    "dll",
    "exe",
    "wasm",
    "mod",
    "sum",
    "gradle",
    "dockerfile",
    "tex",
    "bib",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "clj",
    "dart",
    "m",
    "mm",
    "asm",
    "s",
    "cmake",
    "mk",
    "bat",
    "ps1",
];

fn classify(word: &str) -> Option<FactKind> {
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let digits = word.chars().filter(|c| c.is_ascii_digit()).count();
    if word.contains('/') && letters > 0 && word.split('/').filter(|s| !s.is_empty()).count() >= 2 {
        return Some(FactKind::Path);
    }
    if letters == 0 {
        return (longest_digit_run(word) >= 3).then_some(FactKind::Number);
    }
    if let Some((name, ext)) = word.rsplit_once('.') {
        let file_like = name.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && !word.contains("..")
            && !ext.is_empty()
            && ext.len() <= 5
            && ext.starts_with(|c: char| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric());
        if file_like {
            // `setup.cfg` is a file; `m.Linear1D`, `sys.exit` are identifiers
            let ext = ext.to_ascii_lowercase();
            return Some(if FILE_EXTENSIONS.contains(&ext.as_str()) {
                FactKind::Path
            } else {
                FactKind::Identifier
            });
        }
    }
    if word.ends_with("Error") || word.ends_with("Exception") {
        return None; // an error name: the error rule took it, with its message
    }
    let camel = word.chars().zip(word.chars().skip(1)).any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    if word.contains('_') || word.contains("::") || camel || (digits > 0 && letters > 0 && word.len() >= 7) {
        return Some(FactKind::Identifier);
    }
    if longest_digit_run(word) >= 3 {
        return Some(FactKind::Number);
    }
    None
}

/// The longest run of ASCII digits in `word`.
fn longest_digit_run(word: &str) -> usize {
    word.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(FactKind, String)> {
        facts_of_text(text).into_iter().map(|f| (f.kind, f.text)).collect()
    }

    #[test]
    fn the_rule_finds_paths_urls_errors_identifiers_and_numbers() {
        let facts = kinds(
            "Traceback: ValueError: day is out of range for month\nsee https://docs.python.org/3/library/datetime.html, \
             edit src/date.py and setup.cfg; call separability_matrix(m.Pix2Sky_TAN()) on issue 12907 \
             (took 128 ms, id call_00_ttsd4nEcm)",
        );
        let has = |kind: FactKind, text: &str| facts.iter().any(|(k, t)| *k == kind && t == text);
        assert!(has(FactKind::Error, "ValueError: day is out of range for month"), "{facts:?}");
        assert!(has(FactKind::Url, "https://docs.python.org/3/library/datetime.html"), "{facts:?}");
        assert!(has(FactKind::Path, "src/date.py"), "{facts:?}");
        assert!(has(FactKind::Path, "setup.cfg"), "{facts:?}");
        assert!(has(FactKind::Identifier, "separability_matrix"), "{facts:?}");
        assert!(has(FactKind::Identifier, "m.Pix2Sky_TAN"), "{facts:?}");
        assert!(has(FactKind::Number, "12907"), "{facts:?}");
        assert!(has(FactKind::Number, "128 ms"), "{facts:?}");
        assert!(has(FactKind::Identifier, "call_00_ttsd4nEcm"), "{facts:?}");
        // plain words and short numbers are not facts
        assert!(kinds("the quick brown fox jumps over 12 lazy dogs").is_empty());
    }

    #[test]
    fn each_fact_once_in_order() {
        let facts = kinds("a/b.py then a/b.py then c/d.rs");
        assert_eq!(facts, vec![(FactKind::Path, "a/b.py".into()), (FactKind::Path, "c/d.rs".into())]);
    }
}
