//! The heirs (`../heir.rs`): which lock waiter a mutex word's next unlock will hand it to, and
//! its wake ahead of that hand-off.
//!
//! Invariant: a heir's wake changes nothing in the table. The wait stays where it is, ranked as
//! it was, and its result comes only with its hand-off (best priority, then arrival): the wake
//! marks its mailbox and gives its waker a token, nothing else. Only a wait whose party asked
//! for it (`Party::early`, the runtime's policy) is woken so; another heir is left to its
//! hand-off's wake, and nobody is woken in its place.

use super::{Effects, Place, Table};
use crate::sync::atomic::AtomicU32;
use std::ops::Deref;

impl<R: Clone, W: Deref<Target = AtomicU32> + std::fmt::Debug> Table<R, W> {
    /// The lock waiter that `owner`'s unlock of the word at `addr` would hand it to now: the
    /// best registered against `owner` for that word (the hand-off itself picks by it).
    pub(super) fn heir_of(&self, owner: u32, addr: usize) -> Option<usize> {
        let here =
            |k: &usize| matches!(self.waiters[*k].place, Place::Lock { addr: a, .. } if a == addr);
        let held = &self.threads.get(&owner)?.held;
        held.iter()
            .copied()
            .filter(here)
            .min_by_key(|&k| self.rank(k))
    }

    /// Wakes lock waiter `k` ahead of its hand-off, marked its mutex's heir, so that it spins
    /// for the hand-off rather than parks again, if its party asked for that (module doc).
    pub(super) fn wake_heir(&mut self, k: usize, fx: &mut Effects<R>) {
        let w = &self.waiters[k];
        debug_assert!(
            matches!(w.place, Place::Lock { .. }),
            "heir {k} is {:?}",
            w.place
        );
        if !w.early {
            return;
        }
        w.mail.mark_heir();
        if let Some(waker) = &w.waker {
            fx.wake.push(waker.clone());
        }
    }
}
