//! Which messages a step may touch: AG2's `filter_dict` and `exclude_filter`, shared by the
//! steps that let a configuration restrict them (`truncate_text`, `content_name`).
//!
//! A filter maps a message field, as written on the wire in OpenAI shape, to the values it
//! accepts: `{"role": ["user", "assistant"], "name": "alice"}`. A message matches when every
//! field matches (with `exclude`, a message is spared when any one field matches, as AG2's
//! `filter_config` does): its value equals the accepted value, or one of the accepted values when a
//! list is given (a field whose value is itself a list matches when the two lists share a
//! value). A message without the field does not match, as in AG2. Fields: `role` (the wire
//! name, `tool` and `function` included), `name`, `tool_call_id`, and any other key the
//! message carries (kept in its `extra` map). By default (`exclude: true`) matching messages
//! are left alone; with `exclude: false` only matching messages are processed. Without a
//! filter every message is processed. Cost: O(filter keys) per message.

use serde_json::{Map, Value};

use crate::message::Message;
use crate::params::{ConfigError, FromParams, Params};

/// Restricts a step to some messages (AG2 `filter_dict` + `exclude_filter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageFilter {
    /// Message field → accepted value or list of accepted values. Defaults to `None` (no
    /// filter: every message is processed).
    pub filter: Option<Map<String, Value>>,
    /// Whether matching messages are left alone (`true`) or are the only ones processed
    /// (`false`). Defaults to true, as in AG2.
    pub exclude: bool,
}

impl Default for MessageFilter {
    fn default() -> MessageFilter {
        MessageFilter { filter: None, exclude: true }
    }
}

impl MessageFilter {
    /// A filter that processes every message.
    pub fn none() -> MessageFilter {
        MessageFilter::default()
    }

    /// Leaves the messages matching `filter` alone.
    pub fn excluding(filter: Map<String, Value>) -> MessageFilter {
        MessageFilter { filter: Some(filter), exclude: true }
    }

    /// Processes only the messages matching `filter`.
    pub fn only(filter: Map<String, Value>) -> MessageFilter {
        MessageFilter { filter: Some(filter), exclude: false }
    }

    /// Whether a step may process `message`. As AG2's `filter_config`: with `exclude`, a
    /// message that matches any one field is left alone; without it, only a message that
    /// matches every field is processed. An empty filter is no filter.
    pub fn applies_to(&self, message: &Message) -> bool {
        match &self.filter {
            Some(filter) if !filter.is_empty() => {
                filter.iter().all(|(field, accepted)| field_matches(message, field, accepted) != self.exclude)
            }
            _ => true,
        }
    }
}

/// Whether `accepted` accepts the message's value of `field` (a message without it never
/// matches).
fn field_matches(message: &Message, field: &str, accepted: &Value) -> bool {
    field_value(message, field).is_some_and(|v| accepts(accepted, &v))
}

/// The value of `field` of `message` as written on the wire, if it has one.
fn field_value(message: &Message, field: &str) -> Option<Value> {
    let text = |s: &str| Some(Value::String(s.to_string()));
    match field {
        "role" => text(message.role_name()),
        "name" => match &message.name {
            Some(name) => text(name),
            None => message.extra.get("name").filter(|v| !v.is_null()).cloned(),
        },
        "tool_call_id" => match &message.tool_call_id {
            Some(id) => text(id),
            None => message.extra.get("tool_call_id").filter(|v| !v.is_null()).cloned(),
        },
        other => message.extra.get(other).filter(|v| !v.is_null()).cloned(),
    }
}

/// Whether `accepted` (a value or a list of values) accepts `value`.
fn accepts(accepted: &Value, value: &Value) -> bool {
    let accepted: &[Value] = match accepted {
        Value::Array(items) => items,
        one => std::slice::from_ref(one),
    };
    match value {
        Value::Array(items) => items.iter().any(|item| accepted.contains(item)),
        one => accepted.contains(one),
    }
}

impl FromParams for MessageFilter {
    /// Keys: `filter_dict` (alias `filter`), `exclude_filter` (alias `exclude`).
    fn from_params(p: &mut Params) -> Result<MessageFilter, ConfigError> {
        read_filter(p)
    }
}

/// Reads `filter_dict` (alias `filter`: a map) and `exclude_filter` (alias `exclude`).
pub(crate) fn read_filter(p: &mut Params) -> Result<MessageFilter, ConfigError> {
    let mut filter = MessageFilter::default();
    match p.take(&["filter_dict", "filter"]) {
        None => {}
        Some((_, Value::Object(map))) => filter.filter = Some(map),
        Some((key, _)) => {
            return Err(ConfigError::new(key, "expected a map of message fields to accepted values"))
        }
    }
    filter.exclude = p.bool_or(&["exclude_filter", "exclude"], filter.exclude)?;
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::test_support::{anthropic, openai};
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn sample() -> Vec<Message> {
        openai(
            r#"[{"role": "system", "content": "rules"},
                {"role": "user", "name": "alice", "content": "hi", "tags": ["a", "b"]},
                {"role": "assistant", "name": "bot", "content": "hello"},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "tool_calls", "content": "odd"}]"#,
        )
    }

    fn applies(filter: &MessageFilter, messages: &[Message]) -> Vec<bool> {
        messages.iter().map(|m| filter.applies_to(m)).collect()
    }

    #[test]
    fn without_a_filter_every_message_applies() {
        assert_eq!(applies(&MessageFilter::none(), &sample()), vec![true; 5]);
    }

    #[test]
    fn excluding_leaves_matching_messages_alone() {
        let f = MessageFilter::excluding(map(json!({"role": ["system", "tool"]})));
        assert_eq!(applies(&f, &sample()), vec![false, true, true, false, true]);
    }

    #[test]
    fn only_processes_matching_messages() {
        let f = MessageFilter::only(map(json!({"name": "alice"})));
        assert_eq!(applies(&f, &sample()), vec![false, true, false, false, false]);
        // every field must match; a message without the field never does
        let f = MessageFilter::only(map(json!({"role": ["user", "assistant"], "name": ["bot"]})));
        assert_eq!(applies(&f, &sample()), vec![false, false, true, false, false]);
        let f = MessageFilter::only(map(json!({"tool_call_id": "c1"})));
        assert_eq!(applies(&f, &sample()), vec![false, false, false, true, false]);
    }

    #[test]
    fn excluding_spares_a_message_that_matches_any_field() {
        // AG2's filter_config: exclude when any field matches, include when all do
        let f = MessageFilter::excluding(map(json!({"role": "user", "name": "bot"})));
        assert_eq!(applies(&f, &sample()), vec![true, false, false, true, true]);
        let f = MessageFilter::only(map(json!({"role": "user", "name": "bot"})));
        assert_eq!(applies(&f, &sample()), vec![false; 5]);
        // an empty filter is none
        assert_eq!(applies(&MessageFilter::excluding(Map::new()), &sample()), vec![true; 5]);
    }

    #[test]
    fn other_fields_and_unknown_roles_match_as_written() {
        let f = MessageFilter::only(map(json!({"tags": ["b", "z"]})));
        assert_eq!(applies(&f, &sample()), vec![false, true, false, false, false]);
        let f = MessageFilter::only(map(json!({"role": "tool_calls"})));
        assert_eq!(applies(&f, &sample()), vec![false, false, false, false, true]);
    }

    #[test]
    fn anthropic_names_live_in_extra() {
        let messages = anthropic(r#"[{"role": "user", "name": "alice", "content": "hi"}]"#);
        let f = MessageFilter::only(map(json!({"name": "alice"})));
        assert_eq!(applies(&f, &messages), vec![true]);
    }

    #[test]
    fn reads_keys_and_aliases() {
        let mut p = Params::new(map(json!({"filter": {"role": "system"}, "exclude": false})));
        let f = read_filter(&mut p).unwrap();
        assert_eq!(f, MessageFilter::only(map(json!({"role": "system"}))));
        p.finish().unwrap();
        let mut p = Params::new(map(json!({"filter_dict": ["system"]})));
        assert_eq!(read_filter(&mut p).unwrap_err().key, "filter_dict");
        let mut p = Params::new(map(json!({})));
        assert_eq!(read_filter(&mut p).unwrap(), MessageFilter::default());
    }
}
