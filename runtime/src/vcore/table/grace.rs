//! The kicks' grace (HOS_VCORE_GRACE_US, docs/design.md section 8): a queued waiter whose
//! claimed holder has not given its slot up within the grace after its kick takes the slot
//! (a revocation). The holder goes on running guest code until its next checkpoint, yield or
//! release, where it is told it holds nothing: at a checkpoint or a yield it takes a free
//! allowed slot or waits by its rank, as a kicked holder that gave up; at a release it leaves.
//!
//! # Invariants (checked by `Table::check` in debug builds)
//!
//! - A revoked thread is in `Table::revoked` and nowhere else: it holds no slot, so for that
//!   while more than N threads run guest code, the one exception to "one holder a slot" besides
//!   the escape. Each revocation is counted and traced by the caller ([`Effects::revoked`]).
//! - A waiter granted a slot that has not polled yet never ran on it: if that slot is taken, it
//!   queues again in its place (by its rank and ticket), and runs nothing beside the slots.
//! - With the grace on, a queued waiter's `poll_at` is never later than the end of the grace of
//!   the kick on the holder it claims: whatever moves that end before it (a new claim, a new
//!   kick) wakes the waiter. A poll that leaves it queued tells it a time in the future, so a
//!   waiter polls for a revocation only when one is due, never in a loop; a waiter that claims
//!   nothing is told [`NEVER`] and parks until its escape time or a wake, as without the grace.
//!
//! Why: a kicked holder gives its slot up only by running to its next checkpoint, and one the
//! OS has preempted cannot; the better waiter then waited for the OS to run it again, about a
//! millisecond (docs/journal.md, "What holds the uncapped fps"), where the console preempts at
//! once. The grace bounds that wait, at the price of the moment of N+1 threads.

use super::{State, Table};
use crate::stats::KickReason;
use crate::vcore::step::{Clock, Effects, WaitId, Who, MAX_CORES};

/// `Waiter::poll_at` of a waiter with no revocation to poll for.
pub(super) const NEVER: u64 = u64::MAX;

impl Table {
    /// Whether thread `id` runs on after a waiter took its slot, until its next checkpoint,
    /// yield or release.
    pub(crate) fn is_revoked(&self, id: u64) -> bool {
        self.revoked.iter().any(|w| w.id == id)
    }

    /// When the queued wait `key` must be polled again if nothing wakes it: its escape time,
    /// or sooner the end of the grace of the kick it claims.
    pub(crate) fn poll_at(&self, key: WaitId) -> u64 {
        let w = &self.waiters[key.0];
        w.since.saturating_add(self.escape_ns).min(w.poll_at)
    }

    #[cfg(all(test, not(loom)))]
    /// The end of the grace of the kick on the holder that queued waiter `key` claims: when it
    /// takes that slot if its holder still has it. `None` if it claims none or the grace is off.
    pub(crate) fn revoke_at(&self, key: WaitId) -> Option<u64> {
        self.grace_end(key.0).map(|(_, end)| end)
    }

    /// Takes thread `id` out of the revoked list, if it is there.
    pub(super) fn take_revoked(&mut self, id: u64) -> Option<Who> {
        let i = self.revoked.iter().position(|w| w.id == id)?;
        Some(self.revoked.swap_remove(i))
    }

    /// While waiter `k` is queued, takes the slot it claims if that slot's kick is older than
    /// the grace (the slot goes to the best waiter allowed on it, which may be another: then
    /// `k` claims the next one), and tells it when to poll again. With the grace off, nothing
    /// but the waiter's poll time ([`NEVER`]).
    pub(super) fn revoke_for(&mut self, k: usize, now: &dyn Clock, fx: &mut Effects) {
        // It polls now: nothing below (a grant to it, a sooner grace) needs to wake it.
        let waker = self.waiters[k].waker.take();
        while matches!(self.waiters[k].state, State::Queued(_)) {
            match self.grace_end(k) {
                Some((s, end)) if end <= now.now() => {
                    self.revoke(s, fx);
                    self.rebalance(now, fx);
                }
                end => {
                    let w = &mut self.waiters[k];
                    w.poll_at = end.map_or(NEVER, |(_, end)| end);
                    w.waker = waker;
                    return;
                }
            }
        }
    }

    /// The slot queued waiter `k` claims and the end of its kick's grace (grace on).
    fn grace_end(&self, k: usize) -> Option<(usize, u64)> {
        if self.grace_ns == 0 {
            return None;
        }
        let s = self
            .claims()
            .iter()
            .position(|c| c.is_some_and(|(_, w)| w == k))?;
        let at = self.slots[s].as_ref()?.kicked_at()?;
        Some((s, at.saturating_add(self.grace_ns)))
    }

    /// Takes slot `s` from its kicked holder (the caller rebalances): a holder that was told
    /// it holds the slot goes to the revoked list; a waiter granted it that has not polled yet
    /// queues again in its place.
    fn revoke(&mut self, s: usize, fx: &mut Effects) {
        let h = self.unseat(s, fx);
        fx.revoked.push((s, h.who.id));
        let granted = self
            .waiters
            .iter()
            .find(|(_, w)| matches!(w.state, State::Granted { slot, .. } if slot == s))
            .map(|(k, _)| k);
        match granted {
            Some(k) => {
                debug_assert_eq!(self.waiters[k].id, h.who.id, "slot {s} granted to another");
                self.waiters[k].state = State::Queued(h.who);
                self.insert(k);
            }
            None => self.revoked.push(h.who),
        }
    }

    /// After a rebalance made `claims`: wakes each claiming waiter whose claim's grace now ends
    /// before the time it was told to poll again (module invariant), and tells it that time.
    pub(super) fn tell_claimers(
        &mut self,
        claims: &[Option<(KickReason, usize)>; MAX_CORES],
        fx: &mut Effects,
    ) {
        for (s, claim) in claims.iter().enumerate() {
            let Some((_, k)) = *claim else { continue };
            let Some(at) = self.slots[s].as_ref().and_then(|h| h.kicked_at()) else {
                continue;
            };
            let end = at.saturating_add(self.grace_ns);
            let w = &mut self.waiters[k];
            if end < w.poll_at {
                w.poll_at = end;
                fx.wake.extend(w.waker.take());
            }
        }
    }

    /// Checks the module's invariants on queued waiters (debug builds; `Table::check`).
    pub(super) fn check_grace(&self) {
        for &k in &self.order {
            let w = &self.waiters[k];
            if let Some((s, end)) = self.grace_end(k) {
                assert!(
                    w.poll_at <= end,
                    "thread {} told to poll at {} past the grace of slot {s}, {end}",
                    w.id,
                    w.poll_at
                );
            }
        }
    }
}
