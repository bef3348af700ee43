//! Where a store is, written as a user writes it in a flag, a config file or a Python
//! argument, and opening it: one parser for the command line, the proxy and Python.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use tightfit::session::{MemoryStore, Store, StoreError, StoreErrorKind};

use crate::SqliteStore;

/// A store's address: `memory`, `sqlite:FILE` (or a bare `FILE`), `redis://…`, or
/// `postgres://…` (`postgresql://…`).
///
/// ```
/// use tightfit_store::StoreSpec;
///
/// assert_eq!(StoreSpec::parse("sessions.db")?, StoreSpec::Sqlite("sessions.db".into()));
/// assert_eq!(StoreSpec::parse("memory")?, StoreSpec::Memory);
/// assert!(StoreSpec::parse("mysql://db/app").unwrap_err().to_string().contains("mysql://"));
/// # Ok::<(), tightfit_store::StoreError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// In the process's memory: gone when it ends, seen by no other process.
    Memory,
    /// An SQLite file, shared by the processes of one machine.
    Sqlite(PathBuf),
    /// A Redis server (feature `redis`), shared by processes on any machine.
    Redis(String),
    /// A PostgreSQL database (feature `postgres`), shared by processes on any machine.
    Postgres(String),
}

impl StoreSpec {
    /// Reads a store's address. A URL scheme this build has no store for (`mysql://`, or
    /// `redis://` without the `redis` feature) is an error saying which ones it has.
    pub fn parse(spec: &str) -> Result<StoreSpec, StoreError> {
        let refuse =
            |reason: String| StoreError::new(StoreErrorKind::Open, crate::url::redacted(spec), reason);
        if spec == "memory" {
            return Ok(StoreSpec::Memory);
        }
        if let Some((scheme, _)) = spec.split_once("://") {
            let parsed = match scheme {
                "redis" | "rediss" | "redis+unix" => StoreSpec::Redis(spec.to_string()),
                "postgres" | "postgresql" => StoreSpec::Postgres(spec.to_string()),
                _ => return Err(refuse(format!("no store for {scheme}:// (expected {})", supported()))),
            };
            return match parsed {
                StoreSpec::Redis(_) if !cfg!(feature = "redis") => {
                    Err(refuse(format!("this build has no Redis store (expected {})", supported())))
                }
                StoreSpec::Postgres(_) if !cfg!(feature = "postgres") => {
                    Err(refuse(format!("this build has no PostgreSQL store (expected {})", supported())))
                }
                parsed => Ok(parsed),
            };
        }
        let path = spec.strip_prefix("sqlite:").unwrap_or(spec);
        if path.is_empty() {
            return Err(refuse("no file given (sqlite:FILE)".into()));
        }
        Ok(StoreSpec::Sqlite(PathBuf::from(path)))
    }

    /// Whether other processes can write the store too (every store but memory): then a
    /// session must read a conversation's checkpoint back each turn
    /// ([`Settings::with_shared_store`](tightfit::session::Settings::with_shared_store)).
    pub fn is_shared(&self) -> bool {
        !matches!(self, StoreSpec::Memory)
    }

    /// Whether the store's reads stay on this machine (memory, an SQLite file in the page
    /// cache): microseconds, no network round trip, so an async server may read it in place
    /// instead of on its blocking pool (a Redis or PostgreSQL client blocks on the network,
    /// and PostgreSQL's runs a runtime of its own, which tokio forbids on its workers).
    pub fn reads_locally(&self) -> bool {
        matches!(self, StoreSpec::Memory | StoreSpec::Sqlite(_))
    }

    /// Opens the store: connects to a server, opens or makes a file. Blocking; from async
    /// code, call it on a blocking thread (`tokio::task::spawn_blocking`).
    pub fn open(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match self {
            StoreSpec::Memory => Arc::new(MemoryStore::new()),
            StoreSpec::Sqlite(path) => Arc::new(SqliteStore::open(path)?),
            #[cfg(feature = "redis")]
            StoreSpec::Redis(url) => Arc::new(crate::RedisStore::open(url)?),
            #[cfg(feature = "postgres")]
            StoreSpec::Postgres(url) => Arc::new(crate::PostgresStore::open(url)?),
            #[allow(unreachable_patterns)]
            other => {
                return Err(StoreError::new(
                    StoreErrorKind::Open,
                    other.to_string(),
                    format!("this build has no store for it (expected {})", supported()),
                ))
            }
        })
    }
}

/// The addresses this build opens, for errors.
fn supported() -> String {
    let mut kinds = vec!["memory", "sqlite:FILE", "FILE"];
    if cfg!(feature = "redis") {
        kinds.push("redis://");
    }
    if cfg!(feature = "postgres") {
        kinds.push("postgres://");
    }
    kinds.join(", ")
}

/// The address as it may be shown: a URL without its password.
impl fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreSpec::Memory => f.write_str("memory"),
            StoreSpec::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            StoreSpec::Redis(url) | StoreSpec::Postgres(url) => f.write_str(&crate::url::redacted(url)),
        }
    }
}

/// As [`Display`](fmt::Display): a password never reaches a log through `{:?}` either.
impl fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreSpec({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_and_shown_without_passwords() {
        assert_eq!(StoreSpec::parse("sqlite:a/b.db").unwrap(), StoreSpec::Sqlite("a/b.db".into()));
        assert!(!StoreSpec::Memory.is_shared() && StoreSpec::Sqlite("x".into()).is_shared());
        assert!(StoreSpec::Memory.reads_locally() && StoreSpec::Sqlite("x".into()).reads_locally());
        assert!(!StoreSpec::Redis("redis://h".into()).reads_locally());
        assert!(!StoreSpec::Postgres("postgres://h/d".into()).reads_locally());
        let err = StoreSpec::parse("sqlite:").unwrap_err();
        assert!(err.reason.contains("no file"), "{err}");
        let err = StoreSpec::parse("mongodb://u:pw@h/db").unwrap_err();
        assert_eq!(err.store, "mongodb://u@h/db");
        assert!(err.reason.contains("no store for mongodb://"), "{err}");
        if cfg!(feature = "redis") {
            let spec = StoreSpec::parse("redis://:hunter2@cache:6379/1").unwrap();
            assert_eq!(spec.to_string(), "redis://cache:6379/1");
            assert!(!format!("{spec:?}").contains("hunter2"));
        } else {
            assert!(StoreSpec::parse("redis://cache").unwrap_err().reason.contains("no Redis store"));
        }
    }
}
