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
//!
//! Each reference is recorded in the history, which keeps it true: when a later step clears,
//! cuts or drops the first occurrence, the first repeat still holding a reference gets the
//! content back and the other references point at it (see `history::references`).

use super::shared::written::Written;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use super::shared::keep::protected_messages;
use super::shared::keep::read_keep;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::references::{media_hash, message_place, Holds, Original, Reference, Site};
use crate::history::{History, Keep, Origin};
use crate::message::{ContentForm, Message, Part, Role, TextPart};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::record::{repeat_line, result_id, Detail};
use crate::result_text::{joined_text, result_text, ResultText};
use crate::tokens::TokenCounter;

/// The default reference to an earlier identical result; `{id}` is its call's id.
pub const IDENTICAL_RESULT: &str = "[identical to the result of tool call {id} above]";

/// The default reference to an earlier identical media part; `{kind}` is `image`, `audio`,
/// `file` or `document`, `{at}` says where the first one is.
pub const IDENTICAL_MEDIA: &str = "[{kind} identical to the one in {at} above]";

/// `dedupe` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<Dedupe>("dedupe", &["deduplicate"]).documented(
    "Replace a repeated identical tool output, image or file by a reference to the first.",
    &[
        KeyDoc::new("min_tokens", KeyUnit::Tokens, "only text results of at least this size are replaced"),
        KeyDoc::new(
            "placeholder",
            KeyUnit::Text,
            "the reference replacing a repeated result; `{id}` is the first one's call id",
        ),
        KeyDoc::new(
            "media_placeholder",
            KeyUnit::Text,
            "the reference replacing a repeated media part; `{kind}` and `{at}` are filled in",
        ),
        KEEP_SYSTEM,
        KEEP_NEWEST_USER_TURN,
    ],
);

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
        step.min_tokens = p.usize_or(&["min_tokens"], step.min_tokens)?;
        step.placeholder = p.string_or(&["placeholder"], &step.placeholder)?;
        step.media_placeholder = p.string_or(&["media_placeholder"], &step.media_placeholder)?;
        step.keep = read_keep(p, step.keep)?;
        Ok(step)
    }
}

impl Step for Dedupe {
    fn name(&self) -> &'static str {
        "dedupe"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("dedupe")
            .key("min_tokens", self.min_tokens)
            .key("placeholder", self.placeholder.as_str())
            .key("media_placeholder", self.media_placeholder.as_str())
            .keep(self.keep)
            .done()
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
        let mut seen = Seen::new(self);
        for (i, protected) in protected.into_iter().enumerate() {
            let Origin::Input(input) = history.origin(i) else { continue };
            // only results and media repeat: the other messages are not opened
            let shape = history.shape(i);
            if !shape.has_results() && !shape.has_media() {
                continue;
            }
            // the hash of a result counting already took (an unchanged message) is not taken
            // again: its text is not read
            let known = history.input_result_text(i);
            let counter = history.counter().text_counter();
            // an unchanged tool message whose result's hash is known: opened only if its
            // result is a first occurrence (a long history's repeats are not read at all)
            let whole = shape.is_whole_result() && known.is_some();
            let mut plan = if whole {
                let mut plan = Vec::new();
                let read = || {
                    let message = history.message(i);
                    (message.parts.as_slice(), result_id(message))
                };
                let result = ResultInMessage { input, known, block: None };
                self.plan_result(&read, result, &mut seen, counter, &mut plan);
                plan
            } else {
                self.plan_message(history.message(i), input, known, &mut seen, counter)
            };
            if protected || plan.is_empty() {
                continue;
            }
            let unchanged = history.unchanged_input(i);
            let references: Vec<Reference<'_>> = plan
                .iter()
                .map(|r| match (whole, unchanged) {
                    (true, Some(unchanged)) => r.whole_reference(input, unchanged),
                    _ => r.reference(input, history.message(i), unchanged),
                })
                .collect();
            // one replacement (most messages): its line is the message's, moved, not copied
            let detail = match plan.as_mut_slice() {
                [one] => std::mem::replace(&mut one.detail, Detail::Text(String::new())),
                plan => {
                    let message = history.message(i);
                    let lines: Vec<_> = plan.iter().map(|r| r.detail.render(message)).collect();
                    Detail::Text(lines.join("; "))
                }
            };
            if let [Replacement { target: Target::Content, .. }] = plan.as_slice() {
                // a whole tool message: not copied, the text shared (written out when read)
                let text = plan.into_iter().next().map_or_else(|| Arc::from(""), |r| r.text);
                history.replace_result_text_noting(i, ChangeKind::Replaced, detail, text);
            } else {
                history.edit_noting(i, ChangeKind::Replaced, detail, |m| apply_plan(m, plan));
            }
            for reference in references {
                history.refer(reference);
            }
        }
        Ok(())
    }
}

/// First occurrences so far: result text hash → call id, media hash → where it is (the
/// place for people, and the input index of its message).
#[derive(Debug)]
struct Seen {
    results: HashMap<u128, FirstResult>,
    media: HashMap<u128, (String, usize)>,
    /// The step's placeholders for results and media, shared by every reference written
    /// (one copy each, not one a repeat).
    templates: (Arc<str>, Arc<str>),
}

impl Seen {
    fn new(step: &Dedupe) -> Seen {
        Seen {
            results: HashMap::new(),
            media: HashMap::new(),
            templates: (Arc::from(step.placeholder.as_str()), Arc::from(step.media_placeholder.as_str())),
        }
    }
}

/// The first result with a given text: its call id, and once a repeat asked, whether the
/// text has `min_tokens`.
#[derive(Debug)]
struct FirstResult {
    id: Arc<str>,
    big_enough: Option<bool>,
    /// The text that replaces its repeats (the placeholder naming its id), written once.
    reference: Option<Arc<str>>,
    /// The input index of its message.
    message: usize,
}

/// The result `plan_result` reads: its message's input index, the text hash and length
/// counting took of it (if any), and its block (`None`: the whole message).
#[derive(Debug, Clone, Copy)]
struct ResultInMessage {
    input: usize,
    known: Option<ResultText>,
    block: Option<usize>,
}

/// Where in a message a replacement goes.
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
    /// Shared by every repeat of one first result.
    text: Arc<str>,
    /// Its line: written when read for a whole tool message (see [`Detail`]).
    detail: Detail,
    /// The input index of the message with the first occurrence, and what it holds.
    first: (usize, Holds),
    /// How the reference is written (a template and, for media, the kind).
    template: (Arc<str>, Option<&'static str>),
}

impl Replacement {
    /// The reference this replacement writes into `message` (input index `input`), for the
    /// history to keep true: made before the message changes, holding what it replaces
    /// (borrowed from the input when `unchanged` is the input's own `message`).
    fn reference<'a>(
        &self,
        input: usize,
        message: &Message,
        unchanged: Option<&'a Message>,
    ) -> Reference<'a> {
        let result_key = |block: Option<usize>| match block {
            Some(b) => match message.parts.get(b) {
                Some(Part::ToolResult(r)) => Some(r.tool_use_id.clone()),
                _ => None,
            },
            None => message.tool_call_id.clone().or_else(|| message.name.clone()),
        };
        let original = Original::Parts(match unchanged {
            Some(input) => Cow::Borrowed(self.target.replaced(input)),
            None => Cow::Owned(self.target.replaced(message).to_vec()),
        });
        let site = match (self.target, &self.template) {
            (Target::Content, (template, _)) => {
                Site::Result { key: result_key(None).unwrap_or_default(), template: Arc::clone(template) }
            }
            (Target::Block(b), (template, _)) => {
                Site::Result { key: result_key(Some(b)).unwrap_or_default(), template: Arc::clone(template) }
            }
            (Target::Part(block, _), (template, kind)) => Site::Media {
                scope: block.and_then(|b| result_key(Some(b))),
                template: Arc::clone(template),
                kind: kind.unwrap_or("file"),
            },
        };
        Reference {
            referrer: input,
            site,
            written: Arc::clone(&self.text),
            original,
            target: self.first.0,
            holds: self.first.1,
        }
    }
}

impl Replacement {
    /// [`reference`](Replacement::reference) for the whole content of `message`, the input's
    /// unchanged tool message at input index `input`, one result that names its call: made
    /// without reading it (its key and content are read from it only if the original is put
    /// back).
    fn whole_reference<'a>(&self, input: usize, message: &'a Message) -> Reference<'a> {
        Reference {
            referrer: input,
            site: Site::WholeResult { template: Arc::clone(&self.template.0) },
            written: Arc::clone(&self.text),
            original: Original::ContentOf(message),
            target: self.first.0,
            holds: self.first.1,
        }
    }
}

impl Target {
    /// What a replacement at this target replaces in `message`: the result's parts, or the
    /// one media part (nothing where the message has no such place).
    fn replaced(self, message: &Message) -> &[Part] {
        let result = |b: usize| match message.parts.get(b) {
            Some(Part::ToolResult(r)) => r.parts.as_slice(),
            _ => &[],
        };
        match self {
            Target::Content => &message.parts,
            Target::Block(b) => result(b),
            Target::Part(block, p) => {
                let parts = block.map_or(message.parts.as_slice(), result);
                parts.get(p).map_or(&[], std::slice::from_ref)
            }
        }
    }
}

impl Dedupe {
    /// Reads one message: records its first occurrences and returns the replacements of its
    /// repeats (computed even for a protected message, whose repeats are then not applied).
    ///
    /// `known` is the text hash of the message's one result (see
    /// [`one_result`](crate::result_text::one_result)) when the caller has it.
    fn plan_message(
        &self,
        message: &Message,
        input: usize,
        known: Option<ResultText>,
        seen: &mut Seen,
        counter: &dyn TokenCounter,
    ) -> Vec<Replacement> {
        let mut plan = Vec::new();
        let result = ResultInMessage { input, known, block: None };
        if matches!(message.role, Role::Tool | Role::Function) {
            let read = || (message.parts.as_slice(), result_id(message));
            self.plan_result(&read, result, seen, counter, &mut plan);
            return plan;
        }
        // named only when a first media part needs it: naming copies the message's text
        let at = || message_place(message);
        for (p, part) in message.parts.iter().enumerate() {
            match part {
                Part::ToolResult(r) => {
                    // a known hash is of the message's only result block: this one
                    let result = ResultInMessage { block: Some(p), ..result };
                    let read = || (r.parts.as_slice(), r.tool_use_id.as_str());
                    self.plan_result(&read, result, seen, counter, &mut plan)
                }
                part => self.plan_media(part, Target::Part(None, p), &at, input, seen, &mut plan),
            }
        }
        plan
    }

    /// A result's content: a repeat as a whole when it is all text, else its media one by one.
    /// `read` gives its parts and its call's id, read only when needed: for a result whose
    /// hash is not `known`, a first occurrence, a `min_tokens` check, a block's line.
    fn plan_result<'m>(
        &self,
        read: &dyn Fn() -> (&'m [Part], &'m str),
        result: ResultInMessage,
        seen: &mut Seen,
        counter: &dyn TokenCounter,
        plan: &mut Vec<Replacement>,
    ) {
        let ResultInMessage { input, known, block } = result;
        let Some(ResultText { hash, len }) = known.or_else(|| result_text(read().0)) else {
            let (parts, id) = read();
            let at = || format!("the result of tool call {id}");
            for (p, part) in parts.iter().enumerate() {
                self.plan_media(part, Target::Part(block, p), &at, input, seen, plan);
            }
            return;
        };
        let first = match seen.results.entry(hash) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(FirstResult {
                    id: Arc::from(read().1),
                    big_enough: None,
                    reference: None,
                    message: input,
                });
                return;
            }
            std::collections::hash_map::Entry::Occupied(first) => first.into_mut(),
        };
        // counted once per distinct text, however often it repeats: the text of a repeat is
        // read only then (its hash and length are known from counting when it is unchanged)
        let big_enough = *first.big_enough.get_or_insert_with(|| {
            self.min_tokens == 0
                || counter.count_till_limit_again(&joined_text(read().0), self.min_tokens - 1).is_none()
        });
        let reference =
            first.reference.get_or_insert_with(|| Arc::from(self.placeholder.replace("{id}", &first.id)));
        if big_enough && reference.len() < len {
            let reference = Arc::clone(reference);
            let target = block.map_or(Target::Content, Target::Block);
            // the line of a whole tool message names the message's own id: written when read
            let detail = match block {
                None => Detail::RepeatOf(Arc::clone(&first.id)),
                Some(_) => Detail::Text(repeat_line(read().1, &first.id)),
            };
            let message = first.message;
            first_room(plan);
            plan.push(Replacement {
                target,
                text: reference,
                detail,
                first: (message, Holds::ResultText(hash)),
                template: (Arc::clone(&seen.templates.0), None),
            });
        }
    }

    /// A media part: remembered where it first occurs (`at` names the place, called only
    /// then), replaced by a reference when it repeats.
    fn plan_media(
        &self,
        part: &Part,
        target: Target,
        at: &dyn Fn() -> String,
        input: usize,
        seen: &mut Seen,
        plan: &mut Vec<Replacement>,
    ) {
        let Some((kind, hash)) = media_hash(part) else { return };
        match seen.media.entry(hash) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert((at(), input));
            }
            std::collections::hash_map::Entry::Occupied(first) => {
                let (place, message) = first.get();
                let text = Arc::from(self.media_placeholder.replace("{kind}", kind).replace("{at}", place));
                let detail = Detail::Text(format!("a repeated {kind}, identical to the one in {place}"));
                first_room(plan);
                plan.push(Replacement {
                    target,
                    text,
                    detail,
                    first: (*message, Holds::Media(hash)),
                    template: (Arc::clone(&seen.templates.1), Some(kind)),
                });
            }
        }
    }
}

/// Room for one replacement in a message's empty plan, not the four a push from empty
/// reserves: a message repeats one result, usually, and a replacement is over a hundred bytes.
fn first_room(plan: &mut Vec<Replacement>) {
    if plan.capacity() == 0 {
        plan.reserve_exact(1);
    }
}

fn apply_plan(message: &mut Message, plan: Vec<Replacement>) {
    for r in plan {
        let text = Part::Text(TextPart::new(&*r.text));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::anthropic_cx;
    use crate::steps::test_support::{anthropic, assert_valid, counter, openai, run, run_in};
    use crate::tokens::CountCache;
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
    fn a_reference_whose_original_goes_gets_it_back() {
        let image = r#"{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}"#;
        let input = openai(&format!(
            r#"[{{"role": "user", "content": [{image}]}},
                {{"role": "assistant", "content": "a cat"}},
                {{"role": "user", "content": [{{"type": "text", "text": "again?"}}, {image}]}},
                {{"role": "assistant", "content": "still a cat"}},
                {{"role": "user", "content": [{{"type": "text", "text": "third"}}, {image}]}},
                {{"role": "assistant", "content": "a cat again"}},
                {{"role": "user", "content": "done?"}}]"#
        ));
        let cx = StepContext::new(Format::OpenAi);
        let mut history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
        history.set_step("dedupe");
        Dedupe::default().apply(&mut history, &cx).unwrap();
        assert!(history
            .message(2)
            .text_content()
            .contains("[image identical to the one in an earlier user message above]"));
        let deduped = history.total_tokens();
        // a later step drops the first turn: the first repeat gets the image back, the next
        // one points at it
        history.set_step("keep_last");
        history.remove(0, "test");
        history.remove(0, "test");
        assert_eq!(history.message(0), &input[2], "the image is back where it was repeated");
        assert_eq!(
            history.message(2).text_content(),
            "third\n[image identical to the one in the user message \"again?\" above]"
        );
        assert!(history.total_tokens() < deduped, "the restored image costs less than the turn that went");
        // and so on down the line
        history.remove(0, "test");
        history.remove(0, "test");
        assert_eq!(history.message(0), &input[4]);
    }

    /// A repeat an earlier step had made is replaced from the history's copy, not the
    /// input's: given back, it is what that step left, not what the caller sent.
    #[test]
    fn a_repeat_an_earlier_step_made_gets_back_what_that_step_left() {
        let (a, b) = (long("alpha"), long("beta"));
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "go"}}, {}, {}, {{"role": "user", "content": "next"}}]"#,
            step("r0", &a),
            step("r1", &b),
        ));
        let cx = StepContext::new(Format::OpenAi);
        let mut history = History::new(&input, None, &counter(), CountCache::new(), Format::OpenAi);
        // an earlier step leaves r1's result equal to r0's
        history.set_step("rewrite");
        history.edit(4, ChangeKind::Rewritten, "test", |m| {
            m.parts = vec![Part::Text(TextPart::new(a.as_str()))]
        });
        let rewritten = history.message(4).clone();
        history.set_step("dedupe");
        Dedupe::default().apply(&mut history, &cx).unwrap();
        assert_eq!(history.message(4).text_content(), "[identical to the result of tool call r0 above]");
        // r0's step goes: r1 gets back the text the rewrite left, not the input's
        history.set_step("keep_last");
        history.remove(1, "test");
        history.remove(1, "test");
        assert_eq!(history.message(2), &rewritten);
        assert_ne!(history.message(2), &input[4]);
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
