//! The Redis and PostgreSQL stores against real servers (started on loopback by the test, on a
//! free port, stopped at its end): what the SQLite store promises, they promise too, and a
//! server that restarts or goes away gives a clear error or a reconnect, never a hang.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tightfit_store::{Store, StoreErrorKind, StoreSpec};

use crate::{checkpoint, whole};

/// The store at `url`, opened through its address as every face opens it.
fn open(url: &str) -> Arc<dyn Store> {
    StoreSpec::parse(url).unwrap().open().unwrap()
}

/// What every store must do: keep bytes whole under a key, replace, remove, and show two
/// handles on one store (two replicas) each other's writes.
fn keeps_bytes_whole(open: impl Fn() -> Arc<dyn Store>) {
    let (a, b) = (open(), open());
    assert_eq!(a.load("conversation-1").unwrap(), None);
    // binary bytes, NUL included, 16 KiB
    let bytes = checkpoint(0, 42);
    a.save("conversation-1", &bytes).unwrap();
    assert_eq!(b.load("conversation-1").unwrap().as_deref(), Some(&bytes[..]), "the other replica reads it");
    b.save("conversation-1", b"\x00replaced").unwrap();
    assert_eq!(a.load("conversation-1").unwrap().as_deref(), Some(&b"\x00replaced"[..]));
    a.save("offload/tf-0123", b"kept").unwrap();
    assert!(b.remove("conversation-1").unwrap());
    assert!(!a.remove("conversation-1").unwrap());
    assert_eq!(a.load("conversation-1").unwrap(), None);
    assert_eq!(b.load("offload/tf-0123").unwrap().as_deref(), Some(&b"kept"[..]), "other keys untouched");
    // a network read always waits: a caller that must not block is told so, not served
    assert!(a.try_load("offload/tf-0123").is_none());

    // writers on several threads and two handles, on few keys: every key ends whole
    std::thread::scope(|scope| {
        for writer in 0..4 {
            let store = if writer % 2 == 0 { &a } else { &b };
            scope.spawn(move || {
                for write in 0..40 {
                    store.save(&format!("k{}", write % 5), &checkpoint(writer, write)).unwrap();
                }
            });
        }
    });
    for key in 0..5 {
        let bytes = a.load(&format!("k{key}")).unwrap().expect("written");
        assert!(whole(&bytes).is_some(), "k{key} holds a torn or mixed write");
    }
}

/// A store whose server went away answers `Unavailable` within its timeouts, not a hang.
fn fails_fast_when_gone(store: &dyn Store) {
    let started = Instant::now();
    let err = store.load("conversation-1").unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("did not answer"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    assert_eq!(store.save("conversation-1", b"x").unwrap_err().kind, StoreErrorKind::Unavailable);
}

/// What a session needs of a shared store to answer a turn in place, read by the async
/// [`Peeker`](tightfit_store::Peeker) as the store itself holds it: the version's bytes and
/// whether the checkpoint is there, per conversation; after a restart of the server
/// (`restart`) the peeker connects again by itself; once the server is gone (dropped), a
/// peek fails within its timeout, never hangs.
#[cfg(feature = "peek")]
fn peeks_what_the_store_holds<S>(mut server: S, url: &str, restart: impl FnOnce(&mut S)) {
    use tightfit::session::{store_keys, Peeked};
    use tightfit_store::Peeker;

    // a worker of its own: a reconnection runs in the background, between peeks
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let store = open(url);
    let peeker =
        runtime.block_on(Peeker::open(&StoreSpec::parse(url).unwrap())).unwrap().expect("a network store");
    let peek = |key: &str| runtime.block_on(peeker.peek(key));
    let nothing = |key: &str| Peeked { key: key.into(), version: None, has_checkpoint: false };
    assert_eq!(peek("c1").unwrap(), nothing("c1"));
    let keys = store_keys("c1");
    store.save(&keys.version, b"00c0ffee00c0ffee").unwrap();
    assert_eq!(peek("c1").unwrap().version.as_deref(), Some(&b"00c0ffee00c0ffee"[..]));
    assert!(!peek("c1").unwrap().has_checkpoint, "the version is written first");
    store.save(&keys.checkpoint, &checkpoint(1, 7)).unwrap();
    let peeked = peek("c1").unwrap();
    assert_eq!((peeked.key.as_str(), peeked.has_checkpoint), ("c1", true));
    assert_eq!(peek("c2").unwrap(), nothing("c2"), "another conversation");
    // a checkpoint an older build wrote, without a version
    store.save("c3", b"old").unwrap();
    assert_eq!(peek("c3").unwrap(), Peeked { has_checkpoint: true, ..nothing("c3") });

    restart(&mut server);
    // a peek or two may fail while the connection is made again; then they answer
    let started = Instant::now();
    let after = loop {
        match peek("c1") {
            Ok(peeked) => break peeked,
            Err(e) => assert!(started.elapsed() < Duration::from_secs(20), "no reconnect: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(after.key, "c1");
    store.save(&keys.version, b"0123456789abcdef").unwrap();
    assert_eq!(peek("c1").unwrap().version.as_deref(), Some(&b"0123456789abcdef"[..]));

    drop(server);
    let started = Instant::now();
    assert!(peek("c1").is_err());
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

#[cfg(feature = "redis")]
mod redis {
    use super::*;
    use tightfit_store::RedisStore;
    use tightfit_test_servers::Redis;

    #[test]
    fn keeps_bytes_whole_across_replicas() {
        let server = Redis::start();
        keeps_bytes_whole(|| open(&server.url()));
        // the layout version, and every key under the prefix
        assert_eq!(server.cli(&["GET", "tightfit:schema"]), "1");
        assert_eq!(server.cli(&["GET", "tightfit:offload/tf-0123"]), "kept");
    }

    #[test]
    fn a_restarted_server_costs_a_reconnect_and_a_stopped_one_a_clear_error() {
        let mut server = Redis::start();
        let store = open(&server.url());
        store.save("a", b"one").unwrap();
        server.restart();
        // no persistence: the data is gone, but the store reconnects without an error
        assert_eq!(store.load("a").unwrap(), None);
        store.save("a", b"two").unwrap();
        assert_eq!(store.load("a").unwrap().as_deref(), Some(&b"two"[..]));
        drop(server);
        fails_fast_when_gone(store.as_ref());
    }

    #[cfg(feature = "peek")]
    #[test]
    fn an_async_peeker_reads_the_versions_and_reconnects() {
        let server = Redis::start();
        let url = server.url();
        peeks_what_the_store_holds(server, &url, Redis::restart);
    }

    #[test]
    fn a_database_laid_out_by_another_program_or_a_newer_tightfit_is_refused_untouched() {
        let server = Redis::start();
        server.cli(&["SET", "tightfit:schema", "99"]);
        let err = RedisStore::open(&server.url()).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Version, "{err}");
        server.cli(&["SET", "tightfit:schema", "a cache of something else"]);
        let err = RedisStore::open(&server.url()).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
        assert_eq!(server.cli(&["GET", "tightfit:schema"]), "a cache of something else", "left as it was");
        // a key of ours holding another type
        server.cli(&["SET", "tightfit:schema", "1"]);
        server.cli(&["LPUSH", "tightfit:conversation-1", "x"]);
        let err = open(&server.url()).load("conversation-1").unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    }

    #[test]
    fn no_server_and_a_bad_url_are_clear_errors_without_the_password() {
        // a port nobody listens on
        let port = tightfit_test_servers::free_port();
        let err = RedisStore::open(&format!("redis://:hunter2@127.0.0.1:{port}/")).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(err.to_string().contains(&format!("redis://127.0.0.1:{port}/")), "{err}");
        let err = RedisStore::open("rediss://cache.internal/").unwrap_err();
        assert!(err.reason.contains("TLS"), "{err}");
        // a password the server does not want
        let server = Redis::start();
        server.cli(&["CONFIG", "SET", "requirepass", "right"]);
        let err = RedisStore::open(&format!("redis://:wrong@127.0.0.1:{}/", server.port())).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Open, "{err}");
        assert!(!err.to_string().contains("wrong@"), "{err}");
        let store = RedisStore::open(&format!("redis://:right@127.0.0.1:{}/", server.port())).unwrap();
        assert_eq!(store.describe(), format!("redis://127.0.0.1:{}/", server.port()));
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use tightfit_store::PostgresStore;
    use tightfit_test_servers::Postgres;

    #[test]
    fn keeps_bytes_whole_across_replicas_and_a_restart_loses_nothing() {
        let mut server = Postgres::start();
        keeps_bytes_whole(|| open(&server.url()));
        assert_eq!(server.sql("postgres", "SELECT version FROM tightfit_schema"), "1");
        let store = open(&server.url());
        store.save("a", b"committed").unwrap();
        server.restart();
        // the pooled connection broke; the next call reconnects and finds the row
        assert_eq!(store.load("a").unwrap().as_deref(), Some(&b"committed"[..]));
        drop(server);
        fails_fast_when_gone(store.as_ref());
    }

    #[cfg(feature = "peek")]
    #[test]
    fn an_async_peeker_reads_the_versions_and_reconnects() {
        let server = Postgres::start();
        let url = server.url();
        peeks_what_the_store_holds(server, &url, Postgres::restart);
    }

    #[test]
    fn tables_of_another_program_or_a_newer_tightfit_are_refused_untouched() {
        let server = Postgres::start();
        server.sql("postgres", "CREATE DATABASE foreign_app");
        server.sql("foreign_app", "CREATE TABLE tightfit_checkpoints (id INTEGER)");
        let err = PostgresStore::open(&server.url_of("foreign_app")).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
        assert_eq!(
            server.sql("foreign_app", "SELECT to_regclass('tightfit_schema') IS NULL"),
            "t",
            "untouched"
        );

        open(&server.url());
        server.sql("postgres", "UPDATE tightfit_schema SET version = 99");
        let err = PostgresStore::open(&server.url()).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Version, "{err}");
        assert!(err.reason.contains("newer tightfit"), "{err}");

        // a missing database, and a table dropped under a store in use
        let err = PostgresStore::open(&server.url_of("no_such_db")).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Open, "{err}");
        server.sql("postgres", "UPDATE tightfit_schema SET version = 1");
        let store = open(&server.url());
        server.sql("postgres", "DROP TABLE tightfit_checkpoints");
        assert_eq!(store.load("a").unwrap_err().kind, StoreErrorKind::Corrupt);
    }

    #[test]
    fn replicas_opening_together_create_the_tables_once() {
        let server = Postgres::start();
        let url = server.url();
        let opened: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| PostgresStore::open(&url))).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for store in opened {
            store.unwrap();
        }
        assert_eq!(server.sql("postgres", "SELECT count(*) FROM tightfit_schema"), "1");
    }

    #[test]
    fn no_server_and_a_bad_url_are_clear_errors_without_the_password() {
        let port = tightfit_test_servers::free_port();
        let err = PostgresStore::open(&format!("postgres://app:hunter2@127.0.0.1:{port}/app")).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(err.to_string().contains(&format!("postgres://app@127.0.0.1:{port}/app")), "{err}");
        let err = PostgresStore::open("postgres://h/db?sslmode=require").unwrap_err();
        assert!(err.reason.contains("TLS"), "{err}");
        let err = PostgresStore::open("postgres://h:notaport/db").unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Open, "{err}");
    }
}
