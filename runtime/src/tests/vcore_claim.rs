//! Claims (`vcore/claim.rs`): a waker claims the core of the guest thread it wakes, before the
//! thread runs; the thread takes the claim when its wait ends, or gives it back when the wait
//! goes on; nothing is claimed for a thread that is not away in an object wait. Then the
//! parker's wake hook, which makes the claim, runs before the woken thread does, and a guest
//! thread's wake through a runtime claims. Bounded by the escape time; no timing asserts.

use super::common::newer;
use super::vcore_runtime::{rig, thread, until, word};
use crate::parker::Parker;
use crate::policy::Spin;
use crate::role::Role;
use crate::thread::ThreadRecord;
use crate::vcore::{Occupant, Vcores};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `t` takes a core, then steps away from it into an object wait.
pub(super) fn away(v: &Vcores, t: &ThreadRecord) {
    v.acquire(t, Spin::without_runtime());
    assert!(v.step_away(t));
    assert_eq!(t.seat().slot(), None);
}

/// A guest thread `name` of `priority` on `rt`'s one core.
pub(super) fn guest(rt: &crate::runtime::Runtime, name: &str, priority: u8) -> Arc<ThreadRecord> {
    rt.register_thread(&crate::thread::ThreadSpec {
        name: name.into(),
        priority,
        core_mask: 1,
        ideal_core: 0,
        role: Role::Auto,
    })
}

/// Starts guest `good` on `rt`: it takes the core, waits on an object until `ready`, then
/// runs `after` and gives its core back. Returns its handle and the object's waker slot.
pub(super) fn waiting(
    rt: &crate::runtime::Runtime,
    good: &Arc<ThreadRecord>,
    ready: &Arc<AtomicBool>,
    after: impl FnOnce(&ThreadRecord) + Send + 'static,
) -> (
    std::thread::JoinHandle<()>,
    Arc<std::sync::Mutex<Option<std::task::Waker>>>,
) {
    use crate::block_on::Wait;
    use crate::context;
    use crate::spin_gate::SpinGate;
    use std::future::poll_fn;
    use std::task::Poll;
    let waker: Arc<std::sync::Mutex<Option<std::task::Waker>>> = Arc::default();
    let h = {
        let (rt, good, ready, waker) = (rt.clone(), good.clone(), ready.clone(), waker.clone());
        std::thread::spawn(move || {
            let _guest = context::enter(&rt, good.clone());
            rt.acquire_core(&good);
            let gate = SpinGate::default();
            context::block_on(
                poll_fn(|cx| {
                    *waker.lock().unwrap() = Some(cx.waker().clone());
                    if ready.load(Ordering::SeqCst) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                }),
                Wait::object("test object", &gate),
            );
            after(&good);
            assert!(rt.release_core(&good));
        })
    };
    (h, waker)
}

/// Wakes `good` through `waker` once it is parked in its object wait.
pub(super) fn wake(good: &ThreadRecord, waker: &std::sync::Mutex<Option<std::task::Waker>>) {
    let start = Instant::now();
    while !good.is_parked() || waker.lock().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(10), "never parked");
        std::thread::yield_now();
    }
    waker.lock().unwrap().as_ref().unwrap().wake_by_ref();
}

#[test]
fn a_claim_takes_a_free_core_which_the_thread_then_holds_without_a_wait() {
    let r = rig(1, 60_000_000, 5_000);
    let t = thread(1, 44, 1, false);
    away(&r.v, &t);
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 1, "the claim holds the core for the thread");
    assert_eq!(t.seat().slot(), None, "the thread has not taken it yet");
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 1, "a second wake claims nothing more");
    let waits = r.stats.snapshot().vcore_waits;
    r.v.acquire(&*t, Spin::without_runtime());
    assert_eq!(t.seat().slot(), Some(0));
    assert_eq!(
        r.stats.snapshot().vcore_waits,
        waits,
        "the claim's core, no wait"
    );
    assert!(r.v.release(&*t));
    assert_eq!(r.v.held(), 0);
}

#[test]
fn a_claim_kicks_the_worse_holder_before_the_woken_thread_runs() {
    let r = rig(1, 60_000_000, 5_000);
    let good = thread(1, 44, 1, false);
    let bad = thread(2, 45, 1, false);
    away(&r.v, &good);
    r.v.acquire(&*bad, Spin::without_runtime());
    assert_eq!(word(&bad), 0, "nobody waits");
    r.v.claim(&*good);
    assert_ne!(word(&bad), 0, "kicked by the waker, on the waker's thread");
    assert_eq!(r.stats.snapshot().vcore_kicks_priority, 1);
    // The holder gives its core up at its checkpoint and waits for one again.
    let h = {
        let (v, bad) = (r.v.clone(), bad.clone());
        std::thread::spawn(move || {
            v.checkpoint(&*bad, Spin::without_runtime());
            assert_eq!(bad.seat().slot(), Some(0), "back once the better one left");
            assert!(v.release(&*bad));
        })
    };
    r.v.acquire(&*good, Spin::without_runtime());
    assert_eq!(
        good.seat().slot(),
        Some(0),
        "the claimed place in the queue"
    );
    assert!(r.v.release(&*good));
    h.join().unwrap();
    assert_eq!(r.v.held(), 0);
    assert_eq!(r.stats.snapshot().vcore_escapes, 0);
}

#[test]
fn a_claim_goes_back_when_the_wait_goes_on() {
    let r = rig(1, 60_000_000, 5_000);
    let t = thread(1, 44, 1, false);
    away(&r.v, &t);
    r.v.claim(&*t);
    r.v.unclaim(&*t);
    assert_eq!(r.v.held(), 0, "a claimed core goes back");
    // Still away: the next wake claims again. Now behind a worse holder: a queued claim,
    // given back, takes its kick back too.
    let bad = thread(2, 45, 1, false);
    r.v.acquire(&*bad, Spin::without_runtime());
    r.v.claim(&*t);
    assert_ne!(word(&bad), 0);
    r.v.unclaim(&*t);
    // The kick is stale: the holder's next checkpoint finds nobody to make way for.
    r.v.checkpoint(&*bad, Spin::without_runtime());
    assert_eq!(bad.seat().slot(), Some(0), "kept: no waiter left");
    assert_eq!(word(&bad), 0);
    assert!(r.v.release(&*bad));
    r.v.claim(&*t);
    r.v.acquire(&*t, Spin::without_runtime());
    assert_eq!(t.seat().slot(), Some(0));
    assert!(r.v.release(&*t));
    assert_eq!(r.v.held(), 0);
}

#[test]
fn nothing_is_claimed_for_a_thread_that_is_not_away() {
    let r = rig(1, 60_000_000, 5_000);
    let t = thread(1, 44, 1, false);
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 0, "never took a core");
    // A wait without a core to give back (after a shutdown's cancel, say) is not away.
    assert!(!r.v.step_away(&*t));
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 0, "it will not take a core after that wait");
    r.v.acquire(&*t, Spin::without_runtime());
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 1, "holds its own, nothing more");
    assert!(r.v.release(&*t), "a release for good (an exit) is no wait");
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 0);
    away(&r.v, &t);
    r.v.acquire(&*t, Spin::without_runtime());
    assert!(r.v.release(&*t));
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 0, "away no more once it took a core");
}

#[test]
fn with_claims_off_a_wake_claims_nothing() {
    let stats = Arc::new(crate::stats::Counters::default());
    let config = crate::Config {
        cores: 1,
        vcore_claim: false,
        ..crate::Config::default()
    };
    let v = Vcores::new(&config, stats);
    let t = thread(1, 44, 1, false);
    away(&v, &t);
    v.claim(&*t);
    assert_eq!(
        v.held(),
        0,
        "HOS_VCORE_CLAIM off: the thread asks once it runs"
    );
    v.acquire(&*t, Spin::without_runtime());
    assert_eq!(t.seat().slot(), Some(0));
    assert!(v.release(&*t));
}

#[test]
fn an_exit_from_an_unwound_wait_gives_the_claim_back() {
    let r = rig(1, 60_000_000, 5_000);
    let t = thread(1, 44, 1, false);
    away(&r.v, &t);
    r.v.claim(&*t);
    assert!(!r.v.release(&*t), "it held no core of its own");
    assert_eq!(r.v.held(), 0, "the claimed core went back");
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 0, "and it is away no more");
}

#[test]
fn a_claim_without_the_lock_takes_a_core_the_mask_allows() {
    // Core 0 held, core 1 free and the only one the woken thread may run on: the claim takes
    // core 1's cell, and the slots stay lent.
    let r = rig(2, 60_000_000, 5_000);
    let (t, other) = (thread(1, 44, 0b10, false), thread(2, 44, 0b01, false));
    away(&r.v, &t);
    r.v.acquire(&*other, Spin::without_runtime());
    r.v.claim(&*t);
    assert_eq!(
        (r.v.lent(), r.v.held()),
        (0b11, 2),
        "claimed without the lock"
    );
    r.v.acquire(&*t, Spin::without_runtime());
    assert_eq!(t.seat().slot(), Some(1));
    assert!(r.v.release(&*t));
    assert!(r.v.release(&*other));
    assert_eq!(r.v.held(), 0);
}

#[test]
fn a_slot_claimed_without_the_lock_then_taken_back_by_the_table_goes_back_under_it() {
    // Its wait goes on, or unwinds: either way the slot a waker took for it from its cell is
    // given back under the lock once the table took it back (a waiter came meanwhile).
    for unwound in [false, true] {
        let r = rig(2, 60_000_000, 5_000);
        let t = thread(1, 44, 0b11, false);
        away(&r.v, &t);
        assert_eq!(r.v.lent(), 0b11);
        r.v.claim(&*t);
        assert_eq!(
            (r.v.lent(), r.v.held()),
            (0b11, 1),
            "taken without the lock"
        );
        // Core 1 is held, and a thread waits for it: the table takes the lent slots back and
        // keeps them, and counts `t` the holder of the slot claimed for it.
        let (holder, waiter) = (thread(2, 44, 0b10, false), thread(3, 44, 0b10, false));
        r.v.acquire(&*holder, Spin::without_runtime());
        assert_eq!(
            holder.seat().slot(),
            Some(1),
            "the claim took the ideal core"
        );
        let h = {
            let (v, waiter) = (r.v.clone(), waiter.clone());
            std::thread::spawn(move || {
                v.acquire(&*waiter, Spin::without_runtime());
                assert!(v.release(&*waiter));
            })
        };
        until(|| r.stats.snapshot().vcore_waits, 1);
        assert_eq!((r.v.lent(), r.v.held()), (0, 2));
        if unwound {
            assert!(!r.v.release(&*t), "it held no core of its own");
        } else {
            r.v.unclaim(&*t);
        }
        assert_eq!(r.v.held(), 1, "the claimed slot went back");
        // Away still after an unclaim (a claim under the lock now), home after an unwind.
        r.v.claim(&*t);
        assert_eq!(r.v.held(), if unwound { 1 } else { 2 });
        assert!(r.v.release(&*holder));
        h.join().unwrap();
        if !unwound {
            r.v.acquire(&*t, Spin::without_runtime());
            assert_eq!(t.seat().slot(), Some(0));
            assert!(r.v.release(&*t));
        }
        assert_eq!(r.v.held(), 0);
        assert_eq!(r.stats.snapshot().vcore_escapes, 0);
    }
}

#[test]
fn the_wake_hook_runs_before_a_parked_owner_runs_and_not_for_a_running_one() {
    let p = Arc::new(Parker::new());
    let woke = Arc::new(AtomicBool::new(false));
    let hooked = Arc::new(AtomicU32::new(0));
    let early = Arc::new(AtomicBool::new(false));
    {
        let (woke, hooked, early) = (woke.clone(), hooked.clone(), early.clone());
        p.set_wake_hook(Some(Arc::new(move || {
            hooked.fetch_add(1, Ordering::SeqCst);
            if woke.load(Ordering::SeqCst) {
                early.store(true, Ordering::SeqCst);
            }
            false
        })));
    }
    // Not parked: no hook.
    p.unpark();
    assert_eq!(hooked.load(Ordering::SeqCst), 0);
    assert!(p.try_take());
    let h = {
        let (p, woke) = (p.clone(), woke.clone());
        std::thread::spawn(move || {
            assert!(p.park(None));
            woke.store(true, Ordering::SeqCst);
        })
    };
    // Unpark until the owner is found parked (then the hook runs) and has woken.
    let start = std::time::Instant::now();
    while !woke.load(Ordering::SeqCst) {
        assert!(start.elapsed().as_secs() < 10, "the owner never woke");
        if p.is_parked() {
            p.unpark();
        }
        std::thread::yield_now();
    }
    h.join().unwrap();
    assert_eq!(
        hooked.load(Ordering::SeqCst),
        1,
        "one wake of a parked owner"
    );
    assert!(
        !early.load(Ordering::SeqCst),
        "the hook ran before the owner did"
    );
    p.set_wake_hook(None);
    p.unpark();
    assert_eq!(hooked.load(Ordering::SeqCst), 1);
}

#[test]
fn a_guest_woken_from_an_object_wait_claims_its_core_and_a_spurious_wake_gives_it_back() {
    use crate::runtime::Runtime;
    use crate::{Calibration, Config};
    let rt = crate::Builder::<Runtime>::new()
        .config(Config {
            cores: 1,
            vcore_escape_ms: 5_000,
            spin_us: 0,
            spin_other_us: Some(0),
            // The kicked holder answers at its checkpoint, however late (vcore_grace.rs tests
            // the grace).
            vcore_grace_us: 0,
            calibration: Some(Calibration::default()),
            ..Config::default()
        })
        .build()
        .expect("a valid config");
    let _newer = newer();
    let (bad, good) = (guest(&rt, "Worse", 45), guest(&rt, "Better", 44));
    let ready = Arc::new(AtomicBool::new(false));
    let (h, waker) = waiting(&rt, &good, &ready, |good| {
        assert_eq!(good.seat().slot(), Some(0));
    });
    until(|| rt.stats().parks, 1);
    rt.acquire_core(&bad);
    // A wake that does not end the wait: the claim (and its kick) goes back.
    wake(&good, &waker);
    assert_eq!(
        rt.stats().vcore_kicks_priority,
        1,
        "the wake claimed: the worse holder kicked"
    );
    until(|| rt.stats().parks, 2);
    // The claim went back before the waiter parked again: the kick is stale, and the
    // holder's checkpoint keeps its core.
    rt.checkpoint(&bad);
    assert_eq!(bad.seat().slot(), Some(0));
    assert_eq!(word(&bad), 0);
    assert_eq!(rt.vcores().held(), 1);
    // The wake that ends it: the worse holder is kicked before the better thread runs.
    ready.store(true, Ordering::SeqCst);
    let kicks = rt.stats().vcore_kicks_priority;
    wake(&good, &waker);
    assert!(
        rt.stats().vcore_kicks_priority > kicks,
        "kicked by the wake"
    );
    rt.checkpoint(&bad);
    h.join().unwrap();
    assert_eq!(bad.seat().slot(), Some(0));
    assert!(rt.release_core(&bad));
    assert_eq!(rt.stats().vcore_escapes, 0);
    rt.shutdown();
}
