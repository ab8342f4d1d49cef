//! The wait bracket ([`Away`]): each wait marks its thread and gives its core back once, a
//! sleep through the reactor included (its reactor wait is inside the sleep's bracket); and
//! through a runtime, a guest thread's sleep frees its core for another thread; a wait that
//! goes on after a wake gives a claimed core back; a wait's spin lasts its length on the
//! event clock, and the trace's end of the wait says whether it caught the wake.

use crate::block_on::{block_on_with, Away, Wait, WaitPolicy};
use crate::parker::with_parker;
use crate::policy::Spin;
use crate::stats::Stripe;
use std::cell::RefCell;
use std::future::poll_fn;
use std::task::Poll;

/// A policy that holds a core and writes down every call of the bracket (it spins `spin`,
/// counting in `counts`).
#[derive(Default)]
struct Counting {
    calls: RefCell<Vec<String>>,
    holds: std::cell::Cell<bool>,
    spin: Option<Spin>,
    counts: Stripe,
}

impl Counting {
    fn holding() -> Self {
        let c = Counting::default();
        c.holds.set(true);
        c
    }

    fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }
}

impl WaitPolicy for Counting {
    fn spin(&self) -> Spin {
        self.spin.unwrap_or(Spin::NONE)
    }

    fn counters(&self) -> Option<&Stripe> {
        Some(&self.counts)
    }

    fn release_core(&self, claimable: bool) -> bool {
        self.calls.borrow_mut().push(format!("release {claimable}"));
        self.holds.replace(false)
    }

    fn unclaim_core(&self) {
        self.calls.borrow_mut().push("unclaim".into());
    }

    fn acquire_core(&self) {
        self.calls.borrow_mut().push("acquire".into());
        self.holds.set(true);
    }

    fn mark(&self, on: Option<&'static str>) {
        self.calls.borrow_mut().push(format!("mark {on:?}"));
    }
}

/// Blocks on a future that is pending once (it wakes itself) under `policy`.
fn wait_once(policy: &Counting, wait: Wait<'_>) {
    wait_woken(policy, wait, 1);
}

/// Blocks on a future that is pending `times` times (each wakes itself) under `policy`.
fn wait_woken(policy: &Counting, wait: Wait<'_>, times: usize) {
    let mut left = times;
    let fut = poll_fn(|cx| {
        if left == 0 {
            return Poll::Ready(());
        }
        left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    });
    with_parker(|p, w| block_on_with(p, w, fut, wait, || None, || policy));
}

/// A wake that does not end a wait gives back the core a waker may have claimed meanwhile,
/// before the wait parks again (`vcore/claim.rs`), once a wake: a wait that gave a core back
/// at its begin does; one that gave none (a host thread's) has no claim to give back.
#[test]
fn a_wait_that_goes_on_after_a_wake_gives_its_claim_back() {
    let policy = Counting::holding();
    wait_woken(&policy, Wait::objects(), 3);
    assert_eq!(
        policy.calls(),
        [
            "mark Some(\"several objects\")",
            "release true",
            "unclaim",
            "unclaim",
            "mark None",
            "acquire"
        ]
    );
    let policy = Counting::default();
    wait_woken(&policy, Wait::objects(), 3);
    assert_eq!(
        policy.calls(),
        [
            "mark Some(\"several objects\")",
            "release true",
            "mark None"
        ],
        "no core given back: no claim to give back"
    );
}

/// A spin lasts its length on the event clock: one of 10 s catches a wake that comes after
/// 100 ms, and one of 1 ms misses it and parks; the trace's end of each wait says which.
#[test]
fn a_spin_lasts_its_length_on_the_event_clock() {
    use crate::trace::{recorder, Kind, SpinEnd};
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex};
    use std::task::Waker;
    use std::time::Duration;
    let scale = crate::sys::tick_scale();
    let session = recorder::Session::start(
        u64::MAX - 9,
        recorder::Settings {
            collect: true,
            ..recorder::Settings::default()
        },
    );
    for (ns, caught) in [(10_000_000_000, 1), (1_000_000, 0)] {
        let policy = Counting {
            spin: Some(Spin::new(ns, true, &scale)),
            ..Counting::default()
        };
        let waker: Arc<Mutex<Option<Waker>>> = Arc::default();
        let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (slot, flag) = (waker.clone(), woken.clone());
        let wake = std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            if let Some(w) = slot.lock().unwrap().take() {
                // SeqCst: a test's flag.
                flag.store(true, Ordering::SeqCst);
                w.wake();
                return;
            }
        });
        let fut = poll_fn(|cx| {
            // SeqCst: a test's flag.
            if woken.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        });
        with_parker(|p, w| block_on_with(p, w, fut, Wait::objects(), || None, || &policy));
        wake.join().unwrap();
        let counts = &policy.counts;
        assert_eq!(
            (
                counts.spins_caught.load(Ordering::Relaxed),
                counts.spins_missed.load(Ordering::Relaxed)
            ),
            (caught, 1 - caught),
            "a spin of {ns} ns against a wake after 100 ms"
        );
    }
    let me = crate::trace::thread_id();
    let snap = session.snapshot();
    let ends: Vec<u64> = snap
        .threads
        .iter()
        .filter(|t| t.tid == me)
        .flat_map(|t| &t.events)
        .filter(|e| e.kind == Kind::WaitEnd)
        .map(|e| e.x)
        .collect();
    assert_eq!(
        ends,
        [SpinEnd::Caught as u64, 0],
        "the trace's wait ends: caught, then after a park"
    );
    session.end();
}

#[test]
fn a_sleep_through_the_reactor_gives_its_core_back_once() {
    let policy = Counting::holding();
    let away = Away::begin(&policy, Wait::sleep());
    wait_once(&policy, Wait::sleep());
    assert!(away.end(), "the sleep gave a core back");
    assert_eq!(
        policy.calls(),
        [
            "mark Some(\"sleep\")",
            "release false",
            "mark None",
            "acquire"
        ],
        "the reactor wait inside the sleep bracketed it again"
    );
}

#[test]
fn a_wait_on_an_object_brackets_itself_and_a_core_wait_gives_nothing_back() {
    let gate = crate::spin_gate::SpinGate::default();
    let policy = Counting::holding();
    wait_once(&policy, Wait::object("test object", &gate));
    assert_eq!(
        policy.calls(),
        [
            "mark Some(\"test object\")",
            "release true",
            "mark None",
            "acquire"
        ]
    );
    let policy = Counting::default();
    wait_once(&policy, Wait::vcore());
    assert_eq!(policy.calls(), ["mark Some(\"virtual core\")", "mark None"]);
}

#[test]
fn a_guest_threads_sleep_gives_its_core_back_to_a_runtime_of_one_core() {
    use super::common::spawn_guest;
    use crate::context::with_guest;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    let rt = crate::Builder::<crate::runtime::Runtime>::new()
        .calibration(crate::Calibration::default())
        .vcores(1)
        .build()
        .expect("one virtual core");
    let asleep = Arc::new(AtomicBool::new(false));
    let flag = asleep.clone();
    let sleeper = spawn_guest(&rt, "Sleeper", 44, move || {
        with_guest(|rt, t| rt.acquire_core(t));
        // SeqCst: a test's flag, read in a loop.
        flag.store(true, Ordering::SeqCst);
        crate::sleep::sleep_current(300_000_000);
        with_guest(|rt, t| rt.release_core(t));
    });
    let other = spawn_guest(&rt, "Other", 44, move || {
        let limit = Instant::now() + Duration::from_secs(10);
        while !asleep.load(Ordering::SeqCst) && Instant::now() < limit {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        with_guest(|rt, t| rt.acquire_core(t));
        let took = t.elapsed();
        with_guest(|rt, t| rt.release_core(t));
        took
    });
    let took = other.join().expect("other");
    sleeper.join().expect("sleeper");
    assert!(
        took < Duration::from_millis(150),
        "the only core came after {took:?}: the sleeper kept it"
    );
    assert_eq!(rt.stats().vcore_waits, 0);
    rt.shutdown();
}
