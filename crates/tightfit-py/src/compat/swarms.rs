//! `tightfit.compat.swarms`' pipeline: the roles of the caller's messages read here, swarms'
//! arithmetic done by the engine (`tightfit::compat::swarms`).

use pyo3::prelude::*;
use tightfit::compat::swarms::{pipeline_config, SwarmsHistory, SwarmsLimits};

use crate::errors::Failure;
use crate::pipeline::PyPipeline;

/// The roles the engine keeps as system messages.
const SYSTEM_ROLES: [&str; 2] = ["system", "developer"];

/// The pipeline that makes swarms' choices for `messages` (read: each one's `role`, through
/// its `get`, as swarms reads it).
#[pyfunction]
pub(crate) fn swarms_pipeline(
    messages: &Bound<'_, PyAny>,
    max_messages: i64,
    preserve_system_messages: bool,
    preserve_recent_messages: i64,
) -> PyResult<PyPipeline> {
    let mut history = SwarmsHistory { length: 0, system: 0, first_is_system: false };
    for message in messages.try_iter()? {
        let role = message?.call_method1("get", ("role",))?;
        let is_system = match role.extract::<&str>() {
            Ok(role) => SYSTEM_ROLES.contains(&role),
            Err(_) => false,
        };
        if history.length == 0 {
            history.first_is_system = is_system;
        }
        history.length += 1;
        history.system += usize::from(is_system);
    }
    let limits = SwarmsLimits { max_messages, preserve_system_messages, preserve_recent_messages };
    PyPipeline::from_config(pipeline_config(&limits, &history)).map_err(|e| Failure::Config(e).into())
}
