//! A thread's own copy of where it stands on the virtual cores: its slot (or none, or an
//! escape), its kick word (with its card: who it is, since when it holds its slot), and where
//! it stands for wake claims, all on its line (`line.rs`).
//!
//! Invariant: only the thread itself writes its slot, after the table told it where it stands,
//! after it took a slot on the fast path (`cells.rs`), or after it found one a waker took for
//! it (`claim.rs`); its claim state moves as [`Seat`]'s invariant says. The table is the
//! truth, the seat a hint the thread reads without it.

use super::card::Card;
use super::kick;
use super::line::Line;
use super::step::Step;
use crate::sync::atomic::Ordering;

/// `Seat::at` when the thread holds no slot.
const NO_SLOT: u8 = u8::MAX;
/// `Seat::at` when the thread runs past the slots by escape.
const ESCAPED: u8 = u8::MAX - 1;

/// `Seat::claim`: the thread is not away in a wait that claims; no waker may claim a core for
/// it.
const HOME: u8 = 0;
/// `Seat::claim`: it gave its core back for a wait that a wake ends (on an object, an idle
/// poll) and will take one again: a waker may claim one for it.
const AWAY: u8 = 1;
/// `Seat::claim`: a waker claimed a core for it under the lock (`Locked::claims` holds the
/// claim).
const CLAIMED: u8 = 2;
/// `Seat::claim`: a waker claims a core for it without the lock (`claim.rs`): it writes the
/// thread's card and tries the lent slots' cells; only that waker moves the state on, at once,
/// to [`GRANTED`] or back to [`AWAY`].
const CLAIMING: u8 = 3;
/// `Seat::claim`, plus a slot: a waker took that lent slot for it without the lock (its cell
/// names the thread's line); only the thread moves the state on, as it takes the slot or
/// gives it back.
const GRANTED: u8 = 4;

/// Where a thread that comes home for a core stands ([`Seat::come_home`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Home {
    /// Nothing claimed for it: it takes a core itself.
    Free,
    /// A waker took this lent slot for it without the lock: the slot is its own now.
    Granted(usize),
    /// A waker claimed under the lock: the claim is its to take, under the lock.
    Claimed,
}

/// A thread's virtual-core state: the slot it holds, for its own checkpoints, and where it
/// stands for wake claims, on its line (`line.rs`) beside its kick word and card.
///
/// # Invariant
/// Only the thread itself reads or writes its slot and its copy of whether it is away (its
/// line's owner half, `line.rs`; module ground rules), so every access to them is Relaxed;
/// the table under its lock is the truth, the seat the thread's copy of its part. Its own
/// copy of away is false exactly while its claim state is HOME, except from its come-home
/// that found a claim under the lock to that claim's take. Its claim state (`Line::claim`)
/// moves HOME -> AWAY and AWAY -> HOME by the thread (under the lock, or without it at a fast
/// release and a fast take); AWAY -> CLAIMED and CLAIMED -> AWAY or HOME only under the lock;
/// AWAY -> CLAIMING by a waker without the lock, and CLAIMING -> GRANTED or AWAY by that waker
/// alone; GRANTED -> HOME or AWAY by the thread alone. Wakers claim only by compare-and-swap
/// from AWAY, so a thread that came home without the lock is never claimed for, and one claim
/// at most is made for a wait. A plain store of the claim state is made only from a state no
/// waker can leave (HOME, CLAIMED under the lock, CLAIMING by its claimer, GRANTED by the
/// thread), never from AWAY, which a waker's compare-and-swap may leave at any moment: so no
/// claim begun is overwritten.
#[derive(Debug)]
pub struct Seat(&'static Line);

impl Default for Seat {
    fn default() -> Self {
        Seat(Line::take(NO_SLOT, HOME))
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        Line::give_back(self.0);
    }
}

impl Seat {
    /// The thread's kick word: non-zero while its checkpoint has something to do (a kick, a
    /// turn asked for, an escape to end, a core taken after a kick's grace). Its address is
    /// stable for the thread's life.
    #[inline]
    pub fn kick_word(&self) -> &'static std::sync::atomic::AtomicU32 {
        &self.0.word
    }

    /// Whether the thread's checkpoint may have something to do: its kick word (ground
    /// rules), one load. `false` means a checkpoint now returns at once.
    #[inline]
    pub fn is_asked(&self) -> bool {
        kick::is_set(&self.0.word)
    }

    /// Whether a pause is asked of the thread (its kick word's pause bit, `pause.rs`): one
    /// load, a hint.
    #[inline]
    pub fn pause_asked(&self) -> bool {
        kick::is_pause_asked(&self.0.word)
    }

    /// Sets or clears the pause bit of its kick word (a pause's asker, under its lock).
    pub(crate) fn ask_pause(&self, on: bool) {
        kick::ask_pause(&self.0.word, on);
    }

    /// The slot the thread holds (or held until a waiter took it after a kick's grace; its
    /// next checkpoint, yield or release finds that out).
    #[inline]
    pub fn slot(&self) -> Option<usize> {
        // Relaxed: only the owning thread touches the seat (type invariant).
        match self.0.own.at.load(Ordering::Relaxed) {
            NO_SLOT | ESCAPED => None,
            s => Some(usize::from(s)),
        }
    }

    /// Whether the thread runs past the slots by escape.
    #[inline]
    pub fn is_escaped(&self) -> bool {
        // Relaxed: only the owning thread touches the seat (type invariant).
        self.0.own.at.load(Ordering::Relaxed) == ESCAPED
    }

    /// Whether the thread holds a slot or runs by escape (or after its slot was taken): what a
    /// release gives back.
    #[inline]
    pub fn holds(&self) -> bool {
        // Relaxed: only the owning thread touches the seat (type invariant).
        self.0.own.at.load(Ordering::Relaxed) != NO_SLOT
    }

    /// The kick word's line: the cells' name for the thread (`cells.rs`).
    #[inline]
    pub(super) fn line(&self) -> &'static Line {
        self.0
    }

    /// The thread's card: who it is, since when it holds its slot.
    #[inline]
    pub(super) fn card(&self) -> &'static Card {
        &self.0.card
    }

    /// Keeps the slot the thread took on the fast path: its stamp is not known until the
    /// table looks (`cells.rs`).
    #[inline]
    pub(super) fn take(&self, slot: usize) {
        // Relaxed: only the owning thread touches `at` (type invariant).
        self.0.own.at.store(slot as u8, Ordering::Relaxed);
    }

    /// Keeps where a finished step left the thread.
    #[inline]
    pub(super) fn settle(&self, step: Step) {
        // Relaxed: only the owning thread touches `at` (type invariant).
        match step {
            Step::Held { slot, since } => {
                self.card().stamp(since);
                self.0.own.at.store(slot as u8, Ordering::Relaxed);
            }
            Step::Escaped => self.0.own.at.store(ESCAPED, Ordering::Relaxed),
            Step::Cancelled => self.0.own.at.store(NO_SLOT, Ordering::Relaxed),
            Step::Kept => {}
            Step::Queued(k) => unreachable!("a seat settles after the wait {k:?} ends"),
        }
    }
}

/// Where a thread stands for wake claims (`claim.rs`), as its seat's `claim` says.
impl Seat {
    /// Whether a waker may claim a core for it now: a hint, rechecked by [`Seat::try_claim`].
    pub(super) fn is_claimable(&self) -> bool {
        // Relaxed: a hint; the claim is made by compare-and-swap under the lock.
        self.0.claim.load(Ordering::Relaxed) == AWAY
    }

    /// Whether the thread is home: no claim, made or half-made, is left for it.
    #[cfg(test)]
    pub(crate) fn is_home(&self) -> bool {
        // Relaxed: a test's look once every thread that could move it has been joined.
        self.0.claim.load(Ordering::Relaxed) == HOME
    }

    /// Whether a waker claimed a core for it under the lock: a hint off the lock, exact under
    /// it.
    pub(super) fn is_claimed(&self) -> bool {
        // Relaxed: only writers under the lock set or clear CLAIMED.
        self.0.claim.load(Ordering::Relaxed) == CLAIMED
    }

    /// A waker claims a core for the thread (under the lock): `true` if it was away.
    pub(super) fn try_claim(&self) -> bool {
        // Acquire: the thread's fast release came before its Release store of AWAY, so the
        // cells this claim looks at show that slot given back (`cells.rs`). A CAS: the thread
        // may come home without the lock at the same time.
        self.0
            .claim
            .compare_exchange(AWAY, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// A waker begins a claim without the lock: `true` if the thread was away; then the
    /// thread's card is the waker's to write, and it must [`Seat::end_claim`] at once.
    pub(super) fn begin_claim(&self) -> bool {
        // Acquire: as `try_claim`, the thread's slot is given back in the cells this claim
        // tries.
        self.0
            .claim
            .compare_exchange(AWAY, CLAIMING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The waker that began a claim ends it: `slot` taken for the thread, or none (the thread
    /// is away again, for a claim under the lock).
    pub(super) fn end_claim(&self, slot: Option<usize>) {
        let state = slot.map_or(AWAY, |s| GRANTED + s as u8);
        // Release: the card written and the cell taken before it, for the thread's Acquire.
        self.0.claim.store(state, Ordering::Release);
    }

    /// The thread's claim state once no waker is in the middle of a claim without the lock
    /// (a few stores and compare-and-swaps: spun out, yielding after a while).
    fn settled(&self) -> u8 {
        let mut spins = 0u32;
        loop {
            // Acquire: a GRANTED state's card and cell, written before the waker's Release.
            let state = self.0.claim.load(Ordering::Acquire);
            if state != CLAIMING {
                return state;
            }
            spins += 1;
            if spins < 64 || cfg!(loom) {
                crate::sync::spin_hint();
            } else {
                crate::sys::yield_now();
            }
        }
    }

    /// The slot a waker took for the thread without the lock, if one did (called by the
    /// thread, which alone moves a GRANTED state on).
    pub(super) fn granted(&self) -> Option<usize> {
        match self.settled() {
            s if s >= GRANTED => Some(usize::from(s - GRANTED)),
            _ => None,
        }
    }

    /// Marks the thread away (a waker may claim for it) or home: by the thread after it gave
    /// its core back, or under the lock as a claim is taken or given back; always on the
    /// thread itself, which keeps the same in its own half ([`Seat::come_home`] reads it).
    #[inline]
    pub(super) fn set_away(&self, away: bool) {
        // Relaxed: the owner's own copy (`line.rs`, `Own`).
        self.0.own.away.store(away, Ordering::Relaxed);
        // Release: a claimer that reads AWAY (Acquire) sees the slot given back before it.
        self.0
            .claim
            .store(if away { AWAY } else { HOME }, Ordering::Release);
    }

    /// The thread comes home before it takes a core without the lock: [`Home::Claimed`] if a
    /// waker claimed one for it under the lock meanwhile (the claim is its to take, under the
    /// lock), [`Home::Granted`] if one took a lent slot for it. No waker claims for it
    /// afterwards.
    ///
    /// A thread that did not step away is home: it reads only its own half, and no claim can
    /// exist for it. One that did touches its claim state first by a compare-and-swap, not a
    /// look, since after a waker's claim the line is the waker's, and a look would fetch it
    /// shared and the swap (or the store that takes a grant) fetch it again.
    #[inline]
    pub(super) fn come_home(&self) -> Home {
        let own = &self.0.own;
        // Relaxed: the owner's own copy of whether its claim state is away (`set_away`).
        if !own.away.load(Ordering::Relaxed) {
            return Home::Free;
        }
        own.away.store(false, Ordering::Relaxed);
        loop {
            // Relaxed: the decision is this location's alone (a claimer's CAS and this one are
            // ordered by it); a claim found here is read again under the lock, a grant settled.
            match self
                .0
                .claim
                .compare_exchange(AWAY, HOME, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) | Err(HOME) => return Home::Free,
                Err(_) => {}
            }
            match self.settled() {
                HOME => return Home::Free,
                // Home once the claim is taken under the lock (`Locked::take_claim`).
                CLAIMED => return Home::Claimed,
                AWAY => continue,
                s => {
                    debug_assert!(s >= GRANTED, "claim state {s} of a thread coming home");
                    self.set_away(false);
                    return Home::Granted(usize::from(s - GRANTED));
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// A thread that comes home while a waker is half-way through a claim without the lock
    /// waits for the claim to end, and takes what it granted; one that comes home after a
    /// claim that took nothing finds itself free to take a core.
    #[test]
    fn coming_home_waits_out_a_half_made_claim() {
        for granted in [Some(3), None] {
            let seat = Arc::new(Seat::default());
            seat.set_away(true);
            assert!(seat.begin_claim());
            assert!(!seat.begin_claim(), "one claim a wait");
            let (tx, rx) = std::sync::mpsc::channel();
            let h = {
                let seat = seat.clone();
                std::thread::spawn(move || tx.send(seat.come_home()).unwrap())
            };
            let early = rx.recv_timeout(Duration::from_millis(50));
            assert!(
                early.is_err(),
                "came home past a half-made claim: {early:?}"
            );
            seat.end_claim(granted);
            let home = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("never came home");
            assert_eq!(home, granted.map_or(Home::Free, Home::Granted));
            h.join().unwrap();
            assert!(seat.is_home());
            assert!(!seat.begin_claim(), "nothing claimed for a thread at home");
        }
    }
}
