//! `tightfit replay`: saved plans applied to the input they were made for, giving the fit's
//! output byte for byte without fitting (the engine's [`Plan::replay`]).

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Context};
use serde_json::json;

use tightfit::format::{self, Conversation, Format, FormatHint};
use tightfit::Plan;

use crate::input::{self, Record};

/// Replays the plans of `plan_file` on the conversations of `input_file`, in order, writing
/// each output as `fit` wrote it (to `output`, or standard output). Returns `Ok(false)` when a
/// conversation had no plan (its line becomes an error record) or plans were left over.
///
/// Cost: each conversation is parsed and fingerprinted once; the messages a plan kept are
/// written from the input, the others read back from the plan. Nothing is counted.
pub fn run(plan_file: &Path, input_file: &Path, output: Option<&Path>) -> anyhow::Result<bool> {
    let plans = read_plans(plan_file)?;
    let mut input = input::stream(input_file, 64)?;
    let name = input.name.clone();
    let mut out: Box<dyn Write> = match output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut batch = input.next_batch()?.unwrap_or_default();
    let single = input.only(&mut batch)?;
    let mut plans = plans.into_iter().peekable();
    let mut ok = true;
    loop {
        for record in &batch {
            let result = match plans.peek() {
                Some(plan) => replay(plan, record),
                None => Err(Unplanned::Other(anyhow!("no plan left for it (the plans ran out)"))),
            };
            match result {
                Ok(text) => {
                    plans.next();
                    out.write_all(text.as_bytes())?;
                    out.write_all(b"\n")?;
                }
                Err(e) => {
                    ok = false;
                    if matches!(e, Unplanned::Broken(_)) {
                        // the plan itself cannot be used: the next conversation gets the next one
                        plans.next();
                    }
                    let e = format!("{:#}", e.error());
                    eprintln!("tightfit: {name}:{}: {e}", record.line);
                    if !single {
                        // the output stays line for line with the input, as `fit`'s does
                        serde_json::to_writer(
                            &mut *out,
                            &json!({"tightfit_error": {"line": record.line, "error": e}}),
                        )?;
                        out.write_all(b"\n")?;
                    }
                }
            }
        }
        out.flush()?;
        match input.next_batch()? {
            Some(next) => batch = next,
            None => break,
        }
    }
    let left = plans.count();
    if left > 0 {
        ok = false;
        eprintln!(
            "tightfit: {}: {left} plan{} left over: no conversation of {name} matched {}",
            plan_file.display(),
            if left == 1 { "" } else { "s" },
            if left == 1 { "it" } else { "them" }
        );
    }
    Ok(ok)
}

/// Why a conversation was not replayed: the next plan is for another conversation, or the
/// plan cannot be used at all.
enum Unplanned {
    /// Not this conversation's plan (or the conversation cannot be read).
    Other(anyhow::Error),
    /// The plan is malformed.
    Broken(anyhow::Error),
}

impl Unplanned {
    fn error(&self) -> &anyhow::Error {
        match self {
            Unplanned::Other(e) | Unplanned::Broken(e) => e,
        }
    }
}

/// `plan` applied to `record`: the output's text, as `fit` writes it.
fn replay(plan: &Plan, record: &Record) -> Result<String, Unplanned> {
    let format: Format =
        plan.format.parse().map_err(|reason| Unplanned::Broken(anyhow!("the plan's format: {reason}")))?;
    let conversation = input::parse(record, FormatHint::Exactly(format)).map_err(Unplanned::Other)?;
    let messages = plan.replay(&conversation.messages).map_err(|e| match e {
        tightfit::plan::PlanError::OtherInput { .. } => Unplanned::Other(anyhow!(e)),
        other => Unplanned::Broken(anyhow!("the plan is broken: {other}")),
    })?;
    let messages = messages.into_iter().map(std::borrow::Cow::into_owned).collect();
    let output = Conversation { messages, ..conversation };
    Ok(format::to_string(&output, output.format))
}

/// The plans of `path`: one JSON document, or one per line; a line that is not a plan is an
/// error naming it.
fn read_plans(path: &Path) -> anyhow::Result<Vec<Plan>> {
    let (name, records) = input::read(path)?;
    records
        .iter()
        .map(|record| {
            let text =
                record.text.as_deref().map_err(|reason| anyhow!("{name}:{}: {reason}", record.line))?;
            serde_json::from_str(text).map_err(|e| anyhow!("{name}:{}: not a plan: {e}", record.line))
        })
        .collect()
}
