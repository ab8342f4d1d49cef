//! Lending: while nobody waits, the table lends its slots to the semaphore's fast path
//! (`vcore/fast.rs`), which takes and gives them without the lock, and takes them back before
//! any other step.
//!
//! # Invariants
//!
//! - The table lends only while idle ([`Table::is_idle`]): no waiter (queued, or granted or
//!   cancelled and not polled yet), nobody beside the slots (escaped or revoked), every flag
//!   Idle, not shut down. So nothing it would decide concerns a lent slot's holder, and a thread
//!   that takes a lent free slot passes nobody.
//! - A lent slot is free here ([`Table::lend`] forgets its holder); the caller keeps the lent
//!   slots and takes each back ([`Table::take_back`]) before the next operation, so no
//!   operation sees a lent slot.

use super::Table;
use crate::vcore::step::{Flag, Who};

impl Table {
    /// Whether the table may lend its slots (module invariants).
    pub(crate) fn is_idle(&self) -> bool {
        self.waiters.is_empty()
            && self.escaped.is_empty()
            && self.revoked.is_empty()
            && !self.shut
            && self.flags.iter().all(|&f| f == Flag::Idle)
    }

    /// Lends slot `s`: the table forgets its holder, if it has one, and returns it with its
    /// stamp. The table must be idle.
    pub(crate) fn lend(&mut self, s: usize) -> Option<(Who, u64)> {
        debug_assert!(self.is_idle(), "lending slot {s} while the table is busy");
        let h = self.slots[s].take()?;
        self.free |= 1 << s;
        Some((h.who, h.since))
    }

    /// Takes slot `s` back, held by `who` since stamp `since` (the lent slot was taken on the
    /// fast path), as an idle table's holder: unkicked, its flag Idle.
    pub(crate) fn take_back(&mut self, s: usize, who: Who, since: u64) {
        self.seat(s, who, &since);
        self.check();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::vcore::step::{Effects, Step, Traits};

    fn who(id: u64) -> Who {
        Who {
            id,
            traits: Traits::new(44, false, 0b11, 0),
        }
    }

    #[test]
    fn a_lent_holder_is_forgotten_and_taken_back_with_its_stamp() {
        let mut t = Table::new(2, 10, 1_000, 0);
        let mut fx = Effects::default();
        assert!(t.is_idle());
        assert_eq!(
            t.acquire(who(1), 5, &mut fx),
            Step::Held { slot: 0, since: 5 }
        );
        assert_eq!(t.lend(0), Some((who(1), 5)));
        assert_eq!(t.lend(1), None);
        assert_eq!(t.free_mask(), 0b11);
        t.take_back(0, who(1), 5);
        assert_eq!(t.holder(0), Some((&who(1), 5)));
        assert_eq!(t.slot_of(1), Some(0));
    }

    #[test]
    fn a_table_with_anyone_waiting_or_beside_the_slots_is_busy() {
        let mut t = Table::new(1, 10, 1_000, 0);
        let mut fx = Effects::default();
        t.acquire(who(1), 0, &mut fx);
        assert!(t.is_idle());
        let Step::Queued(key) = t.acquire(who(2), 0, &mut fx) else {
            panic!("one core, two threads")
        };
        assert!(!t.is_idle(), "a waiter");
        t.abandon(key, 0, &mut fx);
        assert!(t.is_idle());
        t.refresh(1, Traits::new(44, false, 0b10, 0), 0, &mut fx);
        assert!(!t.is_idle(), "a holder asked to leave");
        t.refresh(1, Traits::new(44, false, 0b1, 0), 0, &mut fx);
        assert!(t.is_idle());
        t.shutdown(&mut fx);
        assert!(!t.is_idle(), "shut down");
    }
}
