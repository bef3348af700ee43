//! What a tightfit store file holds, how a file is recognised as one, and how an empty file
//! becomes one.
//!
//! The file's header says what it is: `PRAGMA application_id` (the 4 bytes at offset 68) is
//! [`APPLICATION_ID`] in every tightfit store, and `PRAGMA user_version` (offset 60) is its
//! schema version. Both are read before anything is written, so another program's database
//! or a newer store is refused as it is found. A file whose header and schema are both blank
//! (a new or empty file) is the only one ever written to here.

use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, TransactionBehavior};
use tightfit::session::{StoreError, StoreErrorKind};

use crate::error::ErrorContext;

/// The `PRAGMA application_id` of every tightfit store: "TFIT" in ASCII.
pub const APPLICATION_ID: i32 = 0x5446_4954;

/// The schema version this build writes and reads (`PRAGMA user_version`). A store with a
/// higher version is refused with [`StoreErrorKind::Version`]; a later build that changes the
/// schema migrates version 1 when it opens it.
pub const SCHEMA_VERSION: i32 = 1;

const CREATE: &str = "CREATE TABLE checkpoints (
    key TEXT PRIMARY KEY NOT NULL,
    checkpoint BLOB NOT NULL,
    updated_at INTEGER NOT NULL
)";

/// What a file turned out to be.
enum Found {
    /// No application id, no schema version, no tables: a new or empty file.
    Empty,
    /// A tightfit store, of this schema version; whether it has the checkpoints table.
    Tightfit { version: i32, has_table: bool },
    /// Something else, and why we say so.
    Foreign(String),
}

/// Checks that the file behind `connection` is a tightfit store this build can use, and for
/// a writable connection makes a new or empty file one (in WAL mode with
/// `synchronous = NORMAL`). Reads the header and the schema list once: a few microseconds.
pub(crate) fn prepare(
    connection: &mut Connection,
    read_only: bool,
    cx: &ErrorContext,
) -> Result<(), StoreError> {
    let fail = |e| cx.sqlite("cannot read the file", e);
    // one read transaction, so the header and the schema are seen as of one commit (another
    // process may be creating the store meanwhile)
    let snapshot = connection.transaction().map_err(fail)?;
    let found = inspect(&snapshot).map_err(fail)?;
    snapshot.rollback().map_err(fail)?;
    accept(&found, cx)?;
    if read_only {
        if matches!(found, Found::Empty) {
            return Err(cx.error(
                StoreErrorKind::Open,
                "cannot open the file for reading: it holds no tightfit store yet (it is empty)",
            ));
        }
        return Ok(());
    }
    // Only now that the file is known to be ours or empty: the journal mode is persistent,
    // and another program's database must be left as it was.
    let setup = |connection: &Connection| -> rusqlite::Result<()> {
        use_wal(connection, cx.busy_timeout)?;
        connection.pragma_update(None, "synchronous", "NORMAL")
    };
    setup(connection).map_err(|e| cx.sqlite("cannot set the file up", e))?;
    if matches!(found, Found::Empty) {
        create(connection, cx)?;
    }
    Ok(())
}

/// Puts the file in WAL mode, unless it is already (every store but a new one is): no lock
/// is taken then. Switching needs the file to itself for a moment, and SQLite reports a
/// competitor at once (`SQLITE_BUSY`) rather than through the busy handler, so the switch is
/// retried every few milliseconds for up to `busy_timeout`: two processes creating one store
/// at once both get it.
fn use_wal(connection: &Connection, busy_timeout: Duration) -> rusqlite::Result<()> {
    let started = Instant::now();
    loop {
        let mode: String = connection.pragma_query_value(None, "journal_mode", |row| row.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        // a file system that cannot do WAL keeps the old mode, without an error: the store
        // still works, writers just block readers
        match connection.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(())) {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && started.elapsed() < busy_timeout =>
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            done => return done,
        }
    }
}

/// Writes the schema into an empty file, unless another process did it first: the check is
/// made again under the write lock.
fn create(connection: &mut Connection, cx: &ErrorContext) -> Result<(), StoreError> {
    let fail = |e| cx.sqlite("cannot create the store", e);
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(fail)?;
    let found = inspect(&transaction).map_err(fail)?;
    accept(&found, cx)?;
    if matches!(found, Found::Empty) {
        transaction.execute_batch(CREATE).map_err(fail)?;
        transaction.pragma_update(None, "application_id", APPLICATION_ID).map_err(fail)?;
        transaction.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(fail)?;
    }
    transaction.commit().map_err(fail)
}

/// Reads what the file is, changing nothing. Run it in a transaction: its statements must
/// see one snapshot.
fn inspect(connection: &Connection) -> rusqlite::Result<Found> {
    let application_id: i32 = connection.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version: i32 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let mut statement = connection.prepare(
        r"SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name",
    )?;
    let names = statement.query_map([], |row| row.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
    Ok(if application_id == APPLICATION_ID {
        Found::Tightfit { version, has_table: names.iter().any(|name| name == "checkpoints") }
    } else if application_id != 0 {
        Found::Foreign(format!(
            "its application id is {application_id:#010x}, not tightfit's {APPLICATION_ID:#010x}: \
             it is another program's database"
        ))
    } else if !names.is_empty() {
        let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
        let more = if names.len() > shown.len() { ", …" } else { "" };
        Found::Foreign(format!(
            "it holds {} ({}{more}) and no tightfit application id: it is another program's database",
            if names.len() == 1 {
                "1 table or index".to_string()
            } else {
                format!("{} tables and indexes", names.len())
            },
            shown.join(", "),
        ))
    } else if version != 0 {
        Found::Foreign(format!("its user version is {version} but it has no tightfit application id"))
    } else {
        Found::Empty
    })
}

/// The error for a file this build cannot use, if it is one.
fn accept(found: &Found, cx: &ErrorContext) -> Result<(), StoreError> {
    let not_ours =
        |why: &str| cx.error(StoreErrorKind::Corrupt, format!("the file is not a tightfit store: {why}"));
    match found {
        Found::Empty => Ok(()),
        Found::Foreign(why) => Err(not_ours(why)),
        Found::Tightfit { version, .. } if *version > SCHEMA_VERSION => Err(cx.error(
            StoreErrorKind::Version,
            format!(
                "the store has schema version {version}, written by a newer tightfit; \
                 this build reads version {SCHEMA_VERSION}"
            ),
        )),
        Found::Tightfit { version, .. } if *version < 1 => {
            Err(not_ours(&format!("it has tightfit's application id but schema version {version}")))
        }
        Found::Tightfit { has_table: false, .. } => {
            Err(not_ours("it has tightfit's application id but no checkpoints table"))
        }
        Found::Tightfit { .. } => Ok(()),
    }
}
