//! The PostgreSQL store: one table of checkpoints and offloaded content, one statement per
//! call, for replicas on several machines.

use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::error::SqlState;
use postgres::{Client, Config, NoTls, Statement};
use tightfit::session::{Store, StoreError, StoreErrorKind};

use crate::pool::{Broken, Pool};

/// How long connecting, a statement, and waiting for a lock may take (unless the URL sets its
/// own `connect_timeout` or `options`).
const TIMEOUT: Duration = Duration::from_secs(5);
/// The advisory lock that makes two replicas creating the tables at once take turns.
const SCHEMA_LOCK: i64 = 0x5446_4954; // "TFIT"

/// Session checkpoints and offloaded content in PostgreSQL, in two tables of the connection's
/// schema (its `search_path`):
///
/// ```sql
/// CREATE TABLE tightfit_schema (version INTEGER NOT NULL);  -- one row: the layout version
/// CREATE TABLE tightfit_checkpoints (
///     key TEXT PRIMARY KEY,                 -- the conversation key, or offload/<handle>
///     checkpoint BYTEA NOT NULL,            -- the bytes, kept as given
///     updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
/// );
/// ```
///
/// Opening creates them when neither exists (under an advisory lock, so replicas starting
/// together create them once), and refuses a database where `tightfit_schema` holds a newer
/// version ([`StoreErrorKind::Version`]) or where a `tightfit_checkpoints` table exists
/// without it (`Corrupt`: another program's table). A user without `CREATE` can use tables
/// an administrator made with the statements above.
///
/// Every save is one `INSERT … ON CONFLICT DO UPDATE`, atomic, so concurrent writers of one
/// key leave one whole write (the last wins). Each connection prepares its three statements
/// once; connections are kept for reuse (up to 16 idle), and one broken by a server restart
/// is replaced on the next call. Plain TCP or a Unix socket: TLS (`sslmode=require`) is not
/// in this build.
#[derive(Debug)]
pub struct PostgresStore {
    config: Config,
    pool: Pool<Connection>,
    name: String,
}

/// A connection and its prepared statements.
struct Connection {
    client: Client,
    load: Statement,
    save: Statement,
    remove: Statement,
}

/// A PostgreSQL error, with whether it broke the connection.
struct Failure(postgres::Error);

impl Broken for Failure {
    fn is_broken(&self) -> bool {
        unreachable(&self.0)
            || self
                .0
                .code()
                .is_some_and(|code| *code == SqlState::ADMIN_SHUTDOWN || *code == SqlState::CRASH_SHUTDOWN)
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/db[?…]`, or
    /// the `host=… dbname=…` form), creates the tables when they are missing and checks their
    /// layout version.
    ///
    /// Fails with [`StoreErrorKind::Open`] for a URL PostgreSQL does not accept, a refused
    /// login or a missing database, `Unavailable` when the server does not answer within 5 s,
    /// `Version` or `Corrupt` for tables a newer tightfit or another program made.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let (config, name) = settings(url, "tightfit")?;
        let config = Config::from(config);
        let mut client =
            config.connect(NoTls).map_err(|e| classify(&name, "cannot connect", &e, StoreErrorKind::Open))?;
        prepare_schema(&mut client, &name)?;
        let first = with_statements(client)
            .map_err(|e| classify(&name, "cannot prepare", &e, StoreErrorKind::Open))?;
        Ok(PostgresStore { config, pool: Pool::new(first), name })
    }

    fn run<T>(
        &self,
        doing: &str,
        mut call: impl FnMut(&mut Connection) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let connect = || self.config.connect(NoTls).and_then(with_statements).map_err(Failure);
        self.pool
            .run(connect, |connection| call(connection).map_err(Failure))
            .map_err(|f| classify(&self.name, doing, &f.0, StoreErrorKind::Other))
    }
}

impl Store for PostgresStore {
    /// Never answers at once: every read is a round trip over the network.
    fn try_load(&self, _key: &str) -> Option<Result<Option<Vec<u8>>, StoreError>> {
        None
    }

    /// One indexed `SELECT`.
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.run(&format!("cannot load {key}"), |c| {
            Ok(c.client.query_opt(&c.load, &[&key])?.map(|row| row.get::<_, Vec<u8>>(0)))
        })
    }

    /// One `INSERT … ON CONFLICT DO UPDATE`.
    fn save(&self, key: &str, checkpoint: &[u8]) -> Result<(), StoreError> {
        self.run(&format!("cannot save {key}"), |c| {
            c.client.execute(&c.save, &[&key, &checkpoint]).map(|_| ())
        })
    }

    /// One `DELETE`.
    fn remove(&self, key: &str) -> Result<bool, StoreError> {
        self.run(&format!("cannot remove {key}"), |c| c.client.execute(&c.remove, &[&key]).map(|n| n > 0))
    }

    /// `postgres://user@host:port/db`, never the password.
    fn describe(&self) -> String {
        self.name.clone()
    }
}

impl Drop for PostgresStore {
    /// Closes the idle connections on a thread of their own: the synchronous client closes by
    /// running its own small runtime, which tokio forbids on a thread that drives async tasks
    /// (the proxy may drop the store there).
    fn drop(&mut self) {
        let idle = self.pool.drain();
        if !idle.is_empty() {
            let _ = std::thread::spawn(move || drop(idle)).join();
        }
    }
}

fn with_statements(mut client: Client) -> Result<Connection, postgres::Error> {
    let load = client.prepare("SELECT checkpoint FROM tightfit_checkpoints WHERE key = $1")?;
    let save = client.prepare(
        "INSERT INTO tightfit_checkpoints (key, checkpoint, updated_at) VALUES ($1, $2, now())
         ON CONFLICT (key) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, updated_at = EXCLUDED.updated_at",
    )?;
    let remove = client.prepare("DELETE FROM tightfit_checkpoints WHERE key = $1")?;
    Ok(Connection { client, load, save, remove })
}

/// Creates the tables when neither exists, then checks the layout version.
fn prepare_schema(client: &mut Client, name: &str) -> Result<(), StoreError> {
    let cx = |doing: &'static str| move |e: postgres::Error| classify(name, doing, &e, StoreErrorKind::Open);
    let tables =
        "SELECT to_regclass('tightfit_schema') IS NOT NULL, to_regclass('tightfit_checkpoints') IS NOT NULL";
    let row = client.query_one(tables, &[]).map_err(cx("cannot look for the tables"))?;
    let (versioned, checkpoints): (bool, bool) = (row.get(0), row.get(1));
    if !versioned {
        if checkpoints {
            return Err(foreign(name, "a table tightfit_checkpoints exists without tightfit_schema"));
        }
        // a session lock, taken before the transaction that looks again: a transaction begun
        // earlier could still see the catalog as it was before another replica's commit
        client
            .execute("SELECT pg_advisory_lock($1)", &[&SCHEMA_LOCK])
            .map_err(cx("cannot create the tables"))?;
        let created = create_tables(client);
        let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK]);
        created.map_err(cx("cannot create the tables"))?;
        unlocked.map_err(cx("cannot create the tables"))?;
    }
    let versions: Vec<i32> = client
        .query("SELECT version FROM tightfit_schema", &[])
        .map_err(|e| match e.code() {
            Some(code) if *code == SqlState::UNDEFINED_COLUMN || *code == SqlState::DATATYPE_MISMATCH => {
                foreign(name, "the table tightfit_schema has no integer column version")
            }
            _ => classify(name, "cannot read the layout version", &e, StoreErrorKind::Open),
        })?
        .iter()
        .map(|row| row.try_get::<_, i32>(0))
        .collect::<Result<_, _>>()
        .map_err(|_| foreign(name, "the table tightfit_schema has no integer column version"))?;
    match versions[..] {
        [v] if v == crate::SCHEMA_VERSION => Ok(()),
        [v] if v > crate::SCHEMA_VERSION => Err(StoreError::new(
            StoreErrorKind::Version,
            name,
            format!(
                "written by a newer tightfit (layout version {v}; this build knows {})",
                crate::SCHEMA_VERSION
            ),
        )),
        _ => Err(foreign(name, &format!("tightfit_schema holds {versions:?}, not one layout version"))),
    }
}

/// Whether `e` is the server gone or silent (a closed connection, a socket error, a timeout)
/// rather than an answer.
fn unreachable(e: &postgres::Error) -> bool {
    use std::error::Error as _;
    e.is_closed()
        || e.source().is_some_and(|source| source.is::<std::io::Error>())
        // tokio-postgres's connect timeout has no source, only its message
        || (e.code().is_none() && e.to_string().starts_with("timeout"))
}

/// In one transaction: the tables, unless another replica made them meanwhile.
fn create_tables(client: &mut Client) -> Result<(), postgres::Error> {
    let mut transaction = client.transaction()?;
    let made: bool = transaction.query_one("SELECT to_regclass('tightfit_schema') IS NOT NULL", &[])?.get(0);
    if !made {
        transaction.batch_execute(&format!(
            "CREATE TABLE tightfit_schema (version INTEGER NOT NULL);
             INSERT INTO tightfit_schema (version) VALUES ({});
             CREATE TABLE tightfit_checkpoints (
                 key TEXT PRIMARY KEY,
                 checkpoint BYTEA NOT NULL,
                 updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
             );",
            crate::SCHEMA_VERSION
        ))?;
    }
    transaction.commit()
}

fn foreign(name: &str, what: &str) -> StoreError {
    StoreError::new(StoreErrorKind::Corrupt, name, format!("{what}: these tables are not a tightfit store"))
}

/// `postgres://user@host:port/db` from a configuration: what a person needs to find the
/// store, never the password.
/// The connection settings of the database at `url`, as every client of the store uses them
/// (the store's own, and the async peeker's), and its name for errors: TLS refused (this
/// build has none), and unless the URL says otherwise, a 5 s connect timeout, 5 s statement
/// and lock timeouts, and `application` as the application name.
pub(crate) fn settings(url: &str, application: &str) -> Result<(tokio_postgres::Config, String), StoreError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
        StoreError::new(StoreErrorKind::Open, crate::url::redacted(url), format!("not a PostgreSQL URL: {e}"))
    })?;
    let name = describe(&config);
    if config.get_ssl_mode() == SslMode::Require {
        return Err(StoreError::new(
            StoreErrorKind::Open,
            name,
            "TLS (sslmode=require) is not supported by this build; connect over a trusted network or a Unix socket",
        ));
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(TIMEOUT);
    }
    if config.get_options().is_none() {
        let millis = TIMEOUT.as_millis();
        config.options(format!("-c statement_timeout={millis} -c lock_timeout={millis}"));
    }
    if config.get_application_name().is_none() {
        config.application_name(application);
    }
    Ok((config, name))
}

fn describe(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    let db = config.get_dbname().or(config.get_user()).unwrap_or("postgres");
    format!("postgres://{user}{host}:{port}/{db}")
}

/// A PostgreSQL error as the store's error: what was being done, and the kind callers act on.
fn classify(name: &str, doing: &str, e: &postgres::Error, otherwise: StoreErrorKind) -> StoreError {
    let kind = match e.code() {
        Some(code)
            if *code == SqlState::READ_ONLY_SQL_TRANSACTION || *code == SqlState::INSUFFICIENT_PRIVILEGE =>
        {
            StoreErrorKind::ReadOnly
        }
        Some(code)
            if *code == SqlState::LOCK_NOT_AVAILABLE
                || *code == SqlState::T_R_DEADLOCK_DETECTED
                || *code == SqlState::QUERY_CANCELED =>
        {
            StoreErrorKind::Locked
        }
        Some(code) if *code == SqlState::UNDEFINED_TABLE => StoreErrorKind::Corrupt,
        Some(code)
            if *code == SqlState::INVALID_PASSWORD
                || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                || *code == SqlState::INVALID_CATALOG_NAME =>
        {
            StoreErrorKind::Open
        }
        Some(code)
            if *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
                || *code == SqlState::TOO_MANY_CONNECTIONS =>
        {
            StoreErrorKind::Unavailable
        }
        _ if unreachable(e) => StoreErrorKind::Unavailable,
        _ => otherwise,
    };
    let detail = e.as_db_error().map_or_else(|| e.to_string(), |db| db.message().to_string());
    let reason = match kind {
        StoreErrorKind::Unavailable => format!("{doing}: the server did not answer ({detail})"),
        StoreErrorKind::Corrupt => format!("{doing}: {detail} (the tightfit tables were changed or dropped)"),
        _ => format!("{doing}: {detail}"),
    };
    StoreError::new(kind, name, reason)
}
