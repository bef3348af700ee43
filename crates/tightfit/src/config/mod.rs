//! Pipelines from configuration: YAML, TOML or JSON.
//!
//! ```yaml
//! steps:
//!   - type: drop_thinking
//!   - type: truncate_tool_results
//!     max_length: 1000
//!   - type: keep_last
//!     count: 10
//!     when: {messages_above: 20}
//! ```
//!
//! llmling's shape loads as is: a top-level `compaction:` map with `steps:` or `preset:`, its
//! step names (`filter_thinking`, `truncate_tool_outputs`, `keep_first_last`,
//! `when_count_exceeds`, ...) as aliases of ours. A step may carry a `when:` guard
//! (`tokens_above`, `messages_above`, `window_fraction_above`, `over_budget`; several keys
//! must all hold). An unknown key or step is an error naming it (`steps[1].max_lenght:
//! unknown key; did you mean "max_length"?`).

mod params;

use serde_json::{Map, Value};

pub use params::{FromParams, Params};

use crate::pipeline::Pipeline;
use crate::presets;
use crate::steps::*;

/// A configuration file's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// YAML (a superset of JSON).
    Yaml,
    /// TOML.
    Toml,
    /// JSON.
    Json,
}

impl Syntax {
    /// The syntax a file name's extension says (`.yaml`/`.yml`, `.toml`, `.json`); YAML
    /// otherwise, since it also reads JSON.
    pub fn from_path(path: &std::path::Path) -> Syntax {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("toml") => Syntax::Toml,
            Some("json") => Syntax::Json,
            _ => Syntax::Yaml,
        }
    }
}

/// Reads a pipeline from configuration text.
pub fn from_str(text: &str, syntax: Syntax) -> Result<Pipeline, ConfigError> {
    let value: Value = match syntax {
        Syntax::Yaml => {
            serde_norway::from_str(text).map_err(|e| ConfigError::new("", format!("invalid YAML: {e}")))?
        }
        Syntax::Json => {
            serde_json::from_str(text).map_err(|e| ConfigError::new("", format!("invalid JSON: {e}")))?
        }
        Syntax::Toml => {
            let table: toml::Table =
                toml::from_str(text).map_err(|e| ConfigError::new("", format!("invalid TOML: {e}")))?;
            serde_json::to_value(table).map_err(|e| ConfigError::new("", format!("invalid TOML: {e}")))?
        }
    };
    from_value(value)
}

/// Reads a pipeline from a configuration file (syntax from its extension).
pub fn from_path(path: &std::path::Path) -> Result<Pipeline, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new("", format!("cannot read {}: {e}", path.display())))?;
    from_str(&text, Syntax::from_path(path))
}

/// Reads a pipeline from a configuration value.
pub fn from_value(value: Value) -> Result<Pipeline, ConfigError> {
    let Value::Object(mut top) = value else {
        return Err(ConfigError::new("", "expected a map with `steps` or `preset`"));
    };
    let mut prefix = String::new();
    if let Some(inner) = top.remove("compaction") {
        if let Some(other) = top.keys().next() {
            return Err(ConfigError::new(other.clone(), "unknown key beside `compaction`"));
        }
        let Value::Object(inner) = inner else {
            return Err(ConfigError::new("compaction", "expected a map with `steps` or `preset`"));
        };
        top = inner;
        prefix = "compaction.".into();
    }
    let preset = top.remove("preset");
    let steps = top.remove("steps");
    if let Some(other) = top.keys().next() {
        return Err(ConfigError::new(
            format!("{prefix}{other}"),
            "unknown key (expected `steps` or `preset`)",
        ));
    }
    match (preset, steps) {
        (Some(Value::String(name)), _) => {
            presets::by_name(&name).map_err(|e| ConfigError::new(format!("{prefix}preset"), e.reason))
        }
        (Some(_), _) => Err(ConfigError::new(format!("{prefix}preset"), "expected a preset name")),
        (None, Some(Value::Array(items))) => {
            let mut builder = Pipeline::builder();
            for (i, item) in items.into_iter().enumerate() {
                let key = format!("{prefix}steps[{i}]");
                builder = builder.boxed(step_from_value(item).map_err(|e| e.within(&key))?);
            }
            builder.build().map_err(|e| {
                if prefix.is_empty() {
                    e
                } else {
                    e.within(prefix.trim_end_matches('.'))
                }
            })
        }
        (None, Some(_)) => Err(ConfigError::new(format!("{prefix}steps"), "expected a list of steps")),
        (None, None) => Err(ConfigError::new(prefix.trim_end_matches('.'), "expected `steps` or `preset`")),
    }
}

/// Builds one step from its map: `type`, an optional `when` guard, and the
/// step's own keys.
pub fn step_from_value(value: Value) -> Result<Box<dyn Step>, ConfigError> {
    let Value::Object(map) = value else {
        return Err(ConfigError::new("", "expected a map with a `type`"));
    };
    let mut params = Params::new(map);
    let name = params
        .string(&["type"])?
        .ok_or_else(|| ConfigError::new("type", "missing: every step needs a `type`"))?;
    let guard = match params.value(&["when"]) {
        Some(v) => Some(condition(v).map_err(|e| e.within("when"))?),
        None => None,
    };
    let step = build(&name, &mut params)?;
    params.finish()?;
    let step = match guard {
        Some(condition) => Box::new(When { condition, step }) as Box<dyn Step>,
        None => step,
    };
    step.check()?;
    Ok(step)
}

fn from<S: FromParams + Step + 'static>(p: &mut Params) -> Result<Box<dyn Step>, ConfigError> {
    Ok(Box::new(S::from_params(p)?))
}

/// The step names configuration accepts: ours first, then the peers' aliases.
pub const STEP_NAMES: &[(&str, &[&str])] = &[
    ("drop_thinking", &["filter_thinking"]),
    ("drop_binary", &["filter_binary", "filter_binary_content"]),
    ("drop_retry_prompts", &["filter_retry_prompts"]),
    ("drop_tool_calls", &["filter_tools", "filter_tool_calls"]),
    ("drop_empty", &["filter_empty", "filter_empty_messages"]),
    ("clear_tool_results", &["clear_tool_uses"]),
    ("dedupe", &["deduplicate"]),
    ("truncate_tool_results", &["truncate_tool_outputs"]),
    ("truncate_text", &["truncate_text_parts"]),
    ("token_budget", &["token_limited", "message_token_limiter"]),
    ("langchain_trim", &["trim_messages"]),
    ("content_name", &["text_message_content_name"]),
    ("keep_last", &["keep_last_messages", "buffered"]),
    ("keep_first", &["keep_first_messages"]),
    ("head_and_tail", &["keep_first_last", "keep_first_and_last", "head_tail"]),
    ("middle_out", &["middle-out"]),
    ("task_truncation", &["truncation"]),
    ("summarize", &[]),
    ("when", &["when_count_exceeds", "when_message_count_exceeds", "conditional"]),
    ("autogen_buffered", &["BufferedChatCompletionContext"]),
    ("autogen_head_and_tail", &["HeadAndTailChatCompletionContext"]),
    ("autogen_token_limited", &["TokenLimitedChatCompletionContext"]),
    ("ag2_history_limiter", &[]),
    ("ag2_token_limiter", &[]),
];

fn canonical(name: &str) -> Option<&'static str> {
    STEP_NAMES.iter().find(|(ours, aliases)| *ours == name || aliases.contains(&name)).map(|(ours, _)| *ours)
}

fn build(name: &str, p: &mut Params) -> Result<Box<dyn Step>, ConfigError> {
    let Some(canonical) = canonical(name) else {
        let known: Vec<&str> =
            STEP_NAMES.iter().flat_map(|(o, a)| std::iter::once(*o).chain(a.iter().copied())).collect();
        let suggestion = known
            .iter()
            .map(|k| (strsim::jaro_winkler(k, name), *k))
            .filter(|(s, _)| *s > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| format!("; did you mean {k:?}?"))
            .unwrap_or_default();
        return Err(ConfigError::new("type", format!("unknown step {name:?}{suggestion}")));
    };
    match canonical {
        "drop_thinking" => from::<DropThinking>(p),
        "drop_binary" => from::<DropBinary>(p),
        "drop_retry_prompts" => from::<DropRetryPrompts>(p),
        "drop_tool_calls" => from::<DropToolCalls>(p),
        "drop_empty" => from::<DropEmpty>(p),
        "clear_tool_results" => from::<ClearToolResults>(p),
        "dedupe" => from::<Dedupe>(p),
        "truncate_tool_results" => from::<TruncateToolResults>(p),
        "truncate_text" => from::<TruncateText>(p),
        "token_budget" => from::<TokenBudget>(p),
        "langchain_trim" => from::<LangchainTrim>(p),
        "content_name" => from::<ContentName>(p),
        "keep_last" => from::<KeepLast>(p),
        "keep_first" => from::<KeepFirst>(p),
        "head_and_tail" => from::<HeadAndTail>(p),
        "task_truncation" => from::<TaskTruncation>(p),
        "middle_out" => from::<MiddleOut>(p),
        "summarize" => from::<Summarize>(p),
        "ag2_history_limiter" => from::<Ag2HistoryLimiter>(p),
        "ag2_token_limiter" => from::<Ag2TokenLimiter>(p),
        "when" => {
            // llmling: `threshold` counts messages; ours: any condition key
            let mut map = Map::new();
            for key in ["tokens_above", "messages_above", "window_fraction_above", "over_budget"] {
                if let Some(v) = p.value(&[key]) {
                    map.insert(key.to_string(), v);
                }
            }
            if let Some(threshold) = p.usize(&["threshold"])? {
                map.insert("messages_above".into(), Value::from(threshold));
            } else if map.is_empty() {
                map.insert("messages_above".into(), Value::from(20));
            }
            let condition = condition(Value::Object(map))?;
            let inner =
                p.value(&["step"]).ok_or_else(|| ConfigError::new("step", "missing: the step to guard"))?;
            let step = step_from_value(inner).map_err(|e| e.within("step"))?;
            Ok(Box::new(When { condition, step }))
        }
        "autogen_buffered" | "autogen_head_and_tail" | "autogen_token_limited" => {
            Ok(Box::new(AutogenContext::from_params_named(canonical, p)?))
        }
        other => Err(ConfigError::new("type", format!("step {other:?} is not available"))),
    }
}

/// A guard from its map; several keys must all hold.
fn condition(value: Value) -> Result<Condition, ConfigError> {
    let Value::Object(map) = value else {
        return Err(ConfigError::new("", "expected a map such as {tokens_above: 100000}"));
    };
    let mut p = Params::new(map);
    let mut all = Vec::new();
    if let Some(n) = p.usize(&["tokens_above"])? {
        all.push(Condition::TokensAbove(n));
    }
    if let Some(n) = p.usize(&["messages_above"])? {
        all.push(Condition::MessagesAbove(n));
    }
    if let Some(f) = p.f64(&["window_fraction_above", "window_fraction"])? {
        all.push(Condition::WindowFractionAbove(f));
    }
    if p.bool(&["over_budget"])? == Some(true) {
        all.push(Condition::OverBudget);
    }
    p.finish()?;
    let condition =
        match all.len() {
            0 => return Err(ConfigError::new(
                "",
                "a condition needs one of tokens_above, messages_above, window_fraction_above, over_budget",
            )),
            1 => all.pop().expect("one condition"),
            _ => Condition::All(all),
        };
    condition.check()?;
    Ok(condition)
}
