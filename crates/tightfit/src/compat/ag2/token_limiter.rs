//! `ag2_token_limiter`: AG2's `MessageTokenLimiter` (ag2 0.14), token for token.
//!
//! AG2 counts only text (a message's `content` string, or the `text` of its content items),
//! always with cl100k_base (`gpt-3.5-turbo-0613`), and cuts with the encoding of `model`. Its
//! run, which this step repeats exactly:
//!
//! 1. With `min_tokens`, if the text tokens of all messages are fewer, nothing changes.
//! 2. From the newest message back: a message without text content (no `content`, or `null`)
//!    is kept and not counted; one the filter spares is kept whole and counted; any other is
//!    cut to `max_tokens_per_message` tokens and counted — unless
//!    `max_tokens - counted - max_tokens_per_message < 0`, in which case it is cut to
//!    `max_tokens - counted` tokens (Python slicing: a negative number drops that many from
//!    the end), kept, and every older message goes.
//! 3. A cut keeps the first tokens; a character cut in two becomes U+FFFD. In a list content
//!    every `text` item is cut to the limit on its own and rebuilt as `{"type", "text"}`.
//!
//! Its quirks are kept because they are its results: with `max_tokens` and no
//! `max_tokens_per_message` only the newest message is kept (cut to `max_tokens`); both
//! limits are capped to AG2's context size for `model` ([`ag2_token_limit`]; the capped limit
//! is what runs, and [`Ag2TokenLimiter::warnings`] gives AG2's printed warning); text that
//! spells a special token (`<|endoftext|>`) is refused ([`Ag2Error::SpecialToken`], AG2's
//! `ValueError` from tiktoken); a `model` tiktoken does not know fails when a text is cut
//! ([`Ag2Error::Model`], AG2's `KeyError`).
//!
//! We differ in one way: AG2 can leave tool results whose call it cut at the start of the
//! history; we drop them ([`keep_steps_whole`]), which only lowers the count.
//!
//! Cost: O(the messages from the newest back to the cut): counting and cutting them, nothing
//! for older ones (all of them with `min_tokens`, which needs the total). Messages are read
//! through an accessor so that a caller holding them elsewhere converts only those.

use crate::steps::shared::written::Written;
use std::borrow::Cow;

use serde_json::Value;

use super::select::{keep_steps_whole, Shape, Shapes};
use crate::compat::python::tiktoken::{encoding_for_model, EncodingError};
use crate::compat::python::TiktokenMemo;
use crate::history::History;
use crate::message::{ContentForm, Extra, Message, Part, TextPart};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::steps::shared::filter::{read_filter, MessageFilter};
use crate::steps::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, EXCLUDE_FILTER, FILTER_DICT,
};
use crate::tokens::OpenAiEncoding;

/// AG2's default model.
pub const AG2_DEFAULT_MODEL: &str = "gpt-3.5-turbo-0613";

/// Python's `sys.maxsize`: what AG2 uses for a limit that is not set.
const MAXSIZE: i128 = i64::MAX as i128;

/// `ag2_token_limiter` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<Ag2TokenLimiter>("ag2_token_limiter", &[]).documented(
    "AG2's `MessageTokenLimiter`, token for token: cl100k text counts, cuts in `model`'s encoding.",
    &[
        KeyDoc::new(
            "max_tokens_per_message",
            KeyUnit::Tokens,
            "the most text tokens of one message; none: no limit",
        ),
        KeyDoc::new("max_tokens", KeyUnit::Tokens, "the most text tokens of the history; none: no limit"),
        KeyDoc::new("min_tokens", KeyUnit::Tokens, "change nothing while the history has fewer text tokens"),
        KeyDoc::new(
            "model",
            KeyUnit::Text,
            "the model whose encoding cuts text and whose AG2 context size caps the limits",
        ),
        FILTER_DICT,
        EXCLUDE_FILTER,
    ],
);

/// AG2's `MessageTokenLimiter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ag2TokenLimiter {
    /// The most text tokens of one message. Defaults to `None`: no limit.
    pub max_tokens_per_message: Option<usize>,
    /// The most text tokens of the history. Defaults to `None`: no limit.
    pub max_tokens: Option<usize>,
    /// Change nothing while the history has fewer text tokens. Defaults to `None`. Must not be
    /// more than `max_tokens`.
    pub min_tokens: Option<usize>,
    /// The model whose encoding cuts text, and whose AG2 context size caps the limits.
    /// Defaults to `gpt-3.5-turbo-0613`, as AG2.
    pub model: String,
    /// Which messages may be cut; the others are kept whole (and counted). Defaults to all.
    pub filter: MessageFilter,
}

impl Default for Ag2TokenLimiter {
    fn default() -> Ag2TokenLimiter {
        Ag2TokenLimiter {
            max_tokens_per_message: None,
            max_tokens: None,
            min_tokens: None,
            model: AG2_DEFAULT_MODEL.to_string(),
            filter: MessageFilter::default(),
        }
    }
}

/// What AG2 raises, by message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Ag2Error {
    /// Text spells a special token, which tiktoken refuses to encode (`ValueError`).
    #[error("messages[{index}].content: Encountered text corresponding to disallowed special token {token:?} (tiktoken refuses to encode it, and AG2 counts with tiktoken)")]
    SpecialToken {
        /// The message.
        index: usize,
        /// The token's text.
        token: &'static str,
    },
    /// The model has no tiktoken encoding (`KeyError` when tiktoken does not know it).
    #[error("{0}")]
    Model(EncodingError),
    /// A content item AG2 cannot read as a dict with a `type` (`TypeError` for a string or a
    /// number, `KeyError` for a dict without `type`).
    #[error("messages[{index}].content[{item}]: {reason}")]
    ContentItem {
        /// The message.
        index: usize,
        /// The item.
        item: usize,
        /// Why, as Python says it.
        reason: String,
        /// Whether Python raises `KeyError` (else `TypeError`).
        key_error: bool,
    },
}

/// One message of the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ag2Kept {
    /// Its input index.
    pub index: usize,
    /// The message when it was changed; `None` when it is the input's.
    pub changed: Option<Message>,
}

/// The text tokens AG2 counts in `message` (`count_text_tokens(message["content"])`): the
/// content string, or the sum over content items (a string item, or a dict's `text`), with
/// cl100k_base. Fails on special-token text, as AG2 does. `index` is for the error; `memo`
/// remembers the counts for the next run.
pub fn text_tokens(message: &Message, index: usize, memo: &mut TiktokenMemo) -> Result<usize, Ag2Error> {
    let mut count = |text: &str| string_tokens(text, index, memo);
    fn value_tokens(
        value: Option<&Value>,
        count: &mut dyn FnMut(&str) -> Result<usize, Ag2Error>,
    ) -> Result<usize, Ag2Error> {
        match value {
            Some(Value::String(s)) => count(s),
            Some(Value::Array(items)) => {
                let mut total = 0;
                for item in items {
                    total += match item {
                        Value::String(s) => count(s)?,
                        Value::Object(map) => value_tokens(map.get("text"), count)?,
                        _ => 0,
                    };
                }
                Ok(total)
            }
            _ => Ok(0),
        }
    }
    let mut total = 0;
    match message.content_form {
        ContentForm::Absent | ContentForm::Null => {}
        ContentForm::Text | ContentForm::Parts => {
            for part in &message.parts {
                total += match part {
                    Part::Text(t) => count(&t.text)?,
                    Part::Opaque(Value::String(s)) if message.content_form == ContentForm::Parts => count(s)?,
                    Part::Opaque(Value::Object(map)) => value_tokens(map.get("text"), &mut count)?,
                    _ => 0,
                };
            }
        }
    }
    Ok(total)
}

/// The text tokens AG2 counts in a string (a content string, or a text item), cl100k_base:
/// what [`text_tokens`] gives for a message whose content is `text`.
pub fn string_tokens(text: &str, index: usize, memo: &mut TiktokenMemo) -> Result<usize, Ag2Error> {
    memo.count(OpenAiEncoding::Cl100kBase, text).map_err(|token| Ag2Error::SpecialToken { index, token })
}

/// AG2's context size of `model` (`token_count_utils.get_max_token_limit`), which caps its
/// limits; `None` for a model it does not list (it then prints that and caps nothing).
/// This is AG2's own table, not the model's real window: `gpt-3.5-turbo-0613`, AG2's default
/// model, caps every limit at 4,096.
pub fn ag2_token_limit(model: &str) -> Option<usize> {
    let model = if let Some(rest) = model.strip_prefix("gpt-35").or_else(|| model.strip_prefix("gpt35")) {
        format!("gpt-3.5{rest}")
    } else if let Some(rest) = model.strip_prefix("gpt4") {
        format!("gpt-4{rest}")
    } else {
        model.to_string()
    };
    AG2_TOKEN_LIMITS.iter().find(|(m, _)| *m == model).map(|(_, n)| *n)
}

/// `token_count_utils.get_max_token_limit` of ag2 0.14.
const AG2_TOKEN_LIMITS: &[(&str, usize)] = &[
    ("gpt-3.5-turbo", 16385),
    ("gpt-3.5-turbo-0125", 16385),
    ("gpt-3.5-turbo-0301", 4096),
    ("gpt-3.5-turbo-0613", 4096),
    ("gpt-3.5-turbo-instruct", 4096),
    ("gpt-3.5-turbo-16k", 16385),
    ("gpt-3.5-turbo-16k-0613", 16385),
    ("gpt-3.5-turbo-1106", 16385),
    ("gpt-4", 8192),
    ("gpt-4-turbo", 128000),
    ("gpt-4-turbo-2024-04-09", 128000),
    ("gpt-4-32k", 32768),
    ("gpt-4-32k-0314", 32768),
    ("gpt-4-0314", 8192),
    ("gpt-4-0613", 8192),
    ("gpt-4-32k-0613", 32768),
    ("gpt-4-1106-preview", 128000),
    ("gpt-4-0125-preview", 128000),
    ("gpt-4-turbo-preview", 128000),
    ("gpt-4-vision-preview", 128000),
    ("gpt-4o", 128000),
    ("gpt-4o-2024-05-13", 128000),
    ("gpt-4o-2024-08-06", 128000),
    ("gpt-4o-2024-11-20", 128000),
    ("gpt-4o-mini", 128000),
    ("gpt-4o-mini-2024-07-18", 128000),
    ("gpt-5", 128000),
    ("gpt-5-mini", 128000),
    ("gpt-5-nano", 128000),
    ("gpt-5-pro", 128000),
    ("gpt-5-search-api", 128000),
    ("gpt-5.1", 128000),
    ("gpt-5.1-chat-latest", 128000),
    ("gpt-5.1-codex", 128000),
    ("gpt-5.1-codex-mini", 128000),
    ("gpt-5.1-codex-max", 128000),
    ("codex-mini-latest", 128000),
    ("gpt-5.2", 128000),
    ("gpt-5.2-chat-latest", 128000),
    ("gpt-5.2-pro", 128000),
    ("gpt-5.2-codex", 128000),
    ("gpt-5.2-codex-max", 128000),
    ("gpt-5.3", 128000),
    ("gpt-5.3-chat-latest", 128000),
    ("gpt-5.4", 128000),
    ("gpt-5.4-chat-latest", 128000),
    ("gpt-5.4-pro", 128000),
    ("gpt-4.1", 1047576),
    ("gpt-4.1-2025-04-14", 1047576),
    ("gpt-4.1-mini", 1047576),
    ("gpt-4.1-mini-2025-04-14", 1047576),
    ("gpt-4.1-nano", 1047576),
    ("gpt-4.1-nano-2025-04-14", 1047576),
    ("o1", 200000),
    ("o1-2024-12-17", 200000),
    ("o1-mini", 128000),
    ("o1-mini-2024-09-12", 128000),
    ("o1-preview", 128000),
    ("o1-preview-2024-09-12", 128000),
    ("o1-pro", 200000),
    ("o1-pro-2025-03-19", 200000),
    ("o3", 200000),
    ("o3-mini", 200000),
    ("o3-mini-2025-01-31", 200000),
    ("o4-mini", 200000),
    ("o4-mini-2025-04-16", 200000),
];

impl Ag2TokenLimiter {
    /// A limit as AG2 runs it: capped to the model's AG2 context size, `sys.maxsize` if unset.
    fn effective(&self, limit: Option<usize>) -> i128 {
        match (limit, ag2_token_limit(&self.model)) {
            (Some(n), Some(cap)) if n > cap => cap as i128,
            (Some(n), _) => n as i128,
            (None, _) => MAXSIZE,
        }
    }

    /// What AG2 prints when it is built with these settings: one line per limit capped to the
    /// model's context size, or that the model is not in its table (once per limit).
    pub fn warnings(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for limit in [self.max_tokens_per_message, self.max_tokens] {
            match (limit, ag2_token_limit(&self.model)) {
                (_, None) => lines.push(format!("Model {} not found in token_count_utils.", self.model)),
                (Some(n), Some(cap)) if n > cap => lines.push(format!(
                    "Max token was set to {n}, but {} can only accept {cap} tokens. Capping it to {cap}.",
                    self.model
                )),
                _ => {}
            }
        }
        lines
    }

    /// The kept messages, oldest first, of a history of `len` messages read by `read`.
    /// `memo` remembers the counts and cuts for the next run (AG2 runs on every turn).
    pub fn select<'m, E: From<Ag2Error>>(
        &self,
        len: usize,
        read: &mut dyn FnMut(usize) -> Result<Cow<'m, Message>, E>,
        memo: &mut TiktokenMemo,
    ) -> Result<Vec<Ag2Kept>, E> {
        let all_kept = || (0..len).map(|index| Ag2Kept { index, changed: None }).collect();
        if let Some(min) = self.min_tokens.filter(|m| *m > 0) {
            let mut total = 0;
            for i in 0..len {
                let message = read(i)?;
                if message.content_form != ContentForm::Absent {
                    total += text_tokens(&message, i, memo)?;
                }
            }
            if total < min {
                return Ok(all_kept());
            }
        }
        let max = self.effective(self.max_tokens);
        let per = self.effective(self.max_tokens_per_message);
        let mut used: i128 = 0;
        let mut kept = Vec::new();
        let mut shapes = Vec::new();
        for i in (0..len).rev() {
            let message = read(i)?;
            shapes.push(Shape::of(&message));
            if !matches!(message.content_form, ContentForm::Text | ContentForm::Parts) {
                kept.push(Ag2Kept { index: i, changed: None });
                continue;
            }
            if !self.filter.applies_to(&message) {
                used += text_tokens(&message, i, memo)? as i128;
                kept.push(Ag2Kept { index: i, changed: None });
                continue;
            }
            if max - used - per < 0 {
                let changed = self.cut(&message, i, max - used, memo)?;
                kept.push(Ag2Kept { index: i, changed });
                break;
            }
            let changed = self.cut(&message, i, per, memo)?;
            used += text_tokens(changed.as_ref().unwrap_or(&message), i, memo)? as i128;
            kept.push(Ag2Kept { index: i, changed });
        }
        kept.reverse();
        shapes.reverse();
        if kept.len() < len {
            // the kept messages are the suffix whose shapes were read
            let first = len - shapes.len();
            let mut read_shape = |i: usize| -> Result<Shape, E> {
                if i >= first {
                    Ok(shapes[i - first].clone())
                } else {
                    read(i).map(|m| Shape::of(&m))
                }
            };
            let mut indexes: Vec<usize> = kept.iter().map(|k| k.index).collect();
            let mut shapes = Shapes::new(len, &mut read_shape);
            if keep_steps_whole(&mut shapes, &mut indexes)? {
                kept.retain(|k| indexes.binary_search(&k.index).is_ok());
            }
        }
        Ok(kept)
    }

    /// `message` with its text cut to `n` tokens as AG2 cuts it, or `None` if that changes
    /// nothing.
    fn cut(
        &self,
        message: &Message,
        index: usize,
        n: i128,
        memo: &mut TiktokenMemo,
    ) -> Result<Option<Message>, Ag2Error> {
        let encoding = encoding_for_model(&self.model).map_err(Ag2Error::Model);
        let mut cut_text = |text: &str| -> Result<String, Ag2Error> {
            let cut = memo
                .cut(encoding.clone()?, text, n)
                .map_err(|token| Ag2Error::SpecialToken { index, token })?;
            Ok(cut.unwrap_or_else(|| text.to_string()))
        };
        let mut parts = Vec::with_capacity(message.parts.len());
        let mut changed = false;
        for (item, part) in message.parts.iter().enumerate() {
            let part = match part {
                Part::Text(t) => {
                    let text = cut_text(&t.text)?;
                    // AG2 rebuilds every text item of a list as {"type", "text"}
                    let rebuilt = message.content_form == ContentForm::Parts && !t.extra.is_empty();
                    changed |= text != t.text || rebuilt;
                    Part::Text(TextPart { text, extra: Extra::new() })
                }
                Part::Opaque(value) if message.content_form == ContentForm::Parts => {
                    let (reason, key_error) = match value {
                        Value::Object(map) if !map.contains_key("type") => ("'type'".to_string(), true),
                        Value::Object(_) => (String::new(), false),
                        Value::String(_) => ("string indices must be integers, not 'str'".to_string(), false),
                        other => (format!("'{}' object is not subscriptable", python_type(other)), false),
                    };
                    if !reason.is_empty() {
                        return Err(Ag2Error::ContentItem { index, item, reason, key_error });
                    }
                    part.clone()
                }
                other => other.clone(),
            };
            parts.push(part);
        }
        Ok(changed.then(|| Message { parts, ..message.clone() }))
    }
}

fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

impl Step for Ag2TokenLimiter {
    fn name(&self) -> &'static str {
        "ag2_token_limiter"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("ag2_token_limiter")
            .key("max_tokens_per_message", self.max_tokens_per_message)
            .key("max_tokens", self.max_tokens)
            .key("min_tokens", self.min_tokens)
            .key("model", self.model.as_str())
            .filter(&self.filter)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if let (Some(min), Some(max)) = (self.min_tokens, self.max_tokens) {
            if min > max {
                return Err(ConfigError::new("min_tokens", "min_tokens must not be more than max_tokens."));
            }
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let messages: Vec<Message> = history.messages().iter().map(|m| m.as_ref().clone()).collect();
        let mut read = |i: usize| Ok::<_, Ag2Error>(Cow::Borrowed(&messages[i]));
        let kept = self
            .select(messages.len(), &mut read, &mut TiktokenMemo::new())
            .map_err(|e| StepError::new(self.name(), e.to_string()))?;
        if kept.len() < history.len() {
            let mut keep = vec![false; history.len()];
            for k in &kept {
                keep[k.index] = true;
            }
            history.retain(|i, _| keep[i], "older than the newest messages within AG2's token limit");
        }
        for (position, k) in kept.into_iter().enumerate() {
            if let Some(message) = k.changed {
                history
                    .edit(position, ChangeKind::Truncated, "text cut to AG2's token limit", |m| *m = message);
            }
        }
        Ok(())
    }
}

impl FromParams for Ag2TokenLimiter {
    /// Keys: `max_tokens_per_message`, `max_tokens`, `min_tokens`, `model`, `filter_dict`
    /// (alias `filter`), `exclude_filter` (alias `exclude`).
    fn from_params(p: &mut Params) -> Result<Ag2TokenLimiter, ConfigError> {
        Ok(Ag2TokenLimiter {
            max_tokens_per_message: p.usize(&["max_tokens_per_message"])?,
            max_tokens: p.usize(&["max_tokens"])?,
            min_tokens: p.usize(&["min_tokens"])?,
            model: p.string_or(&["model"], AG2_DEFAULT_MODEL)?,
            filter: read_filter(p)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::test_support::{assert_valid, openai, run, texts};
    use serde_json::json;

    fn limiter(per: Option<usize>, max: Option<usize>) -> Ag2TokenLimiter {
        Ag2TokenLimiter { max_tokens_per_message: per, max_tokens: max, ..Ag2TokenLimiter::default() }
    }

    /// The step's selection, checked to be the same when run again with what the first run
    /// remembered (as the Python class runs it, turn after turn).
    fn select(step: &Ag2TokenLimiter, input: &[Message]) -> Result<Vec<Message>, Ag2Error> {
        let mut read = |i: usize| Ok::<_, Ag2Error>(Cow::Borrowed(&input[i]));
        let mut memo = TiktokenMemo::new();
        let kept = step.select(input.len(), &mut read, &mut memo);
        assert_eq!(step.select(input.len(), &mut read, &mut memo), kept, "a second run with the memo");
        Ok(kept?.into_iter().map(|k| k.changed.unwrap_or_else(|| input[k.index].clone())).collect())
    }

    fn words(messages: &[Message]) -> Vec<String> {
        messages.iter().map(Message::text_content).collect()
    }

    fn chat() -> Vec<Message> {
        // cl100k: "one two three four" is 4 tokens
        openai(
            r#"[{"role": "system", "content": "one two three four"},
                {"role": "user", "content": "one two three four"},
                {"role": "assistant", "content": "one two three four"},
                {"role": "user", "content": "one two three four"}]"#,
        )
    }

    #[test]
    fn cuts_each_message_then_stops_at_the_limit() {
        let out = select(&limiter(Some(2), Some(5)), &chat()).unwrap();
        // 2 + 2 fit; 5 - 4 - 2 < 0: the third from the end is cut to the 1 token left
        assert_eq!(words(&out), ["one", "one two", "one two"]);
        let out = select(&limiter(Some(3), None), &chat()).unwrap();
        assert_eq!(words(&out), ["one two three"; 4]);
    }

    #[test]
    fn max_tokens_alone_keeps_the_newest_message_cut() {
        let out = select(&limiter(None, Some(3)), &chat()).unwrap();
        assert_eq!(words(&out), ["one two three"]);
        // no limit at all: the newest two (the second is "cut" to maxsize - 4)
        let out = select(&limiter(None, None), &chat()).unwrap();
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn min_tokens_leaves_small_histories_alone() {
        let step = Ag2TokenLimiter { min_tokens: Some(17), ..limiter(Some(1), Some(2)) };
        assert_eq!(select(&step, &chat()).unwrap(), chat());
        let step = Ag2TokenLimiter { min_tokens: Some(16), ..limiter(Some(1), Some(2)) };
        // 1 + 1 fit, the third is cut to nothing and ends the run
        assert_eq!(words(&select(&step, &chat()).unwrap()), ["", "one", "one"]);
        // AG2 refuses min_tokens above max_tokens when it is built
        assert_eq!(step.check().unwrap_err().key, "min_tokens");
        let step = Ag2TokenLimiter { min_tokens: Some(2), ..limiter(Some(1), Some(2)) };
        assert_eq!(step.check(), Ok(()));
        let step = Ag2TokenLimiter { min_tokens: Some(3), ..limiter(Some(1), Some(2)) };
        assert_eq!(step.check().unwrap_err().key, "min_tokens");
    }

    #[test]
    fn spared_messages_count_and_can_push_the_cut_backwards() {
        let spare_system = MessageFilter::excluding(json!({"role": "system"}).as_object().unwrap().clone());
        let step = Ag2TokenLimiter { filter: spare_system, ..limiter(Some(4), Some(8)) };
        // newest two fit (8), the assistant is cut to 0 tokens and ends the run
        let out = select(&step, &chat()).unwrap();
        assert_eq!(words(&out), ["", "one two three four", "one two three four"]);
        let spare_user = MessageFilter::excluding(json!({"role": "user"}).as_object().unwrap().clone());
        let step = Ag2TokenLimiter { filter: spare_user, ..limiter(Some(4), Some(2)) };
        // the spared newest counts 4 > 2: the assistant is cut to 2 - 4 = -2 tokens: all but its last 2
        let out = select(&step, &chat()).unwrap();
        assert_eq!(words(&out), ["one two", "one two three four"]);
    }

    #[test]
    fn limits_are_capped_to_ag2s_context_size() {
        let step = limiter(Some(5000), Some(100_000));
        assert_eq!(step.effective(step.max_tokens), 4096);
        assert_eq!(
            step.warnings(),
            [
                "Max token was set to 5000, but gpt-3.5-turbo-0613 can only accept 4096 tokens. Capping it to 4096.",
                "Max token was set to 100000, but gpt-3.5-turbo-0613 can only accept 4096 tokens. Capping it to 4096."
            ]
        );
        let unknown = Ag2TokenLimiter { model: "claude-3-5-sonnet".into(), ..limiter(None, Some(10)) };
        assert_eq!(unknown.warnings().len(), 2);
        assert_eq!(ag2_token_limit("gpt35-turbo"), Some(16385));
        assert_eq!(ag2_token_limit("gpt4o"), Some(128000));
    }

    #[test]
    fn peer_errors() {
        let special = openai(r#"[{"role": "user", "content": "a <|endoftext|> b"}]"#);
        assert_eq!(
            select(&limiter(Some(1), None), &special),
            Err(Ag2Error::SpecialToken { index: 0, token: "<|endoftext|>" })
        );
        let unknown = Ag2TokenLimiter { model: "claude-3-5-sonnet".into(), ..limiter(Some(1), None) };
        assert!(matches!(select(&unknown, &chat()), Err(Ag2Error::Model(EncodingError::UnknownModel(_)))));
        let strings = openai(r#"[{"role": "user", "content": ["plain"]}]"#);
        assert!(matches!(
            select(&limiter(Some(1), None), &strings),
            Err(Ag2Error::ContentItem { key_error: false, .. })
        ));
    }

    #[test]
    fn list_content_cuts_each_text_item_and_keeps_the_others() {
        let input = openai(
            r#"[{"role": "user", "content": [
                {"type": "text", "text": "one two three", "cache_control": {"type": "ephemeral"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                {"type": "text", "text": "four five six"}]}]"#,
        );
        let out = select(&limiter(Some(1), None), &input).unwrap();
        assert_eq!(words(&out), ["one\nfour"]);
        assert!(matches!(&out[0].parts[0], Part::Text(t) if t.extra.is_empty()));
        assert_eq!(out[0].parts[1], input[0].parts[1]);
        assert_eq!(text_tokens(&input[0], 0, &mut TiktokenMemo::new()), Ok(6));
    }

    #[test]
    fn messages_without_content_are_kept_uncounted_and_results_keep_their_call() {
        let input = openai(
            r#"[{"role": "user", "content": "one two three four"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "one two three four"},
                {"role": "user", "content": "one two three four"}]"#,
        );
        let step = limiter(Some(4), Some(7));
        // AG2 stops at the tool result (cut to 3 tokens) and keeps it without its call
        let out = run(&step, &input);
        assert_eq!(texts(&out), ["user: one two three four"]);
        assert_valid(&out);
        // room for all four: the oldest is cut to what is left (11 - 8 = 3 tokens)
        let out = run(&limiter(Some(4), Some(11)), &input);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].text_content(), "one two three");
    }
}
