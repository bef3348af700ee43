//! `tightfit serve`: reads the proxy's configuration and flags, then runs it (the proxy is
//! `tightfit-proxy`'s; this only parses).

use std::path::Path;

use tightfit_proxy::{Config, ConfigError};

/// Runs the proxy until it is stopped.
pub fn run(
    config: Option<&Path>,
    listen: Option<String>,
    upstreams: &[String],
    store: Option<String>,
) -> anyhow::Result<bool> {
    let mut config = match config {
        Some(path) => Config::from_file(path)?,
        None => Config::default(),
    };
    if let Some(listen) = listen {
        config.listen = listen;
    }
    if let Some(store) = store {
        config.store = store;
    }
    for upstream in upstreams {
        let (api, url) = upstream.split_once('=').ok_or_else(|| flag_error(upstream))?;
        match api {
            "openai" => config.upstream.openai = Some(url.to_string()),
            "anthropic" => config.upstream.anthropic = Some(url.to_string()),
            _ => return Err(flag_error(upstream).into()),
        }
    }
    tightfit_proxy::run(config)?;
    Ok(true)
}

fn flag_error(value: &str) -> ConfigError {
    ConfigError { key: "--upstream".into(), reason: format!("{value:?} is not openai=URL or anthropic=URL") }
}
