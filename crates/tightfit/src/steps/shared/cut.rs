//! Cutting text to a length: reading a length and a side from configuration, checking a
//! limit leaves room, and planning the cut of a message's text parts. Used by
//! `truncate_tool_results`, `truncate_text` and `token_budget`'s partial unit.

use crate::message::Part;
use crate::params::{ConfigError, Params};
use crate::steps::{StepContext, StepError};
use crate::text::{cut, KeepPart, Length};
use crate::tokens::{ChatCounter, TokenCounter};

/// The marker llmling writes where it cut a text.
pub const TRUNCATED_MARKER: &str = "\n... [truncated]";

/// Checks that a cut limit leaves room for some text: at least 1, and (in characters, where
/// the marker can be measured without a tokenizer) longer than the marker. `key` names the
/// limit in errors.
pub(crate) fn check_limit(limit: Length, marker: &str, key: &str) -> Result<(), ConfigError> {
    let key = match limit {
        Length::Chars(_) => key,
        Length::Tokens(_) => "max_tokens",
    };
    if limit.value() == 0 {
        return Err(ConfigError::new(key, "must be at least 1"));
    }
    let marker_chars = marker.chars().count();
    if matches!(limit, Length::Chars(n) if marker_chars >= n) {
        return Err(ConfigError::new(
            key,
            format!("must be longer than the marker ({marker_chars} chars), or nothing of the text is left"),
        ));
    }
    Ok(())
}

/// Reads a length in characters (`chars_keys`) or in tokens (`token_keys`); giving both is an
/// error. Absent: `default`.
pub(crate) fn read_length(
    p: &mut Params,
    chars_keys: &[&'static str],
    token_keys: &[&'static str],
    default: Length,
) -> Result<Length, ConfigError> {
    let chars = p.usize(chars_keys)?;
    let tokens = p.usize(token_keys)?;
    match default {
        Length::Chars(n) => p.note_default(chars_keys[0], n),
        Length::Tokens(n) => p.note_default(token_keys[0], n),
    }
    match (chars, tokens) {
        (Some(_), Some(_)) => Err(ConfigError::new(
            token_keys[0],
            format!("give a length in characters ({}) or in tokens, not both", chars_keys[0]),
        )),
        (Some(n), None) => Ok(Length::Chars(n)),
        (None, Some(n)) => Ok(Length::Tokens(n)),
        (None, None) => Ok(default),
    }
}

/// Reads `keep`: `head`, `tail` or `head_and_tail`; `default` when absent.
pub(crate) fn read_keep_part(p: &mut Params, default: KeepPart) -> Result<KeepPart, ConfigError> {
    Ok(match p.choice_or(&["keep"], &["head", "tail", "head_and_tail"], keep_part_word(default))?.as_str() {
        "tail" => KeepPart::Tail,
        "head_and_tail" => KeepPart::HeadAndTail,
        _ => KeepPart::Head,
    })
}

/// `keep`'s name for `part` in configuration.
pub(crate) fn keep_part_word(part: KeepPart) -> &'static str {
    match part {
        KeepPart::Head => "head",
        KeepPart::Tail => "tail",
        KeepPart::HeadAndTail => "head_and_tail",
    }
}

/// The budget a step that cuts or clears `until_fits` stops at: the call's (`None` when the
/// step cuts everything it may, `until_fits` off); an error when it must stop at one and the
/// call has none.
pub(crate) fn until_fits_budget(
    step: &str,
    until_fits: bool,
    cx: &StepContext<'_>,
) -> Result<Option<usize>, StepError> {
    match (until_fits, cx.budget) {
        (false, _) => Ok(None),
        (true, Some(budget)) => Ok(Some(budget)),
        (true, None) => {
            Err(StepError::new(step, "`until_fits` needs a token budget: run it inside `fit` or a session"))
        }
    }
}

/// How to cut the text parts of one message or result: computed from a shared view, applied
/// in [`History::edit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextCut {
    /// (index among the parts, new text; `None`: the part goes), in part order.
    changes: Vec<(usize, Option<String>)>,
    /// What was cut, for the report.
    pub(crate) detail: String,
}

impl TextCut {
    /// Writes the cut into `parts` (the parts it was planned on).
    pub(crate) fn apply(&self, parts: &mut Vec<Part>) {
        for (i, text) in &self.changes {
            if let (Some(text), Some(Part::Text(t))) = (text, parts.get_mut(*i)) {
                t.text.clone_from(text);
            }
        }
        let mut index = 0;
        parts.retain(|_| {
            let gone = self.changes.iter().any(|(i, text)| *i == index && text.is_none());
            index += 1;
            !gone
        });
    }
}

/// Plans the cut of the text parts among `parts` so that together they fit `limit`, the
/// marker included; `None` when they already fit. Other parts are not counted or touched.
///
/// One text part is cut by [`cut`]. With several, the room is split as `keep` says (all to
/// the head, all to the tail, or half each); walking from the front, parts are kept whole
/// while the head room lasts and the first that does not fit keeps its head, followed by the
/// marker; walking from the back the same for the tail; the parts between go. For token
/// limits the texts are measured again after the cut and the room shrunk until the total
/// fits (tokens do not add up exactly where a text is cut).
pub(crate) fn plan_cut(
    parts: &[Part],
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
) -> Option<TextCut> {
    // a text of n bytes has at most n characters: texts this short fit a character limit
    // without being counted (most tool results, against the default 2,000 characters)
    if let Length::Chars(limit) = limit {
        let bytes: usize = parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.text.len(),
                _ => 0,
            })
            .sum();
        if bytes <= limit {
            return None;
        }
    }
    let texts: Vec<(usize, &str)> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Part::Text(t) => Some((i, t.text.as_str())),
            _ => None,
        })
        .collect();
    match texts.as_slice() {
        [] => None,
        [(i, text)] => {
            let c = cut(text, limit, keep, marker, counter)?;
            Some(TextCut { changes: vec![(*i, non_empty(c.text))], detail: c.detail })
        }
        _ => plan_cut_many(&texts, limit, keep, marker, counter),
    }
}

/// Whether every text of a message counted at `tokens` by `counter` (the history's) is
/// within `limit` by that count alone, without reading the message: its texts have at most
/// [`max_text_tokens`](ChatCounter::max_text_tokens) tokens and
/// [`max_text_len`](ChatCounter::max_text_len) bytes (a character is at least a byte).
/// `false` when the counter gives no such bound (then the texts must be read).
pub(crate) fn fits_by_count(counter: &ChatCounter, tokens: usize, limit: Length) -> bool {
    match limit {
        Length::Chars(n) => counter.max_text_len(tokens).is_some_and(|bytes| bytes <= n),
        Length::Tokens(n) => counter.max_text_tokens(tokens).is_some_and(|most| most <= n),
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn measure(text: &str, limit: Length, counter: &dyn TokenCounter) -> usize {
    match limit {
        Length::Chars(_) => text.chars().count(),
        Length::Tokens(_) => counter.count(text),
    }
}

/// `limit` with another value, in the same unit.
fn same_unit(limit: Length, value: usize) -> Length {
    match limit {
        Length::Chars(_) => Length::Chars(value),
        Length::Tokens(_) => Length::Tokens(value),
    }
}

/// The index of the first size that does not fit in `room` (walking `sizes` in order) and the
/// room left before it; `None` when all fit.
fn crossing(sizes: impl Iterator<Item = usize>, room: usize) -> Option<(usize, usize)> {
    let mut left = room;
    for (k, size) in sizes.enumerate() {
        if size > left {
            return Some((k, left));
        }
        left -= size;
    }
    None
}

fn plan_cut_many(
    texts: &[(usize, &str)],
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
) -> Option<TextCut> {
    let sizes: Vec<usize> = texts.iter().map(|(_, t)| measure(t, limit, counter)).collect();
    let total: usize = sizes.iter().sum();
    if total <= limit.value() {
        return None;
    }
    let unit = match limit {
        Length::Chars(_) => "chars",
        Length::Tokens(_) => "tokens",
    };
    let mut room = limit.value().saturating_sub(measure(marker, limit, counter));
    loop {
        let changes = cut_many_within(texts, &sizes, room, limit, keep, marker, counter);
        let size_of = |k: usize, i: usize| match changes.iter().find(|(j, _)| *j == i) {
            Some((_, new)) => new.as_deref().map_or(0, |t| measure(t, limit, counter)),
            None => sizes[k],
        };
        let kept: usize = texts.iter().enumerate().map(|(k, (i, _))| size_of(k, *i)).sum();
        let over = kept.saturating_sub(limit.value());
        if over == 0 || room == 0 {
            let removed = changes.iter().filter(|(_, t)| t.is_none()).count();
            let detail = format!(
                "{} text parts: kept {kept} of {total} {unit}, cut {}, removed {removed}",
                texts.len(),
                changes.len() - removed
            );
            return Some(TextCut { changes, detail });
        }
        room = room.saturating_sub(over);
    }
}

/// The changes that fit the texts (of `sizes`) into `room` plus the marker.
fn cut_many_within(
    texts: &[(usize, &str)],
    sizes: &[usize],
    room: usize,
    limit: Length,
    keep: KeepPart,
    marker: &str,
    counter: &dyn TokenCounter,
) -> Vec<(usize, Option<String>)> {
    let (head_room, tail_room) = match keep {
        KeepPart::Head => (room, 0),
        KeepPart::Tail => (0, room),
        KeepPart::HeadAndTail => (room - room / 2, room / 2),
    };
    let n = texts.len();
    // the texts do not fit in `room`, so both walks stop at a text, the head's no later
    let (h, head_left) = crossing(sizes.iter().copied(), head_room).unwrap_or((n - 1, 0));
    let (t, tail_left) =
        crossing(sizes.iter().rev().copied(), tail_room).map_or((h, 0), |(k, left)| (n - 1 - k, left));
    let t = t.max(h);
    let mut changes = Vec::new();
    if h == t {
        let mode = match (head_room, tail_room) {
            (_, 0) => KeepPart::Head,
            (0, _) => KeepPart::Tail,
            _ => KeepPart::HeadAndTail,
        };
        let within = head_left + tail_left + measure(marker, limit, counter).min(limit.value() - room);
        if let Some(c) = cut(texts[h].1, same_unit(limit, within), mode, marker, counter) {
            changes.push((texts[h].0, non_empty(c.text)));
        }
        return changes;
    }
    let keep_of = |text: &str, room: usize, mode: KeepPart| -> String {
        cut(text, same_unit(limit, room), mode, "", counter).map_or_else(|| text.to_string(), |c| c.text)
    };
    let head = keep_of(texts[h].1, head_left, KeepPart::Head) + marker;
    changes.push((texts[h].0, non_empty(head)));
    for (i, _) in &texts[h + 1..t] {
        changes.push((*i, None));
    }
    changes.push((texts[t].0, non_empty(keep_of(texts[t].1, tail_left, KeepPart::Tail))));
    changes
}
