//! `tightfit serve`: an HTTP proxy in front of OpenAI- and Anthropic-style APIs that fits every
//! request on its way, so a platform team gets context management without touching agent code
//! (point `OPENAI_BASE_URL` or `ANTHROPIC_BASE_URL` at it).
//!
//! - `POST /v1/chat/completions`, `POST /v1/responses` (to the OpenAI upstream) and
//!   `POST /v1/messages`: the request's conversation is
//!   fitted by a [session](tightfit::session) (the cut stays put across turns, so the
//!   provider's prompt cache keeps hitting), then forwarded; a request with nothing to do goes
//!   on byte for byte. Headers say what was done: `x-tightfit-tokens-before`, `-after`,
//!   `-actions`, `-epoch`, `-policy`, `-request-id`. A request that cannot be made to fit is
//!   answered as the provider answers an overflow (so clients that compact on it still do).
//! - `POST /v1/messages/count_tokens`: answered by the upstream, the proxy's count in
//!   `x-tightfit-input-tokens`.
//! - Any other path: passed to the upstream unchanged.
//! - `GET /healthz`, `GET /metrics` (Prometheus).
//!
//! The policy of a request is its `x-tightfit-policy` header (a preset, or `off`), else its
//! API key's, else its route's, else the default (`cache`). Its conversation is the
//! `x-tightfit-session` header's, else the one its first messages start, always within its
//! credentials (a keyed hash: two tenants never share one, and no key is stored). Responses,
//! streamed or not, pass chunk by chunk as they come. The wire handling is this crate's;
//! fitting, sessions and counting are the engine's.

pub mod config;
pub mod errors;
mod fitting;
mod forward;
pub mod headers;
pub mod metrics;
mod parsed;
mod server;
pub mod usage;

use std::net::SocketAddr;
use std::sync::Arc;

use tightfit::store::{Store, StoreError};
use tightfit_store::Peeker;
use tokio::net::TcpListener;

pub use config::{Config, ConfigError, StoreSpec};

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The configuration is wrong (the key is named).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store could not be opened.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP client or the runtime could not be made.
    #[error("cannot start: {0}")]
    Start(String),
}

/// A proxy serving in the background (for tests, benchmarks and embedding).
#[derive(Debug)]
pub struct Running {
    /// The address it listens on (the port chosen, for `:0`).
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Stops accepting, lets the requests in flight finish (streams too), and returns.
    pub async fn stop(self) -> std::io::Result<()> {
        let _ = self.stop.send(());
        self.task.await.map_err(std::io::Error::other)?
    }
}

/// Opens the store `spec` names, on a blocking thread (a network store's client blocks, and a
/// PostgreSQL client runs a runtime of its own, which tokio forbids on its worker threads).
pub async fn open_store(spec: StoreSpec) -> Result<Arc<dyn Store>, ProxyError> {
    tokio::task::spawn_blocking(move || spec.open())
        .await
        .map_err(|e| ProxyError::Start(format!("opening the store: {e}")))?
        .map_err(ProxyError::Store)
}

/// How warm turns on the store `spec` are answered in place: reading it directly when it
/// reads locally, else through an async [`Peeker`] beside the store's own client. A peeker
/// that cannot connect (the store just opened, so rarely) leaves every turn to the blocking
/// pool, with a warning: slower, never wrong.
async fn in_place_on(spec: &StoreSpec) -> server::InPlace {
    if spec.reads_locally() {
        return server::InPlace::Local;
    }
    match Peeker::open(spec).await {
        Ok(Some(peeker)) => server::InPlace::Peeked(peeker),
        Ok(None) => server::InPlace::Local,
        Err(e) => {
            tracing::warn!(error = %e, "warm turns go to the blocking pool: the store cannot be read asynchronously");
            server::InPlace::Never
        }
    }
}

/// Starts the proxy on the current tokio runtime: checks `config`, opens its store, binds
/// its address and serves in a background task until [`Running::stop`].
pub async fn start(config: Config) -> Result<Running, ProxyError> {
    config.check()?;
    let addr = config.listen_addr()?;
    let spec = config::store_spec(&config.store)?;
    let store = open_store(spec.clone()).await?;
    let secret = std::env::var(&config.session.secret_env).ok().filter(|s| !s.is_empty());
    let hasher = headers::KeyHasher::new(secret.as_deref().map(str::as_bytes));
    let fitting = fitting::Fitting::new(
        store,
        config.session_settings(),
        config.policy.max_input_tokens,
        hasher,
        config.limits.reuse_bytes,
    );
    let client_keys: Vec<String> = std::env::var(&config.auth.client_keys_env)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect();
    let in_place = in_place_on(&spec).await;
    let app = server::App::new(config, fitting, &client_keys, in_place)
        .map_err(|e| ProxyError::Start(e.to_string()))?;
    let listener = TcpListener::bind(addr).await.map_err(|source| ProxyError::Listen { addr, source })?;
    let addr = listener.local_addr().map_err(|source| ProxyError::Listen { addr, source })?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let router = Arc::new(app).router();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Ok(Running { addr, stop, task })
}

/// The runtime `tightfit serve` runs the proxy on: tokio's, its blocking pool bounded by
/// `limits.blocking_threads` (see there why). For a caller (a benchmark, an embedding
/// service) that wants the proxy as it runs.
pub fn runtime(limits: &config::Limits) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(limits.blocking_threads())
        .enable_all()
        .build()
}

/// Runs the proxy until SIGINT or SIGTERM (then finishes the requests in flight): what
/// `tightfit serve` calls. Logs go to standard error as `config.log` says.
pub fn run(config: Config) -> Result<(), ProxyError> {
    config.check()?;
    init_logs(&config.log);
    let runtime = runtime(&config.limits).map_err(|e| ProxyError::Start(e.to_string()))?;
    runtime.block_on(async {
        let running = start(config).await?;
        tracing::info!(addr = %running.addr, "tightfit proxy listening");
        shutdown_signal().await;
        tracing::info!("shutting down: finishing the requests in flight");
        running.stop().await.map_err(|e| ProxyError::Start(e.to_string()))
    })
}

fn init_logs(log: &config::LogConfig) {
    let level: tracing::Level = log.level.parse().unwrap_or(tracing::Level::INFO);
    let builder =
        tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr).with_ansi(false);
    // a second call (a test that runs the proxy twice) keeps the first subscriber
    let _ = if log.format == "json" { builder.json().try_init() } else { builder.try_init() };
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => {
                let _ = interrupt.await;
                return;
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
