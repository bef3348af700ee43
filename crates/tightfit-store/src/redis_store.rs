//! The Redis store: each key a Redis string under the `tightfit:` prefix, one command per
//! call, for replicas on several machines.

use std::time::Duration;

use redis::{Client, Connection, RedisError};
use tightfit::session::{Store, StoreError, StoreErrorKind};

use crate::pool::{Broken, Pool};
use crate::url::redacted;

/// Every key the store writes starts with this, so one Redis database can hold other data.
const PREFIX: &str = "tightfit:";
/// The Redis key of the store's `key`.
pub(crate) fn redis_key(key: &str) -> String {
    format!("{PREFIX}{key}")
}

/// The key holding the layout's version.
const VERSION_KEY: &str = "tightfit:schema";
/// How long connecting, and waiting for one answer, may take before a call fails with
/// [`StoreErrorKind::Unavailable`].
const TIMEOUT: Duration = Duration::from_secs(5);

/// Session checkpoints and offloaded content in Redis: `SET tightfit:<key>`, `GET`, `DEL`.
///
/// Opening writes `tightfit:schema` = the layout version ([`crate::SCHEMA_VERSION`]) when it
/// is missing and refuses a database whose `tightfit:schema` holds something else: a newer
/// version ([`StoreErrorKind::Version`]) or a foreign value (`Corrupt`). Each call is one
/// command, atomic in Redis, so concurrent writers of one key leave one whole write (the last
/// wins). Connections are kept for reuse (up to 16 idle); a connection broken by a server
/// restart is replaced on the next call. Keys never expire: what a fit offloads stays
/// recallable (Redis's own `maxmemory` policy decides what happens when it is full).
///
/// Durability is the server's: with Redis's default snapshots a crash of the server loses
/// the writes since the last one; run it with `appendonly yes` to keep every checkpoint.
#[derive(Debug)]
pub struct RedisStore {
    client: Client,
    pool: Pool<Connection>,
    name: String,
}

/// A Redis error, with whether it broke the connection.
struct Failure(RedisError);

impl Broken for Failure {
    fn is_broken(&self) -> bool {
        self.0.is_unrecoverable_error() || self.0.is_io_error()
    }
}

impl RedisStore {
    /// Connects to the Redis server at `url` (`redis://[user:password@]host[:port][/db]`, or
    /// `redis+unix:///path/to/socket`) and checks, or writes, the layout version.
    ///
    /// Fails with [`StoreErrorKind::Open`] for a URL Redis does not accept or a refused login,
    /// `Unavailable` when the server does not answer within 5 s, `Version` or `Corrupt` for a
    /// database another program or a newer tightfit laid out.
    pub fn open(url: &str) -> Result<RedisStore, StoreError> {
        let name = redacted(url);
        let open_error = |reason: String| StoreError::new(StoreErrorKind::Open, name.clone(), reason);
        if url.starts_with("rediss:") {
            return Err(open_error(
                "TLS (rediss://) is not supported by this build; use redis:// on a trusted network".into(),
            ));
        }
        let client = Client::open(url).map_err(|e| open_error(format!("not a Redis URL: {e}")))?;
        let mut connection =
            connect(&client).map_err(|f| classify(&name, "cannot connect", &f.0, StoreErrorKind::Open))?;
        check_version(&mut connection, &name)?;
        Ok(RedisStore { client, pool: Pool::new(connection), name })
    }

    fn run<T>(
        &self,
        doing: &str,
        mut call: impl FnMut(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        self.pool
            .run(|| connect(&self.client), |connection| call(connection).map_err(Failure))
            .map_err(|f| classify(&self.name, doing, &f.0, StoreErrorKind::Other))
    }
}

impl Store for RedisStore {
    /// Never answers at once: every read is a round trip over the network.
    fn try_load(&self, _key: &str) -> Option<Result<Option<Vec<u8>>, StoreError>> {
        None
    }

    /// One `GET`.
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = redis_key(key);
        self.run(&format!("cannot load {key}"), |c| redis::cmd("GET").arg(&key).query(c))
    }

    /// One `SET`, atomic.
    fn save(&self, key: &str, checkpoint: &[u8]) -> Result<(), StoreError> {
        let key = redis_key(key);
        self.run(&format!("cannot save {key}"), |c| {
            redis::cmd("SET").arg(&key).arg(checkpoint).query::<()>(c)
        })
    }

    /// One `DEL`.
    fn remove(&self, key: &str) -> Result<bool, StoreError> {
        let key = redis_key(key);
        self.run(&format!("cannot remove {key}"), |c| redis::cmd("DEL").arg(&key).query::<u64>(c))
            .map(|n| n > 0)
    }

    /// The URL, without its password.
    fn describe(&self) -> String {
        self.name.clone()
    }
}

fn connect(client: &Client) -> Result<Connection, Failure> {
    let connection = client.get_connection_with_timeout(TIMEOUT).map_err(Failure)?;
    connection.set_read_timeout(Some(TIMEOUT)).map_err(Failure)?;
    connection.set_write_timeout(Some(TIMEOUT)).map_err(Failure)?;
    Ok(connection)
}

/// Writes the layout version into an empty database (`SET NX`: of two replicas opening at
/// once, one writes it and both read it), and refuses any other value.
fn check_version(connection: &mut Connection, name: &str) -> Result<(), StoreError> {
    let version = crate::SCHEMA_VERSION.to_string();
    let cx = |e: RedisError| classify(name, "cannot read the layout version", &e, StoreErrorKind::Open);
    let _: Option<String> =
        redis::cmd("SET").arg(VERSION_KEY).arg(&version).arg("NX").query(connection).map_err(cx)?;
    let found: Option<Vec<u8>> = redis::cmd("GET").arg(VERSION_KEY).query(connection).map_err(cx)?;
    let found = found.unwrap_or_default();
    match std::str::from_utf8(&found).ok().and_then(|s| s.parse::<i32>().ok()) {
        Some(v) if v == crate::SCHEMA_VERSION => Ok(()),
        Some(v) if v > crate::SCHEMA_VERSION => Err(StoreError::new(
            StoreErrorKind::Version,
            name,
            format!("written by a newer tightfit (layout version {v}; this build knows {version})"),
        )),
        _ => Err(StoreError::new(
            StoreErrorKind::Corrupt,
            name,
            format!(
                "{VERSION_KEY} holds {:?}, not a tightfit layout version: this database is another program's",
                String::from_utf8_lossy(&found)
            ),
        )),
    }
}

/// A Redis error as the store's error: what was being done, and the kind callers act on.
pub(crate) fn classify(name: &str, doing: &str, e: &RedisError, otherwise: StoreErrorKind) -> StoreError {
    let kind = match e.code() {
        Some("READONLY") => StoreErrorKind::ReadOnly,
        Some("NOAUTH" | "WRONGPASS" | "NOPERM") => StoreErrorKind::Open,
        Some("WRONGTYPE") => StoreErrorKind::Corrupt,
        Some("LOADING" | "BUSY" | "MASTERDOWN" | "TRYAGAIN") => StoreErrorKind::Unavailable,
        _ if e.is_io_error() || e.is_timeout() || e.is_connection_refusal() || e.is_connection_dropped() => {
            StoreErrorKind::Unavailable
        }
        _ => otherwise,
    };
    let reason = match kind {
        StoreErrorKind::Unavailable => format!("{doing}: the server did not answer ({e})"),
        StoreErrorKind::Corrupt => {
            format!("{doing}: the key holds something other than a tightfit value ({e})")
        }
        _ => format!("{doing}: {e}"),
    };
    StoreError::new(kind, name, reason)
}
