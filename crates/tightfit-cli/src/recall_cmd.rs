//! `tightfit recall HANDLE --store F`: the messages a fit offloaded, as they came.

use std::io::Write;
use std::sync::Arc;

use tightfit::offload;
use tightfit::store::Store;
use tightfit_store::{SqliteStore, StoreSpec};

/// Prints the page of `handle`'s content from `offset` (`limit` characters at most), and on
/// standard error where the next page starts, if there is more.
pub fn run(handle: &str, store: &str, offset: usize, limit: Option<usize>) -> anyhow::Result<bool> {
    let store: Arc<dyn Store> = match StoreSpec::parse(store)? {
        // a file is only read: recalling never makes one
        StoreSpec::Sqlite(path) if !path.exists() => {
            anyhow::bail!("{}: no such store (the file `fit --store` wrote)", path.display())
        }
        StoreSpec::Sqlite(path) => Arc::new(SqliteStore::open_read_only(path)?),
        spec => spec.open()?,
    };
    let recalled = offload::recall(store.as_ref(), handle)?;
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
