//! `when`: run a step only while a condition holds (llmling `ConditionalStep`,
//! `WhenMessageCountExceeds`).
//!
//! Conditions look at the history as the step is about to see it: its tokens (the whole
//! request: messages, tool schemas, priming), its messages, the share of the model's window
//! it fills, or whether it is over the call's budget. Evaluating one costs O(1), except
//! `All`/`Any`, which cost their parts.

use super::{ConfigError, Step, StepContext, StepError};
use crate::history::History;

/// When a guarded step runs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Condition {
    /// The request has more than this many tokens.
    TokensAbove(usize),
    /// The history has more than this many messages (llmling `WhenMessageCountExceeds`).
    MessagesAbove(usize),
    /// The request fills more than this fraction of the model's window (0.8 = 80 %).
    WindowFractionAbove(f64),
    /// The request is over the call's budget.
    OverBudget,
    /// Every condition holds.
    All(Vec<Condition>),
    /// At least one condition holds.
    Any(Vec<Condition>),
}

impl Condition {
    /// Checks thresholds once, when the pipeline is built.
    pub fn check(&self) -> Result<(), ConfigError> {
        match self {
            Condition::WindowFractionAbove(f) if !(f.is_finite() && *f > 0.0) => {
                Err(ConfigError::new("window_fraction", format!("must be a number above 0, found {f}")))
            }
            Condition::All(all) | Condition::Any(all) => all.iter().try_for_each(Condition::check),
            _ => Ok(()),
        }
    }

    /// Whether the condition holds for `history` in `cx`.
    pub fn holds(&self, history: &History<'_>, cx: &StepContext) -> Result<bool, String> {
        Ok(match self {
            Condition::TokensAbove(n) => history.total_tokens() > *n,
            Condition::MessagesAbove(n) => history.len() > *n,
            Condition::WindowFractionAbove(f) => {
                let window = cx.window.or(cx.budget).ok_or(
                    "a condition on a fraction of the window needs a model (or a budget); none is known",
                )?;
                history.total_tokens() as f64 > window as f64 * f
            }
            Condition::OverBudget => {
                let budget = cx.budget.ok_or("the condition `over_budget` needs a budget; none is set")?;
                history.total_tokens() > budget
            }
            Condition::All(all) => {
                for c in all {
                    if !c.holds(history, cx)? {
                        return Ok(false);
                    }
                }
                true
            }
            Condition::Any(any) => {
                for c in any {
                    if c.holds(history, cx)? {
                        return Ok(true);
                    }
                }
                false
            }
        })
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Condition::TokensAbove(n) => write!(f, "tokens > {n}"),
            Condition::MessagesAbove(n) => write!(f, "messages > {n}"),
            Condition::WindowFractionAbove(x) => write!(f, "tokens > {x} of the window"),
            Condition::OverBudget => write!(f, "over budget"),
            Condition::All(all) => join(f, all, " and "),
            Condition::Any(any) => join(f, any, " or "),
        }
    }
}

fn join(f: &mut std::fmt::Formatter<'_>, items: &[Condition], sep: &str) -> std::fmt::Result {
    write!(f, "(")?;
    for (i, c) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{c}")?;
    }
    write!(f, ")")
}

/// Runs `step` only when `condition` holds.
#[derive(Debug)]
pub struct When {
    /// The condition.
    pub condition: Condition,
    /// The guarded step.
    pub step: Box<dyn Step>,
}

impl When {
    /// `step`, guarded by `condition`.
    pub fn new(condition: Condition, step: impl Step + 'static) -> When {
        When { condition, step: Box::new(step) }
    }
}

impl Step for When {
    fn name(&self) -> &'static str {
        self.step.name()
    }

    fn check(&self) -> Result<(), ConfigError> {
        self.condition.check()?;
        self.step.check()
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext) -> Result<(), StepError> {
        match self.condition.holds(history, cx) {
            Ok(true) => self.step.apply(history, cx),
            Ok(false) => Ok(()),
            Err(reason) => Err(StepError::new(self.step.name(), reason)),
        }
    }
}
