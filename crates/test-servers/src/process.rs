//! What both servers need: a free port, a wait until it answers, and a child that is killed
//! however the test ends.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How long a server may take to accept connections.
const STARTUP: Duration = Duration::from_secs(30);

/// A port of 127.0.0.1 nobody listens on now (for a server, or to show what connecting to no
/// server gives). Another process may take it before the server binds it; the servers'
/// `start` retries on a new port when that happens.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a port on 127.0.0.1");
    listener.local_addr().expect("the bound address").port()
}

/// Waits until `ready` says yes, the child exits (`Err` with what it said), or [`STARTUP`]
/// passes (a panic: a server that hangs at startup is a broken machine).
pub(crate) fn wait_until(
    what: &str,
    child: &mut Child,
    log: &Path,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP;
    loop {
        if let Some(status) = child.try_wait().expect("polling the server") {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("{what} exited at startup ({status}):\n{said}"));
        }
        if ready() {
            return Ok(());
        }
        if Instant::now() > deadline {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            let _ = child.kill();
            panic!("{what} did not accept connections within {STARTUP:?}:\n{said}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Whether something accepts TCP connections on `port` of loopback.
pub(crate) fn accepts(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).is_ok()
}

/// `name` on `PATH`, if it is there.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

/// Runs `command` to its end; panics with its output when it fails.
pub(crate) fn run(what: &str, command: &mut Command) {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: cannot run it: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
