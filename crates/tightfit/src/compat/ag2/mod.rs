//! AG2's transforms (ag2 0.14): `MessageHistoryLimiter` and `MessageTokenLimiter`, with the
//! repair that keeps their cuts from splitting a tool step.

pub mod history_limiter;
pub mod select;
pub mod token_limiter;

pub use history_limiter::Ag2HistoryLimiter;
pub use token_limiter::{
    ag2_token_limit, string_tokens, text_tokens, Ag2Error, Ag2Kept, Ag2TokenLimiter, AG2_DEFAULT_MODEL,
};
