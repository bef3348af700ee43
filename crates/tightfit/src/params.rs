//! Reading one step's parameters from a configuration map, naming the key in every error.
//!
//! Each read takes its key out of the map; [`Params::finish`] then reports any key left over
//! as unknown, with the closest known name as a suggestion. Numbers must be whole and not
//! negative where a count is expected; a wrong type says what was found.

use std::fmt;

use serde_json::{Map, Value};

/// A configuration error, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: `steps[2].max_length`, or a step's parameter name.
    pub key: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.key, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// An error at `key`.
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
        ConfigError { key: key.into(), reason: reason.into() }
    }

    /// The same error under a parent key (`steps[2]` + `max_length`).
    pub fn within(self, parent: &str) -> ConfigError {
        let key = if self.key.is_empty() {
            parent.to_string()
        } else if self.key.starts_with('[') {
            format!("{parent}{}", self.key)
        } else {
            format!("{parent}.{}", self.key)
        };
        ConfigError { key, reason: self.reason }
    }
}

/// A step's parameters, as read from YAML, TOML or JSON.
///
/// Besides reading, it records what the builder asked for: each key with its aliases and the
/// default the builder applies when the key is absent (the `*_or` reads and
/// [`Params::note_default`]). Running a builder on an empty map thus documents the step's keys
/// and defaults from the builder's own calls (`config::step_table`), so the documentation
/// cannot disagree with the code.
#[derive(Debug, Clone, Default)]
pub struct Params {
    map: Map<String, Value>,
    known: Vec<&'static str>,
    asked: Vec<AskedKey>,
}

/// One key a builder asked for: its name, its aliases, and the default it applies.
#[derive(Debug, Clone, PartialEq)]
pub struct AskedKey {
    /// The key's name (the first a read names).
    pub name: &'static str,
    /// Other names the read accepts for it.
    pub aliases: Vec<&'static str>,
    /// What the builder uses when the key is absent; `None` when it leaves the setting unset
    /// (the step then decides: the call's budget, no filter, ...).
    pub default: Option<Value>,
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

impl Params {
    /// Parameters from a map.
    pub fn new(map: Map<String, Value>) -> Params {
        Params { map, known: Vec::new(), asked: Vec::new() }
    }

    /// Takes the first of `keys` present (a name and its aliases), `null` counting as absent.
    pub fn take(&mut self, keys: &[&'static str]) -> Option<(&'static str, Value)> {
        self.known.extend_from_slice(keys);
        if let Some((name, aliases)) = keys.split_first() {
            if !self.asked.iter().any(|k| k.name == *name) {
                self.asked.push(AskedKey { name, aliases: aliases.to_vec(), default: None });
            }
        }
        let mut found = None;
        for key in keys {
            if let Some(value) = self.map.remove(*key) {
                if found.is_none() && !value.is_null() {
                    found = Some((*key, value));
                }
            }
        }
        found
    }

    /// A whole number at least 0.
    pub fn usize(&mut self, keys: &[&'static str]) -> Result<Option<usize>, ConfigError> {
        match self.take(keys) {
            None => Ok(None),
            Some((key, Value::Number(n))) => match n.as_u64() {
                Some(n) => Ok(Some(n as usize)),
                None => {
                    Err(ConfigError::new(key, format!("expected a whole number of at least 0, found {n}")))
                }
            },
            Some((key, v)) => {
                Err(ConfigError::new(key, format!("expected a whole number, found {}", kind(&v))))
            }
        }
    }

    /// A number.
    pub fn f64(&mut self, keys: &[&'static str]) -> Result<Option<f64>, ConfigError> {
        match self.take(keys) {
            None => Ok(None),
            Some((key, Value::Number(n))) => {
                n.as_f64().map(Some).ok_or_else(|| ConfigError::new(key, "expected a number"))
            }
            Some((key, v)) => Err(ConfigError::new(key, format!("expected a number, found {}", kind(&v)))),
        }
    }

    /// A boolean.
    pub fn bool(&mut self, keys: &[&'static str]) -> Result<Option<bool>, ConfigError> {
        match self.take(keys) {
            None => Ok(None),
            Some((_, Value::Bool(b))) => Ok(Some(b)),
            Some((key, v)) => {
                Err(ConfigError::new(key, format!("expected true or false, found {}", kind(&v))))
            }
        }
    }

    /// A string.
    pub fn string(&mut self, keys: &[&'static str]) -> Result<Option<String>, ConfigError> {
        match self.take(keys) {
            None => Ok(None),
            Some((_, Value::String(s))) => Ok(Some(s)),
            Some((key, v)) => Err(ConfigError::new(key, format!("expected a string, found {}", kind(&v)))),
        }
    }

    /// One of `choices`.
    pub fn choice(&mut self, keys: &[&'static str], choices: &[&str]) -> Result<Option<String>, ConfigError> {
        let key = keys[0];
        match self.string(keys)? {
            None => Ok(None),
            Some(s) if choices.contains(&s.as_str()) => Ok(Some(s)),
            Some(s) => {
                Err(ConfigError::new(key, format!("expected one of {}, found {s:?}", choices.join(", "))))
            }
        }
    }

    /// A list of strings (a single string is a list of one).
    pub fn strings(&mut self, keys: &[&'static str]) -> Result<Option<Vec<String>>, ConfigError> {
        match self.take(keys) {
            None => Ok(None),
            Some((_, Value::String(s))) => Ok(Some(vec![s])),
            Some((key, Value::Array(items))) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s),
                    v => Err(ConfigError::new(
                        format!("{key}[{i}]"),
                        format!("expected a string, found {}", kind(&v)),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some((key, v)) => {
                Err(ConfigError::new(key, format!("expected a list of strings, found {}", kind(&v))))
            }
        }
    }

    /// Any value (a nested map, say), for the caller to read.
    pub fn value(&mut self, keys: &[&'static str]) -> Option<Value> {
        self.take(keys).map(|(_, v)| v)
    }

    /// The keys reads have asked for so far, in the order asked, with their aliases and the
    /// defaults noted for them.
    pub fn asked(&self) -> &[AskedKey] {
        &self.asked
    }

    /// Notes that the builder uses `default` when `key` is absent (for a default applied
    /// outside a `*_or` read: one that depends on another key, say). Reads nothing.
    pub fn note_default(&mut self, key: &'static str, default: impl Into<Value>) {
        let default = Some(default.into());
        match self.asked.iter_mut().find(|k| k.name == key) {
            Some(asked) => asked.default = default,
            None => self.asked.push(AskedKey { name: key, aliases: Vec::new(), default }),
        }
    }

    /// A whole number at least 0, `default` when absent.
    pub fn usize_or(&mut self, keys: &[&'static str], default: usize) -> Result<usize, ConfigError> {
        let value = self.usize(keys)?;
        self.note_default(keys[0], default);
        Ok(value.unwrap_or(default))
    }

    /// A number, `default` when absent.
    pub fn f64_or(&mut self, keys: &[&'static str], default: f64) -> Result<f64, ConfigError> {
        let value = self.f64(keys)?;
        self.note_default(keys[0], default);
        Ok(value.unwrap_or(default))
    }

    /// A boolean, `default` when absent.
    pub fn bool_or(&mut self, keys: &[&'static str], default: bool) -> Result<bool, ConfigError> {
        let value = self.bool(keys)?;
        self.note_default(keys[0], default);
        Ok(value.unwrap_or(default))
    }

    /// A string, `default` when absent.
    pub fn string_or(&mut self, keys: &[&'static str], default: &str) -> Result<String, ConfigError> {
        let value = self.string(keys)?;
        self.note_default(keys[0], default);
        Ok(value.unwrap_or_else(|| default.to_string()))
    }

    /// One of `choices`, `default` when absent.
    pub fn choice_or(
        &mut self,
        keys: &[&'static str],
        choices: &[&str],
        default: &str,
    ) -> Result<String, ConfigError> {
        let value = self.choice(keys, choices)?;
        self.note_default(keys[0], default);
        Ok(value.unwrap_or_else(|| default.to_string()))
    }

    /// A list of strings (a single string is a list of one), `default` when absent.
    pub fn strings_or(
        &mut self,
        keys: &[&'static str],
        default: &[String],
    ) -> Result<Vec<String>, ConfigError> {
        let value = self.strings(keys)?;
        self.note_default(keys[0], default.to_vec());
        Ok(value.unwrap_or_else(|| default.to_vec()))
    }

    /// Fails on any key no read asked for, suggesting the closest known one.
    pub fn finish(self) -> Result<(), ConfigError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => {
                let suggestion = self
                    .known
                    .iter()
                    .map(|k| (strsim::jaro_winkler(k, key), *k))
                    .filter(|(score, _)| *score > 0.8)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, k)| format!("; did you mean {k:?}?"))
                    .unwrap_or_default();
                let known = if self.known.is_empty() {
                    "this step takes no parameters".to_string()
                } else {
                    format!("known keys: {}", self.known.join(", "))
                };
                Err(ConfigError::new(key.clone(), format!("unknown key{suggestion} ({known})")))
            }
        }
    }
}

/// A step that can be built from configuration.
pub trait FromParams: Sized {
    /// Reads the step's parameters; absent ones take their documented defaults. Must not call
    /// [`Params::finish`] (the caller does, so wrappers can read more keys).
    fn from_params(params: &mut Params) -> Result<Self, ConfigError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        Params::new(v.as_object().unwrap().clone())
    }

    #[test]
    fn reads_aliases_and_reports_unknown_keys() {
        let mut p = params(json!({"max_messages": 4, "max_lenght": 10}));
        assert_eq!(p.usize(&["count", "max_messages"]).unwrap(), Some(4));
        assert_eq!(p.usize(&["max_length"]).unwrap(), None);
        let e = p.finish().unwrap_err();
        assert_eq!(e.key, "max_lenght");
        assert!(e.reason.contains("did you mean \"max_length\""), "{e}");
    }

    #[test]
    fn reads_with_a_default_record_it_with_the_key_s_aliases() {
        let mut p = params(json!({"count": 4}));
        assert_eq!(p.usize_or(&["count", "max_messages"], 10).unwrap(), 4);
        assert!(p.bool_or(&["flag"], true).unwrap());
        assert_eq!(p.string(&["label"]).unwrap(), None);
        let asked: Vec<_> =
            p.asked().iter().map(|k| (k.name, k.aliases.clone(), k.default.clone())).collect();
        assert_eq!(
            asked,
            [
                ("count", vec!["max_messages"], Some(json!(10))),
                ("flag", vec![], Some(json!(true))),
                ("label", vec![], None)
            ]
        );
    }

    #[test]
    fn wrong_types_say_what_was_found() {
        let mut p = params(json!({"count": -1, "flag": "yes"}));
        assert_eq!(
            p.usize(&["count"]).unwrap_err().to_string(),
            "count: expected a whole number of at least 0, found -1"
        );
        assert_eq!(
            p.bool(&["flag"]).unwrap_err().to_string(),
            "flag: expected true or false, found a string"
        );
    }
}
