//! The results of a run as Python objects: the report and the plan, which keep the engine's
//! values and convert them on access (a plan of a long history is large; most callers never read
//! it), what a session did, and the violations of a provider's rules.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tightfit::{Plan, Report};

use crate::convert::to_python;

fn json<'py, T: serde::Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let value =
        serde_json::to_value(value).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    to_python(py, &value)
}

/// What a run did: the fields of swarms' `TransformResult`, the budget, the counter, one log
/// entry per step that changed something, and the repairs made to a broken input.
#[pyclass(frozen, module = "tightfit", name = "Report")]
pub(crate) struct PyReport {
    inner: Report,
}

impl From<Report> for PyReport {
    fn from(inner: Report) -> PyReport {
        PyReport { inner }
    }
}

impl PyReport {
    pub(crate) fn summary(&self) -> String {
        self.inner.summary()
    }

    /// The engine's report.
    pub(crate) fn report(&self) -> &Report {
        &self.inner
    }
}

#[pymethods]
impl PyReport {
    /// Tokens of the request before (messages, tool schemas, priming).
    #[getter]
    fn original_token_count(&self) -> usize {
        self.inner.original_token_count
    }
    /// Tokens after.
    #[getter]
    fn compressed_token_count(&self) -> usize {
        self.inner.compressed_token_count
    }
    /// Messages before.
    #[getter]
    fn original_message_count(&self) -> usize {
        self.inner.original_message_count
    }
    /// Messages after.
    #[getter]
    fn compressed_message_count(&self) -> usize {
        self.inner.compressed_message_count
    }
    /// Tokens after / tokens before (1.0 when nothing changed).
    #[getter]
    fn compression_ratio(&self) -> f64 {
        self.inner.compression_ratio
    }
    /// Whether the output differs from the input.
    #[getter]
    fn was_compressed(&self) -> bool {
        self.inner.was_compressed
    }
    /// The budget fitted to.
    #[getter]
    fn budget(&self) -> Option<usize> {
        self.inner.budget
    }
    /// The tokenizer that counted (`o200k_base`, `claude-estimate`).
    #[getter]
    fn counter(&self) -> &str {
        &self.inner.counter
    }
    /// One dict per step that changed something: step, messages_before, messages_after,
    /// tokens_before, tokens_after.
    #[getter]
    fn steps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json(py, &self.inner.steps)
    }
    /// What the repair pass fixed in a broken input, one line each.
    /// What was offloaded, one dict per handle: `handle`, `messages` (input indices), `kind`
    /// (`removed` or `cut`), `detail`. Empty unless the fit was given a store.
    #[getter]
    fn offloaded<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json(py, &self.inner.offloaded)
    }

    #[getter]
    fn repairs(&self) -> Vec<String> {
        self.inner.repairs.clone()
    }
    /// What the session did on this call (`key`, `epoch`, `compacted`, `policy`); `None` for
    /// a fit outside a session.
    #[getter]
    fn session(&self) -> Option<SessionInfo> {
        self.inner.session.clone().map(SessionInfo::from)
    }
    /// The log lines: one per repair, one for the session, one per step that changed something.
    fn lines(&self) -> Vec<String> {
        self.inner.lines()
    }
    /// `4,210 -> 1,980 tokens (0.47), 52 -> 17 messages, budget 2000`.
    fn __str__(&self) -> String {
        self.inner.summary()
    }
    fn __repr__(&self) -> String {
        format!("Report({})", self.inner.summary())
    }
    /// Every field as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json(py, &self.inner)
    }
}

/// What happened to every unit of the input, and the output message by message; replayable
/// on the same input (`tightfit.replay(plan, messages)`).
#[pyclass(frozen, module = "tightfit", name = "Plan")]
pub(crate) struct PyPlan {
    inner: Plan,
}

impl From<Plan> for PyPlan {
    fn from(inner: Plan) -> PyPlan {
        PyPlan { inner }
    }
}

impl PyPlan {
    /// The engine's plan.
    pub(crate) fn plan(&self) -> &Plan {
        &self.inner
    }
}

#[pymethods]
impl PyPlan {
    /// The wire format of the stored messages.
    #[getter]
    fn format(&self) -> &str {
        &self.inner.format
    }
    /// The number of input messages.
    #[getter]
    fn input_messages(&self) -> usize {
        self.inner.input_messages
    }
    /// The fingerprint of the input.
    #[getter]
    fn input_fingerprint(&self) -> &str {
        &self.inner.input_fingerprint
    }
    /// One dict per input unit: kind, messages ([start, end)), action, steps, details.
    #[getter]
    fn units<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json(py, &self.inner.units)
    }
    /// One dict per output message: `input` (the input index) and/or `message` (as sent,
    /// when it is not the input message unchanged).
    #[getter]
    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json(py, &self.inner.output)
    }
    /// Whether the plan changes anything.
    fn changes_anything(&self) -> bool {
        self.inner.changes_anything()
    }
    /// The plan as JSON text (what a checkpoint stores).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }
    /// The plan as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json(py, &self.inner)
    }
    fn __repr__(&self) -> String {
        format!(
            "Plan({} units, {} -> {} messages)",
            self.inner.units.len(),
            self.inner.input_messages,
            self.inner.output.len()
        )
    }
}

/// What a session did on one call.
#[pyclass(frozen, eq, module = "tightfit", name = "SessionInfo")]
#[derive(PartialEq, Eq)]
pub(crate) struct SessionInfo {
    /// The conversation's key in the session and its store.
    #[pyo3(get)]
    key: String,
    /// The epoch the output belongs to: 0 until the first compaction, one more at each.
    #[pyo3(get)]
    epoch: u64,
    /// Whether this call compacted (started a new epoch): the request does not extend the
    /// previous one.
    #[pyo3(get)]
    compacted: bool,
    /// The session's policy.
    #[pyo3(get)]
    policy: String,
}

impl From<tightfit::report::SessionInfo> for SessionInfo {
    fn from(s: tightfit::report::SessionInfo) -> SessionInfo {
        SessionInfo { key: s.key, epoch: s.epoch, compacted: s.compacted, policy: s.policy }
    }
}

#[pymethods]
impl SessionInfo {
    /// The fields as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("key", &self.key)?;
        dict.set_item("epoch", self.epoch)?;
        dict.set_item("compacted", self.compacted)?;
        dict.set_item("policy", &self.policy)?;
        Ok(dict)
    }
    fn __repr__(&self) -> String {
        format!(
            "SessionInfo(key={:?}, epoch={}, compacted={}, policy={:?})",
            self.key,
            self.epoch,
            if self.compacted { "True" } else { "False" },
            self.policy
        )
    }
}

/// One rule a history breaks, and where.
#[pyclass(frozen, eq, module = "tightfit", name = "Violation")]
#[derive(PartialEq, Eq)]
pub(crate) struct Violation {
    /// The index of the message.
    #[pyo3(get)]
    index: usize,
    /// The rule, snake_case (`orphan_tool_result`, `unanswered_tool_call`, ...).
    #[pyo3(get)]
    rule: &'static str,
    /// What is wrong, for a person.
    #[pyo3(get)]
    reason: String,
}

impl From<tightfit::Violation> for Violation {
    fn from(v: tightfit::Violation) -> Violation {
        Violation { index: v.index, rule: v.rule.as_str(), reason: v.reason }
    }
}

#[pymethods]
impl Violation {
    fn __str__(&self) -> String {
        format!("messages[{}]: {}", self.index, self.reason)
    }
    fn __repr__(&self) -> String {
        format!("Violation(index={}, rule={:?}, reason={:?})", self.index, self.rule, self.reason)
    }
}
