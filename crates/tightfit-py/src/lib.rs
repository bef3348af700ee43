//! `tightfit._native`: the pyo3 skin over the tightfit engine.
//!
//! Everything here converts at the boundary and calls the engine: Python data to JSON values
//! and back ([`convert`]), engine errors to Python exceptions ([`errors`]), and the GIL released
//! around every piece of engine work. No fitting, counting or validation logic lives here.
//! The Python package `tightfit` (in `python/tightfit/`) re-exports this module with the step
//! classes, the async variants and the exception classes.

#![forbid(unsafe_code)]

mod args;
mod cli;
mod compat;
mod compress;
mod convert;
mod count;
mod counter;
mod errors;
mod fit;
mod input;
mod memo;
mod pipeline;
mod report;
mod scorer;
mod session;
mod store;
mod summarizer;
mod target;
mod validate;

use pyo3::prelude::*;

/// mimalloc for the engine's allocations (Python's objects keep Python's allocator): fitting
/// makes many small allocations, and glibc's malloc slows as the heap grows (see the workspace
/// manifest).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<pipeline::PyPipeline>()?;
    m.add_class::<fit::FitResult>()?;
    m.add_class::<fit::PyFitter>()?;
    m.add_function(wrap_pyfunction!(fit::replay, m)?)?;
    m.add_class::<report::PyReport>()?;
    m.add_class::<report::PyPlan>()?;
    m.add_class::<count::PyCount>()?;
    m.add_class::<report::Violation>()?;
    m.add_class::<report::SessionInfo>()?;
    m.add_class::<session::PySession>()?;
    m.add_class::<store::PyMemoryStore>()?;
    m.add_function(wrap_pyfunction!(store::recall, m)?)?;
    m.add_function(wrap_pyfunction!(store::recall_tool, m)?)?;
    m.add_function(wrap_pyfunction!(store::answer_recall_arguments, m)?)?;
    m.add_class::<compat::autogen::PyAutogenContext>()?;
    m.add_class::<compat::autogen::PyAutogenHistory>()?;
    m.add_function(wrap_pyfunction!(cli::cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(count::count, m)?)?;
    m.add_function(wrap_pyfunction!(counter::calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(counter::set_llama3_search_path, m)?)?;
    m.add_function(wrap_pyfunction!(validate::validate, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline::check_step, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline::step_names, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline::step_schema, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline::step_table, m)?)?;
    m.add_class::<compat::ag2::PyAg2HistoryLimiter>()?;
    m.add_class::<compat::ag2::PyAg2TokenLimiter>()?;
    m.add_function(wrap_pyfunction!(compat::ag2::apply_steps, m)?)?;
    m.add_function(wrap_pyfunction!(compress::compress_texts, m)?)?;
    m.add_function(wrap_pyfunction!(compat::langchain::langchain_trim, m)?)?;
    m.add_function(wrap_pyfunction!(compat::swarms::swarms_pipeline, m)?)?;
    m.add_function(wrap_pyfunction!(compat::langchain::langchain_count_approximately, m)?)?;
    m.add_function(wrap_pyfunction!(compat::langchain::langchain_count_model, m)?)?;
    Ok(())
}
