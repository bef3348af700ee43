//! A Redis server: `redis-server` with no persistence unless asked, on loopback.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::process::{accepts, free_port, on_path, wait_until};

/// A running `redis-server`, stopped when dropped.
#[derive(Debug)]
pub struct Redis {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Redis {
    /// Starts a server on a free port of 127.0.0.1, keeping nothing on disk.
    pub fn start() -> Redis {
        let dir = tempfile::tempdir().expect("a temporary directory for redis");
        let (child, port) = spawn(dir.path(), None);
        Redis { child, port, dir }
    }

    /// Starts a server on `port` of 127.0.0.1 (one a test stopped a server on), keeping
    /// nothing on disk.
    pub fn start_on(port: u16) -> Redis {
        let dir = tempfile::tempdir().expect("a temporary directory for redis");
        let (child, port) = spawn(dir.path(), Some(port));
        Redis { child, port, dir }
    }

    /// Stops the server and starts it again on the same port: what it held is gone (no
    /// persistence), clients must reconnect.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.child, self.port) = spawn(self.dir.path(), Some(self.port));
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs one command through `redis-cli` (a test's way to change what the store sees
    /// behind its back) and returns what it printed.
    pub fn cli(&self, args: &[&str]) -> String {
        let cli = on_path("redis-cli").expect("redis-cli comes with Debian's redis-server package");
        let output = Command::new(cli)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("running redis-cli");
        assert!(output.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `redis-server` in `dir` on `port` (a free one when `None`).
fn spawn(dir: &Path, port: Option<u16>) -> (Child, u16) {
    let binary = on_path("redis-server").unwrap_or_else(|| {
        panic!("redis-server is not on PATH: install Debian's redis-server package (.ci/run does)")
    });
    let log = dir.join("redis.log");
    for _attempt in 0..5 {
        let port = port.unwrap_or_else(free_port);
        let mut child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--logfile"])
            .arg(&log)
            .arg("--dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        match wait_until("redis-server", &mut child, &log, || accepts(port)) {
            Ok(()) => return (child, port),
            // the port was taken in between: another one
            Err(said) if said.contains("Address already in use") => continue,
            Err(said) => panic!("{said}"),
        }
    }
    panic!("redis-server found no free port in 5 attempts");
}
