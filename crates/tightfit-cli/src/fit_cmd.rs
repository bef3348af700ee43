//! `tightfit fit`: the fitted history on standard output (or a file), in the input's format;
//! the report on standard error.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;

use tightfit::fit::{Fitter, Services, Target};
use tightfit::format::{self, Conversation, FormatHint};
use tightfit::models::{ModelInfo, Registry};
use tightfit::pipeline::Pipeline;
use tightfit::store::Store;
use tightfit::summary::Summarizer;
use tightfit::tokens::ChatCounter;
use tightfit::{Plan, Report};

use crate::count_cmd::thousands;
use crate::input::{self, Record};

/// What to fit for, and with what: the options `fit` and `inspect` share.
pub struct Fitting {
    /// `--model`, or `None` to use each request's `model`.
    pub model: Option<String>,
    /// `--budget`: tokens, instead of the model's window minus the reserved output. Without a
    /// model (no `--model`, no `model` in the request) it is counted with `o200k_base`.
    pub budget: Option<usize>,
    /// `--tokenizer`: the counter of a tokenizer file, counting instead of the model's.
    pub counter: Option<ChatCounter>,
    /// `--allow-over-window`: a budget past the model's input limit is not an error.
    pub allow_over_window: bool,
    /// `--format`.
    pub hint: FormatHint,
    /// `--store`: what the steps remove or cut is offloaded into this store, and the output
    /// names its handles (`tightfit recall HANDLE --store F` gives it back).
    pub store: Option<Arc<dyn Store>>,
    /// `--summarizer-url` and `--summarizer-model`: what writes the `summarize` step's
    /// summaries (the extractive summarizer when `None`, or when it fails).
    pub summarizer: Option<Arc<dyn Summarizer>>,
}

/// What `fit` was asked to do.
pub struct Options {
    /// What to fit for, and with what.
    pub fitting: Fitting,
    /// `--output`: where the fitted histories go (standard output if `None`).
    pub output: Option<PathBuf>,
    /// `--report json`.
    pub json_report: bool,
    /// `--plan`: where the plans go, one JSON object per conversation.
    pub plan: Option<PathBuf>,
    /// `--on-error keep`: a JSON Lines line that cannot be fitted is written as it came,
    /// instead of an error record.
    pub keep_failed: bool,
}

struct Fitted {
    line: usize,
    /// The request body's `id`, if it has one.
    id: Option<Value>,
    text: String,
    report: Report,
    plan: Plan,
}

/// How many conversations a batch holds per worker thread: enough to keep every worker
/// busy while one finishes a long conversation, few enough that memory stays a few lines per
/// worker.
const BATCH_PER_WORKER: usize = 4;

/// Fits every conversation of `file`; returns `Ok(false)` when some could not be fitted (each
/// reported on standard error with its line; the others are still written). Of JSON Lines,
/// output line k is always input line k's: a line that failed is an error record
/// (`{"tightfit_error": {"line", "error"}}`) or, with `--on-error keep`, the line as it came;
/// a closing line on standard error sums the file up.
///
/// JSON Lines are streamed: read a line at a time, fitted in batches of
/// [`BATCH_PER_WORKER`] lines per worker on all cores, and each batch written (in input
/// order) and flushed before the next is taken. Memory is bounded by the longest lines times
/// the batch, not by the file, and the first answers come out while the input still comes in.
pub fn run(registry: &Registry, pipeline: &Pipeline, file: &Path, options: &Options) -> anyhow::Result<bool> {
    let fixed_model = options.fitting.fixed_model(registry)?;
    let mut input = input::stream(file, rayon::current_num_threads() * BATCH_PER_WORKER)?;
    let name = input.name.clone();
    let mut out: Box<dyn Write> = match &options.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut plans: Option<Box<dyn Write>> = match &options.plan {
        Some(path) => Some(Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
        ))),
        None => None,
    };
    let mut batch = input.next_batch()?.unwrap_or_default();
    let single = input.only(&mut batch)?;
    let progress = if single { indicatif::ProgressBar::hidden() } else { input::progress_counter() };
    let mut totals = Totals::default();
    let mut ok = true;
    loop {
        let results: Vec<Result<Fitted, String>> = batch
            .par_iter()
            .map_init(Fitter::new, |fitter, record| {
                let result = fit_record(fitter, registry, fixed_model, pipeline, record, &options.fitting);
                progress.inc(1);
                result.map_err(|e| format!("{e:#}"))
            })
            .collect();
        for (record, result) in batch.iter().zip(&results) {
            ok &=
                write_result(record, result, &name, single, options, &mut out, plans.as_mut(), &mut totals)?;
        }
        out.flush()?;
        if let Some(plans) = plans.as_mut() {
            plans.flush()?;
        }
        match input.next_batch()? {
            Some(next) => batch = next,
            None => break,
        }
    }
    progress.finish_and_clear();
    if !single {
        let mut err = std::io::stderr().lock();
        let Totals { conversations, failed, before, after } = totals;
        let done = conversations - failed;
        if options.json_report {
            let summary = json!({"conversations": conversations, "fitted": done, "failed": failed,
                "tokens_before": before, "tokens_after": after});
            writeln!(err, "{}", json!({ "summary": summary }))?;
        } else {
            writeln!(
                err,
                "{name}: {} conversations, {} fitted ({} -> {} tokens), {failed} failed",
                thousands(conversations as u64),
                thousands(done as u64),
                thousands(before as u64),
                thousands(after as u64),
            )?;
        }
    }
    Ok(ok)
}

/// What the closing summary line adds up.
#[derive(Default)]
struct Totals {
    conversations: usize,
    failed: usize,
    before: usize,
    after: usize,
}

/// Writes one record's result: the fitted text (or, of JSON Lines, its error record or the
/// line as it came), its plan, its report. Returns whether it was fitted.
#[allow(clippy::too_many_arguments)]
fn write_result(
    record: &Record,
    result: &Result<Fitted, String>,
    name: &str,
    single: bool,
    options: &Options,
    out: &mut dyn Write,
    plans: Option<&mut Box<dyn Write>>,
    totals: &mut Totals,
) -> anyhow::Result<bool> {
    let mut err = std::io::stderr().lock();
    totals.conversations += 1;
    match result {
        Ok(f) => {
            totals.before += f.report.original_token_count;
            totals.after += f.report.compressed_token_count;
            out.write_all(f.text.as_bytes())?;
            out.write_all(b"\n")?;
            if let Some(plans) = plans {
                serde_json::to_writer(&mut *plans, &f.plan)?;
                plans.write_all(b"\n")?;
            }
            if options.json_report {
                let mut report = serde_json::to_value(&f.report)?;
                if let Value::Object(map) = &mut report {
                    map.insert("line".into(), json!(f.line));
                    if let Some(id) = &f.id {
                        map.insert("id".into(), id.clone());
                    }
                }
                writeln!(err, "{report}")?;
            } else {
                write_report(&mut err, name, f, single)?;
            }
            Ok(true)
        }
        Err(e) => {
            totals.failed += 1;
            if options.json_report {
                writeln!(err, "{}", json!({"line": record.line, "error": e}))?;
            } else {
                writeln!(err, "tightfit: {name}:{}: {e}", record.line)?;
            }
            if !single {
                // the output stays line for line with the input
                match (&record.text, options.keep_failed) {
                    (Ok(text), true) => out.write_all(text.as_bytes())?,
                    _ => serde_json::to_writer(
                        &mut *out,
                        &json!({"tightfit_error": {"line": record.line, "error": e}}),
                    )?,
                }
                out.write_all(b"\n")?;
            }
            Ok(false)
        }
    }
}

fn fit_record(
    fitter: &mut Fitter,
    registry: &Registry,
    fixed_model: Option<&ModelInfo>,
    pipeline: &Pipeline,
    record: &Record,
    fitting: &Fitting,
) -> anyhow::Result<Fitted> {
    fitting.fit_record(fitter, registry, fixed_model, pipeline, record, |conversation, _, fitted| {
        let (report, plan) = (fitted.report, fitted.plan);
        let messages: Vec<_> = fitted.messages.into_iter().map(std::borrow::Cow::into_owned).collect();
        // the fitted messages in the input's envelope (request fields, tools)
        let request = conversation.request.clone();
        let id = request.as_ref().and_then(|r| r.extra.get("id")).cloned();
        let output = Conversation {
            messages,
            format: conversation.format,
            tools: conversation.tools.clone(),
            request,
        };
        let text = format::to_string(&output, output.format);
        Fitted { line: record.line, id, text, report, plan }
    })
}

impl Fitting {
    /// The `--model` given, looked up (`None`: each request's own).
    pub fn fixed_model<'r>(&self, registry: &'r Registry) -> anyhow::Result<Option<&'r ModelInfo>> {
        Ok(self.model.as_deref().map(|m| registry.lookup(m)).transpose()?)
    }

    /// Reads `record` and fits it as `fit` does (the model, the budget, the store and the
    /// summarizer these options name); `then` gets the input, the target it was fitted to and
    /// the fit (which borrows the input).
    pub fn fit_record<R>(
        &self,
        fitter: &mut Fitter,
        registry: &Registry,
        fixed_model: Option<&ModelInfo>,
        pipeline: &Pipeline,
        record: &Record,
        then: impl FnOnce(&Conversation, &Target, tightfit::Fitted<'_>) -> R,
    ) -> anyhow::Result<R> {
        let conversation = input::parse_for_model(record, self.hint, registry, fixed_model)?;
        let request = conversation.request.as_ref();
        let mut target = match (input::model_if_named(registry, fixed_model, &conversation)?, self.budget) {
            (Some(model), budget) => {
                if let Some(budget) = budget {
                    Target::check_budget(model, budget, self.allow_over_window)?;
                }
                Target::for_model(model, request.and_then(|r| r.reserved_output()))
            }
            (None, Some(budget)) => Target::bare_budget(budget),
            (None, None) => anyhow::bail!(
                "no model and no budget: pass --model (its window gives the budget), give a request \
                 body with `model`, or pass --budget (counted with o200k_base unless --tokenizer names \
                 another)"
            ),
        };
        if let Some(counter) = &self.counter {
            target.counter = counter.clone();
        }
        if let Some(budget) = self.budget {
            target = target.with_budget(budget);
        }
        let mut services = match &self.store {
            Some(store) => Services::default().with_offload(store.as_ref()),
            None => Services::default(),
        };
        if let Some(summarizer) = &self.summarizer {
            services = services.with_summarizer(summarizer.as_ref());
        }
        let fitted = fitter.fit_with(&conversation, &target, Some(pipeline), services)?;
        Ok(then(&conversation, &target, fitted))
    }
}

fn write_report(err: &mut impl Write, name: &str, f: &Fitted, single: bool) -> std::io::Result<()> {
    let r = &f.report;
    let summary = format!(
        "{} -> {} tokens ({:.2}), {} -> {} messages, budget {}",
        thousands(r.original_token_count as u64),
        thousands(r.compressed_token_count as u64),
        r.compression_ratio,
        thousands(r.original_message_count as u64),
        thousands(r.compressed_message_count as u64),
        r.budget.map_or("none".to_string(), |b| thousands(b as u64)),
    );
    if single {
        writeln!(err, "{summary}")?;
        for line in r.lines() {
            writeln!(err, "  {line}")?;
        }
    } else {
        writeln!(err, "{name}:{}: {summary}", f.line)?;
    }
    Ok(())
}
