//! The one way frame_sim takes a std lock: poison-free.
//!
//! Invariant: a thread of the load that panicked while holding a lock has already failed its
//! run (its join reports it); the state behind the lock is still counters and histograms that
//! are valid at every step, so the others read on instead of panicking in turn.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, whether or not a holder panicked.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
