//! A prefetch hint for SignalToAddress: where the last wait registered on a group of
//! addresses keeps the memory that the signal ending it reads and writes under the lock (its
//! address queue's entry and buffer, its slab entry, its mailbox, its thread's parker), so
//! that a signaller of the group asks the processor for those lines before it takes the
//! arbiter's lock, and the hold is shorter by the misses it would have taken under it
//! (BENCHMARKS.md, "Hand-offs"). The arbiter keeps one a group, as it keeps spin gates.
//!
//! Invariant: a hint is addresses only, never dereferenced: a stale one (its wait ended, its
//! queue grew elsewhere) costs useless prefetches, and a prefetch never faults. Written under
//! the arbiter's lock, read without it.

use hos_runtime::internal::sys::prefetch_write;
// Std's atomics even under loom: addresses to prefetch order nothing, so no model checks them.
use std::sync::atomic::{AtomicUsize, Ordering};

/// The lines a signal touches to end one wait: `Table::lines_of`'s four and the parker's.
const LINES: usize = 5;

/// One group's hint: 0 where no line is known yet.
#[derive(Debug, Default)]
pub(super) struct Hint([AtomicUsize; LINES]);

impl Hint {
    /// The wait just registered in the group lies at `table` (its table lines), and its
    /// thread's parker at `parker`.
    pub(super) fn remember(&self, table: [usize; 4], parker: usize) {
        let lines = table.into_iter().chain([parker]);
        for (hint, line) in self.0.iter().zip(lines) {
            // Relaxed: a hint orders nothing; a signaller that reads an older one prefetches
            // lines it does not need.
            hint.store(line, Ordering::Relaxed);
        }
    }

    /// Asks the processor for the lines of the group's last registered wait, for writing.
    pub(super) fn prefetch(&self) {
        for hint in &self.0 {
            // Relaxed: as in `remember`.
            match hint.load(Ordering::Relaxed) {
                0 => {}
                line => prefetch_write(line),
            }
        }
    }
}
