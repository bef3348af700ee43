//! Writing a step back as configuration ([`Step::to_config`](crate::steps::Step::to_config)):
//! the map its builder reads, every key written out under its own name (not an alias), `null`
//! for a setting left unset. The shared keys (`keep_system`, `filter_dict`, lengths in
//! characters or tokens) are written here the way [`keep`](super::keep),
//! [`filter`](super::filter) and [`cut`](super::cut) read them.

use serde_json::{Map, Value};

use super::filter::MessageFilter;
use crate::history::Keep;
use crate::message::Role;
use crate::text::Length;

/// A step's configuration map, being written.
pub(crate) struct Written(Map<String, Value>);

impl Written {
    /// A map of the step called `kind` in configuration.
    pub(crate) fn new(kind: &str) -> Written {
        let mut map = Map::new();
        map.insert("type".into(), Value::from(kind));
        Written(map)
    }

    /// `key` set to `value` (`None` is written as `null`: unset).
    pub(crate) fn key(mut self, key: &str, value: impl Into<Value>) -> Written {
        self.0.insert(key.into(), value.into());
        self
    }

    /// `keep_system` and `keep_newest_user_turn`.
    pub(crate) fn keep(self, keep: Keep) -> Written {
        self.key("keep_system", keep.system).key("keep_newest_user_turn", keep.newest_user_turn)
    }

    /// `filter_dict` and `exclude_filter`.
    pub(crate) fn filter(self, filter: &MessageFilter) -> Written {
        self.key("filter_dict", filter.filter.clone().map(Value::Object))
            .key("exclude_filter", filter.exclude)
    }

    /// A length under `chars_key` or `tokens_key`, the other one unset.
    pub(crate) fn length(self, chars_key: &str, tokens_key: &str, length: Length) -> Written {
        let (chars, tokens) = match length {
            Length::Chars(n) => (Some(n), None),
            Length::Tokens(n) => (None, Some(n)),
        };
        self.key(chars_key, chars).key(tokens_key, tokens)
    }

    /// `key` set to role names.
    pub(crate) fn roles(self, key: &str, roles: &[Role]) -> Written {
        self.key(key, roles.iter().map(|r| r.as_str()).collect::<Vec<_>>())
    }

    /// The map.
    pub(crate) fn done(self) -> Option<Map<String, Value>> {
        Some(self.0)
    }
}
