//! The store itself: one SQLite connection behind a mutex, one statement per call.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, MAIN_DB};
use tightfit::session::{Store, StoreError, StoreErrorKind};

use crate::error::ErrorContext;
use crate::{schema, SqliteOptions};

/// Session checkpoints in a SQLite file; see the [crate documentation](crate) for the file's
/// schema and for sharing it between processes.
///
/// `Send + Sync`: the one connection is behind a mutex, so the threads of a process take
/// turns (each call holds it for one statement), and processes take turns through SQLite's
/// file locks. Open one store per process and share it (an `Arc`), rather than one per call:
/// opening reads the file's header and schema (tens of microseconds) and, for a writer,
/// sets the journal mode.
#[derive(Debug)]
pub struct SqliteStore {
    connection: Mutex<Connection>,
    path: PathBuf,
    read_only: bool,
    cx: ErrorContext,
}

impl SqliteStore {
    /// Opens the store at `path` for reading and writing, creating the file if it is missing
    /// (not its directory), with a 5 s busy timeout. A file the process may not write is
    /// opened for reading only: loads work, saves fail with [`StoreErrorKind::ReadOnly`].
    ///
    /// Fails with [`StoreErrorKind::Open`] when the file cannot be opened or created (a
    /// missing directory), `Corrupt` when it is not a tightfit store (another program's
    /// database, not SQLite at all), `Version` when a newer tightfit wrote it; such files
    /// are left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, &SqliteOptions::new())
    }

    /// Opens the existing store at `path` for reading only: loads work, saves and removals
    /// fail with [`StoreErrorKind::ReadOnly`]. A missing or empty file is
    /// [`StoreErrorKind::Open`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, &SqliteOptions::new().read_only(true))
    }

    /// Opens the store at `path` as `options` say; see [`SqliteStore::open`].
    pub fn open_with(path: impl AsRef<Path>, options: &SqliteOptions) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let cx =
            ErrorContext { store: format!("sqlite:{}", path.display()), busy_timeout: options.busy_timeout };
        // no SQLITE_OPEN_URI: the path is a file name, even when it starts with `file:`;
        // no SQLite mutex: the connection is behind ours
        let flags = if options.read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        };
        let mut connection = Connection::open_with_flags(path, flags).map_err(|e| cx.open(path, e))?;
        connection
            .busy_timeout(options.busy_timeout)
            .map_err(|e| cx.sqlite("cannot set the busy timeout", e))?;
        // SQLite falls back to reading only when the file may not be written
        let read_only = connection.is_readonly(MAIN_DB).map_err(|e| cx.sqlite("cannot open the file", e))?;
        schema::prepare(&mut connection, read_only, &cx)?;
        Ok(SqliteStore { connection: Mutex::new(connection), path: path.to_path_buf(), read_only, cx })
    }

    /// The file, as it was given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is open for reading only ([`SqliteOptions::read_only`], or a file the
    /// process may not write): SQLite refuses saves and removals, which then fail with
    /// [`StoreErrorKind::ReadOnly`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// One indexed `SELECT` on `connection` (this store's, locked).
    fn load_on(&self, connection: &Connection, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let loaded = connection
            .query_row("SELECT checkpoint FROM checkpoints WHERE key = ?1", [key], |row| {
                row.get::<_, Vec<u8>>(0)
            })
            .optional();
        loaded.map_err(|e| match e {
            rusqlite::Error::InvalidColumnType(..) | rusqlite::Error::FromSqlConversionFailure(..) => {
                self.cx.error(
                    StoreErrorKind::Corrupt,
                    format!("the checkpoint of conversation {key} is not a blob"),
                )
            }
            e => self.cx.sqlite(&format!("cannot load conversation {key}"), e),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // a panic while holding the lock cannot leave a transaction open: every call is one
        // statement, committed or not by SQLite itself
        self.connection.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for SqliteStore {
    /// One indexed `SELECT`; never waits for a writer (WAL).
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.load_on(&self.lock(), key)
    }

    /// [`load`](Store::load), or `None` while this process's connection is in use (a save
    /// holds it up to the busy timeout while another process writes).
    fn try_load(&self, key: &str) -> Option<Result<Option<Vec<u8>>, StoreError>> {
        let connection = match self.connection.try_lock() {
            Ok(connection) => connection,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(self.load_on(&connection, key))
    }

    /// One `INSERT … ON CONFLICT DO UPDATE`, atomic; waits up to the busy timeout for
    /// another writer. A read-only store fails with [`StoreErrorKind::ReadOnly`].
    fn save(&self, key: &str, checkpoint: &[u8]) -> Result<(), StoreError> {
        let updated_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX));
        self.lock()
            .execute(
                "INSERT INTO checkpoints (key, checkpoint, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET checkpoint = excluded.checkpoint, updated_at = excluded.updated_at",
                params![key, checkpoint, updated_at],
            )
            .map(|_| ())
            .map_err(|e| self.cx.sqlite(&format!("cannot save conversation {key}"), e))
    }

    /// One `DELETE`; waits up to the busy timeout for another writer.
    fn remove(&self, key: &str) -> Result<bool, StoreError> {
        self.lock()
            .execute("DELETE FROM checkpoints WHERE key = ?1", [key])
            .map(|removed| removed > 0)
            .map_err(|e| self.cx.sqlite(&format!("cannot remove conversation {key}"), e))
    }

    /// `sqlite:` and the path as it was given.
    fn describe(&self) -> String {
        self.cx.store.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_load_does_not_wait_for_the_connection_in_use() {
        let directory = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(directory.path().join("s.db")).unwrap();
        store.save("k", b"checkpoint").unwrap();
        assert_eq!(store.try_load("k").unwrap().unwrap().as_deref(), Some(&b"checkpoint"[..]));
        let held = store.lock();
        assert!(store.try_load("k").is_none(), "the connection is in use");
        drop(held);
        assert_eq!(store.try_load("missing").unwrap().unwrap(), None);
    }
}
