//! The fast path: while nobody waits, an uncontended thread takes a free slot and gives it back
//! by one compare-and-swap of the slot's cell each (`cells.rs`), without the lock or a ranking;
//! the table lends its slots for that while it is idle (`table/lend.rs`).
//!
//! # Invariant
//!
//! `Locked::lent` is the set of lent slots: exactly the cells that are not LOCKED. Every
//! operation under the lock ([`Inner::locked`]) first takes every lent slot back
//! ([`Locked::take_back`]): the table learns each fast holder from its card (who, and the stamp
//! of its take), and the holder's kick word becomes its slot's. Then the operation runs on
//! a table that sees every holder, and last, if the table is idle and no claim waits, every
//! slot is lent again ([`Locked::lend`]), each holder with its card written. So every decision
//! that ranks, kicks or queues sees every holder, and no slot is lent while anyone waits.
//!
//! Why no wake is lost and no slot is held twice: a waiter queues only under the lock, after
//! the take-back swapped every lent cell to LOCKED. A give and that swap are read-modify-writes
//! of one cell, so one of them comes first: a give before it leaves the slot free to the table,
//! which grants it instead of queueing; a give after it fails, and the holder gives its slot
//! back under the lock, which hands it to the best waiter. Likewise a take before the swap is
//! taken back as a holder (ranked, kickable), and a take after it fails and asks under the lock.
//!
//! Wake claims (`claim.rs`): a thread gives its slot back on the fast path before it marks
//! itself away (Release), and a claimer claims only by compare-and-swap from away (Acquire), so
//! the cells a claim looks at show that slot given back; a thread comes home by compare-and-swap
//! before a fast take, so no claim is made for it after it. A claim may itself take a lent
//! free slot for the thread ([`Inner::take_lent`], the take's own steps, the card written by
//! the waker while the thread's seat is marked claiming): the cell then names the thread, as
//! after its own take, so a take-back finds it the holder either way.
//!
//! A take reads the event clock once (`sys::ticks()`, the TSC where it serves), as a take under
//! the lock does: the slot's time slice, its age among the holders a waiter may kick, and the
//! hold times of the wait tree and of an escape's report count from the take. A give reads none.

use super::cells::Cells;
use super::line::Line;
use super::seat::Home;
use super::{Inner, Locked, Occupant, Step, Who};
use crate::sys;
use crate::vcore::table::bits;

impl Inner {
    /// Takes a free allowed slot for `t` without the lock (its ideal core first), or the one a
    /// waker took for it (`claim.rs`). `None`: ask under the lock (no slot is lent, none
    /// allowed is free, a waker claimed one for `t` under the lock, or its mask names none of
    /// the cores).
    #[inline]
    pub(super) fn take_fast(&self, t: &impl Occupant) -> Option<usize> {
        let seat = t.seat();
        let slot = match seat.come_home() {
            Home::Free => self.take_lent(t.who(), seat.line())?,
            Home::Granted(slot) => slot,
            Home::Claimed => return None,
        };
        seat.take(slot);
        Some(slot)
    }

    /// Takes a free allowed slot for `who`, whose line is `line`, without the lock (its ideal
    /// core first), its card written first: by the thread itself, or by a waker that began a
    /// claim for it (`Seat::begin_claim`). `None`: no allowed slot is lent and free.
    #[inline]
    pub(super) fn take_lent(&self, who: Who, line: &'static Line) -> Option<usize> {
        let mask = who.traits.mask & self.all;
        line.card.publish(who, sys::ticks());
        let ideal = who.traits.ideal.filter(|&i| mask & (1 << i) != 0);
        // The first try swaps without a look (`Cells::try_take_first`), the others look first.
        let mut tries = ideal.into_iter().chain(bits(mask));
        let first = tries.next()?;
        if self.cells.try_take_first(first, line) {
            return Some(first);
        }
        tries.find(|&s| self.cells.try_take(s, line))
    }

    /// Gives `t`'s slot back without the lock, then marks it away if `away` (a waker may claim
    /// for it). `false`: its slot is not lent to it (give it back under the lock).
    #[inline]
    pub(super) fn give_fast(&self, t: &impl Occupant, away: bool) -> bool {
        let seat = t.seat();
        let Some(s) = seat.slot() else {
            return false;
        };
        if !self.cells.try_give(s, seat.line()) {
            return false;
        }
        seat.settle(Step::Cancelled);
        if away {
            seat.set_away(true);
        }
        true
    }
}

impl Locked {
    /// Takes every lent slot back (module invariant): the first thing under the lock.
    pub(super) fn take_back(&mut self, cells: &Cells) {
        if self.lent == 0 {
            return;
        }
        for s in bits(self.lent) {
            if let Some(line) = cells.close(s) {
                self.table.take_back(s, line.card.who(), line.card.since());
                self.words[s] = Some(line);
            }
        }
        self.lent = 0;
    }

    /// Lends every slot if the table is idle and no claim waits (module invariant): the last
    /// thing under the lock.
    pub(super) fn lend(&mut self, cells: &Cells) {
        if self.lent != 0 || !self.claims.is_empty() || !self.table.is_idle() {
            return;
        }
        for s in 0..self.table.cores() {
            let holder: Option<&'static Line> = match self.table.holder(s) {
                None => None,
                Some(_) => {
                    let Some(line) = self.words[s].take() else {
                        debug_assert!(false, "slot {s} held by a thread never told so");
                        continue;
                    };
                    let (who, since) = self.table.lend(s).expect("a held slot");
                    line.card.publish(who, since);
                    Some(line)
                }
            };
            cells.open(s, holder);
            self.lent |= 1 << s;
        }
    }
}
