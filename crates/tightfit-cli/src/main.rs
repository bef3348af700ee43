//! The `tightfit` binary: [`tightfit_cli::run`] on the process's arguments.

use std::process::ExitCode;

/// mimalloc: fitting makes many small allocations, and glibc's malloc slows as the heap
/// grows (see the workspace manifest).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(tightfit_cli::run(std::env::args_os()))
}
