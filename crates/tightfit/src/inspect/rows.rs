//! One fitted conversation as rows: a row per input unit, and a row per message a step wrote,
//! in the order of the output.

use std::borrow::Cow;
use std::ops::Range;

use crate::message::Message;
use crate::offload::OffloadKind;
use crate::plan::{Plan, PlanError, UnitAction};
use crate::report::Report;
use crate::tokens::ChatCounter;

/// What happened to a row, as the page colours it: the plan's [`UnitAction`], with the
/// removals told apart by where the content went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RowAction {
    /// Sent as it came.
    Kept,
    /// Not sent, and nothing keeps it.
    Dropped,
    /// Not sent; a summary a step wrote stands for it.
    Summarized,
    /// Not sent; a store holds it under a handle the output names.
    Offloaded,
    /// Sent with part of its content cut.
    Truncated,
    /// Sent with content replaced by a placeholder or reference.
    Replaced,
    /// Sent with other changes (parts removed, text rewritten, some of its messages dropped).
    Edited,
    /// Written by a step (a summary, a placeholder, a synthetic tool result).
    Inserted,
}

impl RowAction {
    /// Every action, in the order the page's filter lists them.
    pub const ALL: [RowAction; 8] = [
        RowAction::Kept,
        RowAction::Dropped,
        RowAction::Summarized,
        RowAction::Offloaded,
        RowAction::Truncated,
        RowAction::Replaced,
        RowAction::Edited,
        RowAction::Inserted,
    ];

    /// The action's name: `kept`, `dropped`, `summarized`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            RowAction::Kept => "kept",
            RowAction::Dropped => "dropped",
            RowAction::Summarized => "summarized",
            RowAction::Offloaded => "offloaded",
            RowAction::Truncated => "truncated",
            RowAction::Replaced => "replaced",
            RowAction::Edited => "edited",
            RowAction::Inserted => "inserted",
        }
    }
}

/// One row of the page: an input unit and what was sent for it, or a message a step wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The unit's index in the plan; `None` for a message a step wrote.
    pub unit: Option<usize>,
    /// What the unit is (`instruction`, `user_turn`, `assistant_step`, `orphan_results`), or
    /// `inserted`.
    pub kind: String,
    /// The roles of its messages (as written on the wire), each once, in order.
    pub roles: Vec<String>,
    /// The input messages it spans (empty for a message a step wrote).
    pub input: Range<usize>,
    /// The output messages sent for it, by index.
    pub output: Vec<usize>,
    /// What happened to it.
    pub action: RowAction,
    /// The steps that acted on it (or wrote it), in order.
    pub steps: Vec<String>,
    /// What they did, one line each (the plan's details: which range a cut kept, ...).
    pub details: Vec<String>,
    /// The handles its offloaded content is kept under.
    pub handles: Vec<String>,
    /// Its input messages' tokens (framing included).
    pub tokens_before: usize,
    /// The tokens of what was sent for it.
    pub tokens_after: usize,
}

/// One fitted conversation laid out for the page: the input, the output rebuilt from the plan,
/// a row per unit, and the report's totals.
#[derive(Debug, Clone)]
pub struct Inspection<'a> {
    /// The input messages.
    pub input: &'a [Message],
    /// The messages sent (the plan replayed on the input).
    pub output: Vec<Cow<'a, Message>>,
    /// The rows, in the order of the output (a written message after the unit it follows).
    pub rows: Vec<Row>,
    /// The report of the fit.
    pub report: &'a Report,
}

impl<'a> Inspection<'a> {
    /// Lays out the fit of `input` that gave `plan` and `report`, counted with `counter` (the
    /// fit's own, so the rows add up to the report's figures, less the tool schemas and the
    /// reply priming).
    ///
    /// # Errors
    ///
    /// When `plan` was made for another input, or one of its entries is malformed.
    pub fn new(
        input: &'a [Message],
        plan: &Plan,
        report: &'a Report,
        counter: &ChatCounter,
    ) -> Result<Inspection<'a>, PlanError> {
        let output = plan.replay(input)?;
        let before: Vec<usize> = input.iter().map(|m| counter.message_tokens(m)).collect();
        let after: Vec<usize> = output
            .iter()
            .zip(&plan.output)
            .map(|(message, entry)| match (entry.input, &entry.message) {
                (Some(i), None) => before[i],
                _ => counter.message_tokens(message),
            })
            .collect();
        // per input message: its unit's row, and the handle and kind of its offload
        let mut unit_of = vec![0; input.len()];
        for (u, unit) in plan.units.iter().enumerate() {
            for slot in &mut unit_of[span(unit.messages, input.len())] {
                *slot = u;
            }
        }
        let mut offload: Vec<Option<(&str, OffloadKind)>> = vec![None; input.len()];
        for entry in &report.offloaded {
            for &i in entry.messages.iter().filter(|&&i| i < input.len()) {
                offload[i] = Some((entry.handle.as_str(), entry.kind));
            }
        }
        let mut rows: Vec<Row> = plan
            .units
            .iter()
            .enumerate()
            .map(|(u, unit)| {
                let range = span(unit.messages, input.len());
                let mut handles: Vec<String> = Vec::new();
                for (handle, _) in range.clone().filter_map(|i| offload[i]) {
                    if !handles.iter().any(|h| h == handle) {
                        handles.push(handle.to_string());
                    }
                }
                let all_offloaded =
                    range.clone().all(|i| matches!(offload[i], Some((_, OffloadKind::Removed))));
                let action = match unit.action {
                    UnitAction::Dropped if unit.steps.iter().any(|s| s.starts_with("summar")) => {
                        RowAction::Summarized
                    }
                    UnitAction::Dropped if all_offloaded && !range.is_empty() => RowAction::Offloaded,
                    UnitAction::Dropped => RowAction::Dropped,
                    UnitAction::Truncated => RowAction::Truncated,
                    UnitAction::Replaced => RowAction::Replaced,
                    UnitAction::Edited => RowAction::Edited,
                    UnitAction::Kept => RowAction::Kept,
                };
                Row {
                    unit: Some(u),
                    kind: unit.kind.to_string(),
                    roles: roles(&input[range.clone()]),
                    tokens_before: before[range.clone()].iter().sum(),
                    input: range,
                    output: Vec::new(),
                    action,
                    steps: unit.steps.iter().map(|s| s.to_string()).collect(),
                    details: unit.details.clone(),
                    handles,
                    tokens_after: 0,
                }
            })
            .collect();
        // walk the output: a message of the input joins its unit's row, a written one gets a
        // row of its own after the row of the message before it
        let mut placed: Vec<(usize, Row)> = Vec::new();
        let mut last_unit: Option<usize> = None;
        for (o, entry) in plan.output.iter().enumerate() {
            match entry.input {
                Some(i) if i < input.len() => {
                    let row = &mut rows[unit_of[i]];
                    row.output.push(o);
                    row.tokens_after += after[o];
                    last_unit = Some(unit_of[i]);
                }
                _ => placed.push((
                    last_unit.map_or(0, |u| u + 1),
                    Row {
                        unit: None,
                        kind: "inserted".to_string(),
                        roles: roles(std::slice::from_ref(output[o].as_ref())),
                        input: 0..0,
                        output: vec![o],
                        action: RowAction::Inserted,
                        steps: entry.steps.clone(),
                        details: entry.details.clone(),
                        handles: Vec::new(),
                        tokens_before: 0,
                        tokens_after: after[o],
                    },
                )),
            }
        }
        // written rows go before the unit row at their place (in output order among themselves)
        let mut ordered = Vec::with_capacity(rows.len() + placed.len());
        let mut placed = placed.into_iter().peekable();
        for (u, row) in rows.into_iter().enumerate() {
            while let Some((_, written)) = placed.next_if(|(at, _)| *at <= u) {
                ordered.push(written);
            }
            ordered.push(row);
        }
        ordered.extend(placed.map(|(_, row)| row));
        Ok(Inspection { input, output, rows: ordered, report })
    }

    /// How many rows have `action`.
    pub fn count(&self, action: RowAction) -> usize {
        self.rows.iter().filter(|r| r.action == action).count()
    }
}

/// A unit's `[start, end)` as a range of an input of `len` messages (a plan edited by hand
/// may name messages past the end: they are left out, not a panic).
fn span([start, end]: [usize; 2], len: usize) -> Range<usize> {
    let end = end.min(len);
    start.min(end)..end
}

/// The roles of `messages`, each once, in order.
fn roles(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for message in messages {
        let role = message.role_name();
        if !out.iter().any(|r| r == role) {
            out.push(role.to_string());
        }
    }
    out
}
