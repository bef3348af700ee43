//! The proxy's configuration: a TOML file (every key below, all optional), then the command
//! line's flags over it. An unknown key, a value of the wrong type or a value out of range is
//! an error naming the key.
//!
//! ```toml
//! listen = "127.0.0.1:8787"          # where the proxy listens
//! store = "sqlite:tightfit-proxy.db" # sessions' checkpoints and offloaded content: sqlite:FILE, FILE,
//!                                     # memory, redis://[:PASSWORD@]HOST[:PORT][/DB] or
//!                                     # postgres://USER[:PASSWORD]@HOST[:PORT]/DB (replicas on several machines)
//!
//! [upstream]                         # where requests go: from here only, never from a request
//! openai = "https://api.openai.com"  # /v1/chat/completions and OpenAI-style other paths
//! anthropic = "https://api.anthropic.com"  # /v1/messages, /v1/messages/count_tokens
//!
//! [policy]
//! default = "cache"                  # a preset name, or "off" (forward as it came)
//! openai = "cache"                   # per route (optional)
//! anthropic = "cache"
//! # max_input_tokens = 32000       # fit every request to at most this many input tokens
//! [policy.api_keys]                  # per API key: the SHA-256 (hex) of the key, not the key
//! "3f2a...e9" = "middle-out"
//!
//! [session]
//! low_water = 0.6                    # a compaction cuts down to this share of the budget
//! high_water = 1.0                   # and happens once past this share
//! cache_breakpoints = false          # mark Anthropic cache breakpoints
//! summarize = true                   # leave a summary of what a compaction removed
//! offload = true                     # and keep it, recallable, in the store
//! secret_env = "TIGHTFIT_SESSION_SECRET"   # the variable holding the key of session keys' hash
//!
//! [limits]
//! max_body_bytes = 33554432          # a request body past this is answered 413
//! max_concurrency = 512              # requests in flight; past it, 503 (Anthropic: 529)
//! reuse_bytes = 67108864             # conversations' last request bodies held, read, so that the
//!                                     # next turn reads only its new messages (~3x in memory); 0: none
//! blocking_threads = 0               # threads that fit requests and call a blocking store;
//!                                     # 0: four per core, at least 8
//!
//! [timeouts]
//! connect_secs = 10                  # connecting to the upstream
//! response_secs = 600                # until the upstream's response headers
//! idle_secs = 300                    # between two chunks of the upstream's body
//!
//! [auth]
//! client_keys_env = "TIGHTFIT_CLIENT_KEYS" # if set: comma-separated keys a client must send in x-tightfit-key
//!
//! [log]
//! format = "text"                    # or "json"
//! level = "info"                     # error, warn, info, debug, trace
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use tightfit::presets;
pub use tightfit_store::StoreSpec;

/// A configuration error, naming the key (or the file, for one that cannot be read).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct ConfigError {
    /// The key (`upstream.openai`), or the file.
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ConfigError {
    fn new(key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
        ConfigError { key: key.into(), reason: reason.into() }
    }
}

/// The whole configuration. [`Config::default`] is what `tightfit serve` runs without a file:
/// listen on loopback, no upstream (every route answers that none is configured until one is
/// given), sessions in `tightfit-proxy.db`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The address to listen on.
    pub listen: String,
    /// Where the sessions' state lives: `sqlite:FILE` (or a bare file path), or `memory`.
    pub store: String,
    /// The upstreams.
    pub upstream: Upstreams,
    /// Which policy fits a request.
    pub policy: PolicyConfig,
    /// The sessions' epochs.
    pub session: SessionConfig,
    /// Bounds on what the proxy accepts.
    pub limits: Limits,
    /// Bounds on how long it waits for an upstream.
    pub timeouts: Timeouts,
    /// Who may use it.
    pub auth: Auth,
    /// Its logs.
    pub log: LogConfig,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: "127.0.0.1:8787".into(),
            store: "sqlite:tightfit-proxy.db".into(),
            upstream: Upstreams::default(),
            policy: PolicyConfig::default(),
            session: SessionConfig::default(),
            limits: Limits::default(),
            timeouts: Timeouts::default(),
            auth: Auth::default(),
            log: LogConfig::default(),
        }
    }
}

/// `[upstream]`: base URLs (scheme, host, port, optional path prefix; the request's path is
/// appended).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstreams {
    /// For `/v1/chat/completions` and the OpenAI-style paths passed through.
    pub openai: Option<String>,
    /// For `/v1/messages`, `/v1/messages/count_tokens` and the Anthropic-style paths.
    pub anthropic: Option<String>,
}

/// `[policy]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// The policy of a request no other rule names.
    pub default: String,
    /// The policy of `/v1/chat/completions`, if not the default.
    pub openai: Option<String>,
    /// The policy of `/v1/messages`, if not the default.
    pub anthropic: Option<String>,
    /// Per API key: the lower-case hex SHA-256 of the key (as `sha256sum` prints it) → the
    /// policy. A request's `x-tightfit-policy` header still wins.
    pub api_keys: BTreeMap<String, String>,
    /// The most input tokens a request is fitted to, when less than its model's input limit
    /// minus the output it reserves (`max_tokens`): a cap on what each turn costs. None: the
    /// model's limit.
    pub max_input_tokens: Option<usize>,
}

impl Default for PolicyConfig {
    fn default() -> PolicyConfig {
        PolicyConfig {
            default: "cache".into(),
            openai: None,
            anthropic: None,
            api_keys: BTreeMap::new(),
            max_input_tokens: None,
        }
    }
}

/// `[session]`: see `tightfit::session::Settings`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionConfig {
    /// A compaction cuts down to this share of the budget.
    pub low_water: f64,
    /// A compaction happens once the output would pass this share of the budget.
    pub high_water: f64,
    /// Mark Anthropic prompt-cache breakpoints on requests that carry none.
    pub cache_breakpoints: bool,
    /// Leave a summary of what a compaction removed.
    pub summarize: bool,
    /// Keep what a compaction removed in the store, recallable by handle.
    pub offload: bool,
    /// The environment variable holding the secret that keys the hash of session keys (API
    /// keys go into it, never into the store). Replicas sharing a store must share it; unset,
    /// a fixed key is used (the hash still never reveals an API key).
    pub secret_env: String,
}

impl Default for SessionConfig {
    fn default() -> SessionConfig {
        let settings = tightfit::session::Settings::default();
        SessionConfig {
            low_water: settings.low_water,
            high_water: settings.high_water,
            cache_breakpoints: settings.cache_breakpoints,
            summarize: settings.summarize,
            offload: settings.offload,
            secret_env: "TIGHTFIT_SESSION_SECRET".into(),
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// The largest request body accepted (bytes); larger ones are answered 413.
    pub max_body_bytes: usize,
    /// The most requests in flight (a stream counts until it ends); past it, new requests are
    /// answered 503 (Anthropic's overloaded 529) at once rather than queued.
    pub max_concurrency: usize,
    /// The most bytes of request bodies held, one per conversation with its messages read
    /// (about three times that in memory), so that a conversation's next turn reads only its
    /// new messages; past it the longest unused goes. 0 holds none: every turn is read whole.
    pub reuse_bytes: usize,
    /// The most threads that fit requests and call a blocking store (tokio's blocking pool);
    /// 0: four per core, at least 8. Why a bound: fitting is work for a core, so more threads
    /// than a few a core only queue it; and each thread keeps its own token caches, which go
    /// when the thread ends. Tokio ends a thread idle for 10 s, so after a burst, threads
    /// that went idle together end together; with tokio's default of 512, a 64-client burst
    /// left about as many threads, whose ending stalled every request in flight 10 s later
    /// for about a millisecond (the overhead bench's one-client rows).
    pub blocking_threads: usize,
}

impl Limits {
    /// [`blocking_threads`](Limits::blocking_threads), with 0 resolved for this machine.
    pub fn blocking_threads(&self) -> usize {
        match self.blocking_threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()).saturating_mul(4).max(8),
            n => n,
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_body_bytes: 32 << 20, max_concurrency: 512, reuse_bytes: 64 << 20, blocking_threads: 0 }
    }
}

/// `[timeouts]`, in seconds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// Connecting to the upstream.
    pub connect_secs: f64,
    /// From sending the request to the upstream's response headers (a model's time to first
    /// token, for a stream).
    pub response_secs: f64,
    /// The longest pause between two chunks of the upstream's body; past it the response is
    /// cut (the client sees an incomplete body, as from the upstream itself).
    pub idle_secs: f64,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts { connect_secs: 10.0, response_secs: 600.0, idle_secs: 300.0 }
    }
}

impl Timeouts {
    fn duration(secs: f64, key: &str) -> Result<Duration, ConfigError> {
        Duration::try_from_secs_f64(secs).ok().filter(|d| !d.is_zero()).ok_or_else(|| {
            ConfigError::new(format!("timeouts.{key}"), format!("{secs} is not a positive number of seconds"))
        })
    }

    /// `connect_secs` as a duration.
    pub fn connect(&self) -> Duration {
        Duration::from_secs_f64(self.connect_secs)
    }

    /// `response_secs` as a duration.
    pub fn response(&self) -> Duration {
        Duration::from_secs_f64(self.response_secs)
    }

    /// `idle_secs` as a duration.
    pub fn idle(&self) -> Duration {
        Duration::from_secs_f64(self.idle_secs)
    }
}

/// `[auth]`: proxy authentication, off unless client keys are given.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Auth {
    /// The environment variable holding the client keys (comma-separated). When it is set and
    /// not empty, a request must carry one of them in `x-tightfit-key` (stripped before the
    /// request goes on); else 401.
    pub client_keys_env: String,
}

impl Default for Auth {
    fn default() -> Auth {
        Auth { client_keys_env: "TIGHTFIT_CLIENT_KEYS".into() }
    }
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `text` or `json` (one object a line).
    pub format: String,
    /// The most verbose level logged.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig { format: "text".into(), level: "info".into() }
    }
}

impl Config {
    /// Reads a TOML configuration file.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(path.display().to_string(), format!("cannot read it: {e}")))?;
        Config::from_toml(&text).map_err(|e| ConfigError::new(path.display().to_string(), e.to_string()))
    }

    /// Reads a TOML configuration (checked: see [`Config::check`]).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        // toml's message names the key and shows the line
        let config: Config =
            toml::from_str(text).map_err(|e| ConfigError::new("config", e.to_string().trim_end()))?;
        config.check()?;
        Ok(config)
    }

    /// Checks every value a type does not: addresses, URLs, policy names, shares, bounds.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.listen_addr()?;
        for (key, url) in
            [("upstream.openai", &self.upstream.openai), ("upstream.anthropic", &self.upstream.anthropic)]
        {
            if let Some(url) = url {
                check_upstream(key, url)?;
            }
        }
        check_policy("policy.default", &self.policy.default)?;
        if let Some(p) = &self.policy.openai {
            check_policy("policy.openai", p)?;
        }
        if let Some(p) = &self.policy.anthropic {
            check_policy("policy.anthropic", p)?;
        }
        for (hash, policy) in &self.policy.api_keys {
            let key = format!("policy.api_keys.{hash}");
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                return Err(ConfigError::new(
                    key,
                    "not the SHA-256 of a key (64 lower-case hex digits, as `printf %s \"$KEY\" | sha256sum` prints)",
                ));
            }
            check_policy(&key, policy)?;
        }
        if self.policy.max_input_tokens == Some(0) {
            return Err(ConfigError::new("policy.max_input_tokens", "must be at least 1"));
        }
        let settings = self.session_settings();
        settings.check().map_err(|e| ConfigError::new(format!("session.{}", e.key), e.reason))?;
        if self.limits.max_body_bytes == 0 {
            return Err(ConfigError::new("limits.max_body_bytes", "must be at least 1"));
        }
        if self.limits.max_concurrency == 0 {
            return Err(ConfigError::new("limits.max_concurrency", "must be at least 1"));
        }
        Timeouts::duration(self.timeouts.connect_secs, "connect_secs")?;
        Timeouts::duration(self.timeouts.response_secs, "response_secs")?;
        Timeouts::duration(self.timeouts.idle_secs, "idle_secs")?;
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(ConfigError::new("log.format", format!("{:?} is not text or json", self.log.format)));
        }
        if self.log.level.parse::<tracing::Level>().is_err() {
            return Err(ConfigError::new(
                "log.level",
                format!("{:?} is not one of error, warn, info, debug, trace", self.log.level),
            ));
        }
        store_spec(&self.store)?;
        Ok(())
    }

    /// `listen` as an address.
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.listen.parse().map_err(|_| {
            ConfigError::new("listen", format!("{:?} is not an address like 127.0.0.1:8787", self.listen))
        })
    }

    /// The sessions' settings. A store other processes can open is read back every turn
    /// (`shared_store`), so replicas replay each other's compactions.
    pub fn session_settings(&self) -> tightfit::session::Settings {
        let shared = store_spec(&self.store).is_ok_and(|spec| spec.is_shared());
        tightfit::session::Settings::default()
            .with_shared_store(shared)
            .with_marks(self.session.low_water, self.session.high_water)
            .with_cache_breakpoints(self.session.cache_breakpoints)
            .with_summarize(self.session.summarize)
            .with_offload(self.session.offload)
    }
}

/// The store's address, as the configuration's `store` key holds it.
pub(crate) fn store_spec(store: &str) -> Result<StoreSpec, ConfigError> {
    StoreSpec::parse(store).map_err(|e| ConfigError::new("store", e.reason))
}

fn check_upstream(key: &str, url: &str) -> Result<(), ConfigError> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| ConfigError::new(key, format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(ConfigError::new(key, format!("{url:?} is not an http(s) URL with a host")));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(ConfigError::new(key, format!("{url:?}: a base URL takes no query or fragment")));
    }
    Ok(())
}

/// The policy names a configuration or a request header may give: the presets, and `off`.
pub fn check_policy(key: &str, name: &str) -> Result<(), ConfigError> {
    if name == "off" || presets::NAMES.contains(&name) {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            format!("unknown policy {name:?} (expected off or one of {})", presets::NAMES.join(", ")),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_reads() {
        let doc: String = include_str!("config.rs")
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| l.strip_prefix("//! ").unwrap_or("").to_string() + "\n")
            .collect();
        let doc = doc.replace("\"3f2a...e9\"", &format!("\"{}\"", "ab".repeat(32)));
        let config = Config::from_toml(&doc).unwrap();
        assert_eq!(config.upstream.anthropic.as_deref(), Some("https://api.anthropic.com"));
        assert_eq!(config.policy.api_keys.values().next().map(String::as_str), Some("middle-out"));
        assert_eq!(config.policy.openai.as_deref(), Some("cache"));
        // every other documented value is the default
        let defaults = Config::default();
        assert_eq!(
            (
                &config.listen,
                &config.store,
                &config.session,
                &config.limits,
                &config.timeouts,
                &config.auth,
                &config.log
            ),
            (
                &defaults.listen,
                &defaults.store,
                &defaults.session,
                &defaults.limits,
                &defaults.timeouts,
                &defaults.auth,
                &defaults.log
            )
        );
        assert_eq!(config.policy.default, defaults.policy.default);
    }

    #[test]
    fn the_blocking_pool_is_bounded_by_default_and_as_configured() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let default = Config::from_toml("").unwrap().limits.blocking_threads();
        // a few a core, never tokio's 512
        assert!((8..=4 * cores.max(2)).contains(&default), "{default} threads for {cores} cores");
        assert_eq!(Config::from_toml("[limits]\nblocking_threads = 3").unwrap().limits.blocking_threads(), 3);
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("listen = \"nowhere\"", "listen"),
            ("[upstream]\nopenai = \"ftp://x\"", "upstream.openai"),
            ("[policy]\ndefault = \"shrink\"", "policy.default"),
            ("[policy.api_keys]\nsk-123 = \"cache\"", "policy.api_keys.sk-123"),
            ("[session]\nlow_water = 1.5", "session.low_water"),
            ("[limits]\nmax_concurrency = 0", "limits.max_concurrency"),
            ("[timeouts]\nidle_secs = -1", "timeouts.idle_secs"),
            ("[log]\nlevel = \"loud\"", "log.level"),
            ("store = \"mysql://localhost\"", "store"),
            ("store = \"sqlite:\"", "store"),
        ];
        for (text, key) in cases {
            let err = Config::from_toml(text).unwrap_err();
            assert!(err.key.starts_with(key), "{text}: {err}");
        }
        // serde's own: the unknown key is named
        let err = Config::from_toml("[limits]\nmax_body = 1").unwrap_err();
        assert!(err.reason.contains("max_body"), "{err}");
    }
}
