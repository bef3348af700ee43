//! `tightfit serve`: starts, answers, stops on SIGTERM after its requests; a bad
//! configuration is an error naming the key.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{root, stderr, tightfit};

#[test]
fn a_bad_configuration_names_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.toml");
    std::fs::write(&config, "[session]\nlow_water = 2.0\n").unwrap();
    let output = tightfit(&["serve", "--config", config.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("session.low_water"), "{}", stderr(&output));

    std::fs::write(&config, "[limits]\nmax_body = 10\n").unwrap();
    let output = tightfit(&["serve", "--config", config.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("max_body"), "{}", stderr(&output));

    let output = tightfit(&["serve", "--upstream", "gemini=http://127.0.0.1:9"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--upstream"), "{}", stderr(&output));
}

#[cfg(unix)]
#[test]
fn it_serves_until_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tightfit"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory",
            "--upstream",
            "openai=http://127.0.0.1:9",
        ])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the log line that says where it listens
    let mut logs = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(logs.read_line(&mut line).unwrap() > 0, "the proxy exited before listening");
        if let Some(at) = line.find("addr=") {
            break line[at + 5..].split_whitespace().next().unwrap().to_string();
        }
    };
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("ok\n"), "{answer}");
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let mut rest = String::new();
    logs.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("shutting down"), "{rest}");
}
