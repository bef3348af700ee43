//! What a call counts for and fits to, from the arguments `count`, `fit` and `Session` share:
//! the model (`model=`, else a request body's `model`) and the budget.
//!
//! There is no default model. A count needs one; a fit needs a model or a `budget=` (a bare
//! budget is counted with OpenAI's `o200k_base`, and the report's `counter` says so). The CLI
//! decides the same way, so both faces give the same answer for the same input.

use std::path::Path;

use pyo3::prelude::*;
use tightfit::fit::Target;
use tightfit::models::{ModelInfo, Registry};
use tightfit::steps::ConfigError;

use crate::args;
use crate::errors::Failure;
use crate::input::RawInput;

/// The model named by `model=` (when given and not `None`), else by the request body's
/// `model`; `None` when neither names one. An unknown name is an error with suggestions.
pub(crate) fn model_of(
    model: Option<&Bound<'_, PyAny>>,
    input: Option<&RawInput>,
) -> Result<Option<&'static ModelInfo>, Failure> {
    let name = match model.filter(|m| !m.is_none()) {
        Some(model) => Some(args::model(model)?),
        None => input.and_then(RawInput::body_model).map(str::to_string),
    };
    name.map(|name| Registry::embedded().lookup(&name).map_err(Failure::from)).transpose()
}

/// The model a count (or a calibration) is for, which it cannot do without.
pub(crate) fn required_model(
    model: Option<&Bound<'_, PyAny>>,
    input: Option<&RawInput>,
) -> Result<&'static ModelInfo, Failure> {
    model_of(model, input)?.ok_or_else(|| {
        Failure::Config(ConfigError::new(
            "model",
            "none given: pass model= (for example \"gpt-4o\" or \"claude-sonnet-4-5\"), or a request body \
             with `model`",
        ))
    })
}

/// The budget limits of a call, as the caller gave them.
pub(crate) struct Limits<'a> {
    /// `budget=`: tokens, instead of the model's window minus the reserved output.
    pub budget: Option<u64>,
    /// `reserve_output=`: output tokens kept free of the window.
    pub reserve_output: Option<u64>,
    /// `allow_over_window=`: a budget past the model's input limit is not an error.
    pub allow_over_window: bool,
    /// `tokenizer=`: a tokenizer file to count with instead of the model's.
    pub tokenizer: Option<&'a Path>,
    /// `calibration=`: a factor from `tightfit.calibrate`.
    pub calibration: Option<f64>,
}

/// The target of a fit: `model`'s window (or `budget`) counted with `model`'s counter; without
/// a model, `budget` counted with `o200k_base` (or the tokenizer file). Neither is an error
/// that names both arguments.
pub(crate) fn target(model: Option<&ModelInfo>, limits: &Limits<'_>) -> Result<Target, Failure> {
    let budget = limits.budget.map(|b| b as usize);
    let mut target = match (model, budget) {
        (Some(model), _) => {
            if let Some(budget) = budget {
                Target::check_budget(model, budget, limits.allow_over_window).map_err(Failure::Config)?;
            }
            Target::for_model(model, limits.reserve_output)
        }
        (None, Some(budget)) => Target::bare_budget(budget),
        (None, None) => {
            return Err(Failure::Config(ConfigError::new(
                "model",
                "none given, and no budget: pass model= (its window gives the budget), a request body \
                 with `model`, or budget= (counted with o200k_base unless tokenizer= names another)",
            )))
        }
    };
    if limits.tokenizer.is_some() || limits.calibration.is_some() {
        target.counter = crate::counter::counter(model, limits.tokenizer, limits.calibration)?;
    }
    if let Some(budget) = budget {
        target = target.with_budget(budget);
    }
    Ok(target)
}
