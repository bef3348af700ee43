//! Stores for tightfit sessions and offloaded content: an SQLite file that outlives the process
//! and is shared by every process of a machine that opens it (the default), and, behind the
//! features `redis` and `postgres`, [`RedisStore`] and [`PostgresStore`] for processes on
//! several machines (proxy replicas behind a load balancer). [`StoreSpec`] reads a store's
//! address as users write it (`sessions.db`, `memory`, `redis://…`, `postgres://…`) and opens
//! it. With the feature `peek` as well, a [`Peeker`] reads what a session needs of those two
//! stores to answer a turn without blocking a thread (an async client beside the store's).
//!
//! ```
//! use tightfit_store::{SqliteStore, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("sessions.db"))?;
//! store.save("conversation-1", br#"{"epoch": 0}"#)?;
//! assert_eq!(store.load("conversation-1")?.as_deref(), Some(&br#"{"epoch": 0}"#[..]));
//! assert_eq!(store.describe(), format!("sqlite:{}", dir.path().join("sessions.db").display()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A [`Session`](tightfit::session::Session) writes a checkpoint once per compaction and reads
//! one when it meets a conversation it does not hold in memory, so the store sees few, small
//! writes: one SQLite statement each, a few tens of microseconds plus the write-ahead log's
//! append (no `fsync` per write, see below).
//!
//! # The file
//!
//! One table, and the schema version in the file's header:
//!
//! ```sql
//! CREATE TABLE checkpoints (
//!     key TEXT PRIMARY KEY NOT NULL,   -- the conversation key
//!     checkpoint BLOB NOT NULL,        -- the session's bytes, kept as given
//!     updated_at INTEGER NOT NULL      -- Unix time of the last save, in milliseconds
//! );
//! PRAGMA application_id = 0x54464954;  -- "TFIT": this file is a tightfit store
//! PRAGMA user_version = 1;             -- the schema version
//! ```
//!
//! The two header fields cost no table and are read before anything else, so a file is judged
//! without being touched: another program's database ([`StoreErrorKind::Corrupt`]), a file
//! that is not SQLite at all (`Corrupt`), a store written by a newer tightfit with a schema
//! this build does not know ([`StoreErrorKind::Version`]). None of them is ever changed or
//! started afresh. A missing or empty file is made a store; that is the only time the schema
//! is written.
//!
//! # Several processes
//!
//! The file is in WAL mode with `synchronous = NORMAL`: readers never wait for a writer, and
//! writers take turns, each waiting up to the busy timeout (5 s unless
//! [`SqliteOptions::busy_timeout`] says otherwise) before a save fails with
//! [`StoreErrorKind::Locked`]. Every save is one `INSERT … ON CONFLICT DO UPDATE`, so
//! concurrent writers of one key leave one of the writes whole: the last one wins. A power
//! cut may lose the last saves (never tear one); a process crash loses nothing committed.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod options;
#[cfg(all(feature = "peek", any(feature = "redis", feature = "postgres")))]
mod peek;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod pool;
#[cfg(feature = "postgres")]
mod postgres_store;
#[cfg(feature = "redis")]
mod redis_store;
mod schema;
mod spec;
mod sqlite_store;
mod url;

pub use options::SqliteOptions;
#[cfg(all(feature = "peek", any(feature = "redis", feature = "postgres")))]
pub use peek::Peeker;
#[cfg(feature = "postgres")]
pub use postgres_store::PostgresStore;
#[cfg(feature = "redis")]
pub use redis_store::RedisStore;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use spec::StoreSpec;
pub use sqlite_store::SqliteStore;
pub use tightfit::session::{Store, StoreError, StoreErrorKind};
