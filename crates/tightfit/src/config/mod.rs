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

use serde_json::Value;

mod table;
mod written;

pub use crate::params::{AskedKey, FromParams, Params};
pub use table::{step_entry, step_table, undocumented_keys, KeyEntry, StepEntry};
pub use written::{step_to_value, to_string, to_value};

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
        Some(v) => Some(Condition::from_value(v).map_err(|e| e.within("when"))?),
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

/// Every step configuration can name: tightfit's own ([`CATALOGUE`]), then the peers' (feature
/// `compat`).
pub fn step_kinds() -> impl Iterator<Item = &'static StepKind> {
    let peers: &[StepKind] = {
        #[cfg(feature = "compat")]
        {
            crate::compat::STEPS
        }
        #[cfg(not(feature = "compat"))]
        {
            &[]
        }
    };
    CATALOGUE.iter().chain(peers)
}

/// The keys configuration accepts for a step (`count`, `measure`, `keep_system`, ...; not
/// `type` or `when`), by their first name: what its builder asks for when given none. The
/// Python package's step classes are checked against these, so a key added to a step and not
/// to its class fails a test. [`step_table`] gives their defaults, units and meanings too.
pub fn step_keys(kind: &StepKind) -> Vec<&'static str> {
    table::asked_keys(kind).iter().map(|k| k.name).collect()
}

/// The peers' step names, known without the `compat` feature so that a configuration naming
/// one gets a clear error instead of "unknown step".
const PEER_STEP_NAMES: &[&str] = &[
    "langchain_trim",
    "trim_messages",
    "autogen_buffered",
    "autogen_head_and_tail",
    "autogen_token_limited",
    "ag2_history_limiter",
    "ag2_token_limiter",
];

fn build(name: &str, p: &mut Params) -> Result<Box<dyn Step>, ConfigError> {
    if let Some(kind) = step_kinds().find(|k| k.answers_to(name)) {
        return (kind.build)(p, &step_from_value);
    }
    if PEER_STEP_NAMES.contains(&name) {
        return Err(ConfigError::new(
            "type",
            format!(
                "step {name:?} emulates a peer library and needs tightfit built with the `compat` feature"
            ),
        ));
    }
    let suggestion = step_kinds()
        .flat_map(|k| std::iter::once(k.name).chain(k.aliases.iter().copied()))
        .map(|k| (strsim::jaro_winkler(k, name), k))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!("; did you mean {k:?}?"))
        .unwrap_or_default();
    Err(ConfigError::new("type", format!("unknown step {name:?}{suggestion}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_alias_names_one_step() {
        let mut seen = std::collections::HashSet::new();
        for kind in step_kinds() {
            for name in std::iter::once(&kind.name).chain(kind.aliases) {
                assert!(seen.insert(*name), "{name:?} names two steps");
            }
        }
    }

    #[test]
    fn a_step_built_from_its_kind_reports_the_kind_s_name() {
        for kind in step_kinds() {
            let value = if kind.name == "when" {
                serde_json::json!({"type": kind.name, "step": {"type": "keep_last"}})
            } else {
                serde_json::json!({"type": kind.name})
            };
            let step = step_from_value(value).unwrap_or_else(|e| panic!("{}: {e}", kind.name));
            // a guard reports as the step it guards
            let expected = if kind.name == "when" { "keep_last" } else { kind.name };
            assert_eq!(step.name(), expected);
        }
    }

    #[test]
    fn a_step_s_keys_are_what_its_builder_reads() {
        let keep_last = step_kinds().find(|k| k.name == "keep_last").unwrap();
        let keys = step_keys(keep_last);
        for key in ["count", "measure", "keep_system", "keep_newest_user_turn", "keep_first_message"] {
            assert!(keys.contains(&key), "{key} missing from {keys:?}");
        }
        assert!(!keys.contains(&"preserve_system_messages"), "an alias is not a key of its own: {keys:?}");
        let when = step_kinds().find(|k| k.name == "when").unwrap();
        assert_eq!(
            step_keys(when),
            ["tokens_above", "messages_above", "window_fraction_above", "over_budget", "threshold", "step"]
        );
    }

    #[cfg(not(feature = "compat"))]
    #[test]
    fn a_peer_step_without_the_compat_feature_says_what_is_missing() {
        let err = step_from_value(serde_json::json!({"type": "ag2_token_limiter"})).unwrap_err();
        assert!(err.reason.contains("`compat` feature"), "{err}");
    }
}
