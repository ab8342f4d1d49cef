//! Idle pollers through every object a guest can poll (docs/design.md section 4): a try that
//! finds nothing, then a short sleep, is an idle poll; the moment the object becomes ready
//! (a send, a signal, an unlock, a release) the sleeper is promoted and its sleep ends on
//! time instead of a second later. No speed goal here: the one bound is half the second the
//! sleep would last unpromoted.

use hos::os::{
    wait_any, ClearMode, ConditionVariable, Event, MessageQueue, Mutex, Semaphore, Waitable,
};
use hos::svc::{self, ArbitrationType::WaitIfEqual, SignalType};
use hos::{Calibration, ResultCode, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Stretched by a second: unpromoted, an idle poll of 20 us lasts that long.
fn runtime() -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        .idle_poll_stretch_us(1_000_000)
        .build()
        .expect("valid switches")
}

/// A guest worker polls with `poll` (which must find nothing) and sleeps 20 us; once it
/// sleeps, the host makes the object ready with `ready`. The sleep must end promoted.
fn promoted_by(what: &str, poll: impl FnOnce() -> bool + Send + 'static, ready: impl FnOnce()) {
    let rt = runtime();
    let worker = rt
        .thread()
        .name("ModuleSystemWorker0")
        .spawn(move || {
            assert!(!poll(), "the poll found something");
            let t = Instant::now();
            svc::sleep_thread(20_000);
            t.elapsed()
        })
        .expect("worker");
    let limit = Instant::now() + Duration::from_secs(10);
    while rt.stats().idle_polls == 0 && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(2));
    ready();
    let slept = worker.join().expect("worker ran");
    let s = rt.stats();
    assert_eq!((s.idle_polls, s.idle_promoted), (1, 1), "{what}");
    assert!(slept >= Duration::from_micros(20), "{what}: early");
    assert!(
        slept < Duration::from_millis(500),
        "{what}: slept {slept:?}"
    );
    rt.shutdown();
}

#[test]
fn a_send_promotes_a_queue_poller() {
    let q = Arc::new(MessageQueue::<u32>::new(4));
    let q2 = q.clone();
    promoted_by(
        "try_receive",
        move || q2.try_receive().is_some(),
        || q.send(7).expect("room"),
    );
}

#[test]
fn a_receive_promotes_a_full_queue_poller() {
    let q = Arc::new(MessageQueue::<u32>::new(1));
    q.send(1).expect("room");
    let q2 = q.clone();
    promoted_by(
        "try_send",
        move || q2.try_send(2).is_ok(),
        || {
            assert_eq!(q.receive(), Ok(1));
        },
    );
}

#[test]
fn a_signal_promotes_an_event_poller() {
    for clear in [ClearMode::Auto, ClearMode::Manual] {
        let ev = Arc::new(Event::new(clear));
        let e2 = ev.clone();
        promoted_by("try_wait", move || e2.try_wait(), || ev.signal());
    }
}

#[test]
fn an_unlock_promotes_a_mutex_poller() {
    let m = Mutex::new(false);
    let guard = m.lock().map_err(|e| e.code()).expect("free");
    let m2 = m.clone();
    promoted_by("try_lock", move || m2.try_lock().is_ok(), || drop(guard));
}

#[test]
fn a_release_promotes_a_semaphore_poller() {
    let s = Arc::new(Semaphore::new(0, 1));
    let s2 = s.clone();
    promoted_by(
        "try_acquire",
        move || s2.try_acquire(),
        || s.release(1).expect("room"),
    );
}

#[test]
fn a_signal_promotes_a_zero_timeout_wait_any() {
    let (a, b) = (
        Arc::new(Event::new(ClearMode::Auto)),
        Arc::new(Event::new(ClearMode::Auto)),
    );
    let (a2, b2) = (a.clone(), b.clone());
    promoted_by(
        "wait_any(0)",
        move || {
            let objects: [&dyn Waitable; 2] = [&*a2, &*b2];
            wait_any(&objects, Some(Duration::ZERO)).is_ok()
        },
        || b.signal(),
    );
    drop(a);
}

#[test]
fn a_signal_promotes_a_zero_timeout_wait_synchronization() {
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let h = svc::create_handle(ev.clone()).expect("a handle");
    promoted_by(
        "wait_synchronization(0)",
        move || svc::wait_synchronization(&[h], 0).is_ok(),
        || ev.signal(),
    );
    svc::close_handle(h).expect("open");
}

#[test]
fn a_signal_promotes_a_zero_timeout_wait_for_address() {
    // A word poll's sleep is not stretched (a plain store could ready the word unseen), so
    // the worker sleeps just under 1 ms and the host signals each sleep it sees start, until
    // one signal lands inside a sleep. Without promotion, none would: 10 s, then the test fails.
    let rt = runtime();
    let word = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (w2, s2) = (word.clone(), stop.clone());
    let worker = rt
        .thread()
        .name("ModuleSystemWorker0")
        .spawn(move || {
            while !s2.load(Ordering::Relaxed) {
                let r = svc::wait_for_address(&w2, WaitIfEqual, 0, 0);
                assert_eq!(r, Err(ResultCode::TIMED_OUT), "the word stays 0");
                svc::sleep_thread(999_000);
            }
        })
        .expect("worker");
    let limit = Instant::now() + Duration::from_secs(10);
    while rt.stats().idle_promoted == 0 && Instant::now() < limit {
        let seen = rt.stats().idle_polls;
        while rt.stats().idle_polls == seen && Instant::now() < limit {
            std::thread::yield_now();
        }
        // Most likely linked by now: the signal must promote it, not its own check.
        std::thread::sleep(Duration::from_micros(200));
        svc::signal_to_address(&word, SignalType::Signal, 0, 1).expect("a plain signal");
    }
    stop.store(true, Ordering::Relaxed);
    worker.join().expect("worker ran");
    let s = rt.stats();
    assert!(s.idle_promoted >= 1, "no signal promoted a sleep: {s:?}");
    assert_eq!(s.idle_polls, s.idle_relaxed + s.idle_promoted);
    rt.shutdown();
}

#[test]
fn a_zero_timeout_64_bit_wait_for_address_is_a_poll_and_others_are_not() {
    let rt = runtime();
    rt.thread()
        .name("ModuleSystemWorker0")
        .spawn(|| {
            let word = std::sync::atomic::AtomicU64::new(7);
            let r = svc::wait_for_address64(&word, 7, 0);
            assert_eq!(r, Err(ResultCode::TIMED_OUT));
            svc::sleep_thread(20_000);
            // A timed wait that times out is no poll.
            let r = svc::wait_for_address64(&word, 7, 50_000);
            assert_eq!(r, Err(ResultCode::TIMED_OUT));
            svc::sleep_thread(20_000);
            // Nor is a poll followed by a timed wait.
            let r = svc::wait_for_address64(&word, 7, 0);
            assert_eq!(r, Err(ResultCode::TIMED_OUT));
            let r = svc::wait_for_address64(&word, 7, 50_000);
            assert_eq!(r, Err(ResultCode::TIMED_OUT));
            svc::sleep_thread(20_000);
        })
        .expect("worker")
        .join()
        .expect("ran");
    let s = rt.stats();
    assert_eq!(
        (s.idle_polls, s.idle_relaxed),
        (1, 1),
        "only the first sleep"
    );
    rt.shutdown();
}

#[test]
fn serial_threads_and_blocking_waits_are_not_idle_polls() {
    let rt = runtime();
    let q = Arc::new(MessageQueue::<u32>::new(4));
    let q2 = q.clone();
    rt.thread()
        .name("MainThread")
        .spawn(move || {
            assert!(q2.try_receive().is_none());
            svc::sleep_thread(20_000);
        })
        .expect("serial")
        .join()
        .expect("ran");
    let q2 = q.clone();
    let full = Arc::new(MessageQueue::<u32>::new(4));
    let ev = Arc::new(Event::new(ClearMode::Auto));
    full.send(1).expect("room");
    let (f2, e2) = (full.clone(), ev.clone());
    rt.thread()
        .name("ModuleSystemWorker0")
        .spawn(move || {
            // A wait between the poll and the sleep.
            assert!(q2.try_receive().is_none());
            assert_eq!(
                q2.receive_timeout(Duration::from_micros(50)),
                Err(ResultCode::TIMED_OUT)
            );
            svc::sleep_thread(20_000);
            // A poll that found something after one that did not.
            assert!(q2.try_receive().is_none());
            assert_eq!(f2.try_receive(), Some(1));
            svc::sleep_thread(20_000);
            // A zero-timeout wait_any that found something.
            e2.signal();
            let objects: [&dyn Waitable; 2] = [&*q2, &*e2];
            assert_eq!(wait_any(&objects, Some(Duration::ZERO)), Ok(1));
            svc::sleep_thread(20_000);
            // A zero-timeout WaitForAddress that found its word ready.
            assert!(q2.try_receive().is_none());
            let word = AtomicU32::new(1);
            assert_eq!(
                svc::wait_for_address(&word, WaitIfEqual, 0, 0),
                Err(ResultCode::INVALID_STATE)
            );
            svc::sleep_thread(20_000);
        })
        .expect("worker")
        .join()
        .expect("ran");
    let s = rt.stats();
    assert_eq!(s.idle_polls, 0);
    assert_eq!(s.total_sleeps(), 5);
    rt.shutdown();
}

#[test]
fn a_job_that_a_blocked_waiter_takes_promotes_no_poller() {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .idle_poll_stretch_us(50_000)
        .build()
        .expect("valid switches");
    // A newer runtime, so that `rt` is no host thread's default (the newest running): the
    // parks of host threads in tests beside this one count there, not as the receiver's.
    let newer = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .expect("runtime");
    let q = Arc::new(MessageQueue::<u32>::new(4));
    let q2 = q.clone();
    let blocked = rt
        .thread()
        .name("BaseProcExecutor0")
        .spawn(move || q2.receive())
        .expect("receiver");
    let q2 = q.clone();
    let poller = rt
        .thread()
        .name("ModuleSystemWorker0")
        .spawn(move || {
            assert!(q2.try_receive().is_none());
            svc::sleep_thread(20_000);
        })
        .expect("poller");
    let limit = Instant::now() + Duration::from_secs(10);
    while (rt.stats().idle_polls == 0 || rt.stats().parks == 0) && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
    q.send(5).expect("room");
    assert_eq!(blocked.join().expect("ran"), Ok(5));
    poller.join().expect("ran");
    let s = rt.stats();
    assert_eq!((s.idle_polls, s.idle_relaxed, s.idle_promoted), (1, 1, 0));
    rt.shutdown();
    newer.shutdown();
}

#[test]
fn quiet_sleeps_are_blind_idle_polls_only_when_asked() {
    for (blind, want) in [(0, 0), (3, 2)] {
        let rt = Runtime::builder()
            .calibration(Calibration::default())
            .idle_poll_blind(blind)
            .build()
            .expect("valid switches");
        rt.thread()
            .name("ModuleSystemWorker0")
            .spawn(|| {
                // Four sleeps in a row with nothing between but a loop head's checkpoint
                // (no call): the third and fourth are blind.
                for _ in 0..4 {
                    svc::checkpoint();
                    svc::sleep_thread(20_000);
                }
                // An svc between two sleeps breaks the run.
                for _ in 0..3 {
                    let _ = svc::get_thread_priority(svc::Handle::CURRENT_THREAD);
                    svc::sleep_thread(20_000);
                }
            })
            .expect("worker")
            .join()
            .expect("ran");
        let s = rt.stats();
        assert_eq!(
            (s.idle_polls, s.idle_relaxed),
            (want, want),
            "blind {blind}"
        );
        rt.shutdown();
    }
}

/// A zero timeout in a wait's blocking form is a try, for every object: what the C ABI's
/// `hos_*(…, 0)` calls are made of. Each such wait that finds nothing makes the next short
/// sleep an idle poll, and the object's readiness promotes it.
#[test]
fn a_zero_timeout_wait_is_a_try_of_every_object() {
    const NOW: Duration = Duration::ZERO;
    let q = Arc::new(MessageQueue::<u32>::new(1));
    let q2 = q.clone();
    promoted_by(
        "receive_async().timeout(0)",
        move || q2.receive_async().timeout(NOW).block().is_ok(),
        || q.send(7).expect("room"),
    );
    let full = Arc::new(MessageQueue::<u32>::new(1));
    full.send(1).expect("room");
    let f2 = full.clone();
    promoted_by(
        "send_async().timeout(0)",
        move || f2.send_async(2).timeout(NOW).block().is_ok(),
        || assert_eq!(full.receive(), Ok(1)),
    );
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let e2 = ev.clone();
    promoted_by(
        "wait_async().timeout(0)",
        move || e2.wait_async().timeout(NOW).block().is_ok(),
        || ev.signal(),
    );
    let s = Arc::new(Semaphore::new(0, 1));
    let s2 = s.clone();
    promoted_by(
        "acquire_async().timeout(0)",
        move || s2.acquire_async().timeout(NOW).block().is_ok(),
        || s.release(1).expect("room"),
    );
    let m = Mutex::new(false);
    let guard = m.lock().map_err(|e| e.code()).expect("free");
    let m2 = m.clone();
    promoted_by(
        "lock_async().timeout(0)",
        move || m2.lock_async().timeout(NOW).block().is_ok(),
        || drop(guard),
    );
    let cv = Arc::new(ConditionVariable::new());
    let cv2 = cv.clone();
    let m = Mutex::new(false);
    promoted_by(
        "condition variable wait_timeout(0)",
        move || {
            let guard = m.lock().map_err(|e| e.code()).expect("free");
            cv2.wait_timeout(guard, NOW).1.is_ok()
        },
        || cv.signal(),
    );
}
