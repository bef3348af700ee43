//! `when`: run a step only while a condition holds (llmling `ConditionalStep`,
//! `WhenMessageCountExceeds`).
//!
//! Conditions look at the history as the step is about to see it: its tokens (the whole
//! request: messages, tool schemas, priming), its messages, the share of the model's window
//! it fills, or whether it is over the call's budget. Evaluating one costs O(1), except
//! `All`/`Any`, which cost their parts.

use serde_json::{Map, Value};

use super::{BuiltStep, ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};
use crate::history::History;
use crate::params::Params;

/// `when` in configuration: the condition keys of [`Condition::from_value`] (llmling's
/// `threshold` counts messages, 20 when no key is given) and the guarded `step:`.
pub(crate) const KIND: StepKind =
    StepKind::built_by("when", &["when_count_exceeds", "when_message_count_exceeds", "conditional"], build_when)
        .documented(
            "Run a step only when a condition holds; several condition keys must all hold (any step also takes them as a `when:` map).",
            &[
                KeyDoc::new("tokens_above", KeyUnit::Tokens, "the request has more tokens than this"),
                KeyDoc::new("messages_above", KeyUnit::Messages, "the history has more messages than this; 20 when no condition key is given"),
                KeyDoc::new("window_fraction_above", KeyUnit::Fraction, "the request fills more than this share of the model's window"),
                KeyDoc::new("over_budget", KeyUnit::Flag, "the request is over the call's budget"),
                KeyDoc::new("threshold", KeyUnit::Messages, "llmling's `WhenMessageCountExceeds`: `messages_above`"),
                KeyDoc::new("step", KeyUnit::Map, "the step to guard (required)"),
            ],
        );

fn build_when(p: &mut Params, nested: &dyn Fn(Value) -> BuiltStep) -> BuiltStep {
    let mut map = Map::new();
    for key in CONDITION_KEYS {
        if let Some(v) = p.value(&[key]) {
            map.insert(key.to_string(), v);
        }
    }
    if let Some(threshold) = p.usize(&["threshold"])? {
        map.insert("messages_above".into(), Value::from(threshold));
    } else if map.is_empty() {
        map.insert("messages_above".into(), Value::from(20));
    }
    let condition = Condition::from_value(Value::Object(map))?;
    let inner = p.value(&["step"]).ok_or_else(|| ConfigError::new("step", "missing: the step to guard"))?;
    let step = nested(inner).map_err(|e| e.within("step"))?;
    Ok(Box::new(When { condition, step }))
}

/// The keys of a condition map (a `when:` guard), as [`Condition::from_value`] reads them.
pub(crate) const CONDITION_KEYS: [&str; 4] =
    ["tokens_above", "messages_above", "window_fraction_above", "over_budget"];

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
    /// A guard from its configuration map (`{tokens_above: 100000}`); several keys must all
    /// hold. An unknown key or a missing one is an error naming it.
    pub fn from_value(value: Value) -> Result<Condition, ConfigError> {
        let Value::Object(map) = value else {
            return Err(ConfigError::new("", "expected a map such as {tokens_above: 100000}"));
        };
        let mut p = Params::new(map);
        let mut all = Vec::new();
        if let Some(n) = p.usize(&["tokens_above"])? {
            all.push(Condition::TokensAbove(n));
        }
        if let Some(n) = p.usize(&["messages_above"])? {
            all.push(Condition::MessagesAbove(n));
        }
        if let Some(f) = p.f64(&["window_fraction_above", "window_fraction"])? {
            all.push(Condition::WindowFractionAbove(f));
        }
        if p.bool(&["over_budget"])? == Some(true) {
            all.push(Condition::OverBudget);
        }
        p.finish()?;
        let condition = match all.len() {
            0 => return Err(ConfigError::new(
                "",
                "a condition needs one of tokens_above, messages_above, window_fraction_above, over_budget",
            )),
            1 => all.pop().expect("one condition"),
            _ => Condition::All(all),
        };
        condition.check()?;
        Ok(condition)
    }

    /// The condition as configuration writes it (`{tokens_above: 100000}`): the map
    /// [`Condition::from_value`] reads back. `None` for what a map cannot say: `Any`, or the
    /// same key twice.
    pub fn to_config(&self) -> Option<Map<String, Value>> {
        let mut map = Map::new();
        let one = |key: &str, value: Value| Some(Map::from_iter([(key.to_string(), value)]));
        let parts = match self {
            Condition::TokensAbove(n) => one("tokens_above", Value::from(*n))?,
            Condition::MessagesAbove(n) => one("messages_above", Value::from(*n))?,
            Condition::WindowFractionAbove(f) => one("window_fraction_above", Value::from(*f))?,
            Condition::OverBudget => one("over_budget", Value::Bool(true))?,
            Condition::All(all) => {
                for condition in all {
                    for (key, value) in condition.to_config()? {
                        if map.insert(key, value).is_some() {
                            return None;
                        }
                    }
                }
                return Some(map);
            }
            Condition::Any(_) => return None,
        };
        Some(parts)
    }

    /// Checks thresholds once, when the pipeline is built.
    pub fn check(&self) -> Result<(), ConfigError> {
        match self {
            Condition::WindowFractionAbove(f) if !(f.is_finite() && *f > 0.0) => {
                Err(ConfigError::new("window_fraction_above", format!("must be a number above 0, found {f}")))
            }
            Condition::All(all) | Condition::Any(all) => all.iter().try_for_each(Condition::check),
            _ => Ok(()),
        }
    }

    /// Whether the condition holds for `history` in `cx`.
    pub fn holds(&self, history: &History<'_>, cx: &StepContext<'_>) -> Result<bool, String> {
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

    /// The guarded step's map with a `when:` guard; a `type: when` map around it when the step
    /// is itself guarded.
    fn to_config(&self) -> Option<Map<String, Value>> {
        let condition = self.condition.to_config()?;
        let mut step = self.step.to_config()?;
        if step.contains_key("when") {
            let mut map = Map::from_iter([("type".to_string(), Value::from("when"))]);
            map.insert("step".into(), Value::Object(step));
            map.extend(condition);
            return Some(map);
        }
        step.insert("when".into(), Value::Object(condition));
        Some(step)
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        match self.condition.holds(history, cx) {
            Ok(true) => self.step.apply(history, cx),
            Ok(false) => Ok(()),
            Err(reason) => Err(StepError::new(self.step.name(), reason)),
        }
    }
}
