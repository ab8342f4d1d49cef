//! The kicks' grace (`vcore/table/grace.rs`, HOS_VCORE_GRACE_US): first the table with an
//! injected clock (no revocation before the grace, one after it; where the slot goes; what a
//! revoked holder's checkpoint, yield and release do; the poll times and the wakes that move
//! them; the grace off), then the semaphore with real threads: a holder that never reaches a
//! checkpoint loses its core to a better waiter after the grace. Bounded by the escape time
//! where a bug would hang; no timing asserts.

use super::vcore_harness::*;
use super::vcore_runtime::{rig_of, thread, until, word, Rig};
use crate::config::Config;
use crate::policy::Spin;
use crate::vcore::step::{Step, YieldKind};
use crate::vcore::Occupant;
use std::sync::mpsc;

const GRACE: u64 = 200 * US;

/// One core held by thread 100 (priority 44), whose kick by thread 1 (priority 10, queued and
/// polled once) is set now.
fn kicked_one_core() -> H {
    let mut h = H::graced(1, SLICE, ESCAPE, GRACE);
    h.fill(44);
    h.thread(1, 10, false, ALL, None);
    let Step::Queued(_) = h.acquire(1) else {
        panic!("the one core is held: it waits")
    };
    assert_eq!(h.poll(1), None);
    h
}

/// [`kicked_one_core`] after the grace: thread 1 took the core from thread 100.
fn revoked_one_core() -> H {
    let mut h = kicked_one_core();
    h.advance(GRACE);
    assert_eq!(h.poll(1), Some(h.held(0)));
    assert_eq!(h.at(100), At::Revoked);
    h
}

#[test]
fn no_revocation_before_the_grace_and_one_after_it() {
    let mut h = kicked_one_core();
    let kicked_at = h.now;
    let key = h.keys[&1];
    assert_eq!(h.t.revoke_at(key), Some(kicked_at + GRACE));
    assert_eq!(
        h.t.poll_at(key),
        kicked_at + GRACE,
        "sooner than the escape"
    );
    h.advance(GRACE - 1);
    assert_eq!(h.poll(1), None, "1 ns before the grace ends");
    assert!(h.revoked.is_empty());
    assert_eq!(h.at(100), At::Slot(0));
    h.advance(1);
    assert_eq!(
        h.poll(1),
        Some(h.held(0)),
        "the grace is over: it takes the core"
    );
    assert_eq!(h.wakes(1), 0, "a grant in its own poll wakes nothing");
    assert_eq!(h.revoked, [(0, 100)]);
    assert_eq!(h.at(100), At::Revoked, "runs on beside the cores");
    assert_eq!(h.t.free_mask(), 0);
    assert_eq!(h.escapes, 0);
}

#[test]
fn a_holder_that_gives_up_in_time_is_not_revoked() {
    let mut h = kicked_one_core();
    h.advance(GRACE / 2);
    let Step::Queued(_) = h.checkpoint(100) else {
        panic!("kicked: gives up at its checkpoint")
    };
    assert_eq!(h.poll(1), Some(h.held(0)));
    h.advance(10 * GRACE);
    assert_eq!(h.poll(100), None);
    assert!(h.revoked.is_empty());
}

#[test]
fn the_freed_slot_goes_to_the_best_waiter_allowed_on_it() {
    let mut h = H::graced(2, SLICE, ESCAPE, GRACE);
    h.thread(100, 40, false, ALL, Some(0));
    h.thread(101, 50, false, ALL, Some(1));
    assert_eq!(h.acquire(100), h.held(0));
    assert_eq!(h.acquire(101), h.held(1));
    // Thread 2 may take core 0 only: it kicks its holder now.
    h.thread(2, 20, false, 0b01, None);
    h.acquire(2);
    h.poll(2);
    // Thread 1, better and allowed on both, claims the worse holder of core 1 later.
    h.advance(GRACE / 2);
    h.thread(1, 10, false, ALL, None);
    h.acquire(1);
    h.poll(1);
    h.advance(GRACE / 2);
    // Thread 2's grace is over: core 0 is taken, and goes to thread 1, the best allowed on it.
    assert_eq!(h.poll(2), None, "taken for a better waiter");
    assert_eq!(h.revoked, [(0, 100)]);
    assert_eq!(h.at(1), At::Slot(0));
    assert_eq!(h.wakes(1), 1, "the grant wakes it");
    assert_eq!(h.poll(1), Some(h.held(0)));
    // Thread 2 outranks nobody on core 0 now: nothing to poll for before its escape.
    let key = h.keys[&2];
    assert_eq!(h.t.revoke_at(key), None);
    assert_eq!(h.t.poll_at(key), h.now - GRACE + ESCAPE);
    // Core 1's kick is stale (nobody claims it): it is never revoked.
    h.advance(10 * GRACE);
    assert_eq!(h.poll(2), None);
    assert_eq!(h.revoked.len(), 1);
    assert_eq!(h.at(101), At::Slot(1));
}

#[test]
fn a_revoked_holder_waits_by_its_rank_at_its_checkpoint() {
    let mut h = revoked_one_core();
    h.advance(US);
    let Step::Queued(_) = h.checkpoint(100) else {
        panic!("its core is taken: it waits")
    };
    assert_eq!(h.at(100), At::Waiting);
    assert_eq!(h.t.kick(0), None, "it outranks nobody: no kick");
    assert_eq!(h.poll(100), None, "it parks");
    let parked = h.wakes(100);
    assert!(h.release(1));
    assert!(h.wakes(100) > parked, "the release wakes it");
    assert_eq!(h.poll(100), Some(h.held(0)));
}

#[test]
fn a_revoked_holder_takes_a_free_core_at_its_checkpoint() {
    let mut h = revoked_one_core();
    assert!(h.release(1));
    assert_eq!(h.t.free_mask(), 1, "a revoked holder is not queued");
    assert_eq!(h.checkpoint(100), h.held(0));
    assert_eq!(h.revoked.len(), 1);
}

#[test]
fn a_revoked_holder_waits_by_its_rank_at_a_yield_and_takes_a_free_core_there() {
    for kind in [YieldKind::SamePriority, YieldKind::Migrate, YieldKind::Any] {
        let mut h = revoked_one_core();
        let Step::Queued(_) = h.yield_core(100, kind) else {
            panic!("{kind:?}: its core is taken: it waits")
        };
        assert_eq!(h.at(100), At::Waiting);
        assert!(h.release(1));
        assert_eq!(
            h.poll(100),
            Some(h.held(0)),
            "{kind:?}: any core of its mask"
        );
        let mut h = revoked_one_core();
        assert!(h.release(1));
        assert_eq!(h.yield_core(100, kind), h.held(0), "{kind:?}");
    }
}

#[test]
fn a_revoked_holder_that_releases_just_leaves() {
    let mut h = revoked_one_core();
    assert!(h.release(100), "it ran guest code: a release of something");
    assert_eq!(h.at(100), At::Off);
    assert!(!h.release(100), "released twice");
    assert_eq!(h.at(1), At::Slot(0), "the new holder keeps its core");
}

#[test]
fn a_revoked_holder_is_re_ranked_and_cancelled_by_a_shutdown() {
    let mut h = revoked_one_core();
    h.refresh(100, traits(5, false, ALL, None));
    let Step::Queued(_) = h.checkpoint(100) else {
        panic!("its core is taken: it waits")
    };
    assert!(
        h.t.kick(0).is_some(),
        "re-ranked: it kicks the holder it outranks now"
    );
    let mut h = revoked_one_core();
    h.shutdown();
    assert_eq!(h.checkpoint(100), Step::Cancelled);
    assert_eq!(h.at(100), At::Off);
}

#[test]
fn a_granted_waiter_that_has_not_polled_queues_again_in_its_place() {
    let mut h = H::graced(1, SLICE, ESCAPE, GRACE);
    h.fill(44);
    h.thread(3, 30, false, ALL, None);
    h.thread(4, 40, false, ALL, None);
    h.acquire(3);
    h.acquire(4);
    h.advance(GRACE);
    // Core 0 frees and goes to thread 3, which the OS does not run yet.
    assert!(h.release(100));
    assert_eq!(h.at(3), At::Slot(0));
    h.thread(1, 10, false, ALL, None);
    h.acquire(1);
    h.poll(1);
    h.advance(GRACE);
    assert_eq!(h.poll(1), Some(h.held(0)));
    assert_eq!(h.revoked, [(0, 3)]);
    assert_eq!(
        h.at(3),
        At::Waiting,
        "queued again, not running beside the cores"
    );
    assert_eq!(h.t.queue(), [3, 4], "in its place, before a worse one");
    assert_eq!(h.poll(3), None);
}

#[test]
fn a_waiter_is_woken_when_its_grace_moves_sooner() {
    let mut h = H::graced(1, SLICE, ESCAPE, GRACE);
    h.fill(44);
    // Thread 1 kicks the holder; thread 2 claims nothing and parks until its escape.
    h.thread(1, 10, false, ALL, None);
    h.thread(2, 20, false, ALL, None);
    h.acquire(1);
    let kicked_at = h.now;
    h.advance(GRACE / 4);
    h.acquire(2);
    h.poll(1);
    h.poll(2);
    let key = h.keys[&2];
    assert_eq!(h.t.revoke_at(key), None);
    assert_eq!(h.t.poll_at(key), h.now + ESCAPE);
    // Thread 1 leaves the queue: thread 2 claims the kicked holder, whose grace ends soon.
    h.advance(GRACE / 4);
    h.abandon(1);
    assert_eq!(h.wakes(2), 1, "woken to poll sooner");
    assert_eq!(h.t.poll_at(key), kicked_at + GRACE);
    h.abandon(2);
    // A claimer's own acquire and polls wake nothing: its poll tells it when to poll again.
    h.thread(5, 5, false, ALL, None);
    h.acquire(5);
    h.poll(5);
    assert_eq!(h.wakes(5), 0);
    assert_eq!(
        h.t.poll_at(h.keys[&5]),
        kicked_at + GRACE,
        "the kick it claims is older"
    );
}

#[test]
fn a_poll_never_leaves_a_waiter_a_time_in_the_past() {
    let mut h = kicked_one_core();
    let key = h.keys[&1];
    for step in [GRACE / 3, GRACE / 3] {
        h.advance(step);
        assert_eq!(h.poll(1), None);
        assert!(h.t.poll_at(key) > h.now, "polled in a loop");
    }
    assert_eq!(h.wakes(1), 0, "its own polls wake nothing");
    // Another waiter queues: the rebalance leaves thread 1's time where it was, no wake.
    h.thread(2, 20, false, ALL, None);
    h.acquire(2);
    assert_eq!(h.wakes(1), 0, "woken for a time it was told already");
}

#[test]
fn past_the_escape_time_a_waiter_escapes_as_without_the_grace() {
    let mut h = kicked_one_core();
    h.advance(ESCAPE);
    assert_eq!(h.poll(1), Some(Step::Escaped));
    assert!(
        h.revoked.is_empty(),
        "the escape's report names the holder it could not move"
    );
    assert_eq!(h.at(100), At::Slot(0));
}

#[test]
fn with_the_grace_off_a_kicked_holder_keeps_its_core_until_its_checkpoint() {
    let mut h = H::new(1);
    h.fill(44);
    h.thread(1, 10, false, ALL, None);
    h.acquire(1);
    assert_eq!(h.poll(1), None);
    let key = h.keys[&1];
    assert_eq!(h.t.revoke_at(key), None);
    assert_eq!(h.t.poll_at(key), h.now + ESCAPE, "only the escape");
    // Another waiter queues: no grace to tell the claimer of, no wake.
    h.thread(2, 20, false, ALL, None);
    h.acquire(2);
    assert_eq!(h.wakes(1), 0);
    assert_eq!(h.t.poll_at(key), h.now + ESCAPE);
    h.advance(ESCAPE - 1);
    assert_eq!(h.poll(1), None);
    assert!(h.revoked.is_empty());
    assert_eq!(h.at(100), At::Slot(0));
}

/// A semaphore of `cores` whose kicks have a grace of `grace_us`, escape after 5 s.
fn graced_rig(cores: usize, grace_us: u64) -> Rig {
    rig_of(&Config {
        cores,
        vcore_escape_ms: 5_000,
        vcore_grace_us: grace_us,
        ..Config::default()
    })
}

/// What the revoked holder does once it runs again.
#[derive(Clone, Copy, Debug)]
enum Then {
    Checkpoint,
    Yield,
    Release,
}

#[test]
fn a_holder_that_never_reaches_a_checkpoint_loses_its_core_after_the_grace() {
    for then in [Then::Checkpoint, Then::Yield, Then::Release] {
        let r = graced_rig(1, 200);
        let (holder, better) = (thread(1, 45, 1, false), thread(2, 10, 1, false));
        let (go, stalled) = mpsc::channel::<()>();
        let h = {
            let (v, holder) = (r.v.clone(), holder.clone());
            std::thread::spawn(move || {
                v.acquire(&*holder, Spin::without_runtime());
                // Holds the core in a std wait: no checkpoint, as a preempted thread.
                stalled.recv().unwrap();
                assert_ne!(word(&holder), 0, "{then:?}: its checkpoint has work");
                match then {
                    Then::Checkpoint => {
                        assert!(v.checkpoint(&*holder, Spin::without_runtime()).is_none());
                    }
                    Then::Yield => {
                        let y = v.yield_core(&*holder, YieldKind::Any, Spin::without_runtime());
                        assert!(y.handed && y.escape.is_none(), "{then:?}");
                    }
                    Then::Release => assert!(v.release(&*holder), "{then:?}"),
                }
                if !matches!(then, Then::Release) {
                    assert_eq!(holder.seat().slot(), Some(0), "{then:?}: back after");
                    assert!(v.release(&*holder));
                }
            })
        };
        while r.v.held() == 0 {
            std::thread::yield_now();
        }
        // Only the end of the grace ends this wait: nobody else wakes it.
        r.v.acquire(&*better, Spin::without_runtime());
        assert_eq!(better.seat().slot(), Some(0), "{then:?}");
        assert_eq!(r.stats.snapshot().vcore_revokes, 1, "{then:?}");
        assert_eq!(r.stats.snapshot().vcore_kicks_priority, 1, "{then:?}");
        assert_eq!(
            r.stats.snapshot().vcore_escapes,
            0,
            "{then:?}: taken, not escaped"
        );
        assert_eq!(r.v.held(), 1, "{then:?}: the core is the better one's");
        go.send(()).unwrap();
        if !matches!(then, Then::Release) {
            // The old holder waits for the core until the better one releases it.
            until(|| r.stats.snapshot().vcore_waits, 2);
            assert_eq!(better.seat().slot(), Some(0));
            // The core's kick word is the new holder's: a kick reaches it.
            holder.set_priority(5);
            r.v.refresh(&*holder);
            assert_ne!(
                word(&better),
                0,
                "{then:?}: the kick did not reach the holder"
            );
        }
        assert!(r.v.release(&*better));
        h.join().unwrap();
        assert_eq!(word(&holder), 0, "{then:?}");
        assert_eq!(r.v.held(), 0, "{then:?}: nothing left behind");
        assert_eq!(r.stats.snapshot().vcore_revokes, 1);
    }
}

#[test]
fn a_claimed_core_taken_before_the_thread_took_it_is_asked_for_again() {
    // Claimed without the lock (core 0 lent and free), or under it (a thread waits for core
    // 1, so nothing is lent).
    for locked in [false, true] {
        let r = graced_rig(2, 100);
        let (woken, better) = (thread(1, 44, 0b01, false), thread(2, 10, 0b01, false));
        r.v.acquire(&*woken, Spin::without_runtime());
        let other = locked.then(|| {
            let (holder, waiter) = (thread(3, 44, 0b10, false), thread(4, 44, 0b10, false));
            r.v.acquire(&*holder, Spin::without_runtime());
            let v = r.v.clone();
            let h = std::thread::spawn(move || {
                v.acquire(&*waiter, Spin::without_runtime());
                assert!(v.release(&*waiter));
            });
            until(|| r.stats.snapshot().vcore_waits, 1);
            (holder, h)
        });
        assert_eq!(r.v.lent(), if locked { 0 } else { 0b11 });
        assert!(r.v.step_away(&*woken));
        // A waker claims the free core for it; the OS does not run it yet.
        r.v.claim(&*woken);
        assert_eq!(r.v.held(), if locked { 2 } else { 1 });
        let waits = r.stats.snapshot().vcore_waits;
        let (h, took) = {
            let (v, better, stats) = (r.v.clone(), better.clone(), r.stats.clone());
            let (tx, rx) = mpsc::channel();
            let h = std::thread::spawn(move || {
                v.acquire(&*better, Spin::without_runtime());
                tx.send(better.seat().slot()).unwrap();
                // Keeps the core until the woken thread waits for it.
                until(|| stats.snapshot().vcore_waits, waits + 2);
                assert!(v.release(&*better));
            });
            (h, rx)
        };
        assert_eq!(took.recv().unwrap(), Some(0), "taken after the grace");
        assert_eq!(r.stats.snapshot().vcore_revokes, 1);
        // A claim under the lock never told the thread it held the core; a slot taken for it
        // without the lock made it the slot's holder, and its word says the slot was taken.
        assert_eq!(word(&woken) != 0, !locked, "locked {locked}");
        r.v.acquire(&*woken, Spin::without_runtime());
        assert_eq!(woken.seat().slot(), Some(0), "after the better one");
        h.join().unwrap();
        assert!(r.v.release(&*woken));
        if let Some((holder, h)) = other {
            assert!(r.v.release(&*holder));
            h.join().unwrap();
        }
        assert_eq!(r.v.held(), 0);
        assert_eq!(r.stats.snapshot().vcore_escapes, 0);
        assert_eq!(better.seat().slot(), None);
    }
}

/// The stats say which bound the virtual cores keep: strict by default (the grace off),
/// relaxed after a grace, none with the cores off.
#[test]
fn the_stats_name_the_bound() {
    use crate::stats::Bound;
    use std::time::Duration;
    let bound = |b: crate::Builder| {
        let rt = b
            .calibration(crate::Calibration::default())
            .build()
            .expect("runtime");
        let bound = rt.stats().vcore_bound;
        rt.shutdown();
        bound
    };
    let relaxed = Bound::Relaxed {
        grace: Duration::from_micros(100),
    };
    assert_eq!(bound(crate::Builder::new()), Bound::Strict, "the default");
    assert_eq!(
        bound(crate::Builder::new().vcore_grace_us(0)),
        Bound::Strict
    );
    assert_eq!(bound(crate::Builder::new().vcore_grace_us(100)), relaxed);
    assert_eq!(
        bound(crate::Builder::new().vcore_grace_us(250)),
        Bound::Relaxed {
            grace: Duration::from_micros(250)
        }
    );
    assert_eq!(
        bound(crate::Builder::new().vcores_enabled(false)),
        Bound::Off
    );
    assert!(relaxed.to_string().contains("100 us"), "{relaxed}");
}
