//! The census of condition-variable waiters: for each bucket of key addresses, how many
//! waits are in the table's condvar queues of those keys, readable without the arbiter's
//! lock, so that svcSignalProcessWideKey with nobody to wake skips the lock (libnx's and the
//! SDK's condition variables signal on every send, waiter or not).
//!
//! Invariant: a bucket's count is the number of waits in the condvar queues of its keys. It
//! changes only under the arbiter's lock, by the table: up when a wait joins a condvar queue
//! (before the registering operation writes the key and releases the mutex word, its last
//! guest writes), down when a wait leaves one (signalled, timed out, cancelled), never for a
//! re-ranking (a wait moved within its queue stays counted). So a signaller that reads a
//! bucket's count as 0 without the lock finds no wait registered that happened before its
//! signal: guest code can order a registration before a signal only by acquiring what the
//! registration released after counting itself (the mutex word, the key word, or anything
//! ordered after the arbiter's lock), and a count that happens before a load is seen by it.
//! A wait concurrent with the signal may be counted or not: the signal is then ordered
//! before it, as the console's scheduler lock may order them. The loom models in `loom.rs`
//! check both ways the signaller gets the mutex.

use crate::sync::atomic::{AtomicU32, Ordering};

/// Buckets: keys share one (a bucket with a waiter sends each of its keys' signals to the
/// lock, which finds out exactly). One under loom, whose models must touch the same atomics
/// in every run they replay, while a key's address, and so its bucket, differs from run to
/// run; sharing one bucket is a state the real table reaches too.
#[cfg(not(loom))]
pub(crate) const BUCKETS: usize = 64;
#[cfg(loom)]
pub(crate) const BUCKETS: usize = 1;

/// Condvar waiters by bucket of key address.
#[derive(Debug)]
pub(crate) struct Census {
    counts: [AtomicU32; BUCKETS],
}

impl Census {
    /// A census of no waiters.
    pub(crate) fn new() -> Self {
        Census {
            counts: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    /// The bucket of `key`'s waits.
    pub(crate) fn bucket_of(key: usize) -> usize {
        // Keys are 4-aligned words: the bits above the alignment spread them.
        (key >> 2) % BUCKETS
    }

    /// A wait joined the condvar queue of `key` (under the arbiter's lock).
    pub(crate) fn joined(&self, key: usize) {
        // Relaxed: the lock orders it among counters; the registering operation's later
        // Release writes (the key word, the mutex word, the lock's release) publish it to a
        // signaller that is ordered after the registration (module doc).
        self.counts[Self::bucket_of(key)].fetch_add(1, Ordering::Relaxed);
    }

    /// A wait left the condvar queue of `key` (under the arbiter's lock).
    pub(crate) fn left(&self, key: usize) {
        // Relaxed: as `joined`; a signaller that reads the old count takes the lock, which
        // finds out exactly.
        let old = self.counts[Self::bucket_of(key)].fetch_sub(1, Ordering::Relaxed);
        debug_assert!(old > 0, "a condvar wait on {key:#x} left an empty bucket");
    }

    /// Whether a wait may be in the condvar queue of `key`; `false` is exact for every wait
    /// registered before the caller's signal (module doc).
    pub(crate) fn may_wait(&self, key: usize) -> bool {
        // Relaxed: an increment published by a Release that the caller acquired (module doc)
        // happens before this load, which coherence then makes see it; the load orders
        // nothing of its own (a count of 0 leads to no read, any other to the lock).
        self.counts[Self::bucket_of(key)].load(Ordering::Relaxed) != 0
    }

    /// Every bucket's count, for the table's check (under the lock).
    pub(crate) fn counts(&self) -> [u32; BUCKETS] {
        // Relaxed: read under the lock, which orders every change of them.
        std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed))
    }
}
