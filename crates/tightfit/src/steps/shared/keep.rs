//! What every step keeps: reading `keep_system` and `keep_newest_user_turn` from
//! configuration, the messages those protect, and where the current tool turn starts (whose
//! thinking blocks Anthropic requires).

use crate::history::{History, Keep};
use crate::message::{Message, Part, Role};
use crate::params::{ConfigError, Params};

use super::select::Measure;

/// Reads `keep_system` (alias `preserve_system_messages`) and `keep_newest_user_turn`.
pub(crate) fn read_keep(p: &mut Params, keep: Keep) -> Result<Keep, ConfigError> {
    Ok(Keep {
        system: p.bool_or(&["keep_system", "preserve_system_messages"], keep.system)?,
        newest_user_turn: p.bool_or(&["keep_newest_user_turn"], keep.newest_user_turn)?,
    })
}

/// Reads `measure` (`messages`, `pairs`, `units`); `default` when absent.
pub(crate) fn read_measure(p: &mut Params, default: Measure) -> Result<Measure, ConfigError> {
    Ok(Measure::from_name(&p.choice_or(
        &["measure"],
        &["messages", "pairs", "units"],
        measure_word(default),
    )?))
}

pub(crate) fn measure_word(measure: Measure) -> &'static str {
    match measure {
        Measure::Messages => "messages",
        Measure::Pairs => "pairs",
        Measure::Units => "units",
    }
}

/// For each message, whether it belongs to a unit `keep` protects.
pub(crate) fn protected_messages(history: &History<'_>, keep: Keep) -> Vec<bool> {
    let mut out = vec![false; history.len()];
    for (unit, protected) in history.units().iter().zip(history.protected_units(keep)) {
        if protected {
            out[unit.messages.clone()].fill(true);
        }
    }
    out
}

/// The index of the first message of the current tool turn, if the history ends inside one
/// (its last message holds only tool results): the message after the last user message that
/// carries the user's own words. The same rule as the validator's.
pub(crate) fn current_turn_start(history: &History<'_>) -> Option<usize> {
    let messages = history.messages();
    let last = messages.last()?;
    let only_results = matches!(last.role, Role::Tool | Role::Function)
        || (!last.parts.is_empty() && last.parts.iter().all(|p| matches!(p, Part::ToolResult(_))));
    if !only_results {
        return None;
    }
    let is_user_words =
        |m: &Message| m.role == Role::User && !m.parts.iter().all(|p| matches!(p, Part::ToolResult(_)));
    Some(messages.iter().rposition(|m| is_user_words(m)).map_or(0, |i| i + 1))
}
