//! The drain: a caller of ArbitrateLock that would queue behind a mutex word's waiters, at no
//! better priority than the best of them, waits outside the queue until it drains (the word
//! is released with no lock waiter left), then answers success, and the guest retries.
//!
//! Invariant: what the caller sees is the kernel's answer to a call that came at the drain
//! (success, the word no longer `owner | WAITERS`), and what everyone else sees is the kernel's
//! too: the waiters it would have queued behind all rank before it, so none is handed the
//! lock later than if it had queued, and the owner inherits no better priority from it than
//! from the best of them, which it already does. A word with someone outside keeps
//! `WAITERS` when it is handed over, so that the unlock that drains it comes to the kernel.
//!
//! Why: Horizon's unlock hands the mutex to its first waiter, parked, which owns it while its
//! OS wake runs; every caller that comes meanwhile queues behind it, so once a queue formed
//! (a holder preempted while others came) each operation is a hand-off to a parked thread, as
//! long as the threads loop (a convoy). Outside, the callers let the queue drain; at the
//! drain they race for the free word in user space, as before the queue formed.

use super::{word, Effects, Party, Place, Table, Tree, WaitKey};
use crate::result::ResultCode;
use crate::svc::arbitration::WAITERS;
use crate::sync::atomic::AtomicU32;
use std::ops::Deref;

impl<R: Clone, W: Deref<Target = AtomicU32> + std::fmt::Debug> Table<R, W> {
    /// svcArbitrateLock up to the wait, as [`Table::lock`], but a caller that would queue
    /// behind the word's lock waiters at no better priority waits outside until they drain.
    pub(crate) fn lock_or_wait_outside(
        &mut self,
        me: &Party<R>,
        owner: u32,
        word: &AtomicU32,
        tag: u32,
        resolve: impl FnOnce(u32) -> Option<Party<R>>,
        fx: &mut Effects<R>,
    ) -> Result<Option<WaitKey>, ResultCode> {
        if word::load(word) == owner | WAITERS {
            if let Some(key) = self.wait_outside(me, owner, word as *const AtomicU32 as usize) {
                self.check();
                return Ok(Some(key));
            }
        }
        self.lock(me, owner, word, tag, resolve, fx)
    }

    /// Registers `me` outside the lock waiters of the word at `addr`, held by `owner`, if it
    /// would queue behind them at no better priority: its effective priority is no better
    /// than the best of theirs. `None` if it would not (no waiter there, or it ranks first).
    fn wait_outside(&mut self, me: &Party<R>, owner: u32, addr: usize) -> Option<WaitKey> {
        let held = &self.threads.get(&owner)?.held;
        let here = held.iter().filter(
            |&&k| matches!(self.waiters[k].place, Place::Lock { addr: a, .. } if a == addr),
        );
        let best = here.map(|&k| self.waiters[k].priority).min()?;
        let mine = self
            .threads
            .get(&me.id)
            .map_or(me.priority, |i| i.effective);
        (best <= mine).then(|| self.push(me, 0, Place::Drain(addr)))
    }

    /// Releases the word at `addr` by `me` ([`Table::hand_off`]) and applies the drain's
    /// rule: a word handed over keeps `WAITERS` while anyone waits outside; a word left free
    /// (0) ends every wait outside it with success. Returns the word's new value.
    pub(super) fn release(&mut self, me: u32, addr: usize, fx: &mut Effects<R>) -> u32 {
        let next = self.hand_off(me, addr, fx);
        if self.queue_len(Tree::Drain, addr) == 0 {
            return next;
        }
        if next != 0 {
            return next | WAITERS;
        }
        while let Some(k) = self.pop_first(Tree::Drain, addr) {
            self.finish(k, Ok(()), fx);
        }
        0
    }

    /// How many wait outside the lock waiters of the word at `addr`.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn outside(&self, addr: usize) -> usize {
        self.queue_len(Tree::Drain, addr)
    }
}
