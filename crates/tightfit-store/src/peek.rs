//! Reading what a session needs of a network store to answer a turn in place, without
//! blocking a thread: the checkpoint's version and whether a checkpoint is there
//! ([`Peeked`]), in one round trip of an async client beside the store's own synchronous one.
//!
//! Why: the proxy answers a warm turn on the async worker that received it (a hop to the
//! blocking pool and back costs more than the turn), but [`RedisStore`](crate::RedisStore)
//! and [`PostgresStore`](crate::PostgresStore) block on every read, so their turns took the
//! hop. With a [`Peeker`] the worker awaits the two reads instead, then asks
//! [`Session::answer_appended_peeked`](tightfit::session::Session::answer_appended_peeked).
//! A peek never writes; what the store holds is written by the store itself.

use tightfit::session::{store_keys, Peeked, StoreError, StoreErrorKind};

use crate::StoreSpec;

/// An async reader of a Redis or PostgreSQL store's checkpoint versions (feature `peek`).
/// Cloning shares the connection. Costs one connection to the server per peeker.
#[derive(Clone)]
pub struct Peeker {
    client: Client,
    name: String,
}

impl std::fmt::Debug for Peeker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peeker").field("store", &self.name).finish_non_exhaustive()
    }
}

#[derive(Clone)]
enum Client {
    #[cfg(feature = "redis")]
    Redis(redis::aio::ConnectionManager),
    #[cfg(feature = "postgres")]
    Postgres(std::sync::Arc<postgres_peek::Reconnecting>),
}

impl Peeker {
    /// A peeker of the store `spec` names, connected; `None` for a store whose reads answer
    /// at once (in memory, an SQLite file: [`Store::try_load`](tightfit::session::Store::try_load)
    /// answers them). Call it on a tokio runtime: the connection is driven by a task of it.
    ///
    /// Fails with [`StoreErrorKind::Open`] or `Unavailable`, as opening the store does, or
    /// with the error of a first peek (a server that refuses the reads a peek makes: a Redis
    /// user allowed `GET` but not `EXISTS`), so that a peeker that cannot work is known at
    /// the start, not met on every turn.
    pub async fn open(spec: &StoreSpec) -> Result<Option<Peeker>, StoreError> {
        let peeker = match spec {
            StoreSpec::Memory | StoreSpec::Sqlite(_) => return Ok(None),
            #[cfg(feature = "redis")]
            StoreSpec::Redis(url) => redis_peek::open(url).await?,
            #[cfg(feature = "postgres")]
            StoreSpec::Postgres(url) => postgres_peek::open(url).await?,
            #[allow(unreachable_patterns)]
            StoreSpec::Redis(url) | StoreSpec::Postgres(url) => Err::<Peeker, _>(StoreError::new(
                StoreErrorKind::Open,
                crate::url::redacted(url),
                "this build has no client for this store",
            ))?,
        };
        peeker.peek("tightfit-peek-probe").await?;
        Ok(Some(peeker))
    }

    /// What conversation `key`'s session needs of the store now: one round trip. A broken
    /// connection fails this peek (`Unavailable`) and is made again by the next.
    pub async fn peek(&self, key: &str) -> Result<Peeked, StoreError> {
        let keys = store_keys(key);
        let (version, has_checkpoint) = match &self.client {
            #[cfg(feature = "redis")]
            Client::Redis(connection) => redis_peek::peek(connection.clone(), &keys, &self.name).await?,
            #[cfg(feature = "postgres")]
            Client::Postgres(client) => client.peek(&keys).await?,
        };
        Ok(Peeked { key: key.to_string(), version, has_checkpoint })
    }

    /// The store, as [`Store::describe`](tightfit::session::Store::describe) names it.
    pub fn describe(&self) -> &str {
        &self.name
    }
}

#[cfg(feature = "redis")]
mod redis_peek {
    use redis::aio::{ConnectionManager, ConnectionManagerConfig};
    use tightfit::session::{StoreError, StoreErrorKind, StoreKeys};

    use super::{Client, Peeker};
    use crate::redis_store::{classify, redis_key};
    use crate::url::redacted;

    /// How long connecting, or one answer, may take before a peek fails (the PostgreSQL
    /// peeker takes the store's own timeouts, from its connection settings).
    const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

    pub(super) async fn open(url: &str) -> Result<Peeker, StoreError> {
        let name = redacted(url);
        let client = redis::Client::open(url).map_err(|e| {
            StoreError::new(StoreErrorKind::Open, name.clone(), format!("not a Redis URL: {e}"))
        })?;
        // a peek that cannot be answered soon is not worth waiting for: the turn takes the
        // blocking path, whose client has the store's own timeouts
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(CONNECT_TIMEOUT))
            .set_number_of_retries(1);
        let connection = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|e| classify(&name, "cannot connect", &e, StoreErrorKind::Open))?;
        Ok(Peeker { client: Client::Redis(connection), name })
    }

    /// `GET` of the version and `EXISTS` of the checkpoint, pipelined.
    pub(super) async fn peek(
        mut connection: ConnectionManager,
        keys: &StoreKeys,
        name: &str,
    ) -> Result<(Option<Vec<u8>>, bool), StoreError> {
        redis::pipe()
            .get(redis_key(&keys.version))
            .exists(redis_key(&keys.checkpoint))
            .query_async(&mut connection)
            .await
            .map_err(|e| {
                classify(
                    name,
                    &format!("cannot read the version of {}", keys.checkpoint),
                    &e,
                    StoreErrorKind::Other,
                )
            })
    }
}

#[cfg(feature = "postgres")]
mod postgres_peek {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use tightfit::session::{StoreError, StoreErrorKind, StoreKeys};
    use tokio_postgres::{Client as PgClient, Config, NoTls, Statement};

    use super::{Client, Peeker};
    use crate::postgres_store::settings;

    /// Both reads in one statement: the version's bytes, and whether the checkpoint exists.
    const PEEK: &str = "SELECT (SELECT checkpoint FROM tightfit_checkpoints WHERE key = $1), \
                        EXISTS (SELECT 1 FROM tightfit_checkpoints WHERE key = $2)";

    /// A client that connects again after its connection broke (a server restart).
    pub(super) struct Reconnecting {
        config: Config,
        name: String,
        current: Mutex<Option<Arc<(PgClient, Statement)>>>,
        /// Whether a reconnection is under way (one at a time; peeks fail meanwhile).
        connecting: AtomicBool,
    }

    pub(super) async fn open(url: &str) -> Result<Peeker, StoreError> {
        let (config, name) = settings(url, "tightfit-peek")?;
        let client = Reconnecting {
            config,
            name: name.clone(),
            current: Mutex::new(None),
            connecting: AtomicBool::new(false),
        };
        let connected =
            client.connect().await.map_err(|e| StoreError::new(StoreErrorKind::Open, name.clone(), e))?;
        *client.lock() = Some(connected);
        Ok(Peeker { client: Client::Postgres(Arc::new(client)), name })
    }

    impl Reconnecting {
        fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<(PgClient, Statement)>>> {
            self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        async fn connect(&self) -> Result<Arc<(PgClient, Statement)>, String> {
            let (client, connection) =
                self.config.connect(NoTls).await.map_err(|e| format!("cannot connect: {e}"))?;
            // the connection's task ends when the client is dropped or the server goes
            tokio::spawn(connection);
            let statement = client.prepare(PEEK).await.map_err(|e| format!("cannot prepare: {e}"))?;
            Ok(Arc::new((client, statement)))
        }

        /// The connected client; when there is none or it closed, a reconnection is started
        /// in a task of its own (one at a time), and this peek fails at once: a caller that
        /// bounds its wait (the proxy) would otherwise cut every attempt short on a slow link.
        fn client(self: &Arc<Self>) -> Result<Arc<(PgClient, Statement)>, StoreError> {
            let current = self.lock().clone();
            if let Some(current) = current.filter(|c| !c.0.is_closed()) {
                return Ok(current);
            }
            if !self.connecting.swap(true, Ordering::AcqRel) {
                let this = Arc::clone(self);
                tokio::spawn(async move {
                    if let Ok(connected) = this.connect().await {
                        *this.lock() = Some(connected);
                    }
                    this.connecting.store(false, Ordering::Release);
                });
            }
            Err(StoreError::new(StoreErrorKind::Unavailable, self.name.clone(), "reconnecting"))
        }

        pub(super) async fn peek(
            self: &Arc<Self>,
            keys: &StoreKeys,
        ) -> Result<(Option<Vec<u8>>, bool), StoreError> {
            let client = self.client()?;
            let (client, statement) = &*client;
            let row = client.query_one(statement, &[&keys.version, &keys.checkpoint]).await.map_err(|e| {
                let kind =
                    if client.is_closed() { StoreErrorKind::Unavailable } else { StoreErrorKind::Other };
                StoreError::new(
                    kind,
                    self.name.clone(),
                    format!("cannot read the version of {}: {e}", keys.checkpoint),
                )
            })?;
            Ok((row.get::<_, Option<Vec<u8>>>(0), row.get::<_, bool>(1)))
        }
    }
}
