//! `tightfit inspect`: fit as `fit` does, then write a page that shows what the fit did
//! (drawn by the engine's [`tightfit::inspect`]).

use std::path::Path;

use anyhow::Context;
use rayon::prelude::*;
use serde_json::Value;

use tightfit::fit::Fitter;
use tightfit::inspect::{Inspection, Page, Section};
use tightfit::models::Registry;
use tightfit::pipeline::Pipeline;

use crate::fit_cmd::Fitting;
use crate::input::{self, Record};

/// Fits every conversation of `file` with `fitting` and writes the page to `html`; a line
/// that cannot be fitted gets a section saying why (and is reported on standard error).
/// Returns `Ok(false)` when some could not be fitted.
///
/// The whole input is read and fitted (on all cores) before the page is written: the page
/// holds every conversation's text, so memory is about the input's size twice over.
pub fn run(
    registry: &Registry,
    pipeline: &Pipeline,
    file: &Path,
    fitting: &Fitting,
    html: &Path,
) -> anyhow::Result<bool> {
    let fixed_model = fitting.fixed_model(registry)?;
    let (name, records) = input::read(file)?;
    let single = records.len() == 1;
    let progress = input::progress_bar(records.len());
    let sections: Vec<(Section, Option<(usize, String)>)> = records
        .par_iter()
        .map_init(Fitter::new, |fitter, record| {
            let section =
                section(fitter, registry, fixed_model, pipeline, record, fitting, single.then_some(&name));
            progress.inc(1);
            section
        })
        .collect();
    progress.finish_and_clear();
    let mut page = Page::new(&name);
    let mut failed = 0;
    for (section, error) in sections {
        if let Some((line, error)) = error {
            failed += 1;
            eprintln!("tightfit: {name}:{line}: {error}");
        }
        page.push(section);
    }
    std::fs::write(html, page.to_document()).with_context(|| format!("cannot write {}", html.display()))?;
    let count = records.len();
    eprintln!(
        "{}: {count} conversation{}, {failed} failed",
        html.display(),
        if count == 1 { "" } else { "s" }
    );
    Ok(failed == 0)
}

/// One record's section, titled with its line (and its request's `id`), or with `single`
/// (the input's name) when it is the only one; and the line and the error when it failed.
fn section(
    fitter: &mut Fitter,
    registry: &Registry,
    fixed_model: Option<&tightfit::models::ModelInfo>,
    pipeline: &Pipeline,
    record: &Record,
    fitting: &Fitting,
    single: Option<&String>,
) -> (Section, Option<(usize, String)>) {
    let line_title = || match single {
        Some(name) => name.clone(),
        None => format!("line {}", record.line),
    };
    let result = fitting.fit_record(
        fitter,
        registry,
        fixed_model,
        pipeline,
        record,
        |conversation, target, fitted| {
            let id = conversation.request.as_ref().and_then(|r| r.extra.get("id")).and_then(Value::as_str);
            let title = match id {
                Some(id) => format!("{} \u{b7} {id}", line_title()),
                None => line_title(),
            };
            Inspection::new(&conversation.messages, &fitted.plan, &fitted.report, &target.counter)
                .map(|inspection| Section::fitted(&title, &inspection))
        },
    );
    match result {
        Ok(Ok(section)) => (section, None),
        Ok(Err(e)) => failure(line_title(), record, &anyhow::anyhow!(e)),
        Err(e) => failure(line_title(), record, &e),
    }
}

fn failure(title: String, record: &Record, error: &anyhow::Error) -> (Section, Option<(usize, String)>) {
    let error = format!("{error:#}");
    (Section::failed(&title, &error), Some((record.line, error)))
}
