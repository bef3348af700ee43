//! A PostgreSQL server: a fresh cluster made by `initdb` in a temporary directory, trusting
//! loopback connections of the user `tightfit`, on a free port of 127.0.0.1.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::process::{free_port, on_path, run, wait_until};

/// A running PostgreSQL cluster, stopped (fast shutdown) and removed when dropped.
#[derive(Debug)]
pub struct Postgres {
    child: Option<Child>,
    port: u16,
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// The user and group the server runs as: `postgres` when the tests run as root.
    owner: Option<(u32, u32)>,
}

impl Postgres {
    /// Makes a cluster and starts its server on a free port of 127.0.0.1.
    pub fn start() -> Postgres {
        let bin = binaries();
        let dir = tempfile::tempdir().expect("a temporary directory for postgres");
        let owner = server_user();
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .expect("handing the directory to postgres");
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-U", "tightfit", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"])
            .current_dir(dir.path());
        as_owner(&mut initdb, owner);
        run("initdb", &mut initdb);
        let mut server = Postgres { child: None, port: 0, bin, dir, owner };
        server.run_server(None);
        server
    }

    /// Stops the server (fast shutdown) and starts it again on the same port over the same
    /// data: committed rows survive, clients must reconnect.
    pub fn restart(&mut self) {
        self.stop_server();
        let port = self.port;
        self.run_server(Some(port));
    }

    /// `postgres://tightfit@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://tightfit@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://tightfit@127.0.0.1:PORT/DATABASE`.
    pub fn url_of(&self, database: &str) -> String {
        format!("postgres://tightfit@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs SQL in `database` through `psql` (a test's way to change what the store sees
    /// behind its back) and returns what it printed (unaligned, tuples only).
    pub fn sql(&self, database: &str, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "tightfit", "-d", database])
            .args(["-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
            .output()
            .expect("running psql");
        assert!(output.status.success(), "psql {sql:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    fn run_server(&mut self, port: Option<u16>) {
        let log = self.dir.path().join("postgres.log");
        for _attempt in 0..5 {
            let port = port.unwrap_or_else(free_port);
            let mut command = Command::new(self.bin.join("postgres"));
            command
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
                .arg("-c")
                .arg(format!("unix_socket_directories={}", self.dir.path().display()))
                // a test server: durability is not what is tested
                .args(["-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off"])
                .current_dir(self.dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(File::create(&log).expect("the server's log"));
            as_owner(&mut command, self.owner);
            let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start postgres: {e}"));
            let ready = |bin: &Path| {
                Command::new(bin.join("pg_isready"))
                    .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "tightfit"])
                    .status()
                    .is_ok_and(|s| s.success())
            };
            let bin = self.bin.clone();
            match wait_until("postgres", &mut child, &log, || ready(&bin)) {
                Ok(()) => {
                    self.child = Some(child);
                    self.port = port;
                    return;
                }
                Err(said) if said.contains("could not bind") || said.contains("already in use") => continue,
                Err(said) => panic!("{said}"),
            }
        }
        panic!("postgres found no free port in 5 attempts");
    }

    fn stop_server(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let mut stop = Command::new(self.bin.join("pg_ctl"));
        stop.arg("-D").arg(self.dir.path().join("data")).args(["-m", "fast", "-w", "stop"]);
        stop.current_dir(self.dir.path()).stdout(Stdio::null()).stderr(Stdio::null());
        as_owner(&mut stop, self.owner);
        if !stop.status().is_ok_and(|s| s.success()) {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop_server();
    }
}

/// The directory of PostgreSQL's server binaries.
fn binaries() -> PathBuf {
    if let Some(dir) = std::env::var_os("TIGHTFIT_PG_BIN") {
        return PathBuf::from(dir);
    }
    // Debian: /usr/lib/postgresql/<major>/bin, the newest major first
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").is_file())
        .collect();
    majors.sort();
    if let Some((_, bin)) = majors.pop() {
        return bin;
    }
    match on_path("initdb") {
        Some(initdb) => initdb.parent().expect("a file on PATH is in a directory").to_path_buf(),
        None => panic!(
            "PostgreSQL's server binaries (initdb, postgres) were not found: install Debian's postgresql \
             package (.ci/run does) or set TIGHTFIT_PG_BIN to their directory"
        ),
    }
}

/// As root, the uid and gid of the `postgres` user (from `/etc/passwd`); otherwise `None`
/// (the server runs as the test's user).
fn server_user() -> Option<(u32, u32)> {
    let me = std::fs::metadata("/proc/self").ok().map(|m| std::os::unix::fs::MetadataExt::uid(&m));
    if me != Some(0) {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let line = passwd.lines().find(|l| l.starts_with("postgres:")).unwrap_or_else(|| {
        panic!("running as root, and there is no postgres user to run PostgreSQL as: install Debian's postgresql package")
    });
    let fields: Vec<&str> = line.split(':').collect();
    Some((fields[2].parse().expect("postgres's uid"), fields[3].parse().expect("postgres's gid")))
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
}
