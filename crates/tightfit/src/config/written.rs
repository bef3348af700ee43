//! A pipeline written back as configuration: the YAML, TOML or JSON a user would write to get
//! it, which [`from_value`](super::from_value) reads back into an equal pipeline.
//!
//! Each step says its configuration ([`Step::to_config`]); what is written leaves out every key
//! at its default (the defaults of [`step_table`](super::step_table), the builder's own) and
//! every unset one, so a preset reads as the few settings that make it what it is. Cost: one
//! build of each step's kind from an empty map per step written (microseconds).

use serde_json::{Map, Value};

use super::{step_entry, step_kinds, Syntax};
use crate::params::ConfigError;
use crate::pipeline::Pipeline;
use crate::steps::Step;

/// `pipeline` as configuration: `{"steps": [...]}`, each step a map with its `type`, its keys
/// that are not at their default, and its `when:` guard. An error names the step that
/// configuration cannot express (a step of your own, a condition with "or").
pub fn to_value(pipeline: &Pipeline) -> Result<Value, ConfigError> {
    let steps = pipeline
        .steps()
        .enumerate()
        .map(|(i, step)| step_to_value(step).map_err(|e| e.within(&format!("steps[{i}]"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(serde_json::json!({ "steps": steps }))
}

/// One step as configuration, its keys at their default left out.
pub fn step_to_value(step: &dyn Step) -> Result<Value, ConfigError> {
    let map = step.to_config().ok_or_else(|| {
        ConfigError::new("", format!("the step {:?} has settings configuration cannot write", step.name()))
    })?;
    Ok(Value::Object(without_defaults(map)))
}

/// `pipeline` as configuration text in `syntax`.
pub fn to_string(pipeline: &Pipeline, syntax: Syntax) -> Result<String, ConfigError> {
    let value = to_value(pipeline)?;
    let failed =
        |e: &dyn std::fmt::Display| ConfigError::new("", format!("cannot write the configuration: {e}"));
    match syntax {
        Syntax::Yaml => serde_norway::to_string(&yaml_value(&value)).map_err(|e| failed(&e)),
        Syntax::Json => serde_json::to_string_pretty(&value).map_err(|e| failed(&e)),
        Syntax::Toml => toml::to_string(&toml_value(&value)).map_err(|e| failed(&e)),
    }
}

// The workspace's serde_json keeps numbers as their text (`arbitrary_precision`), which the
// YAML and TOML writers would show as a private map: numbers are converted here.

/// `value` as YAML's value.
fn yaml_value(value: &Value) -> serde_norway::Value {
    use serde_norway::Value as Yaml;
    match value {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Bool(*b),
        Value::Number(n) => Yaml::Number(match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into(),
            (None, Some(i)) => i.into(),
            _ => n.as_f64().unwrap_or(f64::NAN).into(),
        }),
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(items) => Yaml::Sequence(items.iter().map(yaml_value).collect()),
        Value::Object(map) => {
            Yaml::Mapping(map.iter().map(|(k, v)| (Yaml::String(k.clone()), yaml_value(v))).collect())
        }
    }
}

/// `value` as TOML's value (which has no null: [`to_value`] writes none).
fn toml_value(value: &Value) -> toml::Value {
    use toml::Value as Toml;
    match value {
        Value::Null => Toml::String(String::new()),
        Value::Bool(b) => Toml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Toml::Integer(i),
            None => Toml::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Toml::String(s.clone()),
        Value::Array(items) => Toml::Array(items.iter().map(toml_value).collect()),
        Value::Object(map) => Toml::Table(map.iter().map(|(k, v)| (k.clone(), toml_value(v))).collect()),
    }
}

/// `map` without its unset keys and the keys at their step's default; a `type: when` map's
/// guarded `step` likewise.
fn without_defaults(mut map: Map<String, Value>) -> Map<String, Value> {
    let entry = map
        .get("type")
        .and_then(Value::as_str)
        .and_then(|name| step_kinds().find(|k| k.answers_to(name)))
        .map(step_entry);
    map.retain(|key, value| {
        if key == "type" || key == "when" {
            return true;
        }
        let at_default = entry
            .as_ref()
            .is_some_and(|e| e.keys.iter().any(|k| k.name == key && k.default.as_ref() == Some(value)));
        !value.is_null() && !at_default
    });
    if let Some(Value::Object(step)) = map.get_mut("step") {
        *step = without_defaults(std::mem::take(step));
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{from_str, from_value, step_from_value, step_keys};
    use crate::presets;
    use serde_json::json;

    /// Steps with every key away from its default, under its own name: each is written back
    /// as it is (`when` maps write their guard as a `when:` key instead).
    fn samples() -> Vec<Value> {
        let mut samples = vec![
            json!({"type": "drop_thinking", "keep_current_turn": false, "redacted": false}),
            json!({"type": "drop_binary", "placeholder": true, "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "drop_retry_prompts", "pattern": "^retry", "error_pattern": "^fail",
                   "drop_rejected_replies": false, "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "drop_tool_calls", "exclude_tools": ["a"], "include_only": ["b"], "keep_current_turn": false,
                   "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "drop_empty", "keep_system": true, "keep_newest_user_turn": false}),
            json!({"type": "clear_tool_results", "keep": 1, "keep_units": 4, "exclude_tools": ["read"],
                   "placeholder": "[gone]", "min_tokens": 50, "clear_inputs": true, "until_fits": true}),
            json!({"type": "dedupe", "min_tokens": 8, "placeholder": "[same as {id}]",
                   "media_placeholder": "[{kind} as in {at}]", "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "truncate_tool_results", "max_tokens": 300, "keep": "tail", "marker": "[cut]",
                   "keep_last": 2, "exclude_tools": ["x"], "until_fits": true}),
            json!({"type": "truncate_tool_results", "max_length": 700}),
            json!({"type": "truncate_text", "max_tokens": 200, "roles": ["user", "assistant"], "keep": "head_and_tail",
                   "marker": "…", "filter_dict": {"name": "bot"}, "exclude_filter": false, "keep_system": false,
                   "keep_newest_user_turn": false}),
            json!({"type": "truncate_text", "max_length": 100}),
            json!({"type": "token_budget", "max_tokens": 1000, "min_tokens": 500, "allow_partial": true,
                   "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "content_name", "position": "end", "format_string": "({name})", "deduplicate": false,
                   "filter_dict": {"role": "user"}, "exclude_filter": false, "tool_results": true}),
            json!({"type": "keep_last", "count": 3, "measure": "units", "keep_system": false,
                   "keep_newest_user_turn": false, "keep_first_message": true}),
            json!({"type": "keep_first", "count": 4, "measure": "pairs", "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "head_and_tail", "head": 1, "tail": 2, "measure": "units", "placeholder": "skipped {skipped}",
                   "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "middle_out", "max_tokens": 5000, "keep_first": 0, "keep_recent": 4, "shorten": false,
                   "shorten_protected": true, "min_text_tokens": 10, "placeholder": "[{skipped} removed]",
                   "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "compact", "max_tokens": 9000, "head_share": 0.5, "grid": 4, "trace": false,
                   "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "task_truncation", "preserve_recent_pairs": 2, "scope": "all", "keep_system": false,
                   "keep_newest_user_turn": false}),
            json!({"type": "summarize", "model": "m", "threshold": 30, "keep_recent": 3, "max_tokens": 500,
                   "summary_prompt": "sum up"}),
            json!({"type": "compress_text", "target_tokens": 100, "min_chars": 50, "roles": ["user"],
                   "keep_code_lines": false, "keep_words": ["never"], "filter_dict": {"role": "user"},
                   "exclude_filter": false, "keep_system": false, "keep_newest_user_turn": false}),
            json!({"type": "compress_text", "rate": 0.3}),
        ];
        if cfg!(feature = "compat") {
            samples.extend([
                json!({"type": "langchain_trim", "max_tokens": 100.0, "allow_partial": true,
                       "include_system": true, "start_on": ["human"], "end_on": ["ai"], "counter": "len",
                       "keep_tool_pairs": false}),
                json!({"type": "langchain_trim", "max_tokens": 50.0, "strategy": "first"}),
                json!({"type": "autogen_buffered", "buffer_size": 3}),
                json!({"type": "autogen_head_and_tail", "head_size": 1, "tail_size": 3}),
                json!({"type": "autogen_token_limited", "token_limit": 500, "encoding": "cl100k_base"}),
                json!({"type": "ag2_history_limiter", "max_messages": 4, "keep_first_message": true,
                       "exclude_names": ["x"]}),
                json!({"type": "ag2_token_limiter", "max_tokens_per_message": 50, "max_tokens": 500,
                       "min_tokens": 100, "model": "gpt-4", "filter_dict": {"role": "user"}, "exclude_filter": false}),
            ]);
        }
        samples
    }

    /// Written back in other words: (as given, as written).
    fn respelled() -> Vec<(Value, Value)> {
        vec![
            (
                json!({"type": "keep_last", "count_pairs": false}),
                json!({"type": "keep_last", "measure": "messages"}),
            ),
            (
                json!({"type": "when", "threshold": 7, "step": {"type": "drop_empty"}}),
                json!({"type": "drop_empty", "when": {"messages_above": 7}}),
            ),
            (
                json!({"type": "when", "step": {"type": "keep_last", "count": 2}, "tokens_above": 100,
                       "messages_above": 5, "window_fraction_above": 0.5, "over_budget": true}),
                json!({"type": "keep_last", "count": 2, "when": {"tokens_above": 100, "messages_above": 5,
                       "window_fraction_above": 0.5, "over_budget": true}}),
            ),
            (
                json!({"type": "when", "step": {"type": "keep_last", "when": {"over_budget": true}}, "tokens_above": 9}),
                json!({"type": "when", "step": {"type": "keep_last", "when": {"over_budget": true}}, "tokens_above": 9}),
            ),
            (json!({"type": "keep_last_messages", "max_messages": 10}), json!({"type": "keep_last"})),
        ]
    }

    fn same(a: &dyn Step, b: &dyn Step) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn every_step_is_written_as_it_was_configured() {
        for sample in samples() {
            let step = step_from_value(sample.clone()).unwrap_or_else(|e| panic!("{sample}: {e}"));
            let written = step_to_value(step.as_ref()).unwrap();
            assert_eq!(written, sample, "written differently");
            let again = step_from_value(written).unwrap();
            assert!(same(step.as_ref(), again.as_ref()), "{sample} does not build the same step again");
        }
        for (given, expected) in respelled() {
            let step = step_from_value(given.clone()).unwrap_or_else(|e| panic!("{given}: {e}"));
            let written = step_to_value(step.as_ref()).unwrap();
            assert_eq!(written, expected, "{given}");
            assert!(same(step.as_ref(), step_from_value(written).unwrap().as_ref()), "{given}");
        }
    }

    #[test]
    fn the_samples_set_every_key_of_every_step() {
        let all: Vec<Value> =
            samples().into_iter().chain(respelled().into_iter().map(|(given, _)| given)).collect();
        for kind in step_kinds() {
            let mut set = std::collections::BTreeSet::new();
            for sample in all.iter().filter(|s| s["type"] == kind.name) {
                set.extend(sample.as_object().unwrap().keys().cloned());
            }
            let missing: Vec<_> = step_keys(kind).into_iter().filter(|k| !set.contains(*k)).collect();
            assert!(missing.is_empty(), "{}: no sample sets {missing:?}", kind.name);
        }
    }

    #[test]
    fn a_step_at_its_defaults_is_its_type_alone() {
        for kind in step_kinds() {
            if kind.name == "when" {
                continue;
            }
            let step = step_from_value(json!({"type": kind.name})).unwrap();
            assert_eq!(step_to_value(step.as_ref()).unwrap(), json!({"type": kind.name}));
        }
    }

    #[test]
    fn every_preset_reads_back_as_the_same_pipeline_in_every_syntax() {
        for name in presets::NAMES {
            let preset = presets::by_name(name).unwrap();
            let value = to_value(&preset).unwrap();
            let expected = format!("{preset:?}");
            assert_eq!(format!("{:?}", from_value(value.clone()).unwrap()), expected, "{name}");
            for syntax in [Syntax::Yaml, Syntax::Json, Syntax::Toml] {
                let text = to_string(&preset, syntax).unwrap();
                let read =
                    from_str(&text, syntax).unwrap_or_else(|e| panic!("{name} {syntax:?}: {e}\n{text}"));
                assert_eq!(format!("{read:?}"), expected, "{name} in {syntax:?}:\n{text}");
            }
        }
    }

    #[test]
    fn a_preset_is_written_as_the_settings_that_make_it() {
        let balanced = to_value(&presets::by_name("balanced").unwrap()).unwrap();
        assert_eq!(
            balanced,
            json!({"steps": [
                {"type": "drop_thinking"},
                {"type": "truncate_tool_results"},
                {"type": "truncate_text"},
                {"type": "keep_last", "count": 15},
                {"type": "middle_out", "when": {"over_budget": true}},
            ]})
        );
        let yaml = to_string(&presets::by_name("swarms").unwrap(), Syntax::Yaml).unwrap();
        assert_eq!(yaml, "steps:\n- type: middle_out\n  keep_first: 0\n");
    }

    #[test]
    fn what_configuration_cannot_say_is_an_error_naming_the_step() {
        use crate::steps::{Condition, KeepLast, When};
        let pipeline = Pipeline::builder()
            .step(KeepLast::default())
            .boxed(Box::new(When::new(
                Condition::Any(vec![Condition::OverBudget, Condition::MessagesAbove(3)]),
                KeepLast::default(),
            )))
            .build()
            .unwrap();
        let err = to_value(&pipeline).unwrap_err();
        assert_eq!(err.key, "steps[1]");
        assert!(err.reason.contains("keep_last"), "{err}");
    }
}
