//! [`ChangeBell`]: how a store tells its followers that something was written, so that they
//! read the store when it changed instead of on a timer.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// A counter that a store advances after each write it hears of (its own commits; with a
/// shared database, other processes' commits too), and that followers wait on.
///
/// Followers take [`ChangeBell::rung`] before they read the store and wait with that mark, so
/// a write that lands between their read and their wait still wakes them. A bell only shortens
/// the wait: a follower still reads the store after its timeout, so a missed ring (a dropped
/// notification connection, a writer in another process that cannot ring) costs latency, never
/// a change.
#[derive(Debug, Default)]
pub struct ChangeBell {
    rung: Mutex<u64>,
    waiting: Condvar,
}

impl ChangeBell {
    /// A bell that has not rung.
    pub fn new() -> Self {
        Self::default()
    }

    /// Announces a write and wakes every waiter.
    pub fn ring(&self) {
        let mut rung = self.rung.lock().unwrap_or_else(PoisonError::into_inner);
        *rung = rung.wrapping_add(1);
        self.waiting.notify_all();
    }

    /// How often the bell has rung: the mark to wait with.
    pub fn rung(&self) -> u64 {
        *self.rung.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until the bell rings past `seen` or `timeout` passes, and returns the new mark
    /// (equal to `seen` on a timeout).
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let rung = self.rung.lock().unwrap_or_else(PoisonError::into_inner);
        let (rung, _) = self
            .waiting
            .wait_timeout_while(rung, timeout, |now| *now == seen)
            .unwrap_or_else(PoisonError::into_inner);
        *rung
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_ring_wakes_a_waiter_before_its_timeout() {
        let bell = Arc::new(ChangeBell::new());
        let seen = bell.rung();
        let ringer = Arc::clone(&bell);
        let started = Instant::now();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            ringer.ring();
        });
        let now = bell.wait(seen, Duration::from_secs(30));
        t.join().unwrap();
        assert_eq!(now, seen + 1);
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_ring_before_the_wait_is_not_missed() {
        let bell = ChangeBell::new();
        let seen = bell.rung();
        bell.ring();
        // Had the wait taken a fresh mark, this would block for the whole timeout.
        assert_eq!(bell.wait(seen, Duration::from_secs(30)), seen + 1);
    }

    #[test]
    fn without_a_ring_the_wait_ends_at_its_timeout_with_the_same_mark() {
        let bell = ChangeBell::new();
        bell.ring();
        let seen = bell.rung();
        assert_eq!(bell.wait(seen, Duration::from_millis(10)), seen);
    }
}
