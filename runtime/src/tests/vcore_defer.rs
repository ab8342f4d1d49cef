//! Deferred claim wakes (HOS_VCORE_CLAIM_DEFER, `vcore/claim.rs`): a claim that queues the
//! woken thread keeps its wake back, and whoever ends the queued wait gives it: the holder
//! that hands the core over, the give-back of the claim, the escape time (the runtime's
//! timer); a claim that finds a free core, or any claim with the switch off, defers nothing.
//! Bounded by the escape time and by `until`; no timing asserts.

use super::common::newer;
use super::vcore_claim::{away, guest, waiting, wake};
use super::vcore_runtime::{rig_of, thread, until, word};
use crate::parker::Parker;
use crate::policy::Spin;
use crate::thread::ThreadRecord;
use crate::vcore::Occupant;
use crate::Config;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The semaphore's exact rules on `cores` cores with deferred wakes (`defer`), the strict
/// bound, and an escape far enough that no test meets it.
fn config(cores: usize, defer: bool) -> Config {
    Config {
        cores,
        vcore_escape_ms: 60_000,
        vcore_grace_us: 0,
        vcore_claim_defer: defer,
        ..Config::default()
    }
}

/// A record bound to a parker of its own (not the calling thread's), so that its wakes show
/// as the parker's token.
fn bound(id: u64, priority: u8) -> (Arc<ThreadRecord>, Arc<Parker>) {
    let t = thread(id, priority, 1, false);
    let p = Arc::new(Parker::new());
    t.bind(p.clone());
    (t, p)
}

/// Waits until `p` has a token and takes it; a token that never comes fails the test.
fn woken(p: &Parker) {
    let start = Instant::now();
    while !p.try_take() {
        assert!(start.elapsed() < Duration::from_secs(10), "never woken");
        std::thread::yield_now();
    }
}

#[test]
fn a_deferred_claim_is_woken_by_the_holder_that_hands_the_core_over() {
    let r = rig_of(&config(1, true));
    let (good, p) = bound(1, 44);
    let bad = thread(2, 45, 1, false);
    away(&r.v, &good);
    r.v.acquire(&*bad, Spin::without_runtime());
    let until =
        r.v.claim(&*good)
            .expect("queued behind a worse holder: deferred");
    assert!(until > crate::sys::now(), "the escape time is ahead");
    assert_ne!(word(&bad), 0, "the worse holder is kicked all the same");
    assert!(!p.try_take(), "the claim gives no wake itself");
    // The holder gives its core up at its checkpoint: the grant wakes the claimed thread.
    let h = {
        let (v, bad) = (r.v.clone(), bad.clone());
        std::thread::spawn(move || {
            v.checkpoint(&*bad, Spin::without_runtime());
            assert_eq!(bad.seat().slot(), Some(0), "back once the better one left");
            assert!(v.release(&*bad));
        })
    };
    woken(&p);
    r.v.acquire(&*good, Spin::without_runtime());
    assert_eq!(
        good.seat().slot(),
        Some(0),
        "the core the holder handed over"
    );
    assert!(r.v.release(&*good));
    h.join().unwrap();
    assert_eq!(r.v.held(), 0);
    assert_eq!(r.stats.snapshot().vcore_escapes, 0);
}

#[test]
fn a_deferred_claim_given_back_gives_its_wake() {
    let r = rig_of(&config(1, true));
    let (good, p) = bound(1, 44);
    let bad = thread(2, 45, 1, false);
    away(&r.v, &good);
    r.v.acquire(&*bad, Spin::without_runtime());
    assert!(r.v.claim(&*good).is_some());
    assert!(!p.try_take());
    // The thread runs (a wake it did not owe to this claim) and its wait goes on: it is about
    // to park, so the wake the claim kept back is given now, or it would park past it.
    r.v.unclaim(&*good);
    assert!(p.try_take(), "the kept-back wake is given");
    r.v.checkpoint(&*bad, Spin::without_runtime());
    assert_eq!(bad.seat().slot(), Some(0), "kept: the claim went back");
    assert!(r.v.release(&*bad));
    r.v.acquire(&*good, Spin::without_runtime());
    assert!(r.v.release(&*good));
    assert_eq!(r.v.held(), 0);
}

#[test]
fn a_free_core_or_the_switch_off_defers_nothing() {
    for defer in [true, false] {
        let r = rig_of(&config(2, defer));
        let (good, p) = bound(1, 44);
        let bad = thread(2, 45, 1, false);
        away(&r.v, &good);
        assert_eq!(
            r.v.claim(&*good),
            None,
            "a free core: granted, woken at once"
        );
        r.v.acquire(&*good, Spin::without_runtime());
        assert!(r.v.step_away(&*good));
        r.v.acquire(&*bad, Spin::without_runtime());
        let other = thread(3, 45, 2, false);
        r.v.acquire(&*other, Spin::without_runtime());
        let queued = r.v.claim(&*good);
        assert_eq!(
            queued.is_some(),
            defer,
            "defer {defer}: queued behind worse holders"
        );
        r.v.unclaim(&*good);
        assert_eq!(p.try_take(), defer, "only a deferred claim owes a wake");
        for t in [&bad, &other] {
            assert!(r.v.release(&**t));
        }
        r.v.acquire(&*good, Spin::without_runtime());
        assert!(r.v.release(&*good));
    }
}

/// A runtime of one core with deferred wakes, escaping after `escape_ms`.
fn runtime(escape_ms: u64) -> crate::runtime::Runtime {
    crate::Builder::<crate::runtime::Runtime>::new()
        .config(Config {
            cores: 1,
            vcore_escape_ms: escape_ms,
            vcore_claim_defer: true,
            spin_us: 0,
            spin_other_us: Some(0),
            vcore_grace_us: 0,
            calibration: Some(crate::Calibration::default()),
            ..Config::default()
        })
        .build()
        .expect("a valid config")
}

/// Checks for a while (50 ms; a slow machine only checks less) that `good` stays parked in
/// its object wait, as a deferred wake leaves it: a thread given the token would run, leave
/// the object wait and park again in its wait for a core (`parks` one more).
fn stays_deferred(good: &ThreadRecord, parks: impl Fn() -> u64) {
    let (start, before) = (Instant::now(), parks());
    while start.elapsed() < Duration::from_millis(50) {
        let on = match good.activity() {
            crate::thread::Activity::Waiting { on, .. } => on,
            _ => "running or ended",
        };
        assert_eq!(
            on, "test object",
            "the thread ran: its wake was not deferred"
        );
        assert_eq!(parks(), before, "the thread parked again");
        std::thread::yield_now();
    }
}

/// On `rt`'s one core: a better guest waits on an object, a worse one takes the core, and
/// the object's wake ends the better one's wait (the claim queues it behind the holder).
/// Returns the worse and the better thread and the better one's handle.
fn woken_behind_a_worse_holder(
    rt: &crate::runtime::Runtime,
) -> (
    Arc<ThreadRecord>,
    Arc<ThreadRecord>,
    std::thread::JoinHandle<()>,
) {
    let (bad, good) = (guest(rt, "Worse", 45), guest(rt, "Better", 44));
    let ready = Arc::new(AtomicBool::new(false));
    let (h, waker) = waiting(rt, &good, &ready, |_| {});
    until(|| rt.stats().parks, 1);
    rt.acquire_core(&bad);
    ready.store(true, Ordering::SeqCst);
    wake(&good, &waker);
    (bad, good, h)
}

#[test]
fn a_guest_woken_behind_a_worse_holder_runs_once_the_holder_hands_its_core_over() {
    let rt = runtime(60_000);
    let _newer = newer();
    let (bad, good, h) = woken_behind_a_worse_holder(&rt);
    assert_eq!(rt.stats().vcore_kicks_priority, 1, "the wake claimed");
    stays_deferred(&good, || rt.stats().parks);
    // The kicked holder hands the core over at its checkpoint, and waits to get it back.
    rt.checkpoint(&bad);
    h.join().unwrap();
    assert_eq!(bad.seat().slot(), Some(0));
    assert!(rt.release_core(&bad));
    assert_eq!(rt.stats().vcore_escapes, 0);
    rt.shutdown();
}

#[test]
fn a_deferred_guest_behind_a_holder_that_never_answers_escapes_on_time() {
    let rt = runtime(30);
    let _newer = newer();
    let (bad, _good, h) = woken_behind_a_worse_holder(&rt);
    // The holder never reaches a checkpoint: the claim's timer wakes the thread at its
    // escape time, and it runs beside the core.
    until(|| rt.stats().vcore_escapes, 1);
    h.join().unwrap();
    assert!(rt.release_core(&bad));
    rt.shutdown();
}

#[test]
fn a_deferred_wake_leaves_no_timer_once_its_thread_has_the_core() {
    let rt = runtime(60_000);
    let _newer = newer();
    let (bad, _good, h) = woken_behind_a_worse_holder(&rt);
    rt.checkpoint(&bad);
    h.join().unwrap();
    // The claim's escape timer (60 s away) went with the deferral: once a due timer makes
    // the reactor drain its queue, none is left.
    crate::context::block_on(
        rt.reactor().timer(
            crate::sys::now() + 100_000,
            crate::reactor::DeadlineClass::Relaxed,
        ),
        crate::block_on::Wait::sleep(),
    );
    super::common::wait_until(|| rt.reactor().pending() == 0);
    assert!(rt.release_core(&bad));
    rt.shutdown();
}
