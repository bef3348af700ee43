//! The peers' drop-ins, mirroring the engine's `compat`: each file reads the peer's Python
//! objects, calls the engine's emulation and hands back the peer's types.

pub(crate) mod ag2;
pub(crate) mod autogen;
pub(crate) mod langchain;
pub(crate) mod swarms;
