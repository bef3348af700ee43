//! Pipelines from configuration: YAML, TOML or JSON, with llmling's names as aliases.

mod params;

pub use params::{FromParams, Params};
