//! What can go wrong when looking up a model or reading an override file.

use std::path::PathBuf;

/// An error from the model registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No model of the registry answers to `name`.
    ///
    /// `suggestions` holds up to three names that do, closest first (it may be empty).
    #[error("unknown model \"{name}\"{}", did_you_mean(suggestions))]
    Unknown {
        /// The name as given, without surrounding spaces.
        name: String,
        /// Names that resolve, closest to `name` first; at most three.
        suggestions: Vec<String>,
    },
    /// An override file could not be read.
    #[error("cannot read model override file {}", path.display())]
    ReadOverride {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// An override file was read but is not valid.
    ///
    /// `reason` starts with the key that is wrong, as in
    /// `model[0].context_window: expected a positive integer, found "big"`, or is the
    /// parser's message (with line and column) when the file is not valid TOML or JSON.
    #[error("model override file {}: {reason}", path.display())]
    OverrideFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        reason: String,
    },
    /// Override text given directly (not from a file) is not valid; `reason` is as for
    /// [`OverrideFile`](Self::OverrideFile).
    #[error("invalid model override: {reason}")]
    Override {
        /// What is wrong, naming the key.
        reason: String,
    },
    /// A models.dev snapshot given to [`refresh_table`](super::refresh_table) is not shaped
    /// as models.dev's `api.json`.
    #[error("invalid models.dev snapshot: {reason}")]
    Snapshot {
        /// What is wrong, naming the provider and model.
        reason: String,
    },
    /// A model table (as `data/models.json` is written) is not valid.
    #[error("invalid model table: {reason}")]
    Table {
        /// What is wrong.
        reason: String,
    },
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", suggestions.join(", "))
    }
}
