//! Real Redis and PostgreSQL servers for tests: each started from the Debian packages'
//! binaries on 127.0.0.1, on a free port, in a temporary directory of its own, and stopped
//! (its directory removed) when dropped. Nothing listens beyond loopback.
//!
//! The binaries come from `redis-server` on `PATH` and PostgreSQL's `initdb` and `postgres`
//! (`TIGHTFIT_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`, else `PATH`). `.ci/run`
//! installs Debian's `redis-server` and `postgresql` packages; a test that finds no server
//! fails and says which package is missing, it is never skipped.
//!
//! PostgreSQL refuses to run as root: as root, the server and `initdb` run as the `postgres`
//! user the Debian package creates, in a directory handed to that user.

#![warn(missing_docs)]

mod postgres;
mod process;
mod redis;

pub use postgres::Postgres;
pub use process::free_port;
pub use redis::Redis;
