//! Named pipelines: the default ladder of `fit`, and presets for common needs.
//!
//! | name | steps |
//! | --- | --- |
//! | `cache` (the default of a [`Session`](crate::session::Session)) | lossless steps first, then one [`Compact`] cut that keeps a fixed head and the newest units, with a trace between; truncation and `middle_out` as a last resort |
//! | `middle-out` (the default of `fit`) | the ladder: lossless steps first, then clearing and cutting old tool results oldest first only until the history fits, ending in `middle_out` |
//! | `minimal` | llmling's: drop thinking, drop retry prompts, tool outputs to 500 chars, last 5 pairs; then `middle_out` while still over budget |
//! | `balanced` | llmling's: drop thinking, tool outputs to 2,000 chars, texts to 5,000 chars, last 15 pairs; then `middle_out` while still over budget |
//! | `summarizing` | llmling's: drop thinking, tool outputs to 1,000 chars, summarize above 20 messages keeping 8; then `middle_out` while still over budget |
//! | `swarms` | swarms' default: middle-out keeping system messages and the last 2 messages |
//!
//! Every preset keeps its promise: it fits the budget, or `fit` fails with `CannotFit` because
//! what must be kept (system prompt, newest user turn, tools) is over it. llmling's presets
//! are run as llmling runs them; a `middle_out` rung after them runs only when their fixed
//! lengths and counts leave the history over the budget.

use crate::pipeline::Pipeline;
use crate::steps::{
    ClearToolResults, Compact, Condition, ConfigError, Dedupe, DropEmpty, DropRetryPrompts, DropThinking,
    KeepLast, MiddleOut, Step, Summarize, TruncateText, TruncateToolResults, TRACE_PREFIX,
};

/// The names [`by_name`] knows.
pub const NAMES: &[&str] = &["cache", "middle-out", "minimal", "balanced", "summarizing", "swarms"];

/// The default ladder of `fit`, lossless steps first, each rung run only while the history
/// is still over budget: drop_empty → dedupe → drop_thinking (not the current tool turn) →
/// clear_tool_results (oldest first, never the last 3, only until the history fits) →
/// truncate_tool_results (2,000 chars, head and tail, oldest first until it fits, the newest
/// result left whole) → middle_out. Nothing goes that the budget does not need; cut lengths
/// are fixed, not derived from the remaining budget, so a result cut once is cut the same way
/// next turn.
pub fn ladder() -> Pipeline {
    let clear = ClearToolResults { until_fits: true, ..ClearToolResults::default() };
    over_budget_rungs(clear, true, MiddleOut::default())
}

/// The rungs the ladder and the `cache` preset share, each run only while still over budget:
/// the lossless ones, then `cut` (how each makes room: clearing results, or one compaction),
/// the fixed-length truncation of tool results (oldest first until it fits, or all of them
/// at once: a session's compaction makes room for the turns to come), and `last_resort`.
fn over_budget_rungs(
    cut: impl Step + 'static,
    truncate_until_fits: bool,
    last_resort: MiddleOut,
) -> Pipeline {
    let over = || Condition::OverBudget;
    Pipeline::builder()
        .when(over(), DropEmpty::default())
        .when(over(), Dedupe::default())
        .when(over(), DropThinking::default())
        .when(over(), cut)
        .when(
            over(),
            TruncateToolResults {
                keep: crate::text::KeepPart::HeadAndTail,
                keep_last: 1,
                until_fits: truncate_until_fits,
                ..TruncateToolResults::chars(2000)
            },
        )
        .when(over(), last_resort)
        .build()
        .expect("the ladder's configuration is valid")
}

/// The `cache` preset, a session's default compaction: each rung only while over the budget
/// (a session's low-water mark), drop_empty → dedupe → drop_thinking (not the current tool
/// turn) → compact (a fixed head, the newest units from a grid point, a trace between) →
/// truncate_tool_results (2,000 chars, head and tail, the newest left whole) → middle_out (with
/// a placeholder where it removed messages).
/// The last two run only when the protected units alone are over the mark.
pub fn cache() -> Pipeline {
    // the last resort (a turn too big for any cut of whole old units) leaves a trace too
    let last_resort = MiddleOut {
        placeholder: Some(format!(
            "{TRACE_PREFIX}earlier messages removed here to fit the context window: {{skipped}}]"
        )),
        ..MiddleOut::default()
    };
    // a compaction makes room for the turns to come: once it must cut results, it cuts every
    // old long one outside the compaction's head (which it pins). It rarely must: the cut
    // keeps room for its trace, so only protected turns too big for the mark get here (on the
    // shared agent stream at 32k, cutting all at once or only until the history fits now
    // reuse the same 98.5%)
    over_budget_rungs(Compact::default(), false, last_resort)
}

/// The preset called `name`.
pub fn by_name(name: &str) -> Result<Pipeline, ConfigError> {
    let builder = match name {
        "middle-out" | "middle_out" | "default" => return Ok(ladder()),
        "cache" => return Ok(cache()),
        "minimal" => Pipeline::builder()
            .step(DropThinking::default())
            .step(DropRetryPrompts::default())
            .step(TruncateToolResults::chars(500))
            .step(KeepLast::pairs(5))
            .when(Condition::OverBudget, MiddleOut::default()),
        "balanced" => Pipeline::builder()
            .step(DropThinking::default())
            .step(TruncateToolResults::chars(2000))
            .step(TruncateText::chars(5000))
            .step(KeepLast::pairs(15))
            .when(Condition::OverBudget, MiddleOut::default()),
        "summarizing" => Pipeline::builder()
            .step(DropThinking::default())
            .step(TruncateToolResults::chars(1000))
            .step(Summarize { threshold: 20, keep_recent: 8, ..Summarize::default() })
            .when(Condition::OverBudget, MiddleOut::default()),
        "swarms" => Pipeline::builder().step(MiddleOut { keep_first: 0, ..MiddleOut::default() }),
        other => {
            return Err(ConfigError::new(
                "preset",
                format!("unknown preset {other:?} (known: {})", NAMES.join(", ")),
            ))
        }
    };
    builder.build()
}
