//! Where tightfit keeps what outlives a call: one small trait, and the in-memory store.
//!
//! Two kinds of bytes go in, under keys that cannot collide: a session's checkpoints (the
//! decision of a conversation's current epoch, as JSON, under the conversation key: 32 hex
//! digits) and offloaded content (what a fit removed or cut, under `offload/` and its handle;
//! see [`offload`](crate::offload)). A store knows nothing of messages, and the engine knows no
//! I/O: the SQLite file store, and the Redis and PostgreSQL stores for replicas on several
//! machines, live in the `tightfit-store` crate.
//!
//! A session writes a checkpoint once per compaction (not once per turn) and reads one when it
//! meets a conversation it does not hold in memory (a new process, a proxy replica); a fit
//! with offloading writes one blob per handle, when it succeeds.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// Keeps bytes under keys: session checkpoints and offloaded content. Implementations are shared across
/// threads (`Send + Sync`); concurrent writers of one key must leave one of the writes whole
/// (the last one wins), never a mix.
pub trait Store: Send + Sync + fmt::Debug {
    /// The checkpoint saved under `key`, if any.
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// [`load`](Store::load) without waiting: `None` when the store cannot answer at once (a
    /// file store's connection held by a write; a network store, always). For a caller that
    /// must not block (an async server answering in place), which then takes its blocking
    /// path. Defaults to `load`: for a store in memory, whose reads never wait.
    fn try_load(&self, key: &str) -> Option<Result<Option<Vec<u8>>, StoreError>> {
        Some(self.load(key))
    }

    /// Saves `checkpoint` under `key`, replacing what was there.
    fn save(&self, key: &str, checkpoint: &[u8]) -> Result<(), StoreError>;

    /// Forgets `key`. Returns whether it was there.
    fn remove(&self, key: &str) -> Result<bool, StoreError>;

    /// What the store is, for errors and reports (`memory`, `sqlite:sessions.db`).
    fn describe(&self) -> String;
}

/// Why a store could not be used. The message names the store (its file, for a file store)
/// and what went wrong; the kind tells callers (the CLI's exit code, the Python exception)
/// what sort of failure it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{store}: {reason}")]
pub struct StoreError {
    /// What sort of failure.
    pub kind: StoreErrorKind,
    /// The store, as [`Store::describe`] says it (a file path for a file store).
    pub store: String,
    /// What went wrong, for a person.
    pub reason: String,
}

impl StoreError {
    /// An error of `kind` in `store`.
    pub fn new(kind: StoreErrorKind, store: impl Into<String>, reason: impl Into<String>) -> StoreError {
        StoreError { kind, store: store.into(), reason: reason.into() }
    }
}

/// What sort of failure a [`StoreError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The store could not be opened or created (a missing directory, no permission).
    Open,
    /// The store is read-only and a write was asked for.
    ReadOnly,
    /// Another writer holds the store longer than the store waits.
    Locked,
    /// The store's content is not what a tightfit store holds: a corrupt file, another
    /// program's database, a checkpoint that does not parse.
    Corrupt,
    /// The store was written by a newer tightfit (its schema version is unknown).
    Version,
    /// The store holds nothing under the key asked for (an offload handle it never got).
    NotFound,
    /// A store served over the network (Redis, PostgreSQL) could not be reached, or did not
    /// answer in time; worth retrying once it is back.
    Unavailable,
    /// Anything else the backend reported.
    Other,
}

/// Checkpoints in memory: for tests, and for a session that needs no persistence. Forgotten
/// when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    checkpoints: Mutex<HashMap<String, Vec<u8>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The number of checkpoints held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no checkpoint.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<u8>>> {
        // a panic while holding the lock leaves a whole map behind: no write is half done
        self.checkpoints.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Store for MemoryStore {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.lock().get(key).cloned())
    }

    fn save(&self, key: &str, checkpoint: &[u8]) -> Result<(), StoreError> {
        self.lock().insert(key.to_string(), checkpoint.to_vec());
        Ok(())
    }

    fn remove(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.lock().remove(key).is_some())
    }

    fn describe(&self) -> String {
        "memory".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_store_keeps_the_last_write_per_key() {
        let store = MemoryStore::new();
        assert_eq!(store.load("a").unwrap(), None);
        store.save("a", b"one").unwrap();
        store.save("a", b"two").unwrap();
        store.save("b", b"three").unwrap();
        assert_eq!(store.load("a").unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(store.len(), 2);
        assert!(store.remove("a").unwrap());
        assert!(!store.remove("a").unwrap());
        assert_eq!(store.load("a").unwrap(), None);
    }
}
