//! `truncate_text`: cap the text of each message (llmling `TruncateTextParts`, which cuts
//! long model responses; AG2 `MessageTokenLimiter`'s `max_tokens_per_message`).
//!
//! The text parts of a message together must fit the limit (in characters or tokens, the
//! marker included); a message over it is cut as [`plan_cut`] describes: the head by default,
//! the tail, or both ends, never splitting a character or a grapheme. Only text parts are cut:
//! images, files, thinking, tool calls and the `tool_result` blocks of an Anthropic user
//! message stay as they are (AG2 likewise cuts only the text of a multimodal message). Tool
//! results are `truncate_tool_results`' business, so `tool` and `function` messages are never
//! touched. By default only assistant messages are cut (as llmling), and system messages and
//! the newest user turn are kept whole; a [`MessageFilter`] restricts the step further.
//!
//! Nothing is removed and calls keep their results, so the history stays valid; the cut
//! length depends only on the configuration, not on the budget, so the same message is cut the
//! same way on every call. Cost: O(text length) for character limits; for token limits a
//! tokenization of each message's text, and a binary search over the ones that are cut.

use super::shared::cut::{
    check_limit, keep_part_word, plan_cut, read_keep_part, read_length, TRUNCATED_MARKER,
};
use super::shared::filter::{read_filter, MessageFilter};
use super::shared::keep::protected_messages;
use super::shared::keep::read_keep;
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, EXCLUDE_FILTER, FILTER_DICT,
    KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::message::Role;
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::text::{KeepPart, Length};

/// `truncate_text` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<TruncateText>("truncate_text", &["truncate_text_parts"])
    .documented(
        "Cut long texts: a cap on each message's text, in characters or tokens.",
        &[
            KeyDoc::new(
                "max_length",
                KeyUnit::Characters,
                "the longest one message's text may be, the marker included",
            ),
            KeyDoc::new(
                "max_tokens",
                KeyUnit::Tokens,
                "the same limit in tokens, instead of `max_length` (AG2 `max_tokens_per_message`)",
            ),
            KeyDoc::new(
                "roles",
                KeyUnit::Names,
                "the roles whose messages are cut (not `tool`: see `truncate_tool_results`)",
            ),
            KeyDoc::new(
                "keep",
                KeyUnit::Choice,
                "which part of a long text stays: `head`, `tail` or `head_and_tail`",
            ),
            KeyDoc::new("marker", KeyUnit::Text, "what is written where the text was cut"),
            FILTER_DICT,
            EXCLUDE_FILTER,
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Caps the text of each message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncateText {
    /// The longest the text of one message may be, the marker included. Defaults to 5000
    /// characters (llmling's `max_length`). Must be at least 1.
    pub limit: Length,
    /// The roles whose messages are cut. Defaults to assistant only, as llmling. `tool` and
    /// `function` are not accepted (tool results are cut by `truncate_tool_results`).
    pub roles: Vec<Role>,
    /// Which part of a long text is kept. Defaults to the head.
    pub keep: KeepPart,
    /// What is written where the text was cut. Defaults to [`TRUNCATED_MARKER`].
    pub marker: String,
    /// Which messages the step may touch. Defaults to all of them.
    pub filter: MessageFilter,
    /// Messages that are never cut. Defaults to system messages and the newest user turn.
    pub protect: Keep,
}

impl Default for TruncateText {
    fn default() -> TruncateText {
        TruncateText {
            limit: Length::Chars(5000),
            roles: vec![Role::Assistant],
            keep: KeepPart::Head,
            marker: TRUNCATED_MARKER.to_string(),
            filter: MessageFilter::default(),
            protect: Keep::default(),
        }
    }
}

impl TruncateText {
    /// Caps assistant messages at `limit` characters.
    pub fn chars(limit: usize) -> TruncateText {
        TruncateText { limit: Length::Chars(limit), ..TruncateText::default() }
    }

    /// Caps assistant messages at `limit` tokens.
    pub fn tokens(limit: usize) -> TruncateText {
        TruncateText { limit: Length::Tokens(limit), ..TruncateText::default() }
    }

    /// The same step for the messages of `roles`.
    pub fn for_roles(self, roles: &[Role]) -> TruncateText {
        TruncateText { roles: roles.to_vec(), ..self }
    }
}

impl Step for TruncateText {
    fn name(&self) -> &'static str {
        "truncate_text"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("truncate_text")
            .length("max_length", "max_tokens", self.limit)
            .roles("roles", &self.roles)
            .key("keep", keep_part_word(self.keep))
            .key("marker", self.marker.as_str())
            .filter(&self.filter)
            .keep(self.protect)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        check_limit(self.limit, &self.marker, "max_length")?;
        if self.roles.is_empty() {
            return Err(ConfigError::new("roles", "is empty: the step would cut nothing"));
        }
        if let Some(role) = self.roles.iter().find(|r| matches!(r, Role::Tool | Role::Function)) {
            return Err(ConfigError::new(
                "roles",
                format!("{role} messages are tool results: cut them with truncate_tool_results"),
            ));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let protected = protected_messages(history, self.protect);
        for (i, protected) in protected.into_iter().enumerate() {
            let message = history.message(i);
            let eligible = !protected
                && !matches!(message.role, Role::Tool | Role::Function)
                && self.roles.contains(&message.role)
                && self.filter.applies_to(message);
            if !eligible {
                continue;
            }
            let counter = history.counter().text_counter();
            if let Some(c) = plan_cut(&message.parts, self.limit, self.keep, &self.marker, counter) {
                let detail = format!("text: {}", c.detail);
                history.edit(i, ChangeKind::Truncated, detail, |m| c.apply(&mut m.parts));
            }
        }
        Ok(())
    }
}

impl FromParams for TruncateText {
    /// Keys: `max_length` (alias `max_chars`) for a limit in characters or `max_tokens` (alias
    /// `max_tokens_per_message`) for one in tokens, `roles` (a list of role names), `keep`
    /// (`head`, `tail`, `head_and_tail`), `marker` (alias `suffix`), `filter_dict` (alias
    /// `filter`), `exclude_filter` (alias `exclude`), `keep_system` (alias
    /// `preserve_system_messages`), `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<TruncateText, ConfigError> {
        let mut step = TruncateText::default();
        step.limit = read_length(
            p,
            &["max_length", "max_chars"],
            &["max_tokens", "max_tokens_per_message"],
            step.limit,
        )?;
        let default_roles: Vec<String> = step.roles.iter().map(|r| r.as_str().to_string()).collect();
        step.roles = p
            .strings_or(&["roles"], &default_roles)?
            .iter()
            .enumerate()
            .map(|(i, name)| {
                Role::from_wire(name)
                    .ok_or_else(|| ConfigError::new(format!("roles[{i}]"), format!("unknown role {name:?}")))
            })
            .collect::<Result<_, _>>()?;
        step.keep = read_keep_part(p, step.keep)?;
        step.marker = p.string_or(&["marker", "suffix"], &step.marker)?;
        step.filter = read_filter(p)?;
        step.protect = read_keep(p, step.protect)?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::message::{Message, Part};
    use crate::steps::test_support::{anthropic, assert_valid, counter, openai, run, run_in};
    use crate::validate::validate;
    use serde_json::json;

    const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz";

    fn marked(limit: usize) -> TruncateText {
        TruncateText { marker: "[cut]".into(), ..TruncateText::chars(limit) }
    }

    fn chat() -> Vec<Message> {
        openai(&format!(
            r#"[{{"role": "system", "content": "{ALPHABET}"}},
                {{"role": "user", "content": "{ALPHABET}"}},
                {{"role": "assistant", "name": "bot", "content": "{ALPHABET}", "tool_calls": [
                    {{"id": "a", "type": "function", "function": {{"name": "f", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": "{ALPHABET}"}},
                {{"role": "assistant", "content": "{ALPHABET}"}},
                {{"role": "user", "content": "{ALPHABET}"}}]"#
        ))
    }

    fn texts(messages: &[Message]) -> Vec<String> {
        messages.iter().map(Message::text_content).collect()
    }

    #[test]
    fn cuts_assistant_text_by_default() {
        let input = chat();
        let out = run(&marked(10), &input);
        let cut = "abcde[cut]".to_string();
        let whole = ALPHABET.to_string();
        assert_eq!(texts(&out), vec![whole.clone(), whole.clone(), cut.clone(), whole.clone(), cut, whole]);
        assert_eq!(out[2].tool_calls().count(), 1, "calls are untouched");
        assert_valid(&out);
    }

    #[test]
    fn the_default_is_llmlings() {
        let long = "y".repeat(6000);
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "{long}"}}, {{"role": "assistant", "content": "{long}"}},
                {{"role": "user", "content": "ok"}}]"#
        ));
        let out = run(&TruncateText::default(), &input);
        assert_eq!(out[0], input[0], "user text is not cut by default");
        assert_eq!(out[1].text_content(), format!("{}{TRUNCATED_MARKER}", "y".repeat(5000 - 16)));
    }

    #[test]
    fn chosen_roles_but_never_protected_messages_or_tool_results() {
        let input = chat();
        let step = marked(10).for_roles(&[Role::System, Role::User, Role::Assistant]);
        let out = run(&step, &input);
        let cut = "abcde[cut]".to_string();
        let whole = ALPHABET.to_string();
        assert_eq!(
            texts(&out),
            vec![whole.clone(), cut.clone(), cut.clone(), whole.clone(), cut.clone(), whole.clone()]
        );
        let bare = TruncateText { protect: Keep { system: false, newest_user_turn: false }, ..step };
        let out = run(&bare, &input);
        assert_eq!(texts(&out), vec![cut.clone(), cut.clone(), cut.clone(), whole, cut.clone(), cut]);
        assert_valid(&out);
    }

    #[test]
    fn the_filter_spares_or_selects_messages() {
        let input = chat();
        let filter = json!({"name": "bot"}).as_object().unwrap().clone();
        let out =
            run(&TruncateText { filter: MessageFilter::excluding(filter.clone()), ..marked(10) }, &input);
        assert_eq!(out[2], input[2]);
        assert_eq!(out[4].text_content(), "abcde[cut]");
        let out = run(&TruncateText { filter: MessageFilter::only(filter), ..marked(10) }, &input);
        assert_eq!(out[2].text_content(), "abcde[cut]");
        assert_eq!(out[4], input[4]);
    }

    #[test]
    fn the_text_parts_of_a_message_fit_together_and_media_stay() {
        let input = openai(
            r#"[{"role": "user", "content": [
                    {"type": "text", "text": "0123456789"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                    {"type": "text", "text": "ABCDEFGHIJ"}]},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "next"}]"#,
        );
        let out = run(&marked(12).for_roles(&[Role::User]), &input);
        assert_eq!(out[0].parts.len(), 2);
        assert!(matches!(out[0].parts[1], Part::Image(_)));
        assert_eq!(out[0].text_content(), "0123456[cut]");
        assert_valid(&out);
    }

    #[test]
    fn anthropic_calls_and_results_are_untouched() {
        let input = anthropic(&format!(
            r#"[{{"role": "user", "content": "q"}},
                {{"role": "assistant", "content": [{{"type": "thinking", "thinking": "{ALPHABET}", "signature": "s"}},
                    {{"type": "text", "text": "{ALPHABET}"}},
                    {{"type": "tool_use", "id": "t", "name": "f", "input": {{"q": "{ALPHABET}"}}}}]}},
                {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t", "content": "{ALPHABET}"}},
                    {{"type": "text", "text": "{ALPHABET}"}}]}},
                {{"role": "assistant", "content": "{ALPHABET}"}},
                {{"role": "user", "content": "thanks"}}]"#
        ));
        let cx = StepContext::new(Format::Anthropic);
        let out = run_in(&marked(10).for_roles(&[Role::User, Role::Assistant]), &input, cx);
        assert_eq!(out[1].parts[0], input[1].parts[0], "thinking stays");
        assert_eq!(out[1].parts[2], input[1].parts[2], "the call stays");
        assert_eq!(out[1].text_content(), "abcde[cut]");
        assert_eq!(out[2].parts[0], input[2].parts[0], "the result stays");
        assert_eq!(out[2].text_content(), "abcde[cut]");
        assert_eq!(out[3].text_content(), "abcde[cut]");
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn multi_byte_text_is_cut_on_a_grapheme() {
        let text = "日本語のテキストです🇯🇵🇯🇵";
        let input = openai(&format!(
            r#"[{{"role": "assistant", "content": "{text}"}}, {{"role": "user", "content": "ok"}}]"#
        ));
        // 10 + 4 chars (two flags of two regional indicators each)
        let tail = TruncateText { keep: KeepPart::Tail, ..marked(8) };
        assert_eq!(run(&tail, &input)[0].text_content(), "[cut]🇯🇵");
        let tail = TruncateText { keep: KeepPart::Tail, ..marked(9) };
        assert_eq!(run(&tail, &input)[0].text_content(), "[cut]🇯🇵🇯🇵");
        let tail = TruncateText { keep: KeepPart::Tail, ..marked(10) };
        assert_eq!(run(&tail, &input)[0].text_content(), "[cut]す🇯🇵🇯🇵");
        let head = marked(13);
        assert_eq!(run(&head, &input)[0].text_content(), "日本語のテキスト[cut]");
    }

    #[test]
    fn a_token_cap_per_message() {
        let long = "The quick brown fox jumps over the lazy dog. ".repeat(30);
        let input = openai(&format!(
            r#"[{{"role": "user", "content": "{long}"}}, {{"role": "assistant", "content": "{long}"}},
                {{"role": "assistant", "content": "short"}}, {{"role": "user", "content": "{long}"}}]"#
        ));
        let mut p = Params::new(
            json!({"max_tokens_per_message": 40, "roles": ["user", "assistant"]})
                .as_object()
                .unwrap()
                .clone(),
        );
        let step = TruncateText::from_params(&mut p).unwrap();
        let out = run(&step, &input);
        let count = |m: &Message| counter().text_counter().count(&m.text_content());
        for m in &out[..2] {
            assert!((35..=40).contains(&count(m)), "{}", count(m));
            assert!(m.text_content().ends_with(TRUNCATED_MARKER));
        }
        assert_eq!(out[2..], input[2..], "short and protected messages stay");
    }

    #[test]
    fn reads_params_and_checks_them() {
        let mut p = Params::new(
            json!({"max_chars": 300, "roles": "user", "keep": "head_and_tail", "suffix": "…",
                   "filter": {"role": "user"}, "exclude": false, "keep_system": false})
            .as_object()
            .unwrap()
            .clone(),
        );
        let step = TruncateText::from_params(&mut p).unwrap();
        p.finish().unwrap();
        let filter = json!({"role": "user"}).as_object().unwrap().clone();
        assert_eq!(
            step,
            TruncateText {
                limit: Length::Chars(300),
                roles: vec![Role::User],
                keep: KeepPart::HeadAndTail,
                marker: "…".into(),
                filter: MessageFilter::only(filter),
                protect: Keep { system: false, newest_user_turn: true },
            }
        );
        let mut p = Params::new(json!({"roles": ["user", "bot"]}).as_object().unwrap().clone());
        assert_eq!(TruncateText::from_params(&mut p).unwrap_err().key, "roles[1]");
        assert_eq!(TruncateText::chars(0).check().unwrap_err().key, "max_length");
        assert_eq!(marked(10).for_roles(&[Role::Tool]).check().unwrap_err().key, "roles");
        assert_eq!(marked(10).for_roles(&[]).check().unwrap_err().key, "roles");
    }
}
