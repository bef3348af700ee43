//! What several steps share, so that a step imports the core and this module, never a
//! sibling step: which messages a step keeps ([`keep`]), selecting units by count
//! ([`select`]), cutting text ([`cut`]), choosing messages by sender ([`filter`]), and finding
//! and removing tool calls with their results ([`calls`]), writing a step back as configuration
//! ([`written`]).

pub(crate) mod calls;
pub(crate) mod cut;
pub(crate) mod filter;
pub(crate) mod keep;
pub(crate) mod select;
pub(crate) mod trace;
pub(crate) mod written;
