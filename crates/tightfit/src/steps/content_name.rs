//! `content_name`: write each message's sender name into its text (AG2
//! `TextMessageContentName`).
//!
//! Models do not all read the `name` field, so in a group chat a message can say who wrote it
//! in its text: `alice:\nhello`. The name is formatted with `format_string` (every `{name}` is
//! replaced by the name; no other placeholder is read) and written at the start of the first
//! text part or the end of the last one (for a plain string content, the string). With
//! `deduplicate` a text that already starts (or ends) with the formatted name is left alone,
//! so running the step twice, or on a reply where the model wrote its name itself, writes it
//! once. The `name` field stays.
//!
//! Which messages: those with a non-empty name (OpenAI's `name`, or a `name` key kept on an
//! Anthropic message) and some non-empty text, that the filter lets through. `tool` and
//! `function` messages are left alone unless `tool_results` is set: their name is the tool's,
//! not a sender's (AG2 names them too; its drop-in sets `tool_results`). A message with no
//! text (an assistant message of only tool calls, or an empty string) is left alone rather
//! than given text it did not have, as AG2 does. Only text changes, so the history stays
//! valid. Cost: O(messages + length of the changed texts).

use super::shared::filter::{read_filter, MessageFilter};
use super::shared::written::Written;
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, EXCLUDE_FILTER, FILTER_DICT,
};
use crate::history::History;
use crate::message::{Message, Part, Role};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;

/// Where the name goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NamePosition {
    /// Before the text (the default).
    #[default]
    Start,
    /// After the text.
    End,
}

impl NamePosition {
    /// Its name in configuration (`start`, `end`).
    pub fn word(self) -> &'static str {
        match self {
            NamePosition::Start => "start",
            NamePosition::End => "end",
        }
    }
}

/// `content_name` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<ContentName>("content_name", &["text_message_content_name"])
    .documented(
        "Write the sender's name into the content (at the start or the end, no duplicates).",
        &[
            KeyDoc::new("position", KeyUnit::Choice, "where the name goes: `start` or `end`"),
            KeyDoc::new("format_string", KeyUnit::Text, "what is written, `{name}` standing for the name"),
            KeyDoc::new(
                "deduplicate",
                KeyUnit::Flag,
                "leave a text alone that already starts (or ends) with the formatted name",
            ),
            FILTER_DICT,
            EXCLUDE_FILTER,
            KeyDoc::new(
                "tool_results",
                KeyUnit::Flag,
                "name tool results too, by their tool's name (AG2 does)",
            ),
        ],
    );

/// Writes the sender's name into the text of each message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentName {
    /// Where the name goes. Defaults to [`NamePosition::Start`], as AG2.
    pub position: NamePosition,
    /// What is written, `{name}` standing for the name. Defaults to `"{name}:\n"`, as AG2.
    /// Must contain `{name}`.
    pub format_string: String,
    /// Leave a text alone when it already starts (or ends) with the formatted name. Defaults
    /// to true, as AG2.
    pub deduplicate: bool,
    /// Which messages the step may touch. Defaults to all of them.
    pub filter: MessageFilter,
    /// Name `tool` and `function` messages too (by the tool's name they carry). Defaults to
    /// false; AG2 does it.
    pub tool_results: bool,
}

impl Default for ContentName {
    fn default() -> ContentName {
        ContentName {
            position: NamePosition::Start,
            format_string: "{name}:\n".to_string(),
            deduplicate: true,
            filter: MessageFilter::default(),
            tool_results: false,
        }
    }
}

impl ContentName {
    /// Writes `format_string` at `position`.
    pub fn new(position: NamePosition, format_string: impl Into<String>) -> ContentName {
        ContentName { position, format_string: format_string.into(), ..ContentName::default() }
    }
}

/// The sender's name of `message`, if it has a non-empty one and is not a tool result (unless
/// `tool_results`).
fn sender_name(message: &Message, tool_results: bool) -> Option<&str> {
    if !tool_results && matches!(message.role, Role::Tool | Role::Function) {
        return None;
    }
    let name = match &message.name {
        Some(name) => name.as_str(),
        None => message.extra.get("name")?.as_str()?,
    };
    (!name.is_empty()).then_some(name)
}

impl ContentName {
    /// The index of the text part the name goes into.
    fn target(&self, message: &Message) -> Option<usize> {
        let is_text = |p: &Part| matches!(p, Part::Text(_));
        match self.position {
            NamePosition::Start => message.parts.iter().position(is_text),
            NamePosition::End => message.parts.iter().rposition(is_text),
        }
    }

    fn already_named(&self, text: &str, formatted: &str) -> bool {
        match self.position {
            NamePosition::Start => text.starts_with(formatted),
            NamePosition::End => text.ends_with(formatted),
        }
    }
}

impl Step for ContentName {
    fn name(&self) -> &'static str {
        "content_name"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("content_name")
            .key("position", self.position.word())
            .key("format_string", self.format_string.as_str())
            .key("deduplicate", self.deduplicate)
            .filter(&self.filter)
            .key("tool_results", self.tool_results)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if !self.format_string.contains("{name}") {
            return Err(ConfigError::new(
                "format_string",
                format!("must contain {{name}}, found {:?}", self.format_string),
            ));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        for i in 0..history.len() {
            let message = history.message(i);
            let Some(name) = sender_name(message, self.tool_results) else { continue };
            let Some(part) = self.target(message) else { continue };
            if !message.parts.iter().any(|p| matches!(p, Part::Text(t) if !t.text.is_empty())) {
                continue;
            }
            if !self.filter.applies_to(message) {
                continue;
            }
            let formatted = self.format_string.replace("{name}", name);
            let Part::Text(text) = &message.parts[part] else { continue };
            if self.deduplicate && self.already_named(&text.text, &formatted) {
                continue;
            }
            let detail = format!("wrote the name {name:?} at the {} of its text", self.position.word());
            let position = self.position;
            history.edit(i, ChangeKind::Rewritten, detail, |m| {
                if let Some(Part::Text(t)) = m.parts.get_mut(part) {
                    match position {
                        NamePosition::Start => t.text.insert_str(0, &formatted),
                        NamePosition::End => t.text.push_str(&formatted),
                    }
                }
            });
        }
        Ok(())
    }
}

impl FromParams for ContentName {
    /// Keys: `position` (`start`, `end`), `format_string`, `deduplicate`, `filter_dict` (alias
    /// `filter`), `exclude_filter` (alias `exclude`), `tool_results`.
    fn from_params(p: &mut Params) -> Result<ContentName, ConfigError> {
        let mut step = ContentName::default();
        let position = p.choice_or(&["position"], &["start", "end"], step.position.word())?;
        step.position = if position == "end" { NamePosition::End } else { NamePosition::Start };
        step.format_string = p.string_or(&["format_string"], &step.format_string)?;
        step.deduplicate = p.bool_or(&["deduplicate"], step.deduplicate)?;
        step.filter = read_filter(p)?;
        step.tool_results = p.bool_or(&["tool_results"], step.tool_results)?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::steps::test_support::{anthropic, assert_valid, counter, openai, run, run_in};
    use crate::tokens::CountCache;
    use crate::validate::validate;
    use serde_json::json;

    fn group_chat() -> Vec<Message> {
        openai(
            r#"[{"role": "system", "content": "moderate"},
                {"role": "user", "name": "alice", "content": "hi"},
                {"role": "assistant", "name": "bot", "content": "hello", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "name": "f", "content": "done"},
                {"role": "assistant", "name": "bot", "content": null, "tool_calls": [
                    {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "b", "content": "again"},
                {"role": "user", "content": "anonymous"}]"#,
        )
    }

    fn texts(messages: &[Message]) -> Vec<String> {
        messages.iter().map(Message::text_content).collect()
    }

    #[test]
    fn writes_names_at_the_start() {
        let input = group_chat();
        let out = run(&ContentName::default(), &input);
        assert_eq!(
            texts(&out),
            vec!["moderate", "alice:\nhi", "bot:\nhello", "done", "", "again", "anonymous"]
        );
        assert_eq!(out[1].name.as_deref(), Some("alice"), "the name field stays");
        assert_eq!(out[4], input[4], "a message of only calls gets no text");
        assert_valid(&out);
    }

    #[test]
    fn tool_results_and_empty_texts() {
        let input = group_chat();
        let step = ContentName { tool_results: true, ..ContentName::default() };
        let out = run(&step, &input);
        assert_eq!(texts(&out)[3], "f:\ndone", "the tool's name, as AG2 writes it");
        assert_eq!(texts(&out)[5], "again", "no name, nothing written");
        let empty = openai(r#"[{"role": "user", "name": "alice", "content": ""}]"#);
        assert_eq!(run(&ContentName::default(), &empty), empty);
    }

    #[test]
    fn writes_names_at_the_end() {
        let out = run(&ContentName::new(NamePosition::End, " ({name})"), &group_chat());
        assert_eq!(texts(&out)[1..3], ["hi (alice)", "hello (bot)"]);
    }

    #[test]
    fn does_not_write_a_name_twice() {
        let input = group_chat();
        let once = run(&ContentName::default(), &input);
        assert_eq!(run(&ContentName::default(), &once), once);
        let twice = run(&ContentName { deduplicate: false, ..ContentName::default() }, &once);
        assert_eq!(texts(&twice)[1], "alice:\nalice:\nhi");
    }

    #[test]
    fn list_content_gets_it_in_the_first_or_last_text_part() {
        let input = openai(
            r#"[{"role": "user", "name": "Zoë😀", "content": [
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                    {"type": "text", "text": "one"},
                    {"type": "text", "text": "two"}]}]"#,
        );
        let out = run(&ContentName::default(), &input);
        assert_eq!(out[0].text_content(), "Zoë😀:\none\ntwo");
        assert_eq!(out[0].parts[0], input[0].parts[0]);
        let out = run(&ContentName::new(NamePosition::End, " — {name}"), &input);
        assert_eq!(out[0].text_content(), "one\ntwo — Zoë😀");
    }

    #[test]
    fn the_filter_spares_or_selects_messages() {
        let input = group_chat();
        let users = json!({"role": "user"}).as_object().unwrap().clone();
        let step = ContentName { filter: MessageFilter::excluding(users.clone()), ..ContentName::default() };
        assert_eq!(texts(&run(&step, &input))[1..3], ["hi", "bot:\nhello"]);
        let step = ContentName { filter: MessageFilter::only(users), ..ContentName::default() };
        assert_eq!(texts(&run(&step, &input))[1..3], ["alice:\nhi", "hello"]);
    }

    #[test]
    fn anthropic_names_kept_on_the_message() {
        let input = anthropic(
            r#"[{"role": "user", "name": "alice", "content": "hi"},
                {"role": "assistant", "name": "bot", "content": [
                    {"type": "text", "text": "let me look"},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]"#,
        );
        let cx = StepContext::new(Format::Anthropic);
        let out = run_in(&ContentName::default(), &input, cx);
        assert_eq!(texts(&out)[..2], ["alice:\nhi", "bot:\nlet me look"]);
        assert_eq!(out[1].parts[1], input[1].parts[1]);
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
    }

    #[test]
    fn records_a_rewrite() {
        let input = group_chat();
        let c = counter();
        let mut history = History::new(&input, None, &c, CountCache::new(), Format::OpenAi);
        history.set_step("content_name");
        let cx = StepContext::new(Format::OpenAi);
        ContentName::default().apply(&mut history, &cx).unwrap();
        let (_, plan, _) = history.finish(&input);
        assert_eq!(
            plan.units[1].details,
            vec!["messages[1]: rewritten by content_name: wrote the name \"alice\" at the start of its text"]
        );
    }

    #[test]
    fn reads_params_and_checks_them() {
        let mut p = Params::new(
            json!({"position": "end", "format_string": "'{name}' said: ", "deduplicate": false,
                   "filter_dict": {"name": ["bot"]}})
            .as_object()
            .unwrap()
            .clone(),
        );
        let step = ContentName::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(step.position, NamePosition::End);
        assert_eq!(step.format_string, "'{name}' said: ");
        assert!(!step.deduplicate);
        assert_eq!(
            step.filter,
            MessageFilter::excluding(json!({"name": ["bot"]}).as_object().unwrap().clone())
        );
        let mut p = Params::new(json!({"position": "middle"}).as_object().unwrap().clone());
        assert_eq!(ContentName::from_params(&mut p).unwrap_err().key, "position");
        assert_eq!(ContentName::new(NamePosition::Start, "name: ").check().unwrap_err().key, "format_string");
        assert!(ContentName::default().check().is_ok());
    }
}
