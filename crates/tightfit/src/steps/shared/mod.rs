//! What several steps share, so that a step imports the core and this module, never a
//! sibling step: which messages a step keeps ([`keep`]), selecting units by count
//! ([`select`]), cutting text ([`cut`]) and choosing messages by sender ([`filter`]).

pub(crate) mod cut;
pub(crate) mod filter;
pub(crate) mod keep;
pub(crate) mod select;
