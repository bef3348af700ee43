//! A fake model server on loopback: serves a scripted list of replies, one per connection, and
//! records each request. Bounded: it serves exactly the replies it was given (or stops when
//! dropped), and every read has a timeout.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

/// One scripted reply.
#[derive(Clone)]
pub struct Reply {
    status: u16,
    body: String,
    headers: Vec<(String, String)>,
    delay: Duration,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::text(status, &body.to_string())
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply { status, body: body.to_string(), headers: Vec::new(), delay: Duration::ZERO }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Answers only after `delay`.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// A request as the server read it.
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

pub struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let thread = std::thread::spawn(move || {
            for reply in replies {
                let Ok((stream, _)) = listener.accept() else { return };
                if let Some(request) = serve(stream, &reply) {
                    recorded.lock().unwrap().push(request);
                }
            }
        });
        Server { port, requests, thread: Some(thread) }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits for every scripted reply to be served; the requests.
    pub fn finish(mut self) -> Vec<Recorded> {
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        std::mem::take(&mut *self.requests.lock().unwrap())
    }
}

fn serve(mut stream: TcpStream, reply: &Reply) -> Option<Recorded> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    std::thread::sleep(reply.delay);
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(reply.body.as_bytes());
    Some(Recorded { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() })
}
