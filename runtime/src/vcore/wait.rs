//! The wait for a virtual core: a step the table queued ([`Step::Queued`]) waited out through
//! the one `block_on` (the caller's spin, then a park), as a future over the table.
//!
//! Invariant: a queued wait ends exactly once, with the step the table decided (a slot
//! granted, an escape with its report, a cancel) or by the future's drop, which abandons it
//! under the lock and gives back a slot granted meanwhile; so no slot is held by a thread that
//! stopped waiting for it, and no waiter is left in the table.

use super::escape::Held;
use super::line::Line;
use super::step::{Clock, Step, WaitId};
use super::{Escape, Inner, Now, Occupant};
use crate::block_on::{block_on_with, Wait, WaitPolicy};
use crate::parker::with_parker;
use crate::policy::Spin;
use crate::stats::{Counters, Stripe};
use crate::sys;
use crate::trace;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

impl Inner {
    /// Waits out the step `key` that `t` queued at `now`, spinning `spin` first; counts the
    /// wait in `t`'s own time waited. Returns the step it ended with, and an escape's report.
    pub(super) fn wait_out(
        &self,
        t: &impl Occupant,
        key: WaitId,
        now: &Now,
        spin: Spin,
    ) -> (Step, Option<Escape>) {
        trace::core_queued();
        // The instant the table stamped the wait with (the clock reads once).
        let now = now.now();
        // Until the first poll tells it better.
        let poll_at = Cell::new(now.saturating_add(self.escape_ns));
        let wait = Waiting {
            inner: self,
            key: Some(key),
            line: t.seat().line(),
            poll_at: &poll_at,
        };
        let policy = || CoreWait {
            spin,
            counters: &self.counters,
            t,
        };
        let deadline = || Some(poll_at.get());
        let out = with_parker(|parker, waker| {
            block_on_with(parker, waker, wait, wait_kind(t), deadline, policy)
        });
        t.waited(sys::now().saturating_sub(now));
        out
    }
}

/// The wait policy of a virtual-core wait: the caller's spin, the semaphore's counters, no
/// core to give back (it holds none), and the waiting thread to mark.
struct CoreWait<'a, O> {
    spin: Spin,
    counters: &'a Counters,
    t: &'a O,
}

impl<O: Occupant> WaitPolicy for CoreWait<'_, O> {
    fn spin(&self) -> Spin {
        self.spin
    }

    fn counters(&self) -> Option<&Stripe> {
        Some(self.counters.here())
    }

    fn release_core(&self, _claimable: bool) -> bool {
        false
    }

    fn unclaim_core(&self) {}

    fn acquire_core(&self) {}

    fn mark(&self, on: Option<&'static str>) {
        self.t.mark_wait(on);
    }
}

/// The vcore wait's description: it spins by the thread's own gate, so a thread whose core
/// waits outlast their spins (a job worker queued behind better-priority threads' bursts)
/// parks at once, where one whose waits end within the spin (a kicked holder's hand-off, a
/// release in a ping-pong) keeps spinning. Under loom the spin is off: its length is
/// wall-clock time, which a model cannot replay.
fn wait_kind(t: &impl Occupant) -> Wait<'_> {
    Wait {
        spin: !cfg!(loom),
        gate: Some(t.core_gate()),
        ..Wait::vcore()
    }
}

/// One queued wait as a future: ready when the table grants a slot, cancels, or the escape
/// time passes (then with the report of who held the cores). Dropping it before then gives
/// up the wait (and a slot granted meanwhile).
struct Waiting<'a> {
    inner: &'a Inner,
    /// `None` once the wait ended.
    key: Option<WaitId>,
    /// The waiting thread's kick-word line.
    line: &'static Line,
    /// When to poll again if nothing wakes it ([`Table::poll_at`]), set by each pending poll:
    /// where the waiting thread's parks end.
    poll_at: &'a Cell<u64>,
}

impl Future for Waiting<'_> {
    type Output = (Step, Option<Escape>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let key = self.key.expect("a vcore wait polled after it ended");
        let now = Now::default();
        let mut escape = None;
        let (inner, line, poll_at) = (self.inner, self.line, self.poll_at);
        let step = inner.locked(|l, fx| {
            let step = l.table.poll_wait(key, &now, cx.waker(), fx);
            // Before this thread's word is written, if the poll took its slot from a holder.
            l.revoke(&fx.revoked);
            let Some(step) = step else {
                poll_at.set(l.table.poll_at(key));
                return None;
            };
            if step == Step::Escaped {
                escape = Some(Escape::new(
                    Held::each(&l.table, now.stamp(), &inner.scale),
                    inner.escape_ns,
                ));
            }
            l.seat(line, None, &step);
            Some(step)
        });
        match step {
            None => Poll::Pending,
            Some(step) => {
                self.key = None;
                Poll::Ready((step, escape))
            }
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.inner
                .run(|table, fx| table.abandon(key, Now::default(), fx));
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::spin_gate::SpinGate;
    use crate::stats::Counters;
    use crate::sync::Arc;
    use crate::vcore::{Seat, Traits, Vcores, Who};
    use std::task::{Wake, Waker};

    /// A waker that does nothing: the test polls by hand.
    struct Nobody;

    impl Wake for Nobody {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    /// A thread of priority 44 on core 0, as the virtual cores see it.
    struct Guest {
        id: u64,
        seat: Seat,
        gate: SpinGate,
    }

    impl Occupant for Guest {
        fn who(&self) -> Who {
            Who {
                id: self.id,
                traits: Traits {
                    priority: 44,
                    first: false,
                    mask: 1,
                    ideal: Some(0),
                },
            }
        }

        fn seat(&self) -> &Seat {
            &self.seat
        }

        fn waited(&self, _: u64) {}

        fn mark_wait(&self, _: Option<&'static str>) {}

        fn waker(&self) -> Option<Waker> {
            None
        }

        fn core_gate(&self) -> &SpinGate {
            &self.gate
        }
    }

    #[test]
    fn a_wait_dropped_while_it_waits_leaves_the_queue_and_takes_no_core() {
        let config = Config {
            cores: 1,
            ..Config::default()
        };
        let v = Vcores::new(&config, Arc::new(Counters::default()));
        let guest = |id| Guest {
            id,
            seat: Seat::default(),
            gate: SpinGate::new(),
        };
        let (holder, waiter) = (guest(1), guest(2));
        let spin = Spin {
            ns: 0,
            ticks: 0,
            full: true,
        };
        assert!(v.acquire(&holder, spin).is_none());
        let inner = v.inner.as_ref().expect("the semaphore is on");
        let step = inner.acquire_for(&waiter, &Now::default());
        let Step::Queued(key) = step else {
            panic!("{step:?}: the one core is held, so the waiter queues");
        };
        let poll_at = Cell::new(u64::MAX);
        let mut wait = Box::pin(Waiting {
            inner,
            key: Some(key),
            line: waiter.seat().line(),
            poll_at: &poll_at,
        });
        let waker = Waker::from(std::sync::Arc::new(Nobody));
        let pending = wait.as_mut().poll(&mut Context::from_waker(&waker));
        assert!(pending.is_pending());
        assert_eq!(inner.run(|t, _| t.queue()), [2]);
        drop(wait);
        assert!(inner.run(|t, _| t.queue()).is_empty());
        assert!(v.release(&holder));
        assert_eq!(
            inner.run(|t, _| t.free_mask()),
            1,
            "the core went to a dropped wait"
        );
    }
}
