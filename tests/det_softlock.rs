//! The deterministic mode's softlock report (docs/determinism.md section 7): a lock-order
//! deadlock and a lost wakeup are reported at virtual quiescence with the wait-for graph
//! (each thread, what it waits on, who holds it, the cycle), the decision index and each
//! thread's last turns; a thread that keeps the token without a checkpoint is named by the
//! watchdog; a run that goes on by itself (sleeps, timed waits) is never reported. And two
//! of the mode's hazards: a paused thread is no candidate for the token until resumed (by a
//! host or by a guest, reproducibly), and a lock's lent priority ranks its holder for it.

mod det_scenes;
mod sdk;

use det_scenes::{lock_order_deadlock, main_thread, softlock as report};
use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::det::softlock::{Cause, Standing};
use hos::os::{ClearMode, ConditionVariable, Event, Mutex};
use hos::svc::{self, ThreadActivity};
use hos::{Calibration, Doing, GuestState, ResultCode, Runtime, RuntimeBuilder};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// The deterministic mode (stable, free pacing, a token bound of `watchdog_ms`).
fn builder(watchdog_ms: u64) -> RuntimeBuilder {
    Runtime::builder()
        .calibration(Calibration::default())
        .det(Some(Spec::Stable))
        .det_pace(Pacing::Free)
        .det_quantum(5)
        .det_watchdog_ms(watchdog_ms)
}

/// A runtime in the deterministic mode of [`builder`].
fn runtime(watchdog_ms: u64) -> Runtime {
    builder(watchdog_ms)
        .build()
        .expect("a runtime in the deterministic mode")
}

#[test]
fn a_lock_order_deadlock_is_reported_with_its_cycle_and_holders() {
    let rt = runtime(0);
    let (ids_tx, ids) = std::sync::mpsc::channel();
    let main = main_thread(&rt, move |rt| {
        let [a, b] = lock_order_deadlock(rt);
        ids_tx.send((a.thread().id(), b.thread().id())).unwrap();
        // Nobody signals it: the shutdown ends the wait, and the mode with it.
        let _ = Event::new(ClearMode::Manual).wait();
        a.join().expect("A ends at the shutdown");
        b.join().expect("B ends at the shutdown");
    });
    let (ida, idb) = ids.recv().unwrap();
    let s = report(&rt);
    assert_eq!(s.cause, Cause::Deadlock, "{s}");
    assert_eq!(s.selector, "stable");
    assert!(s.decision > 0, "{s}");
    let (ta, tb) = (s.thread("A").expect("A"), s.thread("B").expect("B"));
    assert_eq!((ta.id, tb.id), (ida, idb));
    assert_eq!(ta.holders, [idb], "{s}");
    assert_eq!(tb.holders, [ida], "{s}");
    for t in [ta, tb] {
        assert_eq!(t.standing, Standing::Waiting { until: None });
        assert!(t.waits_on.contains("mutex"), "{s}");
        assert!(!t.turns.is_empty(), "{s}");
    }
    assert_ne!(ta.waits_on, tb.waits_on, "two mutexes: {s}");
    let m = s.thread("MainThread").expect("main");
    assert!(m.waits_on.contains("event"), "{s}");
    assert!(m.holders.is_empty(), "{s}");
    assert_eq!(s.cycles.len(), 1, "{s}");
    let mut cycle = s.cycles[0].clone();
    cycle.sort_unstable();
    assert_eq!(cycle, [ida, idb]);
    let text = s.to_string();
    assert!(text.contains("deadlock: cycle"), "{text}");
    assert!(text.contains("held by B"), "{text}");
    // In the trace too, with the decision index.
    let path = std::env::temp_dir().join(format!("hos-det-softlock-{}.json", std::process::id()));
    rt.write_trace(&path).expect("the trace");
    let trace = std::fs::read_to_string(&path).expect("the trace file");
    let _ = std::fs::remove_file(&path);
    let event = format!("softlock: deadlock at decision {}", s.decision);
    assert!(trace.contains(&event), "{event} not in the trace");
    rt.shutdown();
    main.join().expect("main ends at the shutdown");
}

#[test]
fn without_the_flight_recorder_each_thread_still_shows_the_kind_of_its_own_wait() {
    let rt = builder(0)
        .flight(false)
        .build()
        .expect("a runtime without the recorder");
    let main = main_thread(&rt, move |rt| {
        let [a, b] = lock_order_deadlock(rt);
        let _ = Event::new(ClearMode::Manual).wait();
        a.join().expect("A ends at the shutdown");
        b.join().expect("B ends at the shutdown");
    });
    let s = report(&rt);
    assert_eq!(s.cause, Cause::Deadlock, "{s}");
    // Each thread's own activity, not a neighbour's: A and B on mutexes, main on an event.
    for name in ["A", "B"] {
        let t = s.thread(name).expect("a deadlocked thread");
        assert!(t.waits_on.contains("mutex"), "{name}: {s}");
    }
    let m = s.thread("MainThread").expect("main");
    assert!(m.waits_on.contains("event"), "{s}");
    rt.shutdown();
    main.join().expect("main ends at the shutdown");
}

#[test]
fn a_lost_wakeup_is_reported_once_and_a_host_wake_lets_the_run_go_on() {
    let rt = runtime(0);
    let cv = Arc::new(ConditionVariable::new());
    let (ids_tx, ids) = std::sync::mpsc::channel();
    let main = main_thread(&rt, {
        let cv = cv.clone();
        move |rt| {
            let m = Arc::new(Mutex::new(false));
            let flag = Arc::new(AtomicBool::new(false));
            let (checked, sent) = (Event::new(ClearMode::Manual), Event::new(ClearMode::Manual));
            let waiter = rt
                .thread()
                .name("Waiter")
                .priority(44)
                .spawn({
                    let (cv, flag, checked, sent) =
                        (cv.clone(), flag.clone(), checked.clone(), sent.clone());
                    move || {
                        // Check, then wait: the signal comes between the two, to nobody.
                        let seen = flag.load(Ordering::Relaxed);
                        checked.signal();
                        sent.wait().expect("the signaller ran");
                        if !seen {
                            let g = m.lock().expect("the mutex");
                            let (_g, r) = cv.wait(g);
                            r.expect("a wake (the host's, after the report)");
                        }
                    }
                })
                .expect("the waiter");
            let signaller = rt
                .thread()
                .name("Signaller")
                .priority(44)
                .spawn(move || {
                    checked.wait().expect("the waiter checked");
                    flag.store(true, Ordering::Relaxed);
                    cv.signal();
                    sent.signal();
                })
                .expect("the signaller");
            ids_tx.send(waiter.thread().id()).unwrap();
            // Main waits for the waiter as for any thread: on its handle.
            svc::wait_synchronization(&[waiter.thread().handle()], -1).expect("the waiter ends");
            signaller.join().expect("the signaller ended");
            waiter.join().expect("the waiter ended");
        }
    });
    let idw = ids.recv().unwrap();
    let s = report(&rt);
    assert_eq!(s.cause, Cause::Deadlock, "{s}");
    assert!(s.thread("Signaller").is_none(), "it ended: {s}");
    let w = s.thread("Waiter").expect("the waiter");
    assert_eq!(w.id, idw);
    assert!(w.waits_on.contains("condvar"), "{s}");
    assert!(
        w.holders.is_empty(),
        "nobody holds a condition variable: {s}"
    );
    let m = s.thread("MainThread").expect("main");
    assert!(!m.waits_on.is_empty(), "{s}");
    assert!(s.cycles.is_empty(), "{s}");
    // A host thread's wake (outside the contract) ends the quiescence; the run goes on.
    cv.broadcast();
    main.join().expect("main ends");
    assert_eq!(
        rt.det_softlock(),
        Some(s),
        "reported once: the run never rested again"
    );
    rt.shutdown();
}

#[test]
fn sleeps_and_timed_waits_are_no_softlock() {
    let rt = runtime(0);
    let never = Event::new(ClearMode::Manual);
    let main = rt
        .thread()
        .name("MainThread")
        .spawn({
            let never = never.clone();
            move || {
                for i in 0..20 {
                    svc::sleep_thread(1_000_000 * i);
                    // Nothing signals it: it times out on the virtual clock.
                    let timed = never.wait_timeout(Duration::from_millis(5));
                    assert_eq!(timed.err(), Some(ResultCode::TIMED_OUT));
                }
            }
        })
        .expect("the main thread");
    main.join().expect("main ends");
    assert!(rt.det_stats().expect("the mode").decisions > 40);
    assert_eq!(rt.det_softlock(), None);
    rt.shutdown();
}

#[test]
fn the_watchdog_names_a_holder_that_never_checkpoints() {
    let rt = runtime(20);
    let spinner = rt
        .thread()
        .name("Spinner")
        .priority(44)
        .spawn({
            let rt = rt.clone();
            // A loop without checkpoints (reading the report is none): it holds the token
            // until the watchdog names it.
            move || {
                let end = Instant::now() + Duration::from_secs(20);
                while rt.det_softlock().is_none() && Instant::now() < end {
                    std::hint::spin_loop();
                }
            }
        })
        .expect("the spinner");
    let id = spinner.thread().id();
    spinner.join().expect("the spinner ends once named");
    let s = rt.det_softlock().expect("the report");
    match s.cause {
        Cause::Held { thread, held_ms } => {
            assert_eq!(thread, id, "{s}");
            assert!(held_ms >= 20, "{s}");
        }
        Cause::Deadlock => panic!("a held token, not a deadlock: {s}"),
    }
    assert_eq!(
        s.thread("Spinner").map(|t| t.standing),
        Some(Standing::Holds)
    );
    assert!(s.to_string().contains("Spinner held the token"), "{s}");
    rt.shutdown();
}

/// Waits (on a host thread) until `cond`; a failsafe bound, not a timing.
fn until(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A guest thread from `builder` busy with checkpoints, holding the token most of the time:
/// it counts each in `count` until `stop`.
fn checkpointer(
    builder: hos::thread::Builder,
    count: &Arc<AtomicU64>,
    stop: &Arc<AtomicBool>,
) -> hos::thread::JoinHandle<()> {
    let (count, stop) = (count.clone(), stop.clone());
    builder
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                count.fetch_add(1, Ordering::Relaxed);
                svc::checkpoint();
            }
        })
        .expect("a guest thread")
}

#[test]
fn a_host_pauses_and_resumes_guests_in_the_mode() {
    // A quantum no test reaches: the worker gives the token up only at a pause point.
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .det(Some(Spec::Stable))
        .det_pace(Pacing::Free)
        .det_quantum(1_000_000)
        .build()
        .expect("a runtime in the deterministic mode");
    let (count, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let t = checkpointer(rt.thread().name("Worker"), &count, &stop);
    until("the worker runs", || count.load(Ordering::Relaxed) > 0);
    // A failsafe bound: the worker stops at its next checkpoint.
    assert_eq!(rt.pause_guests(Some(Duration::from_secs(20))), Ok(1));
    let at = count.load(Ordering::Relaxed);
    // It stopped at its next checkpoint, not at its quantum's end: it shows paused.
    let states = rt.guest_states();
    assert!(
        matches!(
            states[..],
            [GuestState {
                doing: Doing::Waiting { on: "pause", .. },
                ..
            }]
        ),
        "{states:?}"
    );
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(
        count.load(Ordering::Relaxed),
        at,
        "no guest code runs while paused"
    );
    assert_eq!(rt.det_softlock(), None, "a pause is no deadlock");
    assert_eq!(rt.resume_guests(), 1);
    until("the worker goes on", || count.load(Ordering::Relaxed) > at);
    stop.store(true, Ordering::Relaxed);
    t.join().expect("the worker ends");
    assert_eq!(rt.det_softlock(), None);
    rt.shutdown();
}

/// A guest pauses another for a virtual millisecond and resumes it: the count the paused
/// thread reached before and after the pause, and the run's figures.
fn guest_pause_run() -> (u64, u64, hos::DetStats) {
    let rt = runtime(0);
    let seen = Arc::new(StdMutex::new((0, 0)));
    let main = main_thread(&rt, {
        let seen = seen.clone();
        move |rt| {
            let (count, stop) = (
                Arc::new(AtomicU64::new(0)),
                Arc::new(AtomicBool::new(false)),
            );
            let w = checkpointer(
                rt.thread().name("Worker").priority(44).ideal_core(1),
                &count,
                &stop,
            );
            let h = w.thread().handle();
            svc::sleep_thread(50_000);
            svc::set_thread_activity(h, ThreadActivity::Paused).expect("paused");
            let before = count.load(Ordering::Relaxed);
            // Only this sleep's deadline moves the clock: the worker is no candidate.
            svc::sleep_thread(1_000_000);
            let after = count.load(Ordering::Relaxed);
            svc::set_thread_activity(h, ThreadActivity::Runnable).expect("resumed");
            svc::sleep_thread(50_000);
            stop.store(true, Ordering::Relaxed);
            svc::wait_synchronization(&[h], -1).expect("the worker ends");
            w.join().expect("it ended");
            *seen.lock().unwrap() = (before, after);
        }
    });
    main.join().expect("main ends");
    let stats = rt.det_stats().expect("the mode");
    assert_eq!(rt.det_softlock(), None);
    rt.shutdown();
    let (before, after) = *seen.lock().unwrap();
    (before, after, stats)
}

#[test]
fn a_guest_pauses_another_and_the_run_stays_reproducible() {
    let first = guest_pause_run();
    assert!(first.0 > 0, "the worker ran before the pause: {first:?}");
    assert_eq!(first.0, first.1, "the paused worker ran: {first:?}");
    assert_eq!(guest_pause_run(), first, "two runs differ");
}

#[test]
fn a_lent_priority_ranks_the_lock_holder_for_the_token() {
    let rt = runtime(0);
    let log = Arc::new(StdMutex::new(Vec::new()));
    let main = main_thread(&rt, {
        let log = log.clone();
        move |rt| {
            let lock = Arc::new(sdk::libnx::Mutex::new());
            let (locked, go) = (Event::new(ClearMode::Manual), Event::new(ClearMode::Manual));
            let spawn = |name: &str, priority: i32, body: Box<dyn FnOnce() + Send>| {
                rt.thread()
                    .name(name)
                    .priority(priority)
                    .ideal_core(0)
                    .spawn(body)
                    .expect("a guest thread")
            };
            let holder = spawn("Holder59", 59, {
                let (lock, locked, go, log) =
                    (lock.clone(), locked.clone(), go.clone(), log.clone());
                Box::new(move || {
                    lock.lock();
                    locked.signal();
                    go.wait().expect("go");
                    log.lock().unwrap().push("released");
                    lock.unlock();
                })
            });
            locked.wait().expect("the holder has the lock");
            // All on core 0: the waiter (28) runs first and blocks on the lock, lending the
            // holder 28, which then runs before the worker (44), which never waits.
            let waiter = spawn("Waiter28", 28, {
                let lock = lock.clone();
                Box::new(move || {
                    lock.lock();
                    lock.unlock();
                })
            });
            let worker = spawn("Worker44", 44, {
                let log = log.clone();
                Box::new(move || {
                    for _ in 0..100 {
                        svc::checkpoint();
                    }
                    log.lock().unwrap().push("worker done");
                })
            });
            go.signal();
            for t in [&holder, &waiter, &worker] {
                svc::wait_synchronization(&[t.thread().handle()], -1).expect("it ends");
            }
            for t in [holder, waiter, worker] {
                t.join().expect("it ended");
            }
        }
    });
    main.join().expect("main ends");
    assert_eq!(*log.lock().unwrap(), ["released", "worker done"]);
    assert_eq!(rt.det_softlock(), None);
    rt.shutdown();
}
