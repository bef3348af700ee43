//! Files a store must refuse, leaving them as they were, and the errors of a store in use:
//! read-only, locked.

use std::path::Path;
use std::time::{Duration, Instant};

use tightfit_store::{SqliteOptions, SqliteStore, Store, StoreError, StoreErrorKind, SCHEMA_VERSION};

use crate::bytes;

/// Opening `path` fails with `kind`, read-write and read-only alike, naming the file, and
/// the file's bytes are unchanged.
fn refused(path: &Path, kind: StoreErrorKind, says: &str) {
    let before = bytes(path);
    for error in [SqliteStore::open(path).unwrap_err(), SqliteStore::open_read_only(path).unwrap_err()] {
        assert_eq!(error.kind, kind, "{error}");
        assert_eq!(error.store, format!("sqlite:{}", path.display()));
        let message = error.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains(says), "{message}");
    }
    assert!(bytes(path) == before, "{} was changed", path.display());
}

#[test]
fn a_file_in_a_missing_directory_is_open_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("sessions.db");
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(error.kind, StoreErrorKind::Open);
    assert_eq!(
        error.to_string(),
        format!(
            "sqlite:{}: cannot open the file: its directory {} does not exist",
            path.display(),
            dir.path().join("missing").display()
        )
    );
    assert!(!dir.path().join("missing").exists(), "the directory is not created");
}

#[test]
fn reading_only_never_creates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let error = SqliteStore::open_read_only(&missing).unwrap_err();
    assert_eq!(error.kind, StoreErrorKind::Open, "{error}");
    assert!(error.to_string().contains(&missing.display().to_string()), "{error}");
    assert!(!missing.exists());

    let empty = dir.path().join("empty.db");
    std::fs::File::create(&empty).unwrap();
    let error = SqliteStore::open_read_only(&empty).unwrap_err();
    assert_eq!(error.kind, StoreErrorKind::Open, "{error}");
    assert!(error.to_string().contains("holds no tightfit store yet"), "{error}");
    assert_eq!(bytes(&empty), b"");
}

#[test]
fn a_file_that_is_not_sqlite_is_corrupt_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // random bytes (xorshift), a page's worth and more; and a short text file
    let random = dir.path().join("random.db");
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: Vec<u8> = (0..10_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&random, noise).unwrap();
    refused(&random, StoreErrorKind::Corrupt, "is not a tightfit store: file is not a database");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "remember the milk\n").unwrap();
    refused(&text, StoreErrorKind::Corrupt, "is not a tightfit store");
}

#[test]
fn another_program_s_database_is_corrupt_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("app.db");
    let raw = rusqlite::Connection::open(&tables).unwrap();
    raw.execute_batch("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada');").unwrap();
    drop(raw);
    refused(&tables, StoreErrorKind::Corrupt, "is not a tightfit store: it holds 1 table or index (users)");
    // not even its journal mode was changed to WAL
    let raw = rusqlite::Connection::open(&tables).unwrap();
    let mode: String = raw.pragma_query_value(None, "journal_mode", |row| row.get(0)).unwrap();
    assert_eq!(mode, "delete");

    // another program's application id, even on a file without tables
    let other = dir.path().join("other.db");
    let raw = rusqlite::Connection::open(&other).unwrap();
    raw.pragma_update(None, "application_id", 0x0f05_5112).unwrap();
    drop(raw);
    refused(&other, StoreErrorKind::Corrupt, "its application id is 0x0f055112, not tightfit's 0x54464954");
}

#[test]
fn a_store_of_a_newer_schema_is_version_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    SqliteStore::open(&path).unwrap().save("k", b"v").unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
    drop(raw);
    refused(&path, StoreErrorKind::Version, "the store has schema version 2, written by a newer tightfit");
}

#[test]
fn a_store_opened_read_only_loads_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    SqliteStore::open(&path).unwrap().save("k", b"v").unwrap();

    let store = SqliteStore::open_read_only(&path).unwrap();
    assert!(store.is_read_only());
    assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(store.load("other").unwrap(), None);
    let read_only = |result: Result<(), StoreError>, doing: &str| {
        let error = result.unwrap_err();
        assert_eq!(error.kind, StoreErrorKind::ReadOnly, "{error}");
        assert!(error.to_string().contains(doing), "{error}");
    };
    read_only(store.save("k", b"new"), "cannot save conversation k: the store is read-only");
    read_only(store.remove("k").map(|_| ()), "cannot remove conversation k: the store is read-only");
    drop(store);
    assert_eq!(SqliteStore::open(&path).unwrap().load("k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_file_that_may_not_be_written_opens_for_reading() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    SqliteStore::open(&path).unwrap().save("k", b"v").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"v"[..]));
    // root writes through chmod 444: the refusal can only be seen where the system refuses
    let system_refuses = std::fs::OpenOptions::new().write(true).open(&path).is_err();
    if system_refuses {
        assert!(store.is_read_only());
        let error = store.save("k", b"new").unwrap_err();
        assert_eq!(error.kind, StoreErrorKind::ReadOnly, "{error}");
        assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"v"[..]));
    } else {
        assert!(!store.is_read_only(), "SQLite opens for writing what the process may write");
    }
}

#[test]
fn a_writer_holding_the_lock_past_the_busy_timeout_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let timeout = Duration::from_millis(150);
    let store = SqliteOptions::new().busy_timeout(timeout).open(&path).unwrap();
    store.save("k", b"old").unwrap();

    let holder = rusqlite::Connection::open(&path).unwrap();
    holder
        .execute_batch("BEGIN EXCLUSIVE; UPDATE checkpoints SET checkpoint = x'00' WHERE key = 'k';")
        .unwrap();
    let started = Instant::now();
    let error = store.save("k", b"new").unwrap_err();
    assert!(started.elapsed() >= timeout - Duration::from_millis(20), "it waited: {:?}", started.elapsed());
    assert_eq!(error.kind, StoreErrorKind::Locked, "{error}");
    assert_eq!(
        error.to_string(),
        format!(
            "sqlite:{}: cannot save conversation k: another connection held the file longer than the busy \
             timeout (150 ms)",
            path.display()
        )
    );
    assert_eq!(store.remove("k").unwrap_err().kind, StoreErrorKind::Locked);
    // readers do not wait for the writer (WAL), and see the last committed checkpoint
    assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"old"[..]));
    // a store opened meanwhile opens (it only reads the file)
    SqliteStore::open(&path).unwrap();

    holder.execute_batch("COMMIT").unwrap();
    store.save("k", b"new").unwrap();
    assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"new"[..]));
}

#[test]
fn a_save_waits_for_a_writer_that_finishes_within_the_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteOptions::new().busy_timeout(Duration::from_secs(5)).open(&path).unwrap();

    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE; INSERT INTO checkpoints VALUES ('other', x'01', 0);").unwrap();
    let hold = Duration::from_millis(200);
    let release = std::thread::spawn(move || {
        std::thread::sleep(hold);
        holder.execute_batch("COMMIT").unwrap();
    });
    let started = Instant::now();
    store.save("k", b"v").unwrap();
    assert!(started.elapsed() >= hold - Duration::from_millis(50), "it waited: {:?}", started.elapsed());
    release.join().unwrap();
    assert_eq!(store.load("other").unwrap().as_deref(), Some(&[1][..]));
    assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// Regression: switching a new file to WAL meets a competitor with `SQLITE_BUSY` at once,
/// not through the busy timeout; two processes creating one store failed one of them.
#[test]
fn creating_a_store_waits_for_a_reader_of_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    std::fs::File::create(&path).unwrap();
    let reader = rusqlite::Connection::open(&path).unwrap();
    reader.execute_batch("BEGIN; SELECT count(*) FROM sqlite_schema;").unwrap();
    let hold = Duration::from_millis(200);
    let release = std::thread::spawn(move || {
        std::thread::sleep(hold);
        reader.execute_batch("COMMIT").unwrap();
    });
    let started = Instant::now();
    let store = SqliteStore::open(&path).unwrap();
    assert!(started.elapsed() >= hold - Duration::from_millis(50), "it waited: {:?}", started.elapsed());
    release.join().unwrap();
    store.save("k", b"v").unwrap();
}
