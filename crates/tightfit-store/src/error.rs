//! From SQLite's result codes to the store's error kinds, with messages that say what was
//! being done and name the file.

use std::path::Path;
use std::time::Duration;

use rusqlite::ErrorCode;
use tightfit::session::{StoreError, StoreErrorKind};

/// What every error of one store carries: its name and its busy timeout (for `Locked`).
#[derive(Debug, Clone)]
pub(crate) struct ErrorContext {
    /// The store as [`Store::describe`](tightfit::session::Store::describe) says it.
    pub(crate) store: String,
    pub(crate) busy_timeout: Duration,
}

impl ErrorContext {
    /// An error of `kind` for a person to read.
    pub(crate) fn error(&self, kind: StoreErrorKind, reason: impl Into<String>) -> StoreError {
        StoreError::new(kind, self.store.clone(), reason)
    }

    /// SQLite's `err` while `doing` something (`cannot save conversation k`).
    pub(crate) fn sqlite(&self, doing: &str, err: rusqlite::Error) -> StoreError {
        let Some(code) = err.sqlite_error_code() else {
            return self.error(StoreErrorKind::Other, format!("{doing}: {err}"));
        };
        match code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => self.error(
                StoreErrorKind::Locked,
                format!(
                    "{doing}: another connection held the file longer than the busy timeout ({} ms)",
                    self.busy_timeout.as_millis()
                ),
            ),
            ErrorCode::ReadOnly => {
                self.error(StoreErrorKind::ReadOnly, format!("{doing}: the store is read-only ({err})"))
            }
            ErrorCode::NotADatabase => self
                .error(StoreErrorKind::Corrupt, format!("{doing}: the file is not a tightfit store: {err}")),
            ErrorCode::DatabaseCorrupt => {
                self.error(StoreErrorKind::Corrupt, format!("{doing}: the file is damaged: {err}"))
            }
            ErrorCode::CannotOpen | ErrorCode::PermissionDenied => {
                self.error(StoreErrorKind::Open, format!("{doing}: {err}"))
            }
            _ => self.error(StoreErrorKind::Other, format!("{doing}: {err}")),
        }
    }

    /// The error of opening `path` (which failed with `err`): a missing directory is named
    /// as such, since SQLite only says it is "unable to open database file".
    pub(crate) fn open(&self, path: &Path, err: rusqlite::Error) -> StoreError {
        let directory = path.parent().filter(|p| !p.as_os_str().is_empty());
        match directory {
            Some(directory) if !directory.is_dir() => self.error(
                StoreErrorKind::Open,
                format!("cannot open the file: its directory {} does not exist", directory.display()),
            ),
            _ => {
                let err = self.sqlite("cannot open the file", err);
                // whatever SQLite said, the store could not be opened
                StoreError { kind: StoreErrorKind::Open, ..err }
            }
        }
    }
}
