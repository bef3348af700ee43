//! The table of every step configuration can name: what it does, and each key with its
//! aliases, default, unit and meaning.
//!
//! The keys, aliases and defaults are not written down anywhere: they come from running each
//! step's builder on an empty map, which records what it asks for and the default it applies
//! ([`Params::asked`]). Units and meanings come from the step's [`KeyDoc`]s, which a test
//! holds to the same keys. So the documentation generated from this table (the Python
//! package's README, its step classes) cannot disagree with the code.

use serde_json::Value;

use crate::params::{ConfigError, Params};
use crate::steps::{KeyDoc, KeyUnit, StepKind};

/// One step, as its documentation lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEntry {
    /// Its name in configuration (`keep_last`).
    pub name: &'static str,
    /// Other names configuration accepts for it.
    pub aliases: &'static [&'static str],
    /// What it does, in a sentence.
    pub summary: &'static str,
    /// Its keys, in the order its builder reads them (`type` and the `when:` guard, which every
    /// step takes, not included).
    pub keys: Vec<KeyEntry>,
}

/// One key of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyEntry {
    /// The key's name.
    pub name: &'static str,
    /// Other names the step accepts for it (the peers').
    pub aliases: Vec<&'static str>,
    /// What the step uses when the key is absent; `None` when it leaves the setting unset
    /// (the meaning says what happens then: the call's budget, no limit, ...).
    pub default: Option<Value>,
    /// What it counts in.
    pub unit: KeyUnit,
    /// What it does.
    pub meaning: &'static str,
}

/// Every step configuration can name, ours then the peers' (feature `compat`), with their keys.
/// Cost: builds each step once from an empty map (microseconds).
pub fn step_table() -> Vec<StepEntry> {
    super::step_kinds().map(step_entry).collect()
}

/// One step's entry of [`step_table`].
pub fn step_entry(kind: &StepKind) -> StepEntry {
    let keys = asked_keys(kind)
        .into_iter()
        .map(|asked| {
            let doc = kind.keys.iter().find(|d| d.name == asked.name);
            KeyEntry {
                name: asked.name,
                aliases: asked.aliases,
                default: asked.default,
                unit: doc.map_or(KeyUnit::Text, |d| d.unit),
                meaning: doc.map_or("", |d| d.meaning),
            }
        })
        .collect();
    StepEntry { name: kind.name, aliases: kind.aliases, summary: kind.summary, keys }
}

/// The keys a step's builder asks for when given none, with their aliases and defaults.
pub(crate) fn asked_keys(kind: &StepKind) -> Vec<crate::params::AskedKey> {
    let mut params = Params::new(serde_json::Map::new());
    // the build itself may fail (a required key is missing): only what it asked for counts
    let _ = (kind.build)(&mut params, &|_| Err(ConfigError::new("step", "not built")));
    params.asked().to_vec()
}

/// The documented keys of `kind` that its builder does not read, and the keys it reads that
/// are not documented: both empty for a step whose [`KeyDoc`]s are complete.
pub fn undocumented_keys(kind: &StepKind) -> (Vec<&'static str>, Vec<&'static str>) {
    let asked: Vec<&'static str> = asked_keys(kind).iter().map(|k| k.name).collect();
    let stale = kind.keys.iter().map(|d: &KeyDoc| d.name).filter(|n| !asked.contains(n)).collect();
    let missing = asked.into_iter().filter(|n| !kind.keys.iter().any(|d| d.name == *n)).collect();
    (stale, missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_step_documents_exactly_the_keys_its_builder_reads() {
        for kind in super::super::step_kinds() {
            assert!(!kind.summary.is_empty(), "{} says nothing about what it does", kind.name);
            let (stale, missing) = undocumented_keys(kind);
            assert!(stale.is_empty(), "{}: documented keys it does not read: {stale:?}", kind.name);
            assert!(missing.is_empty(), "{}: keys it reads without documentation: {missing:?}", kind.name);
            for doc in kind.keys {
                assert!(!doc.meaning.is_empty(), "{}.{} has no meaning", kind.name, doc.name);
            }
        }
    }

    fn entry(name: &str) -> StepEntry {
        step_table().into_iter().find(|e| e.name == name).unwrap()
    }

    fn key(entry: &StepEntry, name: &str) -> KeyEntry {
        entry.keys.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name} missing")).clone()
    }

    #[test]
    fn defaults_are_what_the_builder_applies() {
        let keep_last = entry("keep_last");
        let count = key(&keep_last, "count");
        assert_eq!(count.default, Some(json!(10)));
        assert_eq!(count.aliases, ["max_messages", "buffer_size"]);
        assert_eq!(count.unit, KeyUnit::Measure);
        assert!(count.meaning.contains("`measure`"), "{}", count.meaning);
        // KeepLast(10) counts pairs: the default measure says so
        assert_eq!(key(&keep_last, "measure").default, Some(json!("pairs")));
        assert_eq!(key(&entry("keep_first"), "measure").default, Some(json!("messages")));
        assert_eq!(key(&keep_last, "keep_system").default, Some(json!(true)));
        // llmling's spelling of `measure` sets nothing by itself
        assert_eq!(key(&keep_last, "count_pairs").default, None);
        // a default that depends on which key is given: characters unless tokens are asked for
        let truncate = entry("truncate_tool_results");
        assert_eq!(key(&truncate, "max_length").default, Some(json!(2000)));
        assert_eq!(key(&truncate, "max_length").unit, KeyUnit::Characters);
        assert_eq!(key(&truncate, "max_tokens").default, None);
        assert_eq!(key(&entry("truncate_text"), "roles").default, Some(json!(["assistant"])));
        assert_eq!(key(&entry("compress_text"), "rate").default, Some(json!(0.5)));
        // drop_empty drops an empty system message: its own default, not the shared one
        assert_eq!(key(&entry("drop_empty"), "keep_system").default, Some(json!(false)));
        // unset means the call decides
        assert_eq!(key(&entry("token_budget"), "max_tokens").default, None);
        // a guard's keys have no defaults of their own; `step` is required
        let when = entry("when");
        assert!(when.keys.iter().all(|k| k.default.is_none()), "{:?}", when.keys);
    }

    #[cfg(feature = "compat")]
    #[test]
    fn the_peers_steps_are_in_the_table() {
        assert_eq!(key(&entry("autogen_head_and_tail"), "tail_size").default, Some(json!(5)));
        assert_eq!(key(&entry("ag2_token_limiter"), "model").default, Some(json!("gpt-3.5-turbo-0613")));
        assert_eq!(key(&entry("langchain_trim"), "counter").default, Some(json!("model")));
    }
}
