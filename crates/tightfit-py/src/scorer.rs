//! A Python callable as `compress_text`'s scorer: `tightfit.fit(..., scorer=fn)`, so that a
//! model's surprisal (LLMLingua's, say) can rank the words instead of the built-in
//! self-information.
//!
//! Called as `fn(words) -> list[float]` with one text's words (`list[str]`, punctuation
//! attached); one score per word, higher meaning more informative. The GIL is taken for the
//! call only. What it raises, or an answer of another length or type, gives no scores: the step
//! then fails with an error naming the scorer and the Python error (`tightfit.StepFailed`).

use std::sync::Mutex;

use pyo3::prelude::*;
use tightfit::steps::Scorer;

use crate::summarizer::callable_name;

/// A Python callable that scores words.
pub(crate) struct PyScorer {
    callable: Py<PyAny>,
    name: String,
    /// The last error the callable raised, for the step's error.
    pub(crate) failure: Mutex<Option<String>>,
}

impl PyScorer {
    /// `callable` as a scorer, or a `TypeError` naming the argument when it is not callable.
    pub(crate) fn new(callable: &Bound<'_, PyAny>, argument: &str) -> PyResult<PyScorer> {
        let name = callable_name(callable, argument, "(words) -> list[float]")?;
        Ok(PyScorer { callable: callable.clone().unbind(), name, failure: Mutex::new(None) })
    }
}

impl Scorer for PyScorer {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, words: &[&str]) -> Vec<f64> {
        Python::attach(|py| {
            let scores =
                self.callable.bind(py).call1((words.to_vec(),)).and_then(|r| r.extract::<Vec<f64>>());
            scores.unwrap_or_else(|e| {
                *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                Vec::new()
            })
        })
    }
}
