//! Idle connections of a network store, reused across calls: a call takes one (or opens
//! one), runs its one command, and gives it back. A connection that broke (the server
//! restarted, a network blip) is dropped and the call retried once on a fresh one, so a
//! server restart costs the next call a reconnect, not an error.

use std::sync::{Mutex, PoisonError};

/// At most this many idle connections are kept; more are opened when that many calls run at
/// once, and closed when given back.
const MAX_IDLE: usize = 16;

/// Idle connections of type `C`.
pub(crate) struct Pool<C> {
    idle: Mutex<Vec<C>>,
}

impl<C> std::fmt::Debug for Pool<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map_or(0, |idle| idle.len());
        write!(f, "Pool {{ idle: {idle} }}")
    }
}

/// Whether an error left the connection unusable (then it is dropped and the call retried).
pub(crate) trait Broken {
    fn is_broken(&self) -> bool;
}

impl<C> Pool<C> {
    /// A pool holding `first` (the connection opening the store made, so the first call
    /// needs no new one).
    pub(crate) fn new(first: C) -> Pool<C> {
        Pool { idle: Mutex::new(vec![first]) }
    }

    /// Runs `call` on an idle connection or a new one from `connect`. When the connection
    /// turns out broken and was an idle one (it may have gone stale), runs `call` once more on
    /// a new one. Every call of the stores is idempotent (a GET, a SET, a DELETE), so running
    /// it twice is safe.
    pub(crate) fn run<T, E: Broken>(
        &self,
        connect: impl Fn() -> Result<C, E>,
        mut call: impl FnMut(&mut C) -> Result<T, E>,
    ) -> Result<T, E> {
        let idle = self.take();
        let reused = idle.is_some();
        let mut connection = match idle {
            Some(connection) => connection,
            None => connect()?,
        };
        match call(&mut connection) {
            Err(e) if e.is_broken() && reused => {
                let mut fresh = connect()?;
                let result = call(&mut fresh);
                self.give_back(fresh, &result);
                result
            }
            result => {
                self.give_back(connection, &result);
                result
            }
        }
    }

    /// Every idle connection, taken out (to close them where the caller chooses).
    #[cfg(feature = "postgres")]
    pub(crate) fn drain(&self) -> Vec<C> {
        std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn take(&self) -> Option<C> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop()
    }

    fn give_back<T, E: Broken>(&self, connection: C, result: &Result<T, E>) {
        if result.as_ref().err().is_some_and(Broken::is_broken) {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(connection);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[derive(Debug)]
    struct Fail(bool);
    impl Broken for Fail {
        fn is_broken(&self) -> bool {
            self.0
        }
    }

    #[test]
    fn a_broken_idle_connection_is_replaced_and_the_call_retried_once() {
        let pool = Pool::new(0u32);
        let opened = Cell::new(0u32);
        let connect = || {
            opened.set(opened.get() + 1);
            Ok::<u32, Fail>(opened.get())
        };
        // the idle connection 0 is broken; the retry runs on a new one, which is kept
        let result = pool.run(connect, |c| if *c == 0 { Err(Fail(true)) } else { Ok(*c) });
        assert_eq!(result.unwrap(), 1);
        assert_eq!(pool.run(connect, |c| Ok::<u32, Fail>(*c)).unwrap(), 1, "the fresh one was kept");
        // a new connection that fails is not retried (the server is down, not the connection stale)
        let attempts = Cell::new(0);
        let failed = pool.run(connect, |_| {
            attempts.set(attempts.get() + 1);
            Err::<u32, _>(Fail(true))
        });
        assert!(failed.is_err());
        assert_eq!(attempts.get(), 2, "the idle one, then one fresh one");
        // an error that leaves the connection usable gives it back
        let _ = pool.run(connect, |_| Err::<u32, _>(Fail(false)));
        assert_eq!(pool.idle.lock().unwrap().len(), 1);
    }
}
