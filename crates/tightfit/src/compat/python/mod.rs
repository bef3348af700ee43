//! What the peers inherit from Python, measured without Python: the lengths `repr()` and
//! `json.dumps()` write (LangChain's approximate counter), and `tiktoken`'s model names,
//! refusals and cuts (AG2's token limiter), remembered across calls by [`TiktokenMemo`].

pub mod text;
pub mod tiktoken;
mod tiktoken_memo;

pub use tiktoken_memo::TiktokenMemo;
