//! The stores' integration tests: one binary (link time on 2 cores), one module per topic.
//! The two-process test runs this same binary again as its writers; the Redis and PostgreSQL
//! tests (features `redis`, `postgres`) start real servers on loopback.

mod basics;
mod errors;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod network;
mod processes;

use std::path::Path;

/// The bytes of the file at `path`, to show a refused file was left as it was.
pub fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A checkpoint that tells who wrote it and can be checked whole: a header line
/// (`writer W write I len N`), then `N` bytes that follow from `W` and `I`. From 1 to 16 KiB,
/// so most span several 4 KiB pages of the file and a torn write would show.
pub fn checkpoint(writer: usize, write: usize) -> Vec<u8> {
    let len = 1000 + (write * 577 + writer * 131) % 15_000;
    let mut bytes = format!("writer {writer} write {write} len {len}\n").into_bytes();
    bytes.extend((0..len).map(|j| ((writer * 31 + write * 7 + j) % 251) as u8));
    bytes
}

/// Who wrote `bytes` (writer, write), if it is one whole [`checkpoint`].
pub fn whole(bytes: &[u8]) -> Option<(usize, usize)> {
    let newline = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let words: Vec<&str> = header.split(' ').collect();
    let [_, writer, _, write, _, _] = words[..] else { return None };
    let (writer, write) = (writer.parse().ok()?, write.parse().ok()?);
    (checkpoint(writer, write) == bytes).then_some((writer, write))
}
