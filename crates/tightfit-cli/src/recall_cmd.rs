//! `tightfit recall HANDLE --store F`: the messages a fit offloaded, as they came.

use std::io::Write;
use std::path::Path;

use tightfit::offload;
use tightfit_store::SqliteStore;

/// Prints the page of `handle`'s content from `offset` (`limit` characters at most), and on
/// standard error where the next page starts, if there is more.
pub fn run(handle: &str, store: &Path, offset: usize, limit: Option<usize>) -> anyhow::Result<bool> {
    if !store.exists() {
        anyhow::bail!("{}: no such store (the file `fit --store` wrote)", store.display());
    }
    let store = SqliteStore::open_read_only(store)?;
    let recalled = offload::recall(&store, handle)?;
    let page = recalled.page(offset, limit);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", page.content)?;
    out.flush()?;
    if let Some(next) = page.next_offset {
        eprintln!(
            "{} of {} characters; the next page: --offset {next}",
            page.content.chars().count(),
            page.total_chars
        );
    }
    Ok(true)
}
