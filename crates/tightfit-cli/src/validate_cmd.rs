//! `tightfit validate`: the rule violations of each conversation, with message index and
//! reason; exit code 1 if there is any.

use std::io::Write;
use std::path::Path;

use serde_json::json;
use tightfit::format::{Format, FormatHint};
use tightfit::validate::validate;

use crate::input;

/// Checks every conversation of `file` against `provider`'s rules (the input's own format if
/// `None`). Returns `Ok(false)` if any breaks a rule or cannot be read.
pub fn run(file: &Path, provider: Option<Format>, hint: FormatHint, json: bool) -> anyhow::Result<bool> {
    let (name, records) = input::read(file)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let single = records.len() == 1;
    let mut ok = true;
    let mut checked = 0;
    let mut broken = 0;
    let mut providers: Vec<Format> = Vec::new();
    // plain messages are read in the format of the provider they are checked for
    let hint = match (hint, provider) {
        (FormatHint::Auto, Some(provider)) => FormatHint::Prefer(provider),
        (hint, _) => hint,
    };
    for record in &records {
        let conversation = match input::parse(record, hint) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("tightfit: {name}:{}: {e:#}", record.line);
                ok = false;
                continue;
            }
        };
        let provider = provider.unwrap_or(conversation.format);
        if !providers.contains(&provider) {
            providers.push(provider);
        }
        let violations = validate(&conversation.messages, provider);
        checked += 1;
        if !violations.is_empty() {
            broken += 1;
            ok = false;
        }
        for v in &violations {
            if json {
                let line = json!({"line": record.line, "index": v.index, "rule": format!("{:?}", v.rule), "reason": v.reason});
                writeln!(out, "{line}")?;
            } else if single {
                writeln!(out, "{v}")?;
            } else {
                writeln!(out, "{name}:{}: {v}", record.line)?;
            }
        }
    }
    if !json {
        let provider = providers.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(" and ");
        if broken == 0 {
            eprintln!("{checked} conversation(s) valid for {provider}");
        } else {
            eprintln!("{broken} of {checked} conversation(s) break the rules of {provider}");
        }
    }
    out.flush()?;
    Ok(ok)
}
