//! The report of a run: counts before and after (the fields of swarms' `TransformResult`),
//! one log line per step that changed something (AG2's `get_logs`), and the repairs made to
//! a broken input.

use serde::{Deserialize, Serialize};

use crate::offload::Offloaded;

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepLog {
    /// The step.
    pub step: String,
    /// Messages before it ran.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
    /// Tokens before it ran (the whole request).
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// The input indices of the messages it removed, in order.
    #[serde(default)]
    pub removed: Vec<usize>,
    /// The input indices of the messages it changed (cut, replaced, rewrote), in order.
    #[serde(default)]
    pub changed: Vec<usize>,
    /// What its numbers do not say: a summarizer that failed and the extractive summary that
    /// stood in, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl StepLog {
    pub(crate) fn new(
        step: &str,
        messages_before: usize,
        messages_after: usize,
        tokens_before: usize,
        tokens_after: usize,
    ) -> StepLog {
        StepLog {
            step: step.to_string(),
            messages_before,
            messages_after,
            tokens_before,
            tokens_after,
            removed: Vec::new(),
            changed: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The log line: `keep_last: 40 -> 12 messages, 9,210 -> 2,004 tokens`, and the step's
    /// notes after it (`; ...`).
    pub fn line(&self) -> String {
        let mut line = format!(
            "{}: {} -> {} messages, {} -> {} tokens",
            self.step, self.messages_before, self.messages_after, self.tokens_before, self.tokens_after
        );
        for note in &self.notes {
            line.push_str("; ");
            line.push_str(note);
        }
        line
    }
}

/// What a run did, in numbers and lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// Tokens of the request before (messages, tool schemas, priming).
    pub original_token_count: usize,
    /// Tokens after.
    pub compressed_token_count: usize,
    /// Messages before.
    pub original_message_count: usize,
    /// Messages after.
    pub compressed_message_count: usize,
    /// Tokens after divided by tokens before (1.0 when nothing changed or the input was empty).
    pub compression_ratio: f64,
    /// Whether the output differs from the input.
    pub was_compressed: bool,
    /// The budget the run fitted to, if it had one.
    pub budget: Option<usize>,
    /// The tokenizer that counted (`o200k_base`, `claude-estimate`).
    pub counter: String,
    /// One entry per step that changed something, in order.
    pub steps: Vec<StepLog>,
    /// What the repair pass fixed in a broken input, one line each.
    pub repairs: Vec<String>,
    /// For a [`Session`](crate::session::Session)'s fit: the conversation, its epoch, and
    /// whether this call compacted. `None` for a stateless fit.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub session: Option<SessionInfo>,
    /// What was offloaded, one entry per handle (empty unless the run was lent a store).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub offloaded: Vec<Offloaded>,
}

/// What a session did on one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The conversation's key in the session and its store.
    pub key: String,
    /// The epoch the output belongs to: 0 until the first compaction, one more at each.
    pub epoch: u64,
    /// Whether this call compacted (started a new epoch).
    pub compacted: bool,
    /// The session's policy.
    pub policy: String,
}

/// Tokens after over tokens before, as a report gives it: 1.0 for an empty input.
pub(crate) fn compression_ratio(before: usize, after: usize) -> f64 {
    if before == 0 {
        1.0
    } else {
        after as f64 / before as f64
    }
}

impl Report {
    /// The report with `messages` more input messages (holding `tokens` tokens) that every
    /// step passed untouched: in the counts before and after, of the run and of each step.
    /// (A session extending its previous turn with the messages added since.)
    pub(crate) fn extend_as_it_came(&mut self, messages: usize, tokens: usize) {
        self.original_token_count += tokens;
        self.compressed_token_count += tokens;
        self.original_message_count += messages;
        self.compressed_message_count += messages;
        self.compression_ratio = compression_ratio(self.original_token_count, self.compressed_token_count);
        for step in &mut self.steps {
            step.messages_before += messages;
            step.messages_after += messages;
            step.tokens_before += tokens;
            step.tokens_after += tokens;
        }
    }

    /// The log lines: one per repair, one per step that changed something, one per handle.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.repairs.iter().map(|r| format!("repair: {r}")).collect();
        if let Some(s) = &self.session {
            let what = if s.compacted { "compacted, new epoch" } else { "replayed epoch" };
            lines.push(format!("session {} ({}): {what} {}", s.key, s.policy, s.epoch));
        }
        lines.extend(self.steps.iter().map(StepLog::line));
        lines.extend(self.offloaded.iter().map(Offloaded::line));
        lines
    }

    /// A one-line summary: `4,210 -> 1,980 tokens (0.47), 52 -> 17 messages`.
    pub fn summary(&self) -> String {
        format!(
            "{} -> {} tokens ({:.2}), {} -> {} messages{}",
            self.original_token_count,
            self.compressed_token_count,
            self.compression_ratio,
            self.original_message_count,
            self.compressed_message_count,
            self.budget.map(|b| format!(", budget {b}")).unwrap_or_default()
        )
    }
}
