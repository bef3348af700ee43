//! What the selecting steps share: measuring a tail of units in messages, pairs or units,
//! and dropping every unit a mask does not keep.

use crate::history::{History, Keep};
use crate::units::UnitKind;

/// What a count of "the last N" counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Measure {
    /// Messages (AG2 `max_messages`, autogen `buffer_size`, llmling with `count_pairs: false`).
    /// A unit is kept only if all of its messages fit the count.
    Messages,
    /// Request/response pairs: an assistant step with the user turns before it (llmling
    /// `count_pairs: true`, its default).
    #[default]
    Pairs,
    /// Units (system messages, user turns, assistant steps with their results).
    Units,
}

impl Measure {
    /// The measure named `messages`, `pairs` or `units` (anything else is `units`).
    pub fn from_name(name: &str) -> Measure {
        match name {
            "messages" => Measure::Messages,
            "pairs" => Measure::Pairs,
            _ => Measure::Units,
        }
    }
}

/// For each unit, the "size" it has under `measure` (pairs: 1 for an assistant step or a
/// trailing turn that opens a pair, 0 for a turn that joins the step after it).
pub(crate) fn sizes(history: &History<'_>, measure: Measure) -> Vec<usize> {
    let units = history.units();
    match measure {
        Measure::Messages => units.iter().map(|u| u.len()).collect(),
        Measure::Units => vec![1; units.len()],
        Measure::Pairs => {
            // a pair ends with an assistant step; turns before it belong to it; turns after
            // the last step form one incomplete pair
            let last_step = units.iter().rposition(|u| u.kind == UnitKind::AssistantStep);
            units
                .iter()
                .enumerate()
                .map(|(i, u)| match (u.kind, last_step) {
                    (UnitKind::AssistantStep, _) => 1,
                    (_, Some(last)) if i > last => usize::from(i == last + 1),
                    (_, None) => usize::from(i == 0),
                    _ => 0,
                })
                .collect()
        }
    }
}

/// Marks in `mask` the first `count` (under `measure`) units, never splitting a unit: counting
/// from the start, a unit is kept while the total stays within `count`; selection stops at the
/// first unit that would go over. Units already marked (protected) are skipped and not
/// counted. With pairs, turns of size 0 open the step after them: they are kept only if that
/// step is (turns after the last step belong to the trailing pair and go with it).
/// O(units).
pub(crate) fn keep_first(history: &History<'_>, count: usize, measure: Measure, mask: &mut [bool]) {
    let sizes = sizes(history, measure);
    let mut used = 0;
    let mut opening = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        if mask[i] {
            continue;
        }
        if size == 0 {
            opening.push(i);
            continue;
        }
        if used + size > count {
            return;
        }
        used += size;
        for j in opening.drain(..) {
            mask[j] = true;
        }
        mask[i] = true;
    }
    for j in opening {
        mask[j] = true;
    }
}

/// The mask that keeps the last `count` (under `measure`) units, never splitting a unit:
/// counting from the end, a unit is kept while the total stays within `count`; selection
/// stops at the first unit that would go over. A protected unit (already set in `mask`)
/// inside the window counts like any other; protected units before it are kept besides;
/// system messages never count. With pairs, the turns that open a kept pair have size 0 and
/// go with it.
pub(crate) fn keep_last(history: &History<'_>, count: usize, measure: Measure, mask: &mut [bool]) {
    let sizes = sizes(history, measure);
    let units = history.units();
    let mut used = 0;
    for i in (0..sizes.len()).rev() {
        if mask[i] && units[i].kind == UnitKind::Instruction {
            continue;
        }
        if used + sizes[i] > count {
            break;
        }
        used += sizes[i];
        mask[i] = true;
    }
}

/// The protection mask of `keep`.
pub(crate) fn protected(history: &History<'_>, keep: Keep) -> Vec<bool> {
    history.protected_units(keep)
}

/// Drops every unit not in `mask`, for `reason`. Returns how many messages went.
pub(crate) fn apply_mask(history: &mut History<'_>, mask: &[bool], reason: &str) -> usize {
    let drop: Vec<bool> = mask.iter().map(|k| !k).collect();
    if drop.iter().any(|d| *d) {
        history.drop_units(&drop, reason)
    } else {
        0
    }
}
