//! `drop_binary`: remove images, audio and files (llmling `FilterBinaryContent`).
//!
//! Media costs many tokens (an image hundreds to thousands, a PDF far more) and is rarely
//! needed again once the model has answered about it. Every image, audio and file part goes,
//! also inside Anthropic `tool_result` blocks; with `placeholder` each one leaves a short text
//! naming what was there (`[image: image/png]`, `[audio: wav]`, `[file: report.pdf]`), so the
//! model still knows something was shown.
//!
//! Validity: a message left with nothing goes as a whole (a user turn is its own unit, an
//! assistant message left with nothing has no calls and so no results), but a tool result
//! (an OpenAI `tool` message or an Anthropic `tool_result` block) must stay to answer its
//! call, so one that would be left empty gets the placeholder text even when `placeholder` is
//! off. System messages and the newest user turn are kept by default. Cost: O(parts).

use super::shared::keep::protected_messages;
use super::shared::keep::read_keep;
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::message::{ImageSource, Message, Part, Role, TextPart};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::shape::is_blank;

/// The longest description a placeholder quotes (a file name, a URL), in characters.
const MAX_LABEL_CHARS: usize = 120;

/// `drop_binary` in configuration.
pub(crate) const KIND: StepKind =
    StepKind::of::<DropBinary>("drop_binary", &["filter_binary", "filter_binary_content"]).documented(
        "Remove images, audio and files; optionally leave a line naming what was there.",
        &[
            KeyDoc::new(
                "placeholder",
                KeyUnit::Flag,
                "leave a text naming each removed part (llmling `keep_references`)",
            ),
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Removes image, audio and file parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DropBinary {
    /// Replace each removed part by a text naming it. Defaults to false (llmling's
    /// `keep_references`). A tool result that would be left empty gets the text anyway.
    pub placeholder: bool,
    /// What is kept untouched. Defaults to system messages and the newest user turn.
    pub keep: Keep,
}

impl DropBinary {
    /// Removes media and leaves a text naming each removed part.
    pub fn with_placeholders() -> DropBinary {
        DropBinary { placeholder: true, ..DropBinary::default() }
    }
}

impl FromParams for DropBinary {
    /// Keys: `placeholder` (alias `keep_references`), `keep_system` (alias
    /// `preserve_system_messages`), `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<DropBinary, ConfigError> {
        let mut step = DropBinary::default();
        step.placeholder = p.bool_or(&["placeholder", "keep_references"], step.placeholder)?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

impl Step for DropBinary {
    fn name(&self) -> &'static str {
        "drop_binary"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("drop_binary").key("placeholder", self.placeholder).keep(self.keep).done()
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let protected = protected_messages(history, self.keep);
        // from the end, so that removing a message leaves the indices still to visit alone
        for i in (0..history.len()).rev() {
            if protected[i] || !has_binary(&history.message(i).parts) {
                continue;
            }
            let mut stripped = history.message(i).clone();
            let tally = strip_message(&mut stripped, self.placeholder);
            if is_left_empty(&stripped) {
                history.remove(i, &format!("held only media ({})", tally.kinds.join(", ")));
                continue;
            }
            let kind = if tally.replaced > 0 { ChangeKind::Replaced } else { ChangeKind::Removed };
            let detail = tally.detail();
            history.edit(i, kind, detail, |m| *m = stripped);
        }
        Ok(())
    }
}

fn is_binary(part: &Part) -> bool {
    matches!(part, Part::Image(_) | Part::Audio(_) | Part::File(_))
}

fn has_binary(parts: &[Part]) -> bool {
    parts.iter().any(|p| match p {
        Part::ToolResult(r) => has_binary(&r.parts),
        p => is_binary(p),
    })
}

/// Whether a message that is not a tool result has nothing left to say.
fn is_left_empty(message: &Message) -> bool {
    !matches!(message.role, Role::Tool | Role::Function) && message.parts.iter().all(is_blank)
}

/// What stripping one message did.
#[derive(Debug, Default)]
struct Tally {
    removed: usize,
    replaced: usize,
    kinds: Vec<&'static str>,
}

impl Tally {
    fn note(&mut self, part: &Part, replaced: bool) {
        if replaced {
            self.replaced += 1;
        } else {
            self.removed += 1;
        }
        let kind = kind_word(part);
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
    }

    fn detail(&self) -> String {
        let kinds = self.kinds.join(", ");
        match (self.removed, self.replaced) {
            (removed, 0) => format!("removed {removed} media part(s) ({kinds})"),
            (0, replaced) => format!("replaced {replaced} media part(s) by a placeholder ({kinds})"),
            (removed, replaced) => {
                format!("removed {removed} and replaced {replaced} media part(s) by a placeholder ({kinds})")
            }
        }
    }
}

/// Strips the media of a message and of its `tool_result` blocks.
fn strip_message(message: &mut Message, placeholder: bool) -> Tally {
    let mut tally = Tally::default();
    let is_result = matches!(message.role, Role::Tool | Role::Function);
    strip_parts(&mut message.parts, placeholder, is_result, &mut tally);
    for part in &mut message.parts {
        if let Part::ToolResult(result) = part {
            strip_parts(&mut result.parts, placeholder, true, &mut tally);
        }
    }
    tally
}

/// Removes (or, with `placeholder`, replaces) the media among `parts`. The content of a tool
/// result is never left empty: if nothing else would be left, the media are replaced.
fn strip_parts(parts: &mut Vec<Part>, placeholder: bool, is_result: bool, tally: &mut Tally) {
    if !parts.iter().any(is_binary) {
        return;
    }
    let would_be_empty = parts.iter().all(|p| is_binary(p) || is_blank(p));
    let replace = placeholder || (is_result && would_be_empty);
    let old = std::mem::take(parts);
    for part in old {
        if !is_binary(&part) {
            parts.push(part);
            continue;
        }
        tally.note(&part, replace);
        if replace {
            parts.push(Part::Text(TextPart::new(describe(&part))));
        }
    }
}

fn kind_word(part: &Part) -> &'static str {
    match part {
        Part::Image(_) => "image",
        Part::Audio(_) => "audio",
        Part::File(f) if f.kind == "document" => "document",
        _ => "file",
    }
}

/// The placeholder of a media part: its kind and what the part says about itself (a media
/// type, a format, a file name), or the kind alone.
pub(crate) fn describe(part: &Part) -> String {
    let kind = kind_word(part);
    match label(part) {
        Some(label) => format!("[{kind}: {}]", shorten(&label)),
        None => format!("[{kind}]"),
    }
}

fn label(part: &Part) -> Option<String> {
    match part {
        Part::Image(image) => match &image.source {
            ImageSource::Base64 { media_type, .. } => Some(media_type.clone()),
            ImageSource::Url(url) => match url.strip_prefix("data:") {
                Some(rest) => rest.split([';', ',']).next().filter(|t| !t.is_empty()).map(str::to_string),
                None => Some(url.clone()),
            },
            ImageSource::Other(fields) => string_field(fields, &["file_id", "url", "media_type"]),
        },
        Part::Audio(audio) => audio.format.clone(),
        Part::File(file) => {
            let inner = ["file", "source"]
                .iter()
                .filter_map(|k| file.fields.get(*k).and_then(|v| v.as_object()))
                .collect::<Vec<_>>();
            string_field(&file.fields, &["filename", "title"])
                .or_else(|| inner.iter().find_map(|m| string_field(m, &["filename", "title"])))
                .or_else(|| inner.iter().find_map(|m| string_field(m, &["media_type", "file_id", "url"])))
        }
        _ => None,
    }
}

fn string_field(map: &serde_json::Map<String, serde_json::Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| map.get(*k).and_then(|v| v.as_str()).filter(|s| !s.is_empty()))
        .map(str::to_string)
}

/// At most [`MAX_LABEL_CHARS`] characters, with `…` where it was cut, never breaking a
/// character.
fn shorten(label: &str) -> String {
    match label.char_indices().nth(MAX_LABEL_CHARS) {
        Some((end, _)) => format!("{}…", &label[..crate::text::floor_grapheme(label, end)]),
        None => label.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, openai, run, run_in, texts};
    use crate::validate::validate;

    const PNG: &str = "data:image/png;base64,iVBORw0KGgo=";

    fn openai_media() -> Vec<Message> {
        openai(&format!(
            r#"[{{"role": "system", "content": "be brief"}},
                {{"role": "user", "content": [{{"type": "text", "text": "what is this?"}},
                    {{"type": "image_url", "image_url": {{"url": "{PNG}"}}}}]}},
                {{"role": "assistant", "content": "a cat"}},
                {{"role": "user", "content": [{{"type": "input_audio", "input_audio": {{"data": "UklGRg==", "format": "wav"}}}}]}},
                {{"role": "assistant", "content": "a meow"}},
                {{"role": "user", "content": [{{"type": "text", "text": "and this?"}},
                    {{"type": "file", "file": {{"filename": "report.pdf", "file_data": "JVBERi0="}}}}]}}]"#
        ))
    }

    #[test]
    fn removes_media_and_drops_turns_left_empty() {
        let input = openai_media();
        let out = run(&DropBinary::default(), &input);
        // the audio-only turn goes; the newest user turn keeps its file
        assert_eq!(
            texts(&out),
            vec![
                "system: be brief",
                "user: what is this?",
                "assistant: a cat",
                "assistant: a meow",
                "user: and this?"
            ]
        );
        assert_eq!(out[1].parts.len(), 1);
        assert!(matches!(out[4].parts[1], Part::File(_)));
        assert_valid(&out);
    }

    #[test]
    fn placeholders_name_what_was_there() {
        let input = openai_media();
        let keep = Keep { system: true, newest_user_turn: false };
        let out = run(&DropBinary { placeholder: true, keep }, &input);
        assert_eq!(
            texts(&out),
            vec![
                "system: be brief",
                "user: what is this?\n[image: image/png]",
                "assistant: a cat",
                "user: [audio: wav]",
                "assistant: a meow",
                "user: and this?\n[file: report.pdf]"
            ]
        );
        assert_valid(&out);
    }

    #[test]
    fn a_tool_result_left_empty_keeps_a_placeholder() {
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "screenshot please"}},
                {{"role": "assistant", "content": null, "tool_calls": [
                    {{"id": "a", "type": "function", "function": {{"name": "shot", "arguments": "{{}}"}}}},
                    {{"id": "b", "type": "function", "function": {{"name": "shot", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": [{{"type": "image_url", "image_url": {{"url": "{PNG}"}}}}]}},
                {{"role": "tool", "tool_call_id": "b", "content": [{{"type": "text", "text": "taken"}},
                    {{"type": "image_url", "image_url": {{"url": "https://x.test/b.png"}}}}]}},
                {{"role": "user", "content": "thanks"}}]"#
        ));
        let out = run(&DropBinary::default(), &input);
        assert_eq!(texts(&out)[2..4], ["tool: [image: image/png]", "tool: taken"]);
        assert_valid(&out);
    }

    #[test]
    fn anthropic_blocks_and_results() {
        let input = anthropic(
            r#"[{"role": "user", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
                    {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "look", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}]}]},
                {"role": "assistant", "content": "seen"},
                {"role": "user", "content": "next"}]"#,
        );
        let out = run_in(&DropBinary::default(), &input, anthropic_cx());
        // the media-only first turn goes; the history then starts with the assistant and gets
        // a placeholder user turn from the repair pass
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        let Part::ToolResult(result) = &out[2].parts[0] else { panic!("a tool result: {out:?}") };
        assert_eq!(result.parts, vec![Part::Text(TextPart::new("[image: image/png]"))]);
        let with = run_in(&DropBinary::with_placeholders(), &input, anthropic_cx());
        assert_eq!(texts(&with)[0], "user: [image: image/jpeg]\n[document: application/pdf]");
        assert_eq!(validate(&with, Format::Anthropic), vec![]);
    }

    #[test]
    fn reads_its_keys() {
        let map = serde_json::json!({"keep_references": true, "keep_newest_user_turn": false});
        let mut p = Params::new(map.as_object().unwrap().clone());
        let step = DropBinary::from_params(&mut p).unwrap();
        assert_eq!(
            step,
            DropBinary { placeholder: true, keep: Keep { system: true, newest_user_turn: false } }
        );
        p.finish().unwrap();
    }

    #[test]
    fn long_labels_are_shortened() {
        let url = format!("https://x.test/{}", "a".repeat(300));
        let part = Part::Image(crate::message::ImagePart {
            source: ImageSource::Url(url),
            detail: None,
            style: crate::message::ImageStyle::OpenAi,
            extra: Default::default(),
            inner_extra: Default::default(),
        });
        let text = describe(&part);
        assert_eq!(text.chars().count(), "[image: ]".len() + MAX_LABEL_CHARS + 1);
    }
}
