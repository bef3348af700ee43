//! How a store is opened: the busy timeout and read-only access.

use std::path::Path;
use std::time::Duration;

use tightfit::session::StoreError;

use crate::SqliteStore;

/// How to open a [`SqliteStore`]; [`SqliteStore::open`] is `SqliteOptions::new().open(path)`.
///
/// ```
/// use std::time::Duration;
/// use tightfit_store::SqliteOptions;
///
/// let dir = tempfile::tempdir()?;
/// let store = SqliteOptions::new().busy_timeout(Duration::from_millis(200)).open(dir.path().join("s.db"))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    pub(crate) busy_timeout: Duration,
    pub(crate) read_only: bool,
}

impl SqliteOptions {
    /// The defaults: a 5 s busy timeout, read and write.
    pub fn new() -> SqliteOptions {
        SqliteOptions { busy_timeout: Duration::from_secs(5), read_only: false }
    }

    /// How long a save waits for another connection's write to finish before it fails with
    /// [`StoreErrorKind::Locked`](crate::StoreErrorKind::Locked). Defaults to 5 s: a save
    /// holds the lock for well under a millisecond, so only a stuck writer waits that long.
    /// Rounded down to milliseconds.
    pub fn busy_timeout(mut self, timeout: Duration) -> SqliteOptions {
        self.busy_timeout = timeout;
        self
    }

    /// Open the file for reading only: it must exist and be a store, and saves fail with
    /// [`StoreErrorKind::ReadOnly`](crate::StoreErrorKind::ReadOnly). Defaults to `false`
    /// (read and write, creating the file if it is missing; a file the process may not
    /// write is then opened for reading only all the same).
    pub fn read_only(mut self, read_only: bool) -> SqliteOptions {
        self.read_only = read_only;
        self
    }

    /// Opens the store at `path` with these options.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, self)
    }
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions::new()
    }
}
