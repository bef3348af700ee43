//! autogen-core 0.7.5's chat completion contexts (buffered, head and tail, token limited),
//! its message model, and autogen-ext's OpenAI client count they lean on.

pub mod context;
pub mod count;
pub mod message;

pub use context::{
    autogen_skipped_text, buffered, head_and_tail, token_limited, token_limited_with, AutogenContext,
    AutogenPolicy, AutogenView, InputBreakage, ViewPart,
};
pub use count::{
    vision_tokens, AutogenCountError, AutogenOpenAiCounter, AUTOGEN_REPLY_PRIMING, AUTOGEN_TOKENS_PER_MESSAGE,
};
pub use message::{AutogenCall, AutogenFormatError, AutogenMessage, AutogenPart, AutogenResult};
