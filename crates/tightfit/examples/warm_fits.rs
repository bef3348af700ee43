//! Fits one history of N messages (the tau-bench turns repeated, as the `fit` bench's
//! `scaling` group makes them) to 32k, F times in a row with one warm `Fitter`, and prints
//! the time per message. Why a program and not only the bench: it runs under tools that
//! count what a fit does rather than time it, so the count per message at 1k and at 100k
//! says whether the work grows, whatever the machine's caches do. Two runs that differ only
//! in F, the first fit's cost and the setup cancel:
//!
//! ```text
//! cargo build --release -p tightfit --example warm_fits
//! valgrind --tool=cachegrind --cache-sim=no target/release/examples/warm_fits 1000 10
//! valgrind --tool=cachegrind --cache-sim=no target/release/examples/warm_fits 1000 30
//! ```
//!
//! (instructions per message of a warm fit: the difference of the two `I refs`, divided by
//! 20 fits of the history's messages, which the program prints: 999, as the history ends on a
//! whole step). `valgrind --tool=dhat` the same way counts allocations.

/// The allocator the command line and the Python module ship with, as in the bench.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use tightfit::fit::{Fitter, Target};
use tightfit::tokens::{ChatCounter, OpenAiEncoding};

#[path = "../benches/common/histories.rs"]
mod histories;

fn main() -> Result<(), String> {
    let usage = "usage: warm_fits MESSAGES FITS";
    let number = |arg: Option<String>| -> Result<usize, String> {
        arg.ok_or(usage)?.parse().map_err(|e| format!("{usage}: {e}"))
    };
    let mut args = std::env::args().skip(1);
    let (n, fits) = (number(args.next())?, number(args.next())?);
    let history = histories::repeated_whole(n);
    // a few fewer than asked for: the history ends on a whole step
    let n = history.messages.len();
    let target = Target::budget(32_768, ChatCounter::openai(OpenAiEncoding::O200kBase));
    let mut fitter = Fitter::new();
    let first = fitter.fit(&history, &target, None).map_err(|e| e.to_string())?;
    let kept = (first.messages.len(), first.report.compressed_token_count);
    let start = Instant::now();
    for _ in 0..fits {
        let fitted = fitter.fit(&history, &target, None).map_err(|e| e.to_string())?;
        assert_eq!((fitted.messages.len(), fitted.report.compressed_token_count), kept, "a warm fit differs");
    }
    let per_message = start.elapsed().as_secs_f64() * 1e6 / (fits.max(1) * n) as f64;
    println!(
        "{n} messages, {fits} warm fits: {per_message:.3} µs per message (kept {} messages, {} tokens)",
        kept.0, kept.1
    );
    Ok(())
}
