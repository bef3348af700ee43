//! `ag2_history_limiter`: AG2's `MessageHistoryLimiter` (ag2 0.14), message for message.
//!
//! What AG2 keeps: messages sent by a name in `exclude_names` go first; then, if more than
//! `max_messages` are left, the last `max_messages` (the first message plus the last
//! `max_messages - 1` with `keep_first_message`). System messages get no protection. When the
//! oldest slot of the window falls on a `tool` message, AG2 leaves that slot empty (and so do
//! we for a legacy `function` result that would open the history).
//!
//! Where AG2's result is broken we differ, deliberately: AG2 puts the oldest message of the
//! window second when `keep_first_message` is false (max 3 of m1..m5 gives m4, m3, m5); we keep
//! the input's order. And its window can start on a tool result whose call it cut, or keep a
//! call whose results it cut or excluded; we then apply [`keep_steps_whole`], so a tool step
//! stays whole or goes whole (the history holds fewer than `max_messages`, never more). On
//! every other input the result is AG2's.
//!
//! Cost: reads the shape of the messages in the window and of the results next to them, plus
//! the name of every message when `exclude_names` is set: O(max_messages) otherwise, however
//! long the history (the Python package relies on this to read a caller's list lazily).

use super::select::{is_tool_role, keep_steps_whole, Shape, Shapes};
use crate::history::History;
use crate::params::{FromParams, Params};
use crate::steps::shared::written::Written;
use crate::steps::{ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};

/// `ag2_history_limiter` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<Ag2HistoryLimiter>("ag2_history_limiter", &[]).documented(
    "AG2's `MessageHistoryLimiter`, result for result (its split tool steps kept whole).",
    &[
        KeyDoc::new("max_messages", KeyUnit::Messages, "the most messages kept; none: no limit"),
        KeyDoc::new(
            "keep_first_message",
            KeyUnit::Flag,
            "keep the conversation's first message as one of `max_messages`",
        ),
        KeyDoc::new("exclude_names", KeyUnit::Names, "drop the messages sent by these names before counting"),
    ],
);

/// AG2's `MessageHistoryLimiter`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ag2HistoryLimiter {
    /// The most messages to keep. Defaults to `None`: no limit. Must be at least 1.
    pub max_messages: Option<usize>,
    /// Keep the conversation's first message (whatever its role) as one of the
    /// `max_messages`. Defaults to false.
    pub keep_first_message: bool,
    /// Drop the messages whose `name` is one of these before counting. Defaults to none.
    pub exclude_names: Vec<String>,
}

impl Ag2HistoryLimiter {
    /// Whether a message sent by `name` is excluded (AG2: `name not in exclude_names`).
    pub fn excludes(&self, name: Option<&str>) -> bool {
        name.is_some_and(|n| self.exclude_names.iter().any(|e| e == n))
    }

    /// The input indexes to keep, in order, from a history of `len` messages whose shapes
    /// `read` gives; `excluded(i)` says whether message `i` is excluded by its name (asked of
    /// every message, only when names are excluded: a cheaper read than a whole shape).
    pub fn select<E>(
        &self,
        len: usize,
        read: &mut dyn FnMut(usize) -> Result<Shape, E>,
        excluded: &mut dyn FnMut(usize) -> Result<bool, E>,
    ) -> Result<Vec<usize>, E> {
        let candidates: Vec<usize> = if self.exclude_names.is_empty() {
            (0..len).collect()
        } else {
            let mut kept = Vec::with_capacity(len);
            for i in 0..len {
                if !excluded(i)? {
                    kept.push(i);
                }
            }
            kept
        };
        let mut shapes = Shapes::new(len, read);
        let mut kept = match self.max_messages {
            Some(max) if candidates.len() > max => self.window(&candidates, max, &mut shapes)?,
            _ => candidates,
        };
        if kept.len() < len {
            keep_steps_whole(&mut shapes, &mut kept)?;
        }
        Ok(kept)
    }

    /// AG2's window over `candidates` (more than `max` of them), in input order.
    fn window<E>(
        &self,
        candidates: &[usize],
        max: usize,
        shapes: &mut Shapes<'_, E>,
    ) -> Result<Vec<usize>, E> {
        let mut kept = Vec::with_capacity(max);
        let mut slots = max as isize;
        if self.keep_first_message {
            kept.push(candidates[0]);
            slots -= 1;
        }
        for &i in candidates[1..].iter().rev() {
            if slots > 1 || (slots == 1 && !self.leaves_empty(shapes.get(i)?)) {
                kept.push(i);
            }
            slots -= 1;
            if slots <= 0 {
                break;
            }
        }
        kept.sort_unstable();
        Ok(kept)
    }
}

impl Ag2HistoryLimiter {
    /// Whether the oldest slot of the window stays empty for this message: AG2 leaves it
    /// empty for a `tool` message. Without `keep_first_message` AG2 puts that message second;
    /// in input order it opens the history, so a legacy `function` result is left out too
    /// (a history must not open with a result).
    fn leaves_empty(&self, oldest: &Shape) -> bool {
        is_tool_role(oldest) || (!self.keep_first_message && oldest.role == "function")
    }
}

impl Step for Ag2HistoryLimiter {
    fn name(&self) -> &'static str {
        "ag2_history_limiter"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        Written::new("ag2_history_limiter")
            .key("max_messages", self.max_messages)
            .key("keep_first_message", self.keep_first_message)
            .key("exclude_names", self.exclude_names.clone())
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.max_messages == Some(0) {
            return Err(ConfigError::new("max_messages", "must be None or greater than 1"));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, _cx: &StepContext<'_>) -> Result<(), StepError> {
        let shapes: Vec<Shape> = history.messages().iter().map(|m| Shape::of(m)).collect();
        let mut read = |i: usize| Ok::<_, std::convert::Infallible>(shapes[i].clone());
        let mut excluded = |i: usize| Ok(self.excludes(shapes[i].name.as_deref()));
        let Ok(kept) = self.select(shapes.len(), &mut read, &mut excluded);
        if kept.len() < history.len() {
            let mut keep = vec![false; history.len()];
            for i in kept {
                keep[i] = true;
            }
            let reason = match self.max_messages {
                Some(max) => format!("outside AG2's window of {max} messages"),
                None => "sent by an excluded name".to_string(),
            };
            history.retain(|i, _| keep[i], &reason);
        }
        Ok(())
    }
}

impl FromParams for Ag2HistoryLimiter {
    /// Keys: `max_messages`, `keep_first_message`, `exclude_names` (a list of names).
    fn from_params(p: &mut Params) -> Result<Ag2HistoryLimiter, ConfigError> {
        Ok(Ag2HistoryLimiter {
            max_messages: p.usize(&["max_messages"])?,
            keep_first_message: p.bool_or(&["keep_first_message"], false)?,
            exclude_names: p.strings_or(&["exclude_names"], &[])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::steps::test_support::{assert_valid, openai, run, texts};
    use serde_json::json;

    fn five() -> Vec<Message> {
        openai(
            r#"[{"role": "user", "content": "m1"}, {"role": "assistant", "content": "m2"},
                {"role": "user", "content": "m3"}, {"role": "assistant", "content": "m4"},
                {"role": "user", "content": "m5"}]"#,
        )
    }

    fn limiter(max: usize, first: bool) -> Ag2HistoryLimiter {
        Ag2HistoryLimiter { max_messages: Some(max), keep_first_message: first, ..Default::default() }
    }

    fn words(messages: &[Message]) -> Vec<String> {
        messages.iter().map(Message::text_content).collect()
    }

    #[test]
    fn keeps_the_last_messages_in_order() {
        // AG2 gives m4, m3, m5: the same messages, out of order
        assert_eq!(words(&run(&limiter(3, false), &five())), ["m3", "m4", "m5"]);
        assert_eq!(words(&run(&limiter(1, false), &five())), ["m5"]);
        assert_eq!(words(&run(&limiter(5, false), &five())), ["m1", "m2", "m3", "m4", "m5"]);
        assert_eq!(words(&run(&Ag2HistoryLimiter::default(), &five())).len(), 5);
    }

    #[test]
    fn keeps_the_first_message_as_one_of_the_max() {
        assert_eq!(words(&run(&limiter(3, true), &five())), ["m1", "m4", "m5"]);
        assert_eq!(words(&run(&limiter(1, true), &five())), ["m1"]);
    }

    #[test]
    fn system_messages_get_no_protection() {
        let input = openai(
            r#"[{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "a"}]"#,
        );
        assert_eq!(words(&run(&limiter(2, false), &input)), ["u", "a"]);
        assert_eq!(words(&run(&limiter(2, true), &input)), ["s", "a"]);
    }

    fn tools() -> Vec<Message> {
        openai(
            r#"[{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "name": "f", "content": "A"},
                {"role": "tool", "tool_call_id": "b", "name": "f", "content": "B"},
                {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]"#,
        )
    }

    #[test]
    fn a_tool_step_stays_whole() {
        // AG2 keeps s, B, done, next: B's call is gone
        let out = run(&limiter(5, true), &tools());
        assert_eq!(texts(&out), ["system: s", "assistant: done", "user: next"]);
        assert_valid(&out);
        // the oldest slot on a tool message stays empty, as in AG2
        let out = run(&limiter(4, false), &tools());
        assert_eq!(texts(&out), ["assistant: done", "user: next"]);
        let out = run(&limiter(6, false), &tools());
        assert_eq!(
            texts(&out),
            ["user: q", "assistant: calls f,f", "tool: A", "tool: B", "assistant: done", "user: next"]
        );
    }

    #[test]
    fn excluded_names_go_first_and_take_their_step_with_them() {
        let step = Ag2HistoryLimiter { exclude_names: vec!["f".into()], ..Default::default() };
        let out = run(&step, &tools());
        // both results were sent by "f": the call they answered goes too
        assert_eq!(texts(&out), ["system: s", "user: q", "assistant: done", "user: next"]);
        assert_valid(&out);
        let step = Ag2HistoryLimiter {
            max_messages: Some(2),
            exclude_names: vec!["nobody".into()],
            ..Default::default()
        };
        assert_eq!(words(&run(&step, &tools())), ["done", "next"]);
    }

    #[test]
    fn reads_only_the_window() {
        let mut read_count = 0;
        let mut read = |i: usize| {
            read_count += 1;
            Ok::<_, ()>(Shape {
                role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
                ..Shape::default()
            })
        };
        let kept =
            limiter(3, false).select(100_000, &mut read, &mut |_| unreachable!("no names excluded")).unwrap();
        assert_eq!(kept, vec![99_997, 99_998, 99_999]);
        assert!(read_count < 10, "{read_count} reads");
    }

    #[test]
    fn reads_params_and_checks_them() {
        let mut p = Params::new(
            json!({"max_messages": 3, "keep_first_message": true, "exclude_names": ["a", "b"]})
                .as_object()
                .unwrap()
                .clone(),
        );
        let step = Ag2HistoryLimiter::from_params(&mut p).unwrap();
        p.finish().unwrap();
        assert_eq!(
            step,
            Ag2HistoryLimiter {
                max_messages: Some(3),
                keep_first_message: true,
                exclude_names: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(limiter(0, false).check().unwrap_err().key, "max_messages");
    }
}
