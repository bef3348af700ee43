//! Two processes writing one file at once: this test binary runs itself twice as writers.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tightfit_store::{SqliteStore, Store};

use crate::{checkpoint, whole};

/// Tells a child run of this test to be writer N; the directory is in `DIR`.
const WRITER: &str = "TIGHTFIT_STORE_TEST_WRITER";
const DIR: &str = "TIGHTFIT_STORE_TEST_DIR";
const WRITERS: usize = 2;
const WRITES: usize = 200;
const KEYS: usize = 50;

#[test]
fn two_processes_writing_one_file_keep_every_row_whole() {
    if let (Ok(writer), Ok(dir)) = (std::env::var(WRITER), std::env::var(DIR)) {
        return write(writer.parse().unwrap(), Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|writer| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "processes::two_processes_writing_one_file_keep_every_row_whole",
                    "--exact",
                    "--nocapture",
                ])
                .env(WRITER, writer.to_string())
                .env(DIR, dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut spans = Vec::new();
    let mut errs = String::new();
    for (writer, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "writer {writer}: {}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("1 passed"), "writer {writer} ran the test:\n{stdout}");
        errs.push_str(&String::from_utf8_lossy(&output.stderr));
        let span = std::fs::read_to_string(dir.path().join(format!("span-{writer}"))).unwrap();
        let span: Vec<u128> = span.split(' ').map(|n| n.parse().unwrap()).collect();
        spans.push((span[0], span[1]));
    }
    eprintln!("{errs}");
    // the writers did run at the same time: each began before the other finished (SQLite
    // does not queue writers fairly, so one may still do most of its saves first)
    assert!(
        spans[0].0 < spans[1].1 && spans[1].0 < spans[0].1,
        "the writes did not overlap: {spans:?} {errs}"
    );

    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    let raw = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
    let rows: i64 = raw.query_row("SELECT count(*) FROM checkpoints", [], |row| row.get(0)).unwrap();
    assert_eq!(rows, KEYS as i64);
    for key in 0..KEYS {
        let bytes = store.load(&format!("k{key}")).unwrap().unwrap_or_else(|| panic!("k{key} was lost"));
        let (writer, write) =
            whole(&bytes).unwrap_or_else(|| panic!("k{key} holds a torn or mixed checkpoint"));
        assert!(writer < WRITERS);
        // each writer's last write of a key comes after its earlier ones, so whichever
        // writer committed last, the key holds a last write
        assert_eq!(write, key + WRITES - KEYS, "k{key} holds an older write of writer {writer}");
    }
}

/// Writer `writer`: waits for the others to be ready, opens the (new) store in `dir` as they
/// do, saves [`WRITES`] checkpoints over [`KEYS`] keys and reads one back after each save,
/// then records when it began (all ready, before opening) and ended, in Unix milliseconds, in
/// `span-N`.
fn write(writer: usize, dir: &Path) {
    std::fs::write(dir.join(format!("ready-{writer}")), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(0..WRITERS).all(|w| dir.join(format!("ready-{w}")).exists()) {
        assert!(Instant::now() < deadline, "the other writers did not start");
        std::thread::sleep(Duration::from_millis(1));
    }
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    let began = now();
    // both open the file no one has created yet: one creates the schema, the other finds it
    let store = SqliteStore::open(dir.join("sessions.db")).unwrap();
    for write in 0..WRITES {
        store.save(&format!("k{}", write % KEYS), &checkpoint(writer, write)).unwrap();
        let other = format!("k{}", write * 7 % KEYS);
        if let Some(bytes) = store.load(&other).unwrap() {
            assert!(whole(&bytes).is_some(), "{other} holds a torn or mixed checkpoint");
        }
    }
    std::fs::write(dir.join(format!("span-{writer}")), format!("{began} {}", now())).unwrap();
}
