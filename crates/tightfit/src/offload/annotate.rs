//! The pass after the steps that offloads what they removed or cut and says so in the history.
//!
//! It reads the history's record: input messages dropped (but for those merged into the turn
//! before them, whose content is still sent, and those that said nothing) and input messages a
//! step cut (a change of kind truncated, replaced or parts removed). Each run of dropped
//! messages between two sent input messages becomes one blob and one placeholder; each cut
//! message one blob and a note on the message. Cost: one pass over the output and the dropped
//! record, plus writing the blobs' JSON.

use std::collections::{BTreeMap, HashSet};

use super::{gist, Blob, OffloadKind, Offloaded};
use crate::format::Format;
use crate::history::{History, Origin};
use crate::message::{ContentForm, Message, Part, Role, TextPart};
use crate::record::ChangeKind;
use crate::repair::MERGED_INTO;
use crate::shape::says_nothing;
use crate::steps::TRACE_PREFIX;
use crate::text::message_span;
use crate::validate::note_position;

/// The step name the pass records its changes under.
pub(crate) const STEP: &str = "offload";

/// Offloads what the steps removed from or cut in `history` (made from `input`): returns what
/// the report lists and the blobs to write.
pub(crate) fn annotate(history: &mut History<'_>, input: &[Message]) -> (Vec<Offloaded>, Vec<Blob>) {
    let format = history.provider();
    history.set_step(STEP);
    let mut offloaded = Vec::new();
    let mut blobs = Vec::new();
    // removals first: a note on a cut message must not be taken for a step's trace
    place_removals(history, input, format, &mut offloaded, &mut blobs);
    note_cuts(history, input, format, &mut offloaded, &mut blobs);
    (offloaded, blobs)
}

/// A note on every message a step cut, naming the handle of its original.
fn note_cuts(
    history: &mut History<'_>,
    input: &[Message],
    format: Format,
    offloaded: &mut Vec<Offloaded>,
    blobs: &mut Vec<Blob>,
) {
    for position in 0..history.len() {
        let Origin::Input(index) = history.origin(position) else { continue };
        let message = history.message(position);
        let cuts: Vec<std::borrow::Cow<'_, str>> = history
            .changes(position)
            .iter()
            .filter(|c| matches!(c.kind, ChangeKind::Truncated | ChangeKind::Replaced | ChangeKind::Removed))
            .map(|c| c.detail.render(message))
            .collect();
        if cuts.is_empty() || *history.message(position) == input[index] {
            continue;
        }
        let detail = cuts.join("; ");
        let blob = Blob::of(&[(index, &input[index])], format);
        let note = format!(
            "{TRACE_PREFIX}cut to fit the context window; recall(\"{}\") returns it whole]",
            blob.handle
        );
        offloaded.push(Offloaded {
            handle: blob.handle.clone(),
            messages: vec![index],
            kind: OffloadKind::Cut,
            detail,
        });
        history.edit(position, ChangeKind::Rewritten, format!("noted {}", blob.handle), |m| {
            append_note(m, note)
        });
        blobs.push(blob);
    }
}

/// One placeholder (or a handle added to the trace a step left there) per run of dropped
/// messages.
fn place_removals(
    history: &mut History<'_>,
    input: &[Message],
    format: Format,
    offloaded: &mut Vec<Offloaded>,
    blobs: &mut Vec<Blob>,
) {
    // the input messages sent, by output position
    let sent: Vec<(usize, usize)> = (0..history.len())
        .filter_map(|p| match history.origin(p) {
            Origin::Input(i) => Some((p, i)),
            Origin::Inserted => None,
        })
        .collect();
    // the dropped messages that took content away, by the gap they fell in (the number of
    // sent input messages before them), with the steps that dropped them
    // (a message merged into the turn before it is still sent if all its parts are, in a
    // message a step wrote or changed: the turn it went into may have been dropped or cut since)
    let rewritten: HashSet<&Part> = (0..history.len())
        .filter(|&p| history.origin(p) == Origin::Inserted || !history.changes(p).is_empty())
        .flat_map(|p| history.message(p).parts.iter())
        .collect();
    let mut gaps: BTreeMap<usize, Vec<(usize, &str)>> = BTreeMap::new();
    for (index, step, reason) in history.dropped() {
        let merged_and_sent =
            reason.starts_with(MERGED_INTO) && input[index].parts.iter().all(|p| rewritten.contains(p));
        if merged_and_sent || says_nothing(&input[index]) {
            continue;
        }
        let gap = sent.partition_point(|(_, i)| *i < index);
        gaps.entry(gap).or_default().push((index, step));
    }
    let gaps: Vec<(usize, Vec<(usize, String)>)> = gaps
        .into_iter()
        .map(|(gap, run)| (gap, run.into_iter().map(|(i, s)| (i, s.to_string())).collect()))
        .collect();
    // from the last gap back, so that positions before stay where they are
    let mut records = Vec::new();
    for (gap, mut run) in gaps.into_iter().rev() {
        run.sort_unstable();
        let indices: Vec<usize> = run.iter().map(|(i, _)| *i).collect();
        let messages: Vec<(usize, &Message)> = indices.iter().map(|&i| (i, &input[i])).collect();
        let (handle, run_blobs) = Blob::of_run(&messages, format);
        let mut steps: Vec<&str> = Vec::new();
        for (_, step) in &run {
            if !steps.contains(&step.as_str()) {
                steps.push(step);
            }
        }
        let detail = format!("removed by {}", steps.join(", "));
        // the gap: after the sent message before it, up to the sent message after it
        let start = if gap == 0 { 0 } else { sent[gap - 1].0 + 1 };
        let end = sent.get(gap).map_or(history.len(), |(p, _)| *p);
        let recall =
            format!("recall(\"{handle}\") returns {}", if indices.len() == 1 { "it" } else { "them" });
        match trace_in(history, start, end) {
            // a step left its trace there (a session's compaction): the handle goes into it
            Some((position, part)) => {
                history.edit(position, ChangeKind::Rewritten, format!("noted {handle}"), |m| {
                    if let Part::Text(t) = &mut m.parts[part] {
                        // before the bracket that closes the trace's first line (a summary's
                        // header; its body follows)
                        let first_line = t.text.find('\n').unwrap_or(t.text.len());
                        let closing = t.text[..first_line].rfind(']').unwrap_or(first_line);
                        t.text.insert_str(closing, &format!("; {recall}"));
                    }
                });
            }
            None => {
                // never between a call's results (OpenAI: a tool message answering a call made
                // before the gap leads the sent messages after it)
                let mut end = end;
                while end < history.len() && history.message(end).role == Role::Tool {
                    end += 1;
                }
                let end = note_position(history.messages(), end, format);
                let gist = gist::of(&messages.iter().map(|(_, m)| *m).collect::<Vec<_>>());
                let count = indices.len();
                let span = match (indices.first(), indices.last()) {
                    (Some(a), Some(b)) => format!("{} of the conversation", message_span(*a, *b)),
                    _ => String::new(),
                };
                let text = format!(
                    "{TRACE_PREFIX}{count} message{} ({span}) {} offloaded here to fit the context window; {recall}. {gist}]",
                    if count == 1 { "" } else { "s" },
                    if count == 1 { "was" } else { "were" }
                );
                place(history, end, text, &handle, format);
            }
        };
        records.push(Offloaded { handle, messages: indices, kind: OffloadKind::Removed, detail });
        blobs.extend(run_blobs);
    }
    records.reverse();
    offloaded.extend(records);
}

/// The trace a step left between positions `start` and `end` (a message it wrote, or a text
/// part merged into a neighbouring turn), as (position, part index).
fn trace_in(history: &History<'_>, start: usize, end: usize) -> Option<(usize, usize)> {
    (start.saturating_sub(1)..end.min(history.len())).rev().find_map(|p| {
        let written = history.origin(p) == Origin::Inserted || !history.changes(p).is_empty();
        if !written {
            return None;
        }
        history
            .message(p)
            .parts
            .iter()
            .rposition(|part| matches!(part, Part::Text(t) if t.text.starts_with(TRACE_PREFIX)))
            .map(|part| (p, part))
    })
}

/// Puts a placeholder's `text` at `position`: a user message of its own, or for Anthropic,
/// where a user turn is beside it, a text block of that turn (two user turns in a row would be
/// merged anyway, and a tool result must lead its turn).
fn place(history: &mut History<'_>, position: usize, text: String, handle: &str, format: Format) {
    let detail = format!("placeholder of the messages offloaded under {handle}");
    if format == Format::Anthropic {
        if position < history.len() && history.message(position).role == Role::User {
            history.edit(position, ChangeKind::Rewritten, detail, |m| {
                let at = m.parts.iter().take_while(|p| matches!(p, Part::ToolResult(_))).count();
                into_parts(m);
                m.parts.insert(at, Part::Text(TextPart::new(text)));
            });
            return;
        }
        if position > 0 && history.message(position - 1).role == Role::User {
            history.edit(position - 1, ChangeKind::Rewritten, detail, |m| {
                into_parts(m);
                m.parts.push(Part::Text(TextPart::new(text)));
            });
            return;
        }
    }
    history.insert(position, Message::text(Role::User, text), detail);
}

/// Writes a message's content as a list of parts (so another part can join it).
fn into_parts(message: &mut Message) {
    if matches!(message.content_form, ContentForm::Text | ContentForm::Null | ContentForm::Absent) {
        message.content_form = ContentForm::Parts;
    }
}

/// Adds `note` to the end of a message's text: to its last tool result where it answers calls
/// (Anthropic), else to its last text (a new text part before any tool call if it has none).
fn append_note(message: &mut Message, note: String) {
    let target: &mut Vec<Part> = match message.parts.iter().rposition(|p| matches!(p, Part::ToolResult(_))) {
        Some(at) => match &mut message.parts[at] {
            Part::ToolResult(result) => {
                if result.content_form != ContentForm::Parts {
                    if let Some(Part::Text(t)) = result.parts.last_mut() {
                        t.text.push_str("\n\n");
                        t.text.push_str(&note);
                        return;
                    }
                    result.content_form =
                        if result.parts.is_empty() { ContentForm::Text } else { ContentForm::Parts };
                }
                &mut result.parts
            }
            _ => unreachable!("a tool result at the position found"),
        },
        None => {
            if message.content_form == ContentForm::Text {
                if let Some(Part::Text(t)) = message.parts.iter_mut().rfind(|p| matches!(p, Part::Text(_))) {
                    t.text.push_str("\n\n");
                    t.text.push_str(&note);
                    return;
                }
            }
            if message.parts.iter().all(|p| matches!(p, Part::Text(_))) && message.parts.len() <= 1 {
                // nothing but one text (or nothing): the note joins it as a string
                match message.parts.first_mut() {
                    Some(Part::Text(t)) => {
                        t.text.push_str("\n\n");
                        t.text.push_str(&note);
                    }
                    _ => message.parts.push(Part::Text(TextPart::new(note))),
                }
                if message.content_form != ContentForm::Parts {
                    message.content_form = ContentForm::Text;
                }
                return;
            }
            into_parts(message);
            &mut message.parts
        }
    };
    let at = target.iter().position(|p| matches!(p, Part::ToolCall(_))).unwrap_or(target.len());
    target.insert(at, Part::Text(TextPart::new(note)));
}
