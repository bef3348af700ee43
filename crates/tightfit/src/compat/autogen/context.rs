//! autogen-core 0.7.5's chat completion contexts, exactly, except where they would break the
//! history: `autogen_buffered`, `autogen_head_and_tail`, `autogen_token_limited`.
//!
//! What each keeps, in autogen messages (a step's results are one message, see
//! [`AutogenMessage`]):
//! - **buffered** (`BufferedChatCompletionContext`): the last `buffer_size` messages, less a
//!   results message at the start of the window.
//! - **head and tail** (`HeadAndTailChatCompletionContext`): everything while the history
//!   holds at most `head_size + tail_size` messages; else the first `head_size` (less a calls
//!   message at their end), `UserMessage("Skipped N messages.", source="System")` with N =
//!   length − head − tail counted before those drops, and the last `tail_size` (less a
//!   results message at their start).
//! - **token limited** (`TokenLimitedChatCompletionContext`): removes the message at index
//!   `len // 2` until the count is within the limit, then a results message left first.
//!   Removing the middle repeatedly removes a contiguous block around the middle, so the kept
//!   messages are always a head and a tail; with counts that add up per message (autogen-ext's
//!   OpenAI counter does) the loop costs O(1) per removal instead of a re-count of the whole
//!   history, which is what makes autogen's own take minutes on a long history.
//!
//! The deliberate difference: autogen's cuts can split a tool step (token limited drops a
//! calls message and keeps its results, or the reverse; head and tail can when results come
//! in several messages). Where a step that was whole in the input is cut, the part that was
//! kept goes too, so every kept result answers a kept call and every kept call keeps its
//! results. That only removes messages, so the history stays within the same limit; it is the
//! closest valid history to autogen's. An input that already breaks the same rule (a dangling
//! call, an orphan result) is cut exactly as autogen cuts it: it was invalid before, and the
//! conformance corpus holds us to autogen's output there.

use crate::steps::shared::written::Written;
use std::ops::Range;

use super::count::AutogenOpenAiCounter;
use super::message::AutogenMessage;
use crate::calls::{step_around, Slice};
use crate::history::History;
use crate::message::{Message, Role};
use crate::params::{FromParams, Params};
use crate::steps::{ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind};
use crate::tokens::OpenAiEncoding;

/// The text autogen's head-and-tail context puts where it skipped messages.
pub fn autogen_skipped_text(skipped: usize) -> String {
    format!("Skipped {skipped} messages.")
}

/// One piece of what a context returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewPart {
    /// These input messages, in order.
    Keep(Range<usize>),
    /// A new user message (source `System`) with this text.
    Placeholder(String),
}

/// What a context returns from `get_messages`, as ranges of the input and placeholders: the
/// caller slices its own message list, so unchanged messages come back as its own objects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AutogenView {
    /// The pieces, in order.
    pub parts: Vec<ViewPart>,
}

impl AutogenView {
    /// The view of the kept `ranges` (in order), with `placeholder` put before input index
    /// `at` (after every kept message before it).
    fn new(ranges: Vec<Range<usize>>, placeholder: Option<(usize, String)>) -> AutogenView {
        let mut parts = Vec::with_capacity(ranges.len() + 1);
        let mut placeholder = placeholder;
        for r in ranges.into_iter().filter(|r| !r.is_empty()) {
            if placeholder.as_ref().is_some_and(|(at, _)| *at <= r.start) {
                parts.push(ViewPart::Placeholder(placeholder.take().expect("checked").1));
            }
            parts.push(ViewPart::Keep(r));
        }
        if let Some((_, text)) = placeholder {
            parts.push(ViewPart::Placeholder(text));
        }
        AutogenView { parts }
    }

    /// The input indices kept, in order (placeholders left out).
    pub fn kept(&self) -> Vec<usize> {
        self.parts
            .iter()
            .flat_map(|p| match p {
                ViewPart::Keep(r) => r.clone(),
                ViewPart::Placeholder(_) => 0..0,
            })
            .collect()
    }

    /// The number of messages returned, placeholders included.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| if let ViewPart::Keep(r) = p { r.len() } else { 1 }).sum()
    }

    /// Whether nothing is returned.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The tool step message `i` belongs to, when it has one to cut: a calls message and the
/// results messages right after it that answer its calls ([`step_around`]). O(size of the
/// step).
fn step_at(messages: &[AutogenMessage], i: usize) -> Option<Range<usize>> {
    let Ok(step) = step_around(&mut Slice(messages), i);
    step
}

/// Which kinds of breakage an input already has. The contexts cut an input that already breaks
/// a rule exactly as autogen does (it was invalid before, and the conformance corpus holds us
/// to autogen's output there); they keep from adding a kind it did not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InputBreakage {
    /// A call that no result right after it answers.
    pub unanswered_call: bool,
    /// A result that answers no call of the step right before it.
    pub orphan_result: bool,
}

impl InputBreakage {
    /// Looks at every message once. O(messages + calls); the Python adapter keeps it per
    /// history length, so asking a context again costs only the window.
    pub fn of(messages: &[AutogenMessage]) -> InputBreakage {
        let mut found = InputBreakage::default();
        let mut i = 0;
        while i < messages.len() {
            let m = &messages[i];
            if m.is_calls() {
                let step = step_at(messages, i).unwrap_or(i..i + 1);
                let answered: Vec<&str> =
                    messages[step.clone()].iter().flat_map(|r| r.answered_ids()).collect();
                found.unanswered_call |= m.call_ids().any(|id| !answered.contains(&id));
                let ids: Vec<&str> = m.call_ids().collect();
                found.orphan_result |= answered.iter().any(|id| !ids.contains(id));
                i = step.end;
            } else {
                found.orphan_result |= m.is_results() && m.answered_ids().next().is_some();
                i += 1;
            }
        }
        found
    }
}

/// Removes the kept part of every tool step the kept `ranges` cut (a call kept without its
/// results, or results without their call), unless the input already breaks that rule (see
/// [`InputBreakage`]). Only a step across a range's edge can be cut, so this costs the size
/// of those steps, not of the history. Only removes, so any limit the ranges met still holds.
fn keep_steps_whole(
    messages: &[AutogenMessage],
    breakage: InputBreakage,
    ranges: Vec<Range<usize>>,
) -> Vec<Range<usize>> {
    let ranges: Vec<Range<usize>> = ranges.into_iter().filter(|r| !r.is_empty()).collect();
    let kept = |i: usize| ranges.iter().any(|r| r.contains(&i));
    let mut drop: Vec<Range<usize>> = Vec::new();
    for edge in ranges.iter().flat_map(|r| [r.start, r.end - 1]) {
        let Some(step) = step_at(messages, edge) else { continue };
        if drop.iter().any(|d| d.start == step.start) {
            continue;
        }
        let n = step.clone().filter(|&i| kept(i)).count();
        if n == 0 || n == step.len() {
            continue;
        }
        // the call kept: the cut leaves it unanswered; else it orphans results
        let anew = if kept(step.start) { !breakage.unanswered_call } else { !breakage.orphan_result };
        if anew {
            drop.push(step);
        }
    }
    if drop.is_empty() {
        return ranges;
    }
    let mut out = Vec::with_capacity(ranges.len() + drop.len());
    for r in ranges {
        let mut pieces = vec![r];
        for d in &drop {
            pieces = pieces
                .into_iter()
                .flat_map(|p| [p.start..p.end.min(d.start), p.start.max(d.end)..p.end])
                .filter(|p| !p.is_empty())
                .collect();
        }
        out.extend(pieces);
    }
    out
}

/// `BufferedChatCompletionContext(buffer_size).get_messages()`. O(buffer).
pub fn buffered(messages: &[AutogenMessage], breakage: InputBreakage, buffer_size: usize) -> AutogenView {
    let mut start = messages.len().saturating_sub(buffer_size);
    if messages.get(start).is_some_and(AutogenMessage::is_results) {
        start += 1;
    }
    AutogenView::new(
        keep_steps_whole(messages, breakage, std::iter::once(start..messages.len()).collect()),
        None,
    )
}

/// `HeadAndTailChatCompletionContext(head_size, tail_size).get_messages()`. O(head + tail).
pub fn head_and_tail(
    messages: &[AutogenMessage],
    breakage: InputBreakage,
    head_size: usize,
    tail_size: usize,
) -> AutogenView {
    let len = messages.len();
    let Some(skipped) = len.checked_sub(head_size.saturating_add(tail_size)).filter(|s| *s > 0) else {
        return AutogenView::new(std::iter::once(0..len).collect(), None);
    };
    let mut head_end = head_size;
    if head_end > 0 && messages[head_end - 1].is_calls() {
        head_end -= 1;
    }
    let mut tail_start = len - tail_size;
    if messages[tail_start].is_results() {
        tail_start += 1;
    }
    let ranges = keep_steps_whole(messages, breakage, vec![0..head_end, tail_start..len]);
    AutogenView::new(ranges, Some((head_size, autogen_skipped_text(skipped))))
}

/// The messages autogen's token-limited loop keeps, as `[0, left)` and `[right, len)`:
/// `over(left, right)` says whether those are over the limit, and while they are (and any is
/// left) the message at index `kept // 2` of the kept ones goes. Errors of `over` pass through.
fn remove_middle<E>(
    len: usize,
    mut over: impl FnMut(usize, usize) -> Result<bool, E>,
) -> Result<(usize, usize), E> {
    // the kept ones are [0, left) ++ [right, len); the middle of them is always at one edge
    // of the removed block, so the block stays contiguous
    let (mut left, mut right) = (len / 2, len / 2);
    while left + (len - right) > 0 && over(left, right)? {
        let middle = (left + len - right) / 2;
        if middle == left {
            right += 1;
        } else {
            debug_assert_eq!(middle + 1, left, "the middle is next to the removed block");
            left -= 1;
        }
    }
    Ok((left, right))
}

/// `[0, left)` and `[right, len)`, less a results message left first, with steps kept whole.
fn token_limited_view(
    messages: &[AutogenMessage],
    breakage: InputBreakage,
    left: usize,
    right: usize,
) -> AutogenView {
    let mut ranges: Vec<Range<usize>> =
        [0..left, right..messages.len()].into_iter().filter(|r| !r.is_empty()).collect();
    if let Some(first) = ranges.first_mut() {
        if messages[first.start].is_results() {
            first.start += 1;
        }
    }
    AutogenView::new(keep_steps_whole(messages, breakage, ranges), None)
}

/// `TokenLimitedChatCompletionContext.get_messages()` with any counter: `over(kept)` says
/// whether the kept input indices are over the limit (autogen: `count_tokens(kept) >
/// token_limit`, or `remaining_tokens(kept) < 0`). It is called once per removal, as autogen
/// does; errors pass through.
pub fn token_limited_with<E>(
    messages: &[AutogenMessage],
    breakage: InputBreakage,
    mut over: impl FnMut(&[usize]) -> Result<bool, E>,
) -> Result<AutogenView, E> {
    let len = messages.len();
    let mut kept = Vec::with_capacity(len);
    let (left, right) = remove_middle(len, |left, right| {
        kept.clear();
        kept.extend((0..left).chain(right..len));
        over(&kept)
    })?;
    Ok(token_limited_view(messages, breakage, left, right))
}

/// `TokenLimitedChatCompletionContext.get_messages()` with a counter whose count is the sum
/// of per-message `tokens` plus `fixed` (priming and tools): messages go while that is over
/// `limit`. O(messages), one subtraction per removal.
pub fn token_limited(
    messages: &[AutogenMessage],
    breakage: InputBreakage,
    tokens: &[usize],
    fixed: usize,
    limit: usize,
) -> AutogenView {
    debug_assert_eq!(messages.len(), tokens.len());
    let mut sum: usize = tokens.iter().sum();
    let (mut last_left, mut last_right) = (messages.len() / 2, messages.len() / 2);
    let result: Result<_, std::convert::Infallible> = remove_middle(messages.len(), |left, right| {
        // one message left the kept set since the last call (or none, the first time)
        if left < last_left {
            sum -= tokens[left];
        } else if right > last_right {
            sum -= tokens[right - 1];
        }
        (last_left, last_right) = (left, right);
        Ok(sum + fixed > limit)
    });
    let Ok((left, right)) = result;
    token_limited_view(messages, breakage, left, right)
}

/// Which autogen context a step is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutogenPolicy {
    /// `BufferedChatCompletionContext(buffer_size)`.
    Buffered {
        /// How many messages to keep (at least 1).
        buffer_size: usize,
    },
    /// `HeadAndTailChatCompletionContext(head_size, tail_size)`.
    HeadAndTail {
        /// Messages kept from the start (at least 1).
        head_size: usize,
        /// Messages kept from the end (at least 1).
        tail_size: usize,
    },
    /// `TokenLimitedChatCompletionContext(OpenAIChatCompletionClient(...), token_limit)`.
    TokenLimited {
        /// The limit; the call's budget when `None` (autogen: the model's window).
        token_limit: Option<usize>,
        /// The encoding of the client's model.
        encoding: OpenAiEncoding,
    },
}

/// An autogen-core context as a pipeline step, over OpenAI-shaped messages (a run of tool
/// messages is one autogen results message). The Python adapter calls the same functions
/// ([`buffered`], [`head_and_tail`], [`token_limited`]) on the messages it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutogenContext {
    /// Which context, with its settings.
    pub policy: AutogenPolicy,
}

impl AutogenContext {
    /// The view of `messages` (whose [`InputBreakage`] is `breakage`) under this context;
    /// `budget` stands in for a missing `token_limit`.
    pub fn view(
        &self,
        messages: &[AutogenMessage],
        breakage: InputBreakage,
        budget: Option<usize>,
    ) -> Result<AutogenView, String> {
        Ok(match &self.policy {
            AutogenPolicy::Buffered { buffer_size } => buffered(messages, breakage, *buffer_size),
            AutogenPolicy::HeadAndTail { head_size, tail_size } => {
                head_and_tail(messages, breakage, *head_size, *tail_size)
            }
            AutogenPolicy::TokenLimited { token_limit, encoding } => {
                let limit = token_limit.or(budget).ok_or("no token_limit and no budget")?;
                let counter = AutogenOpenAiCounter::new(*encoding);
                let tokens = messages.iter().map(|m| counter.message(m)).collect::<Result<Vec<_>, _>>();
                let tokens = tokens.map_err(|e| e.to_string())?;
                token_limited(messages, breakage, &tokens, super::count::AUTOGEN_REPLY_PRIMING, limit)
            }
        })
    }
}

impl Step for AutogenContext {
    fn name(&self) -> &'static str {
        match self.policy {
            AutogenPolicy::Buffered { .. } => "autogen_buffered",
            AutogenPolicy::HeadAndTail { .. } => "autogen_head_and_tail",
            AutogenPolicy::TokenLimited { .. } => "autogen_token_limited",
        }
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        let written = Written::new(self.name());
        match self.policy {
            AutogenPolicy::Buffered { buffer_size } => written.key("buffer_size", buffer_size),
            AutogenPolicy::HeadAndTail { head_size, tail_size } => {
                written.key("head_size", head_size).key("tail_size", tail_size)
            }
            AutogenPolicy::TokenLimited { token_limit, encoding } => {
                let encoding = match encoding {
                    OpenAiEncoding::Cl100kBase => "cl100k_base",
                    _ => "o200k_base",
                };
                written.key("token_limit", token_limit).key("encoding", encoding)
            }
        }
        .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        // autogen's own messages, for its ValueErrors
        match self.policy {
            AutogenPolicy::Buffered { buffer_size: 0 } => {
                Err(ConfigError::new("buffer_size", "buffer_size must be greater than 0."))
            }
            AutogenPolicy::HeadAndTail { head_size: 0, .. } => {
                Err(ConfigError::new("head_size", "head_size must be greater than 0."))
            }
            AutogenPolicy::HeadAndTail { tail_size: 0, .. } => {
                Err(ConfigError::new("tail_size", "tail_size must be greater than 0."))
            }
            AutogenPolicy::TokenLimited { token_limit: Some(0), .. } => {
                Err(ConfigError::new("token_limit", "token_limit must be greater than 0."))
            }
            _ => Ok(()),
        }
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        let messages: Vec<Message> = history.messages().iter().map(|m| m.as_ref().clone()).collect();
        let grouped = AutogenMessage::group(&messages);
        let (autogen, ranges): (Vec<_>, Vec<_>) = grouped.into_iter().unzip();
        let view = self
            .view(&autogen, InputBreakage::of(&autogen), cx.budget)
            .map_err(|e| StepError::new(self.name(), e))?;
        let mut keep = vec![false; messages.len()];
        for i in view.kept() {
            keep[ranges[i].clone()].fill(true);
        }
        let reason = format!("outside autogen's {} window", self.name().trim_start_matches("autogen_"));
        history.retain(|i, _| keep[i], &reason);
        // placeholders, at their place among the kept messages
        let mut at = 0;
        for part in &view.parts {
            match part {
                ViewPart::Keep(r) => at += r.clone().map(|i| ranges[i].len()).sum::<usize>(),
                ViewPart::Placeholder(text) => {
                    let mut message = Message::text(Role::User, text.clone());
                    message.name = Some("System".into());
                    history.insert(at, message, "autogen's skipped-messages placeholder".to_string());
                    at += 1;
                }
            }
        }
        Ok(())
    }
}

/// `autogen_buffered` in configuration (autogen's `BufferedChatCompletionContext`).
pub(crate) const BUFFERED: StepKind = StepKind::built_by("autogen_buffered", &["BufferedChatCompletionContext"], |p, _| {
    Ok(Box::new(AutogenContext::from_params_named("autogen_buffered", p)?))
})
.documented(
    "autogen-core's `BufferedChatCompletionContext`: the last `buffer_size` autogen messages, tool steps it cuts dropped.",
    &[KeyDoc::new("buffer_size", KeyUnit::Count("autogen messages"), "how many to keep (a run of tool results is one)")],
);

/// `autogen_head_and_tail` in configuration (autogen's `HeadAndTailChatCompletionContext`).
pub(crate) const HEAD_AND_TAIL: StepKind =
    StepKind::built_by("autogen_head_and_tail", &["HeadAndTailChatCompletionContext"], |p, _| {
        Ok(Box::new(AutogenContext::from_params_named("autogen_head_and_tail", p)?))
    })
    .documented(
        "autogen-core's `HeadAndTailChatCompletionContext`, with its \"Skipped N messages.\" placeholder.",
        &[
            KeyDoc::new("head_size", KeyUnit::Count("autogen messages"), "how many to keep from the start"),
            KeyDoc::new("tail_size", KeyUnit::Count("autogen messages"), "how many to keep from the end"),
        ],
    );

/// `autogen_token_limited` in configuration (autogen's `TokenLimitedChatCompletionContext`).
pub(crate) const TOKEN_LIMITED: StepKind =
    StepKind::built_by("autogen_token_limited", &["TokenLimitedChatCompletionContext"], |p, _| {
        Ok(Box::new(AutogenContext::from_params_named("autogen_token_limited", p)?))
    })
    .documented(
        "autogen-core's `TokenLimitedChatCompletionContext` with autogen-ext's OpenAI count: removes the middle message until the limit holds.",
        &[
            KeyDoc::new("token_limit", KeyUnit::Tokens, "the limit; none: the call's budget"),
            KeyDoc::new("encoding", KeyUnit::Choice, "the count's encoding: `o200k_base` or `cl100k_base`"),
        ],
    );

impl FromParams for AutogenContext {
    /// Not used directly: the step is built by [`AutogenContext::from_params_named`], which
    /// knows which of the three names it was given. Reads a buffered context.
    fn from_params(p: &mut Params) -> Result<AutogenContext, ConfigError> {
        AutogenContext::from_params_named("autogen_buffered", p)
    }
}

impl AutogenContext {
    /// Reads the step named `name`. Keys: `buffer_size` (buffered; defaults to 10, as
    /// `keep_last`); `head_size`, `tail_size` (head and tail; default 2 and 5, as
    /// `head_and_tail`); `token_limit` (defaults to the call's budget), `encoding`
    /// (`o200k_base`, the default, or `cl100k_base`) (token limited). autogen itself has no
    /// defaults: the Python adapter always passes its arguments.
    pub fn from_params_named(name: &str, p: &mut Params) -> Result<AutogenContext, ConfigError> {
        let policy = match name {
            "autogen_head_and_tail" => AutogenPolicy::HeadAndTail {
                head_size: p.usize_or(&["head_size"], 2)?,
                tail_size: p.usize_or(&["tail_size"], 5)?,
            },
            "autogen_token_limited" => AutogenPolicy::TokenLimited {
                token_limit: p.usize(&["token_limit"])?,
                encoding: match p
                    .choice_or(&["encoding"], &["o200k_base", "cl100k_base"], "o200k_base")?
                    .as_str()
                {
                    "cl100k_base" => OpenAiEncoding::Cl100kBase,
                    _ => OpenAiEncoding::O200kBase,
                },
            },
            _ => AutogenPolicy::Buffered { buffer_size: p.usize_or(&["buffer_size"], 10)? },
        };
        Ok(AutogenContext { policy })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::test_support::{assert_valid, openai, run, texts};
    use serde_json::json;

    fn user(text: &str) -> AutogenMessage {
        AutogenMessage::UserText { source: "user".into(), content: text.into() }
    }
    fn said(text: &str) -> AutogenMessage {
        AutogenMessage::AssistantText { source: "assistant".into(), content: text.into(), thought: None }
    }
    fn calls(id: &str) -> AutogenMessage {
        AutogenMessage::from_value(
            &json!({"role": "assistant", "name": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            "m",
        )
        .unwrap()
    }
    fn results(id: &str) -> AutogenMessage {
        AutogenMessage::from_value(
            &json!({"role": "tool", "results": [{"tool_call_id": id, "name": "f", "content": "r"}]}),
            "m",
        )
        .unwrap()
    }

    fn b(messages: &[AutogenMessage]) -> InputBreakage {
        InputBreakage::of(messages)
    }

    /// u0 a1 c2 r3 a4 u5
    fn history() -> Vec<AutogenMessage> {
        vec![user("u0"), said("a1"), calls("x"), results("x"), said("a4"), user("u5")]
    }

    #[test]
    fn buffered_drops_a_leading_results_message() {
        let h = history();
        assert_eq!(buffered(&h, b(&h), 3).kept(), vec![4, 5]);
        assert_eq!(buffered(&h, b(&h), 4).kept(), vec![2, 3, 4, 5]);
        assert_eq!(buffered(&h, b(&h), 100).kept(), vec![0, 1, 2, 3, 4, 5]);
        assert!(buffered(&[], InputBreakage::default(), 1).is_empty());
    }

    #[test]
    fn head_and_tail_counts_skipped_before_its_drops() {
        let h = history();
        // head [u0 a1 c2] less c2; tail [r3 a4 u5] less r3; skipped = 6 - 3 - 3 = 0: all
        assert_eq!(head_and_tail(&h, b(&h), 3, 3).kept(), (0..6).collect::<Vec<_>>());
        let view = head_and_tail(&h, b(&h), 3, 2);
        assert_eq!(
            view.parts,
            vec![
                ViewPart::Keep(0..2),
                ViewPart::Placeholder("Skipped 1 messages.".into()),
                ViewPart::Keep(4..6)
            ]
        );
        assert_eq!(view.len(), 5);
        let view = head_and_tail(&h, b(&h), 1, 1);
        assert_eq!(
            view.parts,
            vec![
                ViewPart::Keep(0..1),
                ViewPart::Placeholder("Skipped 4 messages.".into()),
                ViewPart::Keep(5..6)
            ]
        );
    }

    #[test]
    fn the_middle_goes_first_and_the_removed_block_stays_contiguous() {
        // the naive loop autogen runs, against ours, for every length and stop point
        for len in 0..40 {
            for stop_at in 0..=len {
                let mut naive: Vec<usize> = (0..len).collect();
                while naive.len() > stop_at {
                    naive.remove(naive.len() / 2);
                }
                let (left, right) = remove_middle::<()>(len, |l, r| Ok(l + (len - r) > stop_at)).unwrap();
                let ours: Vec<usize> = (0..left).chain(right..len).collect();
                assert_eq!(ours, naive, "len {len}, stop at {stop_at}");
            }
        }
    }

    #[test]
    fn token_limited_removes_from_the_middle_and_keeps_steps_whole() {
        let h = history();
        let tokens = [10, 10, 10, 10, 10, 10];
        // everything fits
        assert_eq!(token_limited(&h, b(&h), &tokens, 3, 63).kept(), (0..6).collect::<Vec<_>>());
        // one must go: index 3, the results: autogen keeps the call without them; we drop it
        assert_eq!(token_limited(&h, b(&h), &tokens, 3, 53).kept(), vec![0, 1, 4, 5]);
        // the generic loop agrees with the additive one
        let generic = token_limited_with::<()>(&h, b(&h), |kept| {
            Ok(kept.iter().map(|i| tokens[*i]).sum::<usize>() + 3 > 53)
        })
        .unwrap();
        assert_eq!(generic.kept(), vec![0, 1, 4, 5]);
        // nothing fits
        assert!(token_limited(&h, b(&h), &tokens, 3, 5).is_empty());
    }

    #[test]
    fn what_was_broken_in_the_input_stays_as_autogen_leaves_it() {
        // a dangling call (no results) is kept; an orphan results message at the start goes
        let h = vec![user("u"), calls("x")];
        assert_eq!(buffered(&h, b(&h), 5).kept(), vec![0, 1]);
        let h = vec![results("y"), user("u"), said("a")];
        assert_eq!(token_limited(&h, b(&h), &[5, 5, 5], 3, 100).kept(), vec![1, 2]);
        assert_eq!(head_and_tail(&h, b(&h), 1, 1).kept(), vec![0, 2]);
    }

    #[test]
    fn a_step_split_across_the_removed_block_goes_whole() {
        // c1 answered by two results messages; removing r2 (the middle) splits the step
        let h = vec![user("u"), calls("x"), results("x"), results("x"), said("a")];
        assert_eq!(b(&h), InputBreakage::default());
        let tokens = [10, 10, 10, 10, 10];
        assert_eq!(token_limited(&h, b(&h), &tokens, 0, 40).kept(), vec![0, 4]);
        // the input already has a dangling call: autogen's cut stands
        let mut broken = h.clone();
        broken.push(calls("y"));
        let tokens = [10, 10, 10, 10, 10, 10];
        assert!(b(&broken).unanswered_call);
        assert_eq!(token_limited(&broken, b(&broken), &tokens, 0, 50).kept(), vec![0, 1, 2, 4, 5]);
    }

    #[test]
    fn input_breakage_sees_dangling_calls_and_orphans() {
        assert_eq!(b(&history()), InputBreakage::default());
        assert!(b(&[user("u"), calls("x")]).unanswered_call);
        assert!(b(&[results("x"), user("u")]).orphan_result);
        let both = InputBreakage { unanswered_call: true, orphan_result: true };
        assert_eq!(b(&[calls("x"), results("y")]), both);
    }

    #[test]
    fn as_a_pipeline_step_over_openai_messages() {
        let input = openai(
            r#"[{"role": "system", "content": "sys"},
                {"role": "user", "name": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "A"},
                {"role": "tool", "tool_call_id": "b", "content": "B"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "thanks"}]"#,
        );
        // autogen messages: sys user calls results done thanks (6); the last 3 start with the
        // results message, which goes
        let step = AutogenContext { policy: AutogenPolicy::Buffered { buffer_size: 3 } };
        let out = run(&step, &input);
        assert_eq!(texts(&out), vec!["assistant: done", "user: thanks"]);
        let step = AutogenContext { policy: AutogenPolicy::HeadAndTail { head_size: 2, tail_size: 2 } };
        let out = run(&step, &input);
        assert_eq!(
            texts(&out),
            vec!["system: sys", "user: go", "user: Skipped 2 messages.", "assistant: done", "user: thanks"]
        );
        assert_valid(&out);
        let step = AutogenContext {
            policy: AutogenPolicy::TokenLimited {
                token_limit: Some(30),
                encoding: OpenAiEncoding::O200kBase,
            },
        };
        let out = run(&step, &input);
        assert_valid(&out);
        assert!(out.len() < input.len());
    }

    #[test]
    fn reads_and_checks_its_configuration() {
        let read = |name: &str, v: serde_json::Value| {
            let mut p = Params::new(v.as_object().unwrap().clone());
            let step = AutogenContext::from_params_named(name, &mut p)?;
            p.finish()?;
            step.check()?;
            Ok::<_, ConfigError>(step)
        };
        assert_eq!(
            read("autogen_head_and_tail", json!({"head_size": 1, "tail_size": 2})).unwrap().policy,
            AutogenPolicy::HeadAndTail { head_size: 1, tail_size: 2 }
        );
        assert_eq!(read("autogen_buffered", json!({"buffer_size": 0})).unwrap_err().key, "buffer_size");
        assert_eq!(
            read("autogen_buffered", json!({})).unwrap().policy,
            AutogenPolicy::Buffered { buffer_size: 10 }
        );
        assert_eq!(
            read("autogen_token_limited", json!({"token_limit": 5, "encoding": "cl100k_base"}))
                .unwrap()
                .policy,
            AutogenPolicy::TokenLimited { token_limit: Some(5), encoding: OpenAiEncoding::Cl100kBase }
        );
        assert_eq!(read("autogen_token_limited", json!({"token_limit": 0})).unwrap_err().key, "token_limit");
    }
}
