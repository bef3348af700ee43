//! tightfit fits LLM conversation histories into a model's context window.
//!
//! It reads OpenAI and Anthropic conversations losslessly into one message model, groups
//! them into units that keep tool calls with their results, and counts tokens exactly the way
//! the target model's provider does (tokenizer plus framing: per-message overhead, tool calls,
//! tool schemas, images).
//!
//! ```
//! use tightfit::format::{parse_str, FormatHint};
//! use tightfit::models::Registry;
//! use tightfit::tokens::ChatCounter;
//!
//! let conversation = parse_str(
//!     r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]"#,
//!     FormatHint::Auto,
//! )?;
//! let model = Registry::embedded().lookup("gpt-4o")?;
//! let counter = ChatCounter::for_family(model.tokenizer);
//! let count = counter.count(&conversation.messages, conversation.tools.as_deref());
//! assert_eq!(count.per_message, vec![7, 6]);
//! assert_eq!(count.total, 16); // 3 more to prime the reply
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod calls;
#[cfg(feature = "compat")]
pub mod compat;
pub mod config;
pub mod fit;
pub mod format;
pub mod history;
pub(crate) mod history_message;
#[cfg(feature = "inspect")]
pub mod inspect;
pub mod message;
pub mod models;
pub mod offload;
mod params;
pub mod pipeline;
pub mod plan;
pub mod presets;
pub mod pricing;
mod record;
pub mod repair;
pub mod report;
mod result_text;
pub mod session;
mod shape;
pub mod simulate;
pub mod steps;
pub mod store;
pub mod summary;
pub mod text;
pub mod tokens;
pub mod units;
pub mod validate;

pub use fit::{fit, FitError, Fitted, Fitter, RunOptions, Services, Target};
pub use format::{Conversation, Format, FormatError};
pub use message::{Message, Part, Role};
pub use pipeline::Pipeline;
pub use plan::Plan;
pub use report::Report;
pub use units::{units, Unit, UnitKind};
pub use validate::{validate, Rule, Violation};
