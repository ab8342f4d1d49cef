//! Prefetch hints for SignalToAddress: where the last wait registered on each group of
//! addresses keeps the memory that the signal ending it reads and writes under the lock (its
//! address queue's entry and buffer, its slab entry, its mailbox, its thread's parker), so that
//! a signaller of the group asks the processor for those lines before it takes the arbiter's
//! lock, and the hold is shorter by the misses it would have taken under it (BENCHMARKS.md,
//! "Hand-offs").
//!
//! Invariant: a hint is an address only and is never dereferenced: a stale one (its wait
//! ended, its queue grew elsewhere) costs one useless prefetch, and a prefetch never faults.
//! Written under the arbiter's lock, read without it.

use super::{group, GROUPS};
use hos_runtime::internal::sys::prefetch_write;
// Std's atomics even under loom: addresses to prefetch order nothing, so no model checks them.
use std::sync::atomic::{AtomicUsize, Ordering};

/// The lines a signal touches to end one wait: [`super::Table::lines_of`]'s and the parker's.
const LINES: usize = 5;

/// Each group's hints: 0 where none is known yet.
#[derive(Debug)]
pub(super) struct Hints([[AtomicUsize; LINES]; GROUPS]);

impl Hints {
    /// No hint yet.
    pub(super) fn new() -> Self {
        Hints(std::array::from_fn(|_| {
            std::array::from_fn(|_| AtomicUsize::new(0))
        }))
    }

    /// The wait just registered on `addr` lies at `table` (its table lines), and its thread's
    /// parker at `parker`.
    pub(super) fn remember(&self, addr: usize, table: [usize; 4], parker: usize) {
        let lines = table.into_iter().chain([parker]);
        for (hint, line) in self.0[group(addr)].iter().zip(lines) {
            // Relaxed: a hint orders nothing; a signaller that reads an older one prefetches
            // lines it does not need.
            hint.store(line, Ordering::Relaxed);
        }
    }

    /// Asks the processor for the lines of the last wait registered on `addr`'s group, for
    /// writing.
    pub(super) fn prefetch(&self, addr: usize) {
        for hint in &self.0[group(addr)] {
            // Relaxed: as in `remember`.
            match hint.load(Ordering::Relaxed) {
                0 => {}
                line => prefetch_write(line),
            }
        }
    }
}
