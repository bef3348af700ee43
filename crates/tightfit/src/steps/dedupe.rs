//! `dedupe`: replace a repeated tool output, image or file by a reference to its first
//! occurrence (tightfit's own step).
//!
//! Agents read the same file twice, poll a status that has not changed, take the same
//! screenshot again; the model already has the first copy. A tool result whose text is
//! identical to an earlier result's becomes `[identical to the result of tool call call_abc
//! above]` (the call id is stable: it does not move when other messages are dropped), and an
//! image, audio or file part identical to an earlier one becomes a reference to where the
//! first one is (the result of a call, or the message that begins with some words). The first
//! occurrence is never changed, so a conversation's prefix stays the same from one request to
//! the next.
//!
//! Identity is a 128-bit content hash (xxh3) kept in a map while the history is read once in
//! order, so the result is deterministic. Text results are deduplicated only when they hold
//! at least `min_tokens` tokens and the reference is shorter; media always. Validity: only
//! content is replaced, every result stays where it is. Protected messages (system, newest
//! user turn) are never changed, though their content counts as a first occurrence. Cost:
//! O(bytes) to hash, plus counting the text of repeated results.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::Hash;

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use super::shared::keep::protected_messages;
use super::shared::keep::read_keep;
use super::{ConfigError, Step, StepContext, StepError, StepKind};
use crate::history::{History, Keep};
use crate::message::{ContentForm, Message, Part, Role, TextPart};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::tokens::TokenCounter;

/// The default reference to an earlier identical result; `{id}` is its call's id.
pub const IDENTICAL_RESULT: &str = "[identical to the result of tool call {id} above]";

/// The default reference to an earlier identical media part; `{kind}` is `image`, `audio`,
/// `file` or `document`, `{at}` says where the first one is.
pub const IDENTICAL_MEDIA: &str = "[{kind} identical to the one in {at} above]";

/// How many words of a message a media reference quotes to say which message it means.
const QUOTED_WORDS: usize = 8;

/// `dedupe` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<Dedupe>("dedupe", &["deduplicate"]);

/// Replaces repeated tool results and media by references to the first occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dedupe {
    /// Only text results of at least this many tokens are replaced. Defaults to 32.
    pub min_tokens: usize,
    /// The reference that replaces a repeated result; `{id}` is the first one's call id.
    /// Defaults to `[identical to the result of tool call {id} above]`.
    pub placeholder: String,
    /// The reference that replaces a repeated media part; `{kind}` and `{at}` are filled in.
    /// Defaults to `[{kind} identical to the one in {at} above]`.
    pub media_placeholder: String,
    /// What is never changed. Defaults to system messages and the newest user turn.
    pub keep: Keep,
}

impl Default for Dedupe {
    fn default() -> Dedupe {
        Dedupe {
            min_tokens: 32,
            placeholder: IDENTICAL_RESULT.to_string(),
            media_placeholder: IDENTICAL_MEDIA.to_string(),
            keep: Keep::default(),
        }
    }
}

impl FromParams for Dedupe {
    /// Keys: `min_tokens`, `placeholder`, `media_placeholder`, `keep_system` (alias
    /// `preserve_system_messages`), `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<Dedupe, ConfigError> {
        let mut step = Dedupe::default();
        if let Some(min) = p.usize(&["min_tokens"])? {
            step.min_tokens = min;
        }
        if let Some(placeholder) = p.string(&["placeholder"])? {
            step.placeholder = placeholder;
        }
        if let Some(placeholder) = p.string(&["media_placeholder"])? {
            step.media_placeholder = placeholder;
        }
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

impl Step for Dedupe {
    fn name(&self) -> &'static str {
        "dedupe"
    }

    fn check(&self) -> Result<(), ConfigError> {
        for (key, text) in
            [("placeholder", &self.placeholder), ("media_placeholder", &self.media_placeholder)]
        {
            if text.trim().is_empty() {
                return Err(ConfigError::new(key, "must not be blank"));
            }
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let protected = protected_messages(history, self.keep);
        let mut seen = Seen::default();
        for (i, protected) in protected.into_iter().enumerate() {
            let plan = self.plan_message(history.message(i), &mut seen, history.counter().text_counter());
            if protected || plan.is_empty() {
                continue;
            }
            let detail = plan.iter().map(|r| r.detail.as_str()).collect::<Vec<_>>().join("; ");
            if let [Replacement { target: Target::Content, .. }] = plan.as_slice() {
                // a whole tool message: no need to copy the text that goes
                let text = plan.into_iter().next().map(|r| r.text).unwrap_or_default();
                let parts = vec![Part::Text(TextPart::new(text))];
                history.replace_parts(i, ChangeKind::Replaced, detail, parts, ContentForm::Text);
                continue;
            }
            history.edit(i, ChangeKind::Replaced, detail, |m| apply_plan(m, plan));
        }
        Ok(())
    }
}

/// First occurrences so far: result text hash → call id, media hash → where it is.
#[derive(Debug, Default)]
struct Seen {
    results: HashMap<u128, FirstResult>,
    media: HashMap<u128, String>,
}

/// Where in a message a replacement goes.
/// The first result with a given text: its call id, and once a repeat asked, whether the
/// text has `min_tokens`.
#[derive(Debug)]
struct FirstResult {
    id: String,
    big_enough: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The whole content of a `tool`/`function` message.
    Content,
    /// The whole content of the `tool_result` block at this part index.
    Block(usize),
    /// One part: (the block it is in, if any; its index).
    Part(Option<usize>, usize),
}

#[derive(Debug)]
struct Replacement {
    target: Target,
    text: String,
    detail: String,
}

impl Dedupe {
    /// Reads one message: records its first occurrences and returns the replacements of its
    /// repeats (computed even for a protected message, whose repeats are then not applied).
    fn plan_message(
        &self,
        message: &Message,
        seen: &mut Seen,
        counter: &dyn TokenCounter,
    ) -> Vec<Replacement> {
        let mut plan = Vec::new();
        if matches!(message.role, Role::Tool | Role::Function) {
            let id = message.tool_call_id.clone().or_else(|| message.name.clone()).unwrap_or_default();
            self.plan_result(&message.parts, &id, None, seen, counter, &mut plan);
            return plan;
        }
        // named only when a first media part needs it: naming copies the message's text
        let at = || message_place(message);
        for (p, part) in message.parts.iter().enumerate() {
            match part {
                Part::ToolResult(r) => {
                    self.plan_result(&r.parts, &r.tool_use_id, Some(p), seen, counter, &mut plan)
                }
                part => self.plan_media(part, Target::Part(None, p), &at, seen, &mut plan),
            }
        }
        plan
    }

    /// A result's content: a repeat as a whole when it is all text, else its media one by one.
    fn plan_result(
        &self,
        parts: &[Part],
        id: &str,
        block: Option<usize>,
        seen: &mut Seen,
        counter: &dyn TokenCounter,
        plan: &mut Vec<Replacement>,
    ) {
        let all_text = !parts.is_empty() && parts.iter().all(|p| matches!(p, Part::Text(_)));
        if !all_text {
            let at = || format!("the result of tool call {id}");
            for (p, part) in parts.iter().enumerate() {
                self.plan_media(part, Target::Part(block, p), &at, seen, plan);
            }
            return;
        }
        let text = joined_text(parts);
        let (first, big_enough) = match seen.results.entry(xxh3_128(text.as_bytes())) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(FirstResult { id: id.to_string(), big_enough: None });
                return;
            }
            std::collections::hash_map::Entry::Occupied(mut first) => {
                let first = first.get_mut();
                // counted once per distinct text, however often it repeats
                let big_enough = *first.big_enough.get_or_insert_with(|| {
                    self.min_tokens == 0 || counter.count_till_limit(&text, self.min_tokens - 1).is_none()
                });
                (first.id.clone(), big_enough)
            }
        };
        let reference = self.placeholder.replace("{id}", &first);
        if big_enough && reference.len() < text.len() {
            let target = block.map_or(Target::Content, Target::Block);
            let detail = format!("the result of {id}: identical to the result of {first}");
            plan.push(Replacement { target, text: reference, detail });
        }
    }

    /// A media part: remembered where it first occurs (`at` names the place, called only
    /// then), replaced by a reference when it repeats.
    fn plan_media(
        &self,
        part: &Part,
        target: Target,
        at: &dyn Fn() -> String,
        seen: &mut Seen,
        plan: &mut Vec<Replacement>,
    ) {
        let Some((kind, hash)) = media_hash(part) else { return };
        match seen.media.entry(hash) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(at());
            }
            std::collections::hash_map::Entry::Occupied(first) => {
                let text = self.media_placeholder.replace("{kind}", kind).replace("{at}", first.get());
                let detail = format!("a repeated {kind}, identical to the one in {}", first.get());
                plan.push(Replacement { target, text, detail });
            }
        }
    }
}

fn apply_plan(message: &mut Message, plan: Vec<Replacement>) {
    for r in plan {
        let text = Part::Text(TextPart::new(r.text));
        match r.target {
            Target::Content => {
                message.parts = vec![text];
                message.content_form = ContentForm::Text;
            }
            Target::Block(b) => {
                if let Some(Part::ToolResult(result)) = message.parts.get_mut(b) {
                    result.parts = vec![text];
                    result.content_form = ContentForm::Text;
                }
            }
            Target::Part(None, p) => {
                if let Some(part) = message.parts.get_mut(p) {
                    *part = text;
                }
            }
            Target::Part(Some(b), p) => {
                if let Some(Part::ToolResult(result)) = message.parts.get_mut(b) {
                    if let Some(part) = result.parts.get_mut(p) {
                        *part = text;
                    }
                }
            }
        }
    }
}

/// The kind and content hash of a media part (what it holds, not how it is decorated).
fn media_hash(part: &Part) -> Option<(&'static str, u128)> {
    let mut hasher = Xxh3::new();
    let kind = match part {
        Part::Image(image) => {
            image.source.hash(&mut hasher);
            "image"
        }
        Part::Audio(audio) => {
            audio.data.hash(&mut hasher);
            audio.format.hash(&mut hasher);
            "audio"
        }
        Part::File(file) => {
            file.fields.hash(&mut hasher);
            if file.kind == "document" {
                "document"
            } else {
                "file"
            }
        }
        _ => return None,
    };
    kind.hash(&mut hasher);
    Some((kind, hasher.digest128()))
}

/// How a media reference names a message that is not a tool result: by its role and first
/// words, which stay put when other messages are dropped.
fn message_place(message: &Message) -> String {
    let text = message.text_content();
    let words: Vec<&str> = text.split_whitespace().take(QUOTED_WORDS + 1).collect();
    match words.len() {
        0 => format!("an earlier {} message", message.role_name()),
        n if n > QUOTED_WORDS => {
            format!(
                "the {} message that begins \"{}…\"",
                message.role_name(),
                words[..QUOTED_WORDS].join(" ")
            )
        }
        _ => format!("the {} message \"{}\"", message.role_name(), words.join(" ")),
    }
}

fn joined_text(parts: &[Part]) -> Cow<'_, str> {
    if let [Part::Text(t)] = parts {
        return Cow::Borrowed(&t.text);
    }
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    Cow::Owned(texts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, openai, run, run_in};
    use crate::validate::validate;

    fn long(word: &str) -> String {
        format!("{word} ").repeat(40)
    }

    fn step(id: &str, content: &str) -> String {
        format!(
            r#"{{"role": "assistant", "content": null, "tool_calls": [
                {{"id": "{id}", "type": "function", "function": {{"name": "read", "arguments": "{{}}"}}}}]}},
               {{"role": "tool", "tool_call_id": "{id}", "content": "{content}"}}"#
        )
    }

    #[test]
    fn a_repeated_result_refers_to_the_first() {
        let (a, b) = (long("alpha"), long("beta"));
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "go"}}, {}, {}, {}, {}, {}, {{"role": "user", "content": "next"}}]"#,
            step("r0", &a),
            step("r1", &b),
            step("r2", &a),
            step("r3", "same"),
            step("r4", "same"),
        ));
        let out = run(&Dedupe::default(), &input);
        let results: Vec<String> =
            out.iter().filter(|m| m.role == Role::Tool).map(|m| m.text_content()).collect();
        assert_eq!(
            results,
            vec![
                a.clone(),
                b,
                "[identical to the result of tool call r0 above]".into(),
                "same".into(),
                "same".into()
            ]
        );
        assert_valid(&out);
        // again: nothing more to do
        assert_eq!(run(&Dedupe::default(), &out), out);
        let custom = Dedupe { placeholder: "(see {id})".into(), min_tokens: 0, ..Dedupe::default() };
        let out = run(&custom, &input);
        assert_eq!(out[6].text_content(), "(see r0)");
        // "same" is shorter than its reference: kept
        assert_eq!(out[10].text_content(), "same");
    }

    #[test]
    fn anthropic_blocks_and_images() {
        let text = long("page");
        let input = anthropic(&format!(
            r#"[{{"role": "user", "content": [{{"type": "text", "text": "compare with this chart please"}},
                    {{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}}}}]}},
                {{"role": "assistant", "content": [
                    {{"type": "tool_use", "id": "a", "name": "fetch", "input": {{}}}},
                    {{"type": "tool_use", "id": "b", "name": "fetch", "input": {{}}}},
                    {{"type": "tool_use", "id": "c", "name": "shot", "input": {{}}}}]}},
                {{"role": "user", "content": [
                    {{"type": "tool_result", "tool_use_id": "a", "content": "{text}"}},
                    {{"type": "tool_result", "tool_use_id": "b", "content": [{{"type": "text", "text": "{text}"}}]}},
                    {{"type": "tool_result", "tool_use_id": "c", "content": [
                        {{"type": "text", "text": "screen"}},
                        {{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}}, "cache_control": {{"type": "ephemeral"}}}}]}}]}},
                {{"role": "assistant", "content": "same chart"}},
                {{"role": "user", "content": "ok"}}]"#
        ));
        let out = run_in(&Dedupe::default(), &input, anthropic_cx());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        let blocks: Vec<&crate::message::ToolResult> = out[2]
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(blocks[0].parts, vec![Part::Text(TextPart::new(text.as_str()))]);
        assert_eq!(
            blocks[1].parts,
            vec![Part::Text(TextPart::new("[identical to the result of tool call a above]"))]
        );
        assert_eq!(
            blocks[2].parts,
            vec![
                Part::Text(TextPart::new("screen")),
                Part::Text(TextPart::new(
                    "[image identical to the one in the user message \"compare with this chart please\" above]"
                )),
            ]
        );
    }

    #[test]
    fn the_newest_user_turn_keeps_its_repeat() {
        let image = r#"{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}"#;
        let input = openai(&format!(
            r#"[{{"role": "user", "content": [{image}]}},
                {{"role": "assistant", "content": "a cat"}},
                {{"role": "user", "content": [{{"type": "text", "text": "again?"}}, {image}]}},
                {{"role": "assistant", "content": "still a cat"}},
                {{"role": "user", "content": [{{"type": "text", "text": "and now?"}}, {image}]}}]"#
        ));
        let out = run(&Dedupe::default(), &input);
        assert_eq!(
            out[2].text_content(),
            "again?\n[image identical to the one in an earlier user message above]"
        );
        assert_eq!(out[4], input[4]);
        assert_valid(&out);
    }

    #[test]
    fn reads_its_keys() {
        let map = serde_json::json!({"min_tokens": 0, "placeholder": "(see {id})", "media_placeholder": "(same {kind})",
            "keep_newest_user_turn": false});
        let mut p = Params::new(map.as_object().unwrap().clone());
        let step = Dedupe::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(
            step,
            Dedupe {
                min_tokens: 0,
                placeholder: "(see {id})".into(),
                media_placeholder: "(same {kind})".into(),
                keep: Keep { system: true, newest_user_turn: false },
            }
        );
        let blank = Dedupe { media_placeholder: "".into(), ..Dedupe::default() };
        assert_eq!(blank.check().unwrap_err().key, "media_placeholder");
    }
}
