//! The peers, emulated: what AG2, autogen-core, LangChain and swarms return, result for
//! result, so that the Python package's drop-ins (`tightfit.compat.*`) give their users the
//! answers they had, and a valid history where the peer's answer would be rejected.
//!
//! This is a room of its own, behind the `compat` Cargo feature (the Python package turns it
//! on; the CLI does too, for configurations that name a peer's step): emulation brings the
//! peers' own message models (autogen's one-message-per-step results, LangChain's message
//! classes) and Python's semantics (`repr()` lengths, `tiktoken`'s cuts), which tightfit's own
//! steps and counters never need. The dependencies go one way: `compat` uses the engine
//! (`history`, `steps`, `tokens`, the call index); nothing in the engine uses `compat`.
//!
//! - [`ag2`]: `MessageHistoryLimiter` and `MessageTokenLimiter` (ag2 0.14);
//! - [`autogen`]: autogen-core 0.7.5's chat completion contexts and autogen-ext's OpenAI count;
//! - [`langchain`]: langchain-core 1.7.2's `trim_messages` and `count_tokens_approximately`;
//! - [`swarms`]: swarms 16.0.3's message limit arithmetic;
//! - [`python`]: what several peers inherit from Python (`repr()`/`json.dumps` lengths,
//!   `tiktoken`'s model names and cuts).

pub mod ag2;
pub mod autogen;
pub mod langchain;
pub mod python;
pub mod swarms;

use crate::steps::StepKind;

/// The peers' steps that configuration can name (`type: ag2_token_limiter`), after tightfit's
/// own [`CATALOGUE`](crate::steps::CATALOGUE).
pub const STEPS: &[StepKind] = &[
    langchain::trim::KIND,
    autogen::context::BUFFERED,
    autogen::context::HEAD_AND_TAIL,
    autogen::context::TOKEN_LIMITED,
    ag2::history_limiter::KIND,
    ag2::token_limiter::KIND,
];
