//! `tightfit.Pipeline`: an engine pipeline built once and shared by every call and thread.
//!
//! Every way in goes through the engine's configuration reader, so the keys, aliases, defaults
//! and error messages are the engine's: a list of steps (the Python step classes turn
//! themselves into the same maps a YAML file holds), YAML, TOML or JSON text, a file, a preset.
//! A pipeline remembers what it was built from, so that a session can build its own copy (an
//! engine policy owns its pipeline).

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::{json, Value};
use tightfit::config::{self, Syntax};
use tightfit::presets;
use tightfit::session::Policy;
use tightfit::steps::ConfigError;

use crate::convert::{to_python, to_value};
use crate::errors::Failure;

/// An immutable, checked pipeline of steps.
#[pyclass(frozen, module = "tightfit", name = "Pipeline")]
pub(crate) struct PyPipeline {
    pub(crate) inner: Arc<tightfit::Pipeline>,
    source: Source,
}

/// What a pipeline was built from: configuration (a value or text) or a preset's name.
enum Source {
    Value(Value),
    Text(String, Syntax),
    Preset(String),
}

impl Source {
    fn build(&self) -> Result<tightfit::Pipeline, ConfigError> {
        match self {
            Source::Value(value) => config::from_value(value.clone()),
            Source::Text(text, syntax) => config::from_str(text, *syntax),
            Source::Preset(name) => presets::by_name(name),
        }
    }
}

impl PyPipeline {
    /// The pipeline built from the configuration `value`.
    pub(crate) fn from_config(value: Value) -> Result<PyPipeline, ConfigError> {
        PyPipeline::from_source(Source::Value(value))
    }

    fn from_source(source: Source) -> Result<PyPipeline, ConfigError> {
        Ok(PyPipeline { inner: Arc::new(source.build()?), source })
    }

    /// A session policy running a copy of this pipeline, called by its preset's name or
    /// `custom`. The copy is built from the same source, so it has the same steps and settings.
    pub(crate) fn policy(&self) -> Result<Policy, ConfigError> {
        Ok(match &self.source {
            Source::Preset(name) => Policy::by_name(name)?,
            other => Policy::new("custom", other.build()?),
        })
    }
}

/// One step's configuration map: a dict as is, or what a step object's `to_config()` returns.
fn step_config(step: &Bound<'_, PyAny>, index: usize) -> PyResult<Value> {
    let map = if step.is_instance_of::<PyDict>() {
        step.clone()
    } else if step.hasattr("to_config")? {
        step.call_method0("to_config")?
    } else {
        let found = step.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(Failure::Type(format!(
            "steps[{index}]: expected a step (tightfit.KeepLast(...), ...) or a dict, found {found}"
        ))
        .into());
    };
    to_value(&map)
        .map_err(|e| Failure::Config(ConfigError::new(e.path(&format!("steps[{index}]")), e.reason)).into())
}

fn built(source: Source) -> PyResult<PyPipeline> {
    PyPipeline::from_source(source).map_err(|e| Failure::Config(e).into())
}

#[pymethods]
impl PyPipeline {
    /// A pipeline of `steps` (step objects or configuration dicts), run in order.
    #[new]
    fn new(steps: &Bound<'_, PyAny>) -> PyResult<PyPipeline> {
        if steps.is_instance_of::<PyString>() || steps.is_instance_of::<PyDict>() {
            return Err(Failure::Type("Pipeline(steps): expected a list of steps".into()).into());
        }
        let mut configs = Vec::new();
        for (i, step) in steps.try_iter()?.enumerate() {
            configs.push(step_config(&step?, i)?);
        }
        built(Source::Value(json!({ "steps": configs })))
    }

    /// A pipeline from a configuration mapping, as a YAML file holds it: `{"steps": [...]}` or
    /// `{"preset": "balanced"}` (llmling's `compaction:` too); what `to_config()` returns.
    #[staticmethod]
    #[pyo3(name = "from_config")]
    fn from_config_mapping(config: &Bound<'_, PyAny>) -> PyResult<PyPipeline> {
        let value = to_value(config).map_err(|e| Failure::Config(ConfigError::new(e.path(""), e.reason)))?;
        built(Source::Value(value))
    }

    /// A pipeline from YAML text (`steps:` or `preset:`, llmling's `compaction:` too).
    #[staticmethod]
    fn from_yaml(text: &str) -> PyResult<PyPipeline> {
        built(Source::Text(text.to_string(), Syntax::Yaml))
    }

    /// A pipeline from TOML text.
    #[staticmethod]
    fn from_toml(text: &str) -> PyResult<PyPipeline> {
        built(Source::Text(text.to_string(), Syntax::Toml))
    }

    /// A pipeline from JSON text.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<PyPipeline> {
        built(Source::Text(text.to_string(), Syntax::Json))
    }

    /// A pipeline from a configuration file; the syntax comes from its extension (`.toml`,
    /// `.json`, else YAML).
    #[staticmethod]
    fn from_file(path: PathBuf) -> PyResult<PyPipeline> {
        // read once and kept: a session's copy is built from the same text
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Failure::Config(ConfigError::new("", format!("cannot read {}: {e}", path.display())))
        })?;
        built(Source::Text(text, Syntax::from_path(&path)))
    }

    /// A named preset: `middle-out` (the default ladder), `cache` (a session's compaction),
    /// `minimal`, `balanced`, `summarizing`, `swarms`.
    #[staticmethod]
    fn preset(name: &str) -> PyResult<PyPipeline> {
        built(Source::Preset(name.to_string()))
    }

    /// The preset names.
    #[staticmethod]
    fn presets() -> Vec<&'static str> {
        presets::NAMES.to_vec()
    }

    /// The names of the steps, in order (`["drop_thinking", "when"]`).
    #[getter]
    fn names(&self) -> Vec<&'static str> {
        self.inner.steps().map(|s| s.name()).collect()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Two pipelines are equal when the engine built the same steps with the same settings,
    /// whichever way they were written (classes, YAML, TOML, JSON, aliases).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyPipeline>() {
            Ok(other) => format!("{:?}", self.inner) == format!("{:?}", other.get().inner),
            Err(_) => false,
        }
    }

    fn __repr__(&self) -> String {
        format!("Pipeline({:?})", self.names())
    }

    /// The pipeline as configuration: `{"steps": [...]}`, each step with its `type`, the keys
    /// not at their default and its `when` guard; `Pipeline.from_config` builds an equal
    /// pipeline from it (a preset too: its steps are written out).
    fn to_config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = config::to_value(&self.inner).map_err(Failure::Config)?;
        to_python(py, &value)
    }

    /// The pipeline in the configuration's own words: the YAML (or `"toml"`, `"json"`) a user
    /// would write to get it, which `from_yaml` (`from_toml`, `from_json`) reads back.
    #[pyo3(signature = (syntax = "yaml"))]
    fn describe(&self, syntax: &str) -> PyResult<String> {
        let syntax = match syntax {
            "yaml" => Syntax::Yaml,
            "toml" => Syntax::Toml,
            "json" => Syntax::Json,
            other => {
                let reason = format!("expected \"yaml\", \"toml\" or \"json\", found {other:?}");
                return Err(Failure::Config(ConfigError::new("syntax", reason)).into());
            }
        };
        config::to_string(&self.inner, syntax).map_err(|e| Failure::Config(e).into())
    }
}

/// Checks one step's configuration map, raising `ConfigError` naming the key; steps call it
/// when they are constructed, so a typo fails where it was written.
#[pyfunction]
pub(crate) fn check_step(config: &Bound<'_, PyAny>) -> PyResult<()> {
    let value = to_value(config).map_err(|e| Failure::Config(ConfigError::new(e.path(""), e.reason)))?;
    config::step_from_value(value).map(drop).map_err(|e| Failure::Config(e).into())
}

/// Every step configuration accepts: its name, its aliases and its keys.
#[pyfunction]
pub(crate) fn step_schema() -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
    config::step_kinds().map(|kind| (kind.name, kind.aliases.to_vec(), config::step_keys(kind))).collect()
}

/// Every step configuration accepts, as its documentation lists it: `name`, `aliases`,
/// `summary`, and `keys`, each with its `name`, `aliases`, `default` (`None`: unset), `unit`
/// and `meaning`. The engine's table, built from its steps' builders.
#[pyfunction]
pub(crate) fn step_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let steps = config::step_table()
        .into_iter()
        .map(|entry| {
            let keys: Vec<Value> = entry
                .keys
                .into_iter()
                .map(|key| {
                    json!({
                        "name": key.name,
                        "aliases": key.aliases,
                        "default": key.default,
                        "unit": key.unit.to_string(),
                        "meaning": key.meaning,
                    })
                })
                .collect();
            let step =
                json!({"name": entry.name, "aliases": entry.aliases, "summary": entry.summary, "keys": keys});
            to_python(py, &step)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, steps)
}

/// The step names configuration accepts, ours with their peers' aliases.
#[pyfunction]
pub(crate) fn step_names() -> Vec<(&'static str, Vec<&'static str>)> {
    config::step_kinds().map(|kind| (kind.name, kind.aliases.to_vec())).collect()
}
