//! Cells: one word a slot, through which a thread takes a free slot and gives it back without
//! the semaphore's lock while the table lends it its slots (`fast.rs` says when).
//!
//! A cell is [`LOCKED`] (the table alone says who holds its slot), [`FREE`] (lent, free), or
//! names the kick-word line (`kick.rs`) of the thread holding its slot on the fast path, whose
//! card (`card.rs`) says who that is: the line's number plus [`NAMED`].
//!
//! # Invariant
//!
//! Only the holder of the semaphore's lock moves a cell to or from [`LOCKED`] ([`Cells::close`],
//! [`Cells::open`]). Without the lock a thread moves a cell only from [`FREE`] to its own line
//! ([`Cells::try_take`]) and from its own line back to [`FREE`] ([`Cells::try_give`]), each by
//! one compare-and-swap. So while the lock is held a [`LOCKED`] cell stays so, and a line in a
//! cell leaves it only by its owner's give or the lock holder's close.
//!
//! The cells are the model's atomics under loom (`sync.rs`): the hand-off races are here.

use super::line::Line;
use super::step::MAX_CORES;
use crate::sync::atomic::{AtomicUsize, Ordering};

/// The table's: its slot is not lent.
const LOCKED: usize = 1;
/// Lent and free.
const FREE: usize = 0;
/// The first value that names a line (line 0).
const NAMED: usize = 2;

/// The cells of the slots, on one cache line (module invariant).
#[derive(Debug)]
#[repr(align(64))]
pub(super) struct Cells([AtomicUsize; MAX_CORES]);

/// The value a cell holds while `line`'s owner holds its slot.
fn addr(line: &'static Line) -> usize {
    line.number() + NAMED
}

impl Cells {
    /// Cells of no lent slot.
    pub(super) fn new() -> Self {
        Cells(std::array::from_fn(|_| AtomicUsize::new(LOCKED)))
    }

    /// Takes slot `s` for `line`'s owner if it is lent and free. Its card is written before.
    #[inline]
    pub(super) fn try_take(&self, s: usize, line: &'static Line) -> bool {
        // Relaxed: a look before the CAS, which decides; no RMW on a cell that cannot be had.
        self.0[s].load(Ordering::Relaxed) == FREE && self.try_take_first(s, line)
    }

    /// [`Cells::try_take`] without the look before the compare-and-swap: for a take's first
    /// try. The cells share one line, which is usually another thread's at a take (the slot's
    /// last giver's, a waker's): a look would fetch it shared and the swap fetch it again,
    /// where the swap alone fetches it once, and after it, failed or not, looks at the other
    /// cells cost nothing.
    #[inline]
    pub(super) fn try_take_first(&self, s: usize, line: &'static Line) -> bool {
        // AcqRel: Release publishes the card to a closer's Acquire swap; Acquire orders this
        // holder after the slot's last give (Release), as a lock hand-off does. Relaxed on
        // failure: nothing was taken.
        self.0[s]
            .compare_exchange(FREE, addr(line), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Gives slot `s` back for `line`'s owner: `false` if the cell no longer holds its line
    /// (the table took the slot back: give it back under the lock).
    #[inline]
    pub(super) fn try_give(&self, s: usize, line: &'static Line) -> bool {
        // Release: what the holder did on the core comes before the next taker's Acquire.
        // Relaxed on failure: the lock orders the slow give that follows.
        self.0[s]
            .compare_exchange(addr(line), FREE, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes lent slot `s` back for the table (under the lock): the line of the thread that
    /// holds it on the fast path, `None` if it was free.
    pub(super) fn close(&self, s: usize) -> Option<&'static Line> {
        // Acquire: the holder's card, written before its take (Release); a swap, not a load,
        // so that a give or a take after it fails and goes to the lock.
        match self.0[s].swap(LOCKED, Ordering::Acquire) {
            FREE => None,
            LOCKED => unreachable!("slot {s} taken back twice"),
            named => Some(Line::numbered(named - NAMED).expect("a cell names a line made")),
        }
    }

    /// Lends slot `s` (under the lock, a [`LOCKED`] cell): free, or held by `holder`, whose
    /// card is written before.
    pub(super) fn open(&self, s: usize, holder: Option<&'static Line>) {
        // Release: the card, and the slot's last holder's work, before a take's Acquire. A
        // store: nobody else moves a LOCKED cell (module invariant).
        self.0[s].store(holder.map_or(FREE, addr), Ordering::Release);
    }

    /// How many of the `lent` slots are held now (a gauge).
    pub(super) fn held(&self, lent: u64) -> usize {
        (0..MAX_CORES)
            .filter(|&s| lent & (1 << s) != 0)
            // Relaxed: a gauge.
            .filter(|&s| self.0[s].load(Ordering::Relaxed) != FREE)
            .count()
    }
}
