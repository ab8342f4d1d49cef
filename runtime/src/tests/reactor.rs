//! The reactor: no deadline fires early, cancels leave nothing behind, shutdown ends all.

use super::common::{newer, wait_until};
use crate::block_on::Wait;
use crate::context::block_on;
use crate::reactor::DeadlineClass;
use crate::runtime::Runtime;
use crate::{sys, Calibration, Config, PrecisePath};
use std::time::Duration;

fn pinned(precise: PrecisePath) -> Runtime {
    crate::Builder::<Runtime>::new()
        .config(Config {
            calibration: Some(Calibration {
                timer_lateness_ns: 50_000,
                wake_latency_ns: 5_000,
                precise,
                ..Calibration::default()
            }),
            vcores: false,
            ..Config::default()
        })
        .build()
        .expect("valid config")
}

#[test]
fn timers_never_fire_early() {
    let rt = pinned(PrecisePath::Reactor);
    let _newer = newer();
    let seed = 0x9E37_79B9_7F4A_7C15u64;
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let rt = rt.clone();
            std::thread::spawn(move || {
                let mut x = seed ^ t;
                for i in 0..200 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let d = sys::now() + x % 300_000;
                    let class = if i % 2 == 0 {
                        DeadlineClass::Precise
                    } else {
                        DeadlineClass::Relaxed
                    };
                    block_on(rt.reactor().timer(d, class), Wait::sleep());
                    let now = sys::now();
                    assert!(now >= d, "timer fired {} ns early", d - now);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    wait_until(|| rt.reactor().pending() == 0);
    rt.shutdown();
}

#[test]
fn dropped_timers_are_removed() {
    let rt = pinned(PrecisePath::OwnTimer);
    let _newer = newer();
    let waker = std::task::Waker::noop();
    let mut timers: Vec<_> = (0..1000)
        .map(|i| {
            rt.reactor()
                .timer(sys::now() + 3_600_000_000_000 + i, DeadlineClass::Relaxed)
        })
        .collect();
    for t in &mut timers {
        t.register(waker);
    }
    // Later deadlines do not wake the reactor; a due one makes it drain its queue. A timer
    // whose deadline passed before its first poll fires in its caller, not on the reactor
    // (a test thread held off the CPU for 100 us on a loaded 2-core machine did, once), so
    // the drain is repeated until the reactor fired it.
    let drain = || loop {
        let mut timer = rt
            .reactor()
            .timer(sys::now() + 100_000, DeadlineClass::Relaxed);
        block_on(&mut timer, Wait::sleep());
        if timer.fired_at().is_some() {
            break;
        }
    };
    drain();
    wait_until(|| rt.reactor().pending() == 1000);
    drop(timers);
    drain();
    wait_until(|| rt.reactor().pending() == 0);
    assert_eq!(rt.stats().reactor_fired, 2);
    rt.shutdown();
}

#[test]
fn shutdown_fires_everything_and_later_timers_complete_at_once() {
    let rt = pinned(PrecisePath::Reactor);
    let r2 = rt.clone();
    let waiter = std::thread::spawn(move || {
        block_on(
            r2.reactor().timer(u64::MAX, DeadlineClass::Relaxed),
            Wait::sleep(),
        );
    });
    std::thread::sleep(Duration::from_millis(20));
    rt.shutdown();
    waiter.join().unwrap();
    block_on(
        rt.reactor().timer(u64::MAX, DeadlineClass::Precise),
        Wait::sleep(),
    );
    assert!(rt.reactor().is_stopped());
}

#[test]
fn dropping_the_last_handle_stops_the_reactor() {
    let rt = pinned(PrecisePath::Reactor);
    let kept = rt.clone();
    let state = rt.reactor().shared_weak();
    drop(rt);
    assert!(
        state.upgrade().is_some(),
        "a clone keeps the runtime and its reactor"
    );
    drop(kept);
    assert_eq!(
        state.strong_count(),
        0,
        "the reactor thread outlived the runtime's last handle"
    );
}

/// A waker that holds a runtime handle: the reactor drops it when it fires the timer.
struct Holder {
    _held: Runtime,
}

impl std::task::Wake for Holder {
    fn wake(self: std::sync::Arc<Self>) {}
}

#[test]
fn a_last_handle_dropped_on_the_reactor_thread_stops_it_there() {
    if !super::common::alone(
        "tests::reactor::a_last_handle_dropped_on_the_reactor_thread_stops_it_there",
    ) {
        return;
    }
    static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    // Relaxed: read after the reactor thread ended.
    std::panic::set_hook(Box::new(|_| {
        PANICS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }));
    let rt = pinned(PrecisePath::Reactor);
    let state = rt.reactor().shared_weak();
    let mut timer = rt
        .reactor()
        .timer(sys::now() + 1_000_000, DeadlineClass::Relaxed);
    let held = std::sync::Arc::new(Holder { _held: rt.clone() });
    timer.register(&std::task::Waker::from(held));
    // The waker's handle is the last one now: the reactor drops it as it fires the timer.
    drop(rt);
    wait_until(|| timer.is_fired());
    drop(timer);
    wait_until(|| state.strong_count() == 0);
    let _ = std::panic::take_hook();
    assert_eq!(
        PANICS.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "the reactor thread panicked (it tried to join itself)"
    );
}

/// A timer registered while the reactor stops fires: a registration that found `stop` unset
/// and pushed its add after the reactor's last pass drained the queue was once never fired
/// (a sleep racing shutdown slept to its deadline; found by the C boundary's fuzzer). The
/// window is a few instructions wide, so this shakes it many times rather than proving it;
/// the argument is at `Timer::register_as`.
#[test]
fn a_timer_registered_as_the_reactor_stops_fires() {
    for round in 0..200u64 {
        let rt = pinned(PrecisePath::OwnTimer);
        let sleepers: Vec<_> = (0..3)
            .map(|_| {
                let rt = rt.clone();
                std::thread::spawn(move || {
                    let hour = sys::now() + 3_600_000_000_000;
                    block_on(
                        rt.reactor().timer(hour, DeadlineClass::Precise),
                        Wait::sleep(),
                    );
                })
            })
            .collect();
        if round % 2 == 1 {
            std::thread::yield_now();
        }
        rt.shutdown();
        let limit = sys::now() + 10_000_000_000;
        for s in sleepers {
            while !s.is_finished() {
                assert!(sys::now() < limit, "round {round}: a timer never fired");
                std::thread::sleep(Duration::from_millis(1));
            }
            s.join().unwrap();
        }
    }
}

/// A host thread keeps one stop watch a reactor across its waits with its parker's waker,
/// keeps none for another waker (a task's wait registers its own), takes it out when it ends,
/// and a stopped reactor answers `false` without one.
#[test]
fn a_kept_stop_watch_is_one_a_thread_and_leaves_with_it() {
    let rt = pinned(PrecisePath::Reactor);
    let (ready, go) = (
        std::sync::mpsc::channel::<()>(),
        std::sync::mpsc::channel::<()>(),
    );
    let (ready_tx, go_rx) = (ready.0, go.1);
    let r = rt.clone();
    let host = std::thread::spawn(move || {
        let own = crate::parker::with_parker(|_, w| w.clone());
        for _ in 0..3 {
            assert_eq!(r.reactor().watch_stop_kept(&own), Some(true));
        }
        let task = std::task::Waker::noop().clone();
        assert_eq!(r.reactor().watch_stop_kept(&task), None, "not the thread's");
        ready_tx.send(()).unwrap();
        go_rx.recv().unwrap();
    });
    ready.1.recv().unwrap();
    assert_eq!(rt.reactor().stop_watchers(), 1, "one watch for three waits");
    go.0.send(()).unwrap();
    host.join().unwrap();
    assert_eq!(
        rt.reactor().stop_watchers(),
        0,
        "taken out as the thread ended"
    );
    rt.shutdown();
    let w = std::task::Waker::noop().clone();
    assert_eq!(rt.reactor().watch_stop_kept(&w), Some(false));
}

/// A thread that keeps watches on several reactors keeps each live one (a watch on another
/// reactor leaves it in place) and forgets the dead ones when it registers a new one.
#[test]
fn kept_stop_watches_stay_while_their_reactor_lives() {
    std::thread::spawn(|| {
        let w = crate::parker::with_parker(|_, w| w.clone());
        let (a, b, c) = (
            pinned(PrecisePath::Reactor),
            pinned(PrecisePath::Reactor),
            pinned(PrecisePath::Reactor),
        );
        for rt in [&a, &b, &c] {
            assert_eq!(rt.reactor().watch_stop_kept(&w), Some(true));
        }
        assert_eq!(
            a.reactor().stop_watchers(),
            1,
            "a watch on b and c left a's"
        );
        assert_eq!(crate::reactor::Reactor::kept_watches(), 3);
        let gone = c.reactor().shared_weak();
        drop(c);
        assert_eq!(gone.strong_count(), 0, "c's reactor is gone");
        let d = pinned(PrecisePath::Reactor);
        assert_eq!(d.reactor().watch_stop_kept(&w), Some(true));
        assert_eq!(
            crate::reactor::Reactor::kept_watches(),
            3,
            "a, b and d: c's forgotten"
        );
        assert_eq!(
            (a.reactor().stop_watchers(), b.reactor().stop_watchers()),
            (1, 1)
        );
    })
    .join()
    .unwrap();
}
