//! A guest thread's line: one cache line that holds everything of the thread the virtual cores
//! share between threads: its kick word (`kick.rs`), its seat's claim state (`seat.rs`), and
//! its card (`card.rs`); beside it, on a line of its own, what only the thread reads and
//! writes ([`Own`]: its seat's slot, and whether it stepped away).
//!
//! # Invariant
//!
//! A line is `'static` and has one owner at a time, one thread's [`Seat`](super::Seat): its
//! address is stable for that thread's life and readable forever after (a kick word's pointer
//! that a host kept never dangles). Lines are recycled: a line whose seat dropped goes back to a
//! process-wide pool, reset (word clear, no slot, home), and the next seat made takes it. Each
//! field says who writes it: the kick word (`kick.rs`), the slot and claim state (`seat.rs`),
//! the card (`card.rs`).
//!
//! Why one line: a parked hand-off to a guest thread is the virtual cores' hottest shared path.
//! The waker claims the thread's core (its claim state, its card, a cell), and the thread, once
//! it runs, takes what was claimed (its claim state) and reads its kick word. With all of them
//! here, each side moves this line and the cells' once (`claim.rs`); the thread's record,
//! which the waker reads for who the thread is, is not written by either. The owner's half is
//! apart so that the owner can tell, without touching this line, whether a claim may be
//! waiting for it, and its first touch after one is a compare-and-swap (`Seat::come_home`). Other
//! threads write the line only while its owner runs no guest code (a claim is made for a thread
//! away in a wait), or rarely (a kick, a revocation, a lend, a pause), so its owner keeps the
//! line it reads at every loop head of its guest code.
//!
//! The kick word and the card are std atomics: they outlive any loom model, and a model checks
//! the table's decisions, which never read them. The claim state and the owner's half are the
//! model's atomics (`sync.rs`), since the claim races are decided on them; so under loom a line
//! is made fresh for every seat and never recycled (a model's atomics live in one execution).

use super::card::Card;
use super::kick::CLEAR;
use crate::sync::atomic::{AtomicBool, AtomicU8};
use crate::sync::lock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Every line made, by its number, and those not owned now. Process bookkeeping behind a std
/// lock, taken once when a thread's seat is made, once when it is dropped, and when the
/// virtual cores look up the holder of a slot taken on the fast path ([`Line::numbered`]).
struct Lines {
    all: Vec<&'static Line>,
    free: Vec<&'static Line>,
}

static LINES: Mutex<Lines> = Mutex::new(Lines {
    all: Vec::new(),
    free: Vec::new(),
});

/// How many lines one allocation makes when the pool is empty (one under loom: module doc).
const CHUNK: usize = if cfg!(loom) { 1 } else { 64 };

/// A thread's line (module invariant), and its owner's half. Its number is what a cell holds
/// while its owner holds that cell's slot on the fast path (`cells.rs`).
///
/// 128-byte aligned, and the owner's half 128 bytes on: x86's spatial prefetcher fetches
/// lines in 128-byte pairs, so a waker that fetched the shared line would otherwise fetch the
/// owner's half beside it, which the owner's next write then takes back.
#[derive(Debug)]
#[repr(C, align(128))]
pub(crate) struct Line {
    /// The kick word (`kick.rs`).
    pub(super) word: AtomicU32,
    /// The seat's claim state (`seat.rs`): moved by the owner and by wakers.
    pub(super) claim: AtomicU8,
    /// Who the owner is and since when it holds its slot, for the cells.
    pub(crate) card: Card,
    /// Its index in `Lines::all`: how a cell names it.
    number: usize,
    /// The owner's half, on a line pair of its own.
    pub(super) own: Own,
}

/// What only a line's owner reads and writes (`seat.rs`), on a cache-line pair of its own.
#[derive(Debug)]
#[repr(align(128))]
pub(super) struct Own {
    /// The seat's slot.
    pub(super) at: AtomicU8,
    /// Whether the owner stepped away: its claim state is not home.
    pub(super) away: AtomicBool,
}

impl Line {
    /// A line from the pool (a new chunk if it is empty), reset, for a new seat: no slot,
    /// `at`, and home, `claim` (not away).
    pub(super) fn take(at: u8, claim: u8) -> &'static Line {
        let mut lines = lock(&LINES);
        if cfg!(loom) || lines.free.is_empty() {
            let first = lines.all.len();
            // Leaked on purpose: a line lives as long as the process (module invariant).
            let chunk: &'static [Line] = Box::leak(
                (first..first + CHUNK)
                    .map(|number| Line {
                        word: AtomicU32::new(CLEAR),
                        claim: AtomicU8::new(claim),
                        card: Card::new(),
                        number,
                        own: Own {
                            at: AtomicU8::new(at),
                            away: AtomicBool::new(false),
                        },
                    })
                    .collect::<Box<[_]>>(),
            );
            lines.all.extend(chunk.iter());
            lines.free.extend(chunk.iter());
        }
        let line = lines.free.pop().expect("the pool was refilled");
        // Relaxed: nobody else holds the line now (its last seat is gone, or it is new); the
        // pool's lock hands these values to the new owner.
        line.word.store(CLEAR, Ordering::Relaxed);
        line.claim.store(claim, Ordering::Relaxed);
        line.own.at.store(at, Ordering::Relaxed);
        line.own.away.store(false, Ordering::Relaxed);
        line
    }

    /// Gives the line back to the pool once its seat is dropped (kept out of it under loom).
    pub(super) fn give_back(line: &'static Line) {
        if !cfg!(loom) {
            lock(&LINES).free.push(line);
        }
    }

    /// The kick word on this line.
    pub(crate) fn word(&'static self) -> &'static AtomicU32 {
        &self.word
    }

    /// Its number: what a cell holds to name it.
    #[inline]
    pub(crate) fn number(&self) -> usize {
        self.number
    }

    /// The line numbered `n`, if one was made.
    pub(crate) fn numbered(n: usize) -> Option<&'static Line> {
        lock(&LINES).all.get(n).copied()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{lock, Line, LINES};
    use std::mem::{offset_of, size_of};

    /// A line given back is taken again: a process that makes and ends threads for ever makes
    /// lines only for the most it had at once (other tests make lines meanwhile, so the bound
    /// is loose).
    #[test]
    fn a_line_given_back_is_taken_again() {
        let made = || lock(&LINES).all.len();
        let before = made();
        for _ in 0..2000 {
            Line::give_back(Line::take(0, 0));
        }
        assert!(made() - before < 1000, "{} lines made", made() - before);
    }

    /// The shared half fits one cache line, and the owner's half lies on another pair of
    /// lines (`Line`'s doc).
    #[test]
    fn the_owners_half_is_on_a_line_pair_of_its_own() {
        assert!(offset_of!(Line, number) + size_of::<usize>() <= 64);
        assert_eq!(offset_of!(Line, own), 128);
        assert_eq!(size_of::<Line>(), 256);
        assert_eq!(std::mem::align_of::<Line>(), 128);
    }
}
