//! What a store keeps, what it looks like on disk, and sharing it within a process.

use std::sync::Arc;

use tightfit_store::{SqliteOptions, SqliteStore, Store, APPLICATION_ID, SCHEMA_VERSION};

use crate::{checkpoint, whole};

#[test]
fn a_checkpoint_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.describe(), format!("sqlite:{}", path.display()));
    assert_eq!(store.path(), path);
    assert!(!store.is_read_only());

    assert_eq!(store.load("a").unwrap(), None);
    store.save("a", b"one").unwrap();
    store.save("a", b"two").unwrap();
    let binary: Vec<u8> = (0..=255).chain([0, 0, 255]).collect();
    store.save("b \"quoted\" é 🦀", &binary).unwrap();
    store.save("empty", b"").unwrap();
    assert_eq!(store.load("a").unwrap().as_deref(), Some(&b"two"[..]));
    assert_eq!(store.load("b \"quoted\" é 🦀").unwrap(), Some(binary));
    assert_eq!(store.load("empty").unwrap(), Some(Vec::new()), "an empty checkpoint is not a missing one");
    assert!(store.remove("a").unwrap());
    assert!(!store.remove("a").unwrap());
    assert_eq!(store.load("a").unwrap(), None);
}

#[test]
fn a_store_opened_later_or_beside_sees_what_was_saved() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let first = SqliteStore::open(&path).unwrap();
    first.save("kept", &checkpoint(0, 1)).unwrap();
    first.save("gone", b"x").unwrap();
    first.remove("gone").unwrap();
    drop(first);

    let second = SqliteStore::open(&path).unwrap();
    assert_eq!(second.load("kept").unwrap(), Some(checkpoint(0, 1)));
    assert_eq!(second.load("gone").unwrap(), None);
    // two stores open on one file at once see each other's saves at the next call
    let beside = SqliteStore::open(&path).unwrap();
    beside.save("kept", &checkpoint(0, 2)).unwrap();
    assert_eq!(second.load("kept").unwrap(), Some(checkpoint(0, 2)));
}

#[test]
fn the_file_is_a_wal_database_with_tightfit_s_header_and_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    store.save("k", b"v").unwrap();

    let raw = rusqlite::Connection::open(&path).unwrap();
    let pragma =
        |name: &str| raw.pragma_query_value(None, name, |row| row.get::<_, rusqlite::types::Value>(0));
    assert_eq!(pragma("application_id").unwrap(), rusqlite::types::Value::Integer(APPLICATION_ID.into()));
    assert_eq!(APPLICATION_ID.to_be_bytes(), *b"TFIT");
    assert_eq!(pragma("user_version").unwrap(), rusqlite::types::Value::Integer(SCHEMA_VERSION.into()));
    assert_eq!(SCHEMA_VERSION, 1);
    assert_eq!(pragma("journal_mode").unwrap(), rusqlite::types::Value::Text("wal".into()));
    let tables: Vec<String> = raw
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(tables, ["checkpoints"]);
    let (checkpoint, updated_at): (Vec<u8>, i64) = raw
        .query_row("SELECT checkpoint, updated_at FROM checkpoints WHERE key = 'k'", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!(checkpoint, b"v");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    assert!((now as i64 - updated_at).abs() < 60_000, "updated_at is Unix milliseconds: {updated_at}");
}

#[test]
fn an_empty_file_becomes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::File::create(&path).unwrap();
    let store = SqliteOptions::new().open(&path).unwrap();
    store.save("k", b"v").unwrap();
    drop(store);
    assert_eq!(SqliteStore::open_read_only(&path).unwrap().load("k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn threads_share_one_store_and_every_key_keeps_a_whole_write() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("sessions.db")).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|writer| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for write in 0..40 {
                    store.save(&format!("k{}", write % 10), &checkpoint(writer, write)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    for key in 0..10 {
        let (_, write) =
            whole(&store.load(&format!("k{key}")).unwrap().unwrap()).expect("a whole checkpoint");
        // each thread's last write of the key comes after its earlier ones
        assert_eq!(write, key + 30, "k{key}");
    }
}
