//! LangChain (langchain-core 1.7.2): `trim_messages` and the approximate counter
//! `count_tokens_approximately`, on LangChain's view of a message.

pub mod approximate;
pub mod trim;

pub use approximate::{Approximate, LangchainContent, LangchainMessage, Measured};
pub use trim::{
    item_message, Item, Kept, LangchainTrim, Lines, ListCounter, MessageCount, ModelCount, PartialContent,
    Source, Strategy, TextSplitter, TrimCounter,
};
