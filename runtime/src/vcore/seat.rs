//! A thread's own copy of where it stands on the virtual cores: its slot (or none, or an
//! escape), since when, its kick word, and the claim hints a waker writes.
//!
//! Invariant: only the thread itself writes its slot and stamp, after the table told it where
//! it stands; `away` and `claimed` are written only under the semaphore's lock (module ground
//! rules in `mod.rs`). The table is the truth, the seat a hint the thread reads without it.

use super::kick::{self, KickWord};
use super::step::Step;
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

/// `Seat::at` when the thread holds no slot.
const NO_SLOT: u8 = u8::MAX;
/// `Seat::at` when the thread runs past the slots by escape.
const ESCAPED: u8 = u8::MAX - 1;

/// A thread's virtual-core state: the slot it holds and since when, for its own checkpoints.
///
/// # Invariant
/// Only the thread itself reads or writes `at` and `since` (module ground rules), so every
/// access is Relaxed; the table under its lock is the truth, the seat the thread's copy of its
/// part. `away` and `claimed` are written only under the table lock (by the thread, or by a
/// waker claiming a core for it: `claim.rs`) and read without it only as hints.
#[derive(Debug)]
pub struct Seat {
    /// The slot, [`NO_SLOT`] or [`ESCAPED`].
    at: AtomicU8,
    /// When the slot was acquired (a stamp: `sys::ticks()`), for the time slice.
    pub(super) since: AtomicU64,
    /// The thread's kick word (module ground rules).
    kick: KickWord,
    /// It gave its core back for a wait on an object and will take one again: a waker may
    /// claim one for it.
    pub(super) away: AtomicBool,
    /// A waker claimed a core for it (`Locked::claims` holds the claim).
    pub(super) claimed: AtomicBool,
}

impl Default for Seat {
    fn default() -> Self {
        Seat {
            at: AtomicU8::new(NO_SLOT),
            since: AtomicU64::new(0),
            kick: KickWord::new(),
            away: AtomicBool::new(false),
            claimed: AtomicBool::new(false),
        }
    }
}

impl Seat {
    /// The thread's kick word: non-zero while its checkpoint has something to do (a kick, a
    /// turn asked for, an escape to end, a core taken after a kick's grace). Its address is
    /// stable for the thread's life.
    pub fn kick_word(&self) -> &'static std::sync::atomic::AtomicU32 {
        self.kick.get()
    }

    /// Whether the thread's checkpoint may have something to do: its kick word (ground
    /// rules), one load. `false` means a checkpoint now returns at once.
    #[inline]
    pub fn is_asked(&self) -> bool {
        kick::is_set(self.kick.get())
    }

    /// Whether a pause is asked of the thread (its kick word's pause bit, `pause.rs`): one
    /// load, a hint.
    #[inline]
    pub fn pause_asked(&self) -> bool {
        kick::is_pause_asked(self.kick.get())
    }

    /// Sets or clears the pause bit of its kick word (a pause's asker, under its lock).
    pub(crate) fn ask_pause(&self, on: bool) {
        kick::ask_pause(self.kick.get(), on);
    }

    /// The slot the thread holds (or held until a waiter took it after a kick's grace; its
    /// next checkpoint, yield or release finds that out).
    pub fn slot(&self) -> Option<usize> {
        // Relaxed: only the owning thread touches the seat (type invariant).
        match self.at.load(Ordering::Relaxed) {
            NO_SLOT | ESCAPED => None,
            s => Some(usize::from(s)),
        }
    }

    /// Whether the thread runs past the slots by escape.
    pub fn is_escaped(&self) -> bool {
        // Relaxed: only the owning thread touches the seat (type invariant).
        self.at.load(Ordering::Relaxed) == ESCAPED
    }

    /// Whether the thread holds a slot or runs by escape (or after its slot was taken): what a
    /// release gives back.
    pub fn holds(&self) -> bool {
        // Relaxed: only the owning thread touches the seat (type invariant).
        self.at.load(Ordering::Relaxed) != NO_SLOT
    }

    /// Keeps where a finished step left the thread.
    pub(super) fn settle(&self, step: Step) {
        // Relaxed: only the owning thread touches the seat (type invariant).
        match step {
            Step::Held { slot, since } => {
                self.since.store(since, Ordering::Relaxed);
                self.at.store(slot as u8, Ordering::Relaxed);
            }
            Step::Escaped => self.at.store(ESCAPED, Ordering::Relaxed),
            Step::Cancelled => self.at.store(NO_SLOT, Ordering::Relaxed),
            Step::Kept => {}
            Step::Queued(k) => unreachable!("a seat settles after the wait {k:?} ends"),
        }
    }
}
