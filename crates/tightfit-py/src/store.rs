//! `tightfit.MemoryStore`, the `store=` argument (a path, a store URL or a `MemoryStore`), and offload's
//! Python face: `recall`, `recall_tool`, `answer_recall`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use serde_json::Value;
use tightfit::format::Format;
use tightfit::offload::{self, RecallError};
use tightfit::store::{MemoryStore, Store, StoreError, StoreErrorKind};
use tightfit_store::StoreSpec;

use crate::convert::{to_python, to_value};
use crate::errors::{guard, Failure};

/// Session checkpoints and offloaded content in memory, shared by every session and fit given
/// it (in this process); forgotten when the last of them goes.
#[pyclass(frozen, module = "tightfit", name = "MemoryStore")]
pub(crate) struct PyMemoryStore {
    pub(crate) inner: Arc<MemoryStore>,
}

#[pymethods]
impl PyMemoryStore {
    #[new]
    fn new() -> PyMemoryStore {
        PyMemoryStore { inner: Arc::new(MemoryStore::new()) }
    }

    /// The number of entries held (a checkpoint per conversation that has compacted, a blob
    /// per offload handle).
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("MemoryStore({} entries)", self.inner.len())
    }
}

/// Opens the store `spec` names: an SQLite file (made when missing; its directory must exist),
/// or a Redis or PostgreSQL URL; and whether other processes may write it.
fn open_store(spec: &str) -> Result<(Arc<dyn Store>, bool), Failure> {
    let spec = StoreSpec::parse(spec)?;
    Ok((spec.open()?, spec.is_shared()))
}

/// The store the caller named: none (a store of the session's own), a `MemoryStore`, or a path.
pub(crate) fn store_arg(py: Python<'_>, store: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<dyn Store>> {
    store_arg_shared(py, store).map(|(store, _)| store)
}

/// [`store_arg`], and whether other processes may write the store too (a file or a server,
/// not memory): a session then reads its checkpoints back every turn.
pub(crate) fn store_arg_shared(
    py: Python<'_>,
    store: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Arc<dyn Store>, bool)> {
    let Some(store) = store.filter(|s| !s.is_none()) else {
        return Ok((Arc::new(MemoryStore::new()), false));
    };
    if let Ok(memory) = store.cast::<PyMemoryStore>() {
        return Ok((Arc::clone(&memory.get().inner) as Arc<dyn Store>, false));
    }
    // a session's own store (what its compactions offloaded into)
    let session = store.cast::<crate::session::PySession>().ok().cloned().or_else(|| {
        store
            .getattr("_native")
            .ok()
            .and_then(|wrapper| wrapper.cast_into::<crate::session::PySession>().ok())
    });
    if let Some(session) = session {
        let shared = session.get().inner.settings().shared_store;
        return Ok((Arc::clone(session.get().inner.store()), shared));
    }
    let Ok(path) = store.extract::<PathBuf>() else {
        let found = store.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(Failure::Type(format!(
            "store: expected a file path (str or os.PathLike), a redis:// or postgres:// URL, a tightfit.MemoryStore or a tightfit.Session, found {found}"
        ))
        .into());
    };
    let spec = path.to_string_lossy().into_owned();
    // opening a file may wait for another process's lock; a server, for its answer
    Ok(py.detach(|| guard(|| open_store(&spec)))?)
}

impl From<RecallError> for Failure {
    fn from(e: RecallError) -> Failure {
        match e {
            RecallError::Store(e) => Failure::Store(e),
            RecallError::NotAHandle(_) => {
                Failure::Config(tightfit::steps::ConfigError::new("handle", e.to_string()))
            }
            RecallError::Unknown { ref handle, ref store } => Failure::Store(StoreError::new(
                StoreErrorKind::NotFound,
                store.clone(),
                format!("no offloaded content under {handle} (offloaded into another store, or forgotten)"),
            )),
            other => Failure::Other(other.to_string()),
        }
    }
}

/// The messages offloaded under `handle` in `store`, as a JSON array of `{"index", "message"}`
/// (the input index, the message as it came), `limit` characters from character `offset`.
#[pyfunction]
#[pyo3(signature = (handle, *, store, offset = 0, limit = None))]
pub(crate) fn recall(
    py: Python<'_>,
    handle: &str,
    store: &Bound<'_, PyAny>,
    offset: usize,
    limit: Option<usize>,
) -> PyResult<String> {
    let store = store_arg(py, Some(store))?;
    Ok(py.detach(|| guard(|| Ok(offload::recall(store.as_ref(), handle)?.page(offset, limit).content)))?)
}

/// The recall tool's schema in `format` (`"openai"` or `"anthropic"`).
#[pyfunction]
#[pyo3(signature = (format = "openai"))]
pub(crate) fn recall_tool<'py>(py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
    let format: Format = format
        .parse()
        .map_err(|reason: String| Failure::Config(tightfit::steps::ConfigError::new("format", reason)))?;
    to_python(py, &offload::recall_tool(format))
}

/// The text answering a call of the recall tool with `arguments` (a dict, or the JSON text
/// OpenAI sends): a page of the content as JSON, or an error the model can read.
#[pyfunction]
#[pyo3(signature = (arguments, *, store))]
pub(crate) fn answer_recall_arguments(
    py: Python<'_>,
    arguments: &Bound<'_, PyAny>,
    store: &Bound<'_, PyAny>,
) -> PyResult<String> {
    let arguments: Value = to_value(arguments)
        .map_err(|e| Failure::Format { path: e.path("arguments"), reason: e.reason.clone() })?;
    let store = store_arg(py, Some(store))?;
    Ok(py.detach(|| guard(|| Ok(offload::answer_recall(store.as_ref(), &arguments)?)))?)
}
