//! Priority inheritance: a thread's effective priority, the best of its own and its lock
//! waiters', and the re-ranking that follows a change of either up the chain of lock owners
//! (mesosphère's `RestorePriority`).
//!
//! Invariant (the table's, `mod.rs`): after every operation a busy thread's effective priority
//! is the best of its own priority and its registered lock waiters' effective priorities, a
//! waiting thread's waiter carries it, and a wait whose priority changed sits at the back of
//! its new priority; every change of a priority lent or taken back is told in
//! [`Effects::lend`].

use super::{Effects, Place, Table};
use crate::sync::atomic::AtomicU32;
use std::ops::Deref;

impl<R: Clone, W: Deref<Target = AtomicU32> + std::fmt::Debug> Table<R, W> {
    /// Thread `id`'s own priority changed (svcSetThreadPriority): re-ranks what it is in.
    pub(crate) fn set_base(&mut self, id: u32, base: u8, fx: &mut Effects<R>) {
        let Some(info) = self.threads.get_mut(&id) else {
            return;
        };
        info.base = base;
        if info.busy(id, &self.waiters) {
            self.restore(id, fx);
        } else {
            // In nothing, lent nothing: nothing to re-rank or tell.
            info.effective = base;
        }
        self.check();
    }

    /// Thread `id`'s effective priority, while it is busy.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn effective(&self, id: u32) -> Option<u8> {
        self.threads
            .get(&id)
            .filter(|i| i.busy(id, &self.waiters))
            .map(|i| i.effective)
    }

    /// Recomputes thread `id`'s effective priority and, while it changes, re-ranks its wait
    /// and goes on to the owner of the lock it waits for.
    pub(super) fn restore(&mut self, id: u32, fx: &mut Effects<R>) {
        let mut id = id;
        // Terminates: along one chain every change goes the same way, within 0..=64.
        loop {
            let Some(info) = self.threads.get(&id) else {
                return;
            };
            let best = info.held.iter().map(|&k| self.waiters[k].priority).min();
            let new = best.map_or(info.base, |b| b.min(info.base));
            if new == info.effective {
                return;
            }
            let info = self.threads.get_mut(&id).expect("found above");
            info.effective = new;
            fx.lend
                .push((info.r.clone(), (new < info.base).then_some(new)));
            let Some(k) = info.wait(id, &self.waiters) else {
                return;
            };
            self.unlink(k);
            let ticket = self.ticket();
            let w = &mut self.waiters[k];
            w.priority = new;
            w.ticket = ticket;
            self.link(k);
            match self.waiters[k].place {
                Place::Lock { owner, .. } => id = owner,
                _ => return,
            }
        }
    }
}
