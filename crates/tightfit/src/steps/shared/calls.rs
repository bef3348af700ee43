//! The steps' side of the call index: every call of a history's assistant steps with where
//! its results are ([`call_sites`]), and removing calls with their results ([`remove_calls`]),
//! for `drop_tool_calls`, `drop_retry_prompts` and `clear_tool_results`.

use std::collections::HashMap;

use crate::calls::{calls_of, results_of, CallKey, ResultAt};
use crate::history::History;
use crate::message::{ContentForm, Part, Role};
use crate::plan::ChangeKind;
use crate::units::UnitKind;

/// A tool call of an assistant step and where its results are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallSite {
    /// The index of the step among the history's units.
    pub(crate) unit: usize,
    /// The assistant message that makes the call.
    pub(crate) message: usize,
    /// The index of the call among that message's parts.
    pub(crate) part: usize,
    /// What its results name it by.
    pub(crate) key: CallKey,
    /// The tool's name.
    pub(crate) name: String,
    /// Its results, in message order (one, unless the input repeats a result).
    pub(crate) results: Vec<ResultAt>,
}

/// Every tool call of the history's assistant steps, in order, with its results.
/// O(messages + calls).
pub(crate) fn call_sites(history: &History<'_>) -> Vec<CallSite> {
    let mut sites = Vec::new();
    for (u, unit) in history.units().iter().enumerate() {
        if unit.kind != UnitKind::AssistantStep {
            continue;
        }
        let mut by_key: HashMap<CallKey, usize> = HashMap::new();
        // the step's assistant messages: one, or the items of one Responses response
        let callers = unit.messages.clone().take_while(|&i| history.message(i).role == Role::Assistant);
        for at in callers {
            for (part, key, name) in calls_of(history.message(at)) {
                by_key.entry(key.clone()).or_insert(sites.len());
                sites.push(CallSite {
                    unit: u,
                    message: at,
                    part,
                    key,
                    name: name.to_string(),
                    results: vec![],
                });
            }
        }
        for i in unit.messages.start + 1..unit.messages.end {
            for (key, at) in results_of(history.message(i), i) {
                if let Some(&site) = by_key.get(&key) {
                    sites[site].results.push(at);
                }
            }
        }
    }
    sites
}

/// Whether a part says something once the calls are gone: thinking alone does not (it only
/// explains calls or text), nor does blank text.
fn says_something(part: &Part) -> bool {
    match part {
        Part::Text(t) => !t.text.trim().is_empty(),
        Part::Thinking(_) | Part::RedactedThinking(_) => false,
        _ => true,
    }
}

/// Removes the calls of `doomed` (from [`call_sites`] of the current history) and their
/// results, for `reason`. An assistant message left with nothing to say goes; a results
/// message left empty goes. Returns how many calls were removed.
pub(crate) fn remove_calls(history: &mut History<'_>, doomed: &[CallSite], reason: &str) -> usize {
    let mut by_unit: Vec<&CallSite> = doomed.iter().collect();
    by_unit.sort_by_key(|s| (s.unit, s.part));
    // from the last step back, so the indices of the steps still to do stay put
    let mut end = by_unit.len();
    while end > 0 {
        let unit = by_unit[end - 1].unit;
        let start = by_unit[..end].iter().rposition(|s| s.unit != unit).map_or(0, |i| i + 1);
        remove_in_step(history, &by_unit[start..end], reason);
        end = start;
    }
    doomed.len()
}

/// Removes calls of one step and their results: the results first, from the last back, then
/// the calls, message by message from the last back (a Responses step holds its calls in
/// several messages, all before the results), so every index stays put until it is used.
fn remove_in_step(history: &mut History<'_>, sites: &[&CallSite], reason: &str) {
    let ids: Vec<&str> = sites.iter().map(|s| s.key.as_str()).collect();
    let mut results: Vec<ResultAt> = sites.iter().flat_map(|s| s.results.iter().copied()).collect();
    results.sort_by_key(|r| std::cmp::Reverse(r.message()));
    let mut at = 0;
    while at < results.len() {
        let message = results[at].message();
        let same = results[at..].iter().take_while(|r| r.message() == message).count();
        remove_results(history, message, &results[at..at + same], &ids, reason);
        at += same;
    }
    let mut callers: Vec<usize> = sites.iter().map(|s| s.message).collect();
    callers.sort_unstable();
    callers.dedup();
    for &caller in callers.iter().rev() {
        let mine: Vec<&&CallSite> = sites.iter().filter(|s| s.message == caller).collect();
        let ids: Vec<&str> = mine.iter().map(|s| s.key.as_str()).collect();
        remove_from_caller(history, caller, mine.iter().map(|s| s.part), &ids, reason);
    }
}

/// Removes the call parts `parts` from the assistant message `caller`, or the message when
/// nothing else is left of it.
fn remove_from_caller(
    history: &mut History<'_>,
    caller: usize,
    parts: impl Iterator<Item = usize>,
    ids: &[&str],
    reason: &str,
) {
    let mut gone = vec![false; history.message(caller).parts.len()];
    for part in parts {
        gone[part] = true;
    }
    let left = history.message(caller).parts.iter().enumerate().any(|(i, p)| !gone[i] && says_something(p));
    if !left {
        history.remove(caller, &format!("{reason}: nothing else left of the message"));
        return;
    }
    let detail = format!("removed tool call(s) {ids:?}: {reason}");
    history.edit(caller, ChangeKind::Removed, detail, |m| {
        let mut i = 0;
        m.parts.retain(|_| {
            i += 1;
            !gone[i - 1]
        });
        if m.parts.is_empty() && m.content_form == ContentForm::Parts {
            m.content_form = ContentForm::Null;
        }
    });
}

/// Removes the results `results` (all in message `message`) of the calls `ids`.
fn remove_results(
    history: &mut History<'_>,
    message: usize,
    results: &[ResultAt],
    ids: &[&str],
    reason: &str,
) {
    let mut blocks = vec![false; history.message(message).parts.len()];
    for r in results {
        if let ResultAt::Block(_, p) = r {
            blocks[*p] = true;
        }
    }
    let whole = results.iter().any(|r| matches!(r, ResultAt::Message(_)));
    let left = history
        .message(message)
        .parts
        .iter()
        .enumerate()
        .any(|(i, p)| !blocks[i] && !matches!(p, Part::Text(t) if t.text.trim().is_empty()));
    if whole || !left {
        history.remove(message, &format!("{reason}: the result of a removed call"));
        return;
    }
    let detail = format!("removed the result(s) of tool call(s) {ids:?}: {reason}");
    history.edit(message, ChangeKind::Removed, detail, |m| {
        let mut i = 0;
        m.parts.retain(|_| {
            i += 1;
            !blocks[i - 1]
        });
    });
}
