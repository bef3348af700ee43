//! What configuration documents about a step's keys: the unit each counts in and a one-line
//! meaning, written beside the step's builder.
//!
//! The keys themselves and their defaults are not written here: they come from running the
//! builder (`config::step_table`), and a test holds each step's [`KeyDoc`]s to the keys its
//! builder reads, so a key added to a step without its documentation fails.

use std::fmt;

/// What a number (or a list) in a step's configuration counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyUnit {
    /// Messages, as the provider sees them.
    Messages,
    /// Request/response pairs: a user turn with the assistant's answer to it.
    Pairs,
    /// [Units](crate::units): a system message, a user turn, or an assistant step with its
    /// tool results.
    Units,
    /// Messages, pairs or units, as the step's `measure` says.
    Measure,
    /// Tokens of the history's counter.
    Tokens,
    /// Unicode characters (code points).
    Characters,
    /// A share: 0.5 is half.
    Fraction,
    /// A count of something else, named (`tool results`, `assistant steps`).
    Count(&'static str),
    /// A yes or no.
    Flag,
    /// A text (a placeholder, a pattern, a name).
    Text,
    /// One of a few names, listed in the meaning.
    Choice,
    /// A list of names.
    Names,
    /// A map (a filter, a nested step).
    Map,
}

impl fmt::Display for KeyUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyUnit::Messages => "messages",
            KeyUnit::Pairs => "pairs",
            KeyUnit::Units => "units",
            KeyUnit::Measure => "per `measure`",
            KeyUnit::Tokens => "tokens",
            KeyUnit::Characters => "characters",
            KeyUnit::Fraction => "fraction",
            KeyUnit::Count(what) => what,
            KeyUnit::Flag => "flag",
            KeyUnit::Text => "text",
            KeyUnit::Choice => "choice",
            KeyUnit::Names => "list of names",
            KeyUnit::Map => "map",
        })
    }
}

/// One key of a step's configuration, as its documentation says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// The key's name (not an alias).
    pub name: &'static str,
    /// What it counts in.
    pub unit: KeyUnit,
    /// What it does, in one line; where it depends on another key, which.
    pub meaning: &'static str,
}

impl KeyDoc {
    /// A key's documentation.
    pub const fn new(name: &'static str, unit: KeyUnit, meaning: &'static str) -> KeyDoc {
        KeyDoc { name, unit, meaning }
    }
}

/// `keep_system` and `keep_newest_user_turn`, which most steps read the same way.
pub(crate) const KEEP_SYSTEM: KeyDoc =
    KeyDoc::new("keep_system", KeyUnit::Flag, "leave system (and developer) messages alone");
/// See [`KEEP_SYSTEM`].
pub(crate) const KEEP_NEWEST_USER_TURN: KeyDoc =
    KeyDoc::new("keep_newest_user_turn", KeyUnit::Flag, "leave the newest user turn alone");
/// `filter_dict`, AG2's: which messages the step may touch.
pub(crate) const FILTER_DICT: KeyDoc = KeyDoc::new(
    "filter_dict",
    KeyUnit::Map,
    "message field → accepted value(s) (`{role: [user]}`); none: every message",
);
/// `exclude_filter`, AG2's: what `filter_dict` means.
pub(crate) const EXCLUDE_FILTER: KeyDoc = KeyDoc::new(
    "exclude_filter",
    KeyUnit::Flag,
    "true: messages matching `filter_dict` are left alone; false: only they are processed",
);
