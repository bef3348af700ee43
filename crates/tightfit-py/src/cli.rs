//! `tightfit._native.cli_main`: the `tightfit` command line, run in this process, for the
//! package's `tightfit` console script and `python -m tightfit` (see `tightfit/__main__.py`).
//!
//! The wheel carries the command line this way rather than as a second binary: one copy of the
//! engine in the wheel instead of two.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the command line on `argv` (the program name first) with the GIL released, as the
/// `tightfit` binary would: it writes to the process's own standard output and error (file
/// descriptors 1 and 2, not `sys.stdout`) and returns the binary's exit code.
#[pyfunction]
pub(crate) fn cli_main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| tightfit_cli::run(argv))
}
