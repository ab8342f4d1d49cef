//! Shutdown always ends: every wait ends Cancelled, the report names each guest thread that
//! did not leave with what it was doing, waits that start later end at once, concurrent
//! shutdowns both wait, a runtime that shut down starts no thread, host threads fall back
//! to an older runtime still running, and the final figures (threads, the reactor's CPU)
//! survive the shutdown in its report and in every `stats()` after it.
//!
//! Host threads wait on the process's default runtime (the newest one running), so these
//! tests take turns (`serial`): one test's runtime must not become another's default.

use hos::internal::lock;
use hos::os::{ClearMode, ConditionVariable, Event, MessageQueue, Mutex, Semaphore, TimerEvent};
use hos::{Calibration, Doing, ResultCode, Runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longer than any test runs: a wait that returns before it did not wait for it.
const LONG: Duration = Duration::from_secs(600);
/// What "at once" may take on a loaded 2-core machine; far below `LONG`.
const PROMPT: Duration = Duration::from_secs(10);

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    lock(&TURN)
}

fn runtime() -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        // No flight recorder dumps from the stragglers made here (tests/trace.rs tests them).
        .flight(false)
        .build()
        .expect("runtime")
}

/// Runs `f` on a new host thread and gives its result, or `None` if it takes longer than
/// [`PROMPT`] (the thread is left behind: the test fails anyway).
fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(PROMPT).ok()
}

#[test]
fn the_report_names_each_thread_that_did_not_leave_and_what_it_does() {
    let _turn = serial();
    let rt = runtime();
    let (m, cv) = (
        Arc::new(Mutex::new(false)),
        Arc::new(ConditionVariable::new()),
    );
    let (release, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (in_wait, waiting) = mpsc::channel();
    // Waits on the condition variable; cancelled, it must take the mutex back, which the
    // spinner holds: it is stuck in an uncancellable wait on the mutex.
    let relocker = rt
        .thread()
        .name("Relocker")
        .spawn({
            let (m, cv) = (m.clone(), cv.clone());
            move || {
                let g = m.lock().expect("free");
                in_wait.send(()).unwrap();
                let (g, r) = cv.wait(g);
                drop(g);
                r
            }
        })
        .unwrap();
    waiting.recv().unwrap();
    // Guest code that holds the mutex and never waits.
    let (held, holding) = mpsc::channel();
    let spinner = rt
        .thread()
        .name("Spinner")
        .spawn({
            let (m, release, stop) = (m.clone(), release.clone(), stop.clone());
            move || {
                let g = m.lock().expect("the relocker released it in its wait");
                held.send(()).unwrap();
                while !release.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                drop(g);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
            }
        })
        .unwrap();
    holding.recv().unwrap();
    // Guest threads blocked in every kind of wait: they all leave.
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let sem = Arc::new(Semaphore::new(0, 1));
    let q = Arc::new(MessageQueue::<u8>::new(1));
    let waiters: Vec<_> = (0..12)
        .map(|i| {
            let (ev, sem, q) = (ev.clone(), sem.clone(), q.clone());
            rt.thread()
                .name(format!("Waiter{i}"))
                .spawn(move || match i % 4 {
                    0 => ev.wait(),
                    1 => sem.acquire(),
                    2 => q.receive().map(drop),
                    _ => {
                        hos::svc::sleep_thread(LONG.as_nanos() as i64);
                        Err(ResultCode::CANCELLED)
                    }
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));

    let report = rt.shutdown_timeout(Duration::from_millis(100));
    let mut stragglers = report.stragglers.clone();
    stragglers.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(stragglers.len(), 2, "{report}");
    assert_eq!(stragglers[0].name, "Relocker");
    assert!(
        matches!(stragglers[0].doing, Doing::Waiting { on: "mutex", .. }),
        "{report}"
    );
    assert_eq!(stragglers[1].name, "Spinner");
    assert_eq!(stragglers[1].doing, Doing::GuestCode, "{report}");
    assert_eq!(report.joined, waiters.len(), "{report}");
    let text = report.to_string();
    assert!(
        text.contains("\"Spinner\"") && text.contains("running guest code"),
        "{text}"
    );
    assert!(text.contains("waiting on mutex"), "{text}");
    for w in waiters {
        assert_eq!(w.join().unwrap(), Err(ResultCode::CANCELLED));
    }
    // The runtime is safe to drop with its stragglers detached; they end by themselves.
    drop(rt);
    release.store(true, Ordering::Relaxed);
    assert_eq!(relocker.join().unwrap(), Err(ResultCode::CANCELLED));
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
}

#[test]
fn waits_sleeps_and_spawns_after_shutdown_end_at_once() {
    let _turn = serial();
    let rt = runtime();
    // A guest thread blocked outside the runtime at shutdown: a straggler, detached.
    let (go, gate) = mpsc::channel::<()>();
    let (tx, results) = mpsc::channel();
    let rt2 = rt.clone();
    let m = Mutex::new(false);
    let held = m.lock().expect("free");
    let m2 = m.clone();
    let straggler = rt
        .thread()
        .name("LateGuest")
        .spawn(move || {
            gate.recv().unwrap();
            let ev = Event::new(ClearMode::Auto);
            let start = Instant::now();
            let got = [
                ev.wait(),
                ev.wait_async().timeout(LONG).block(),
                m2.lock().map(drop).map_err(|e| e.code()),
                rt2.thread().spawn(|| ()).map(drop),
            ];
            hos::svc::sleep_thread(LONG.as_nanos() as i64);
            tx.send((got, start.elapsed())).unwrap();
        })
        .unwrap();
    let report = rt.shutdown_timeout(Duration::from_millis(20));
    assert_eq!(report.stragglers.len(), 1, "{report}");
    go.send(()).unwrap();
    let (got, took) = results
        .recv_timeout(PROMPT)
        .expect("the straggler's waits end at once");
    assert_eq!(
        got,
        [
            Err(ResultCode::CANCELLED),
            Err(ResultCode::CANCELLED),
            Err(ResultCode::CANCELLED),
            Err(ResultCode::INVALID_STATE),
        ]
    );
    assert!(took < PROMPT, "{took:?}");
    straggler.join().unwrap();
    drop(held);

    // Host threads: the runtime is shut down, so their waits are cancelled, timed or not.
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let e = ev.clone();
    assert_eq!(promptly(move || e.wait()), Some(Err(ResultCode::CANCELLED)));
    let e = ev.clone();
    let timed = promptly(move || e.wait_async().timeout(LONG).block());
    assert_eq!(timed, Some(Err(ResultCode::CANCELLED)));
    let q = Arc::new(MessageQueue::<u8>::new(1));
    assert_eq!(
        promptly(move || q.receive()),
        Some(Err(ResultCode::CANCELLED))
    );
    let r = rt.clone();
    assert_eq!(promptly(move || r.host_sleep(LONG)), Some(()));
    assert_eq!(
        promptly(|| hos::svc::sleep_thread(LONG.as_nanos() as i64)),
        Some(())
    );
    assert_eq!(
        TimerEvent::new(ClearMode::Auto).start_one_shot(Duration::from_millis(1)),
        Err(ResultCode::CANCELLED)
    );
    assert_eq!(
        rt.thread().spawn(|| ()).err(),
        Some(ResultCode::INVALID_STATE),
        "a runtime that shut down starts no guest thread"
    );
    // A second shutdown finds nothing to wait for.
    assert!(rt.shutdown_timeout(Duration::ZERO).is_clean());
}

#[test]
fn concurrent_shutdowns_both_wait_for_every_guest_thread() {
    let _turn = serial();
    let rt = runtime();
    const GUESTS: usize = 16;
    let left = Arc::new(AtomicUsize::new(0));
    let ev = Arc::new(Event::new(ClearMode::Manual));
    let guests: Vec<_> = (0..GUESTS)
        .map(|_| {
            let (ev, left) = (ev.clone(), left.clone());
            rt.thread()
                .spawn(move || {
                    assert_eq!(ev.wait(), Err(ResultCode::CANCELLED));
                    // Cleanup that takes a while, outside the runtime.
                    std::thread::sleep(Duration::from_millis(30));
                    left.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(10));
    let callers: Vec<_> = (0..2)
        .map(|_| {
            let (rt, left) = (rt.clone(), left.clone());
            std::thread::spawn(move || {
                rt.shutdown();
                left.load(Ordering::SeqCst)
            })
        })
        .collect();
    for c in callers {
        assert_eq!(c.join().unwrap(), GUESTS, "a shutdown returned early");
    }
    for g in guests {
        g.join().unwrap();
    }
}

#[test]
fn the_final_snapshot_survives_the_shutdown() {
    let _turn = serial();
    let rt = runtime();
    const NAMES: [&str; 3] = ["MainThread", "ModuleSystemWorker0", "AudioRenderer"];
    let ev = Arc::new(Event::new(ClearMode::Manual));
    let (slept, asleep) = mpsc::channel();
    let guests: Vec<_> = NAMES
        .iter()
        .map(|name| {
            let (ev, slept) = (ev.clone(), slept.clone());
            rt.thread()
                .name(*name)
                .spawn(move || {
                    for _ in 0..5 {
                        hos::svc::sleep_thread(200_000);
                    }
                    slept.send(()).unwrap();
                    assert_eq!(ev.wait(), Err(ResultCode::CANCELLED));
                })
                .unwrap()
        })
        .collect();
    for _ in NAMES {
        asleep.recv_timeout(PROMPT).expect("the guests slept");
    }
    rt.host_sleep(Duration::from_millis(2));
    let report = rt.shutdown_timeout(LONG);
    let names = |s: &hos::Stats| {
        let mut n: Vec<String> = s.threads.iter().map(|t| t.name.clone()).collect();
        n.sort();
        n
    };
    let mut want: Vec<String> = NAMES.iter().map(ToString::to_string).collect();
    want.sort();
    let last = &report.stats;
    assert_eq!(names(last), want, "the threads as the shutdown began");
    // The std fallback reads no thread's CPU clock (0 every way): there, only equality below.
    let clock = hos::thread::cpu_time().total() > Duration::ZERO;
    assert!(
        !clock || last.reactor_cpu.total() > Duration::ZERO,
        "the reactor's CPU"
    );
    assert!(last.total_sleeps() >= 15, "{last}");
    assert!(last.threads.iter().all(|t| t.sleeps == 5), "{last}");
    let after = rt.stats();
    assert_eq!(names(&after), want, "stats() after the shutdown");
    assert_eq!(after.reactor_cpu, last.reactor_cpu);
    rt.shutdown();
    assert_eq!(
        rt.stats().threads,
        last.threads,
        "a second shutdown keeps the first's"
    );
    let text = format!("{report:#}");
    assert!(text.contains("3 guest threads joined") && text.contains("hos stats: 3 guest threads"));
    assert!(text.lines().count() < 40, "{text}");
    for g in guests {
        g.join().unwrap();
    }
}

#[test]
fn a_guest_thread_may_shut_its_runtime_down() {
    let _turn = serial();
    let rt = runtime();
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let e = ev.clone();
    let waiter = rt.thread().spawn(move || e.wait()).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    let r = rt.clone();
    let closer = rt.thread().spawn(move || r.shutdown_timeout(LONG)).unwrap();
    let report = closer.join().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.joined, 1, "the waiter, not the caller itself");
    assert_eq!(waiter.join().unwrap(), Err(ResultCode::CANCELLED));
}

#[test]
fn two_runtimes_stay_independent_and_hosts_fall_back_to_the_older() {
    let _turn = serial();
    let older = runtime();
    let newer = runtime();
    // A guest of the older runtime waits on its own runtime: the newer's shutdown does not
    // touch it.
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let e = ev.clone();
    let guest = older
        .thread()
        .spawn(move || e.wait_async().timeout(LONG).block())
        .unwrap();
    // A host wait started now belongs to the newer runtime: its shutdown cancels it.
    let e = ev.clone();
    let host = std::thread::spawn(move || e.wait_async().timeout(LONG).block());
    // So is this thread's own: it keeps that answer until a runtime is built or shut down.
    let timed = Event::new(ClearMode::Auto)
        .wait_async()
        .timeout(Duration::from_millis(1))
        .block();
    assert_eq!(timed, Err(ResultCode::TIMED_OUT));
    std::thread::sleep(Duration::from_millis(20));
    newer.shutdown();
    assert_eq!(host.join().unwrap(), Err(ResultCode::CANCELLED));
    assert!(
        !guest.is_finished_hint(),
        "the older runtime's guest still waits"
    );
    ev.signal();
    assert_eq!(guest.join().unwrap(), Ok(()));

    // Host threads now fall back to the older runtime, which still runs.
    let start = Instant::now();
    let timed = Event::new(ClearMode::Auto)
        .wait_async()
        .timeout(Duration::from_millis(5))
        .block();
    assert_eq!(timed, Err(ResultCode::TIMED_OUT));
    assert!(start.elapsed() >= Duration::from_millis(5), "never early");
    let timer = TimerEvent::new(ClearMode::Auto);
    assert_eq!(timer.start_one_shot(Duration::from_millis(1)), Ok(()));
    assert_eq!(timer.wait(), Ok(()));
    // And the older runtime's shutdown ends a host's untimed wait: the thread's second, which
    // its first wait's watch (kept by the thread) serves.
    let e = ev.clone();
    let host = std::thread::spawn(move || {
        let first = Event::new(ClearMode::Auto)
            .wait_async()
            .timeout(Duration::from_millis(1))
            .block();
        (first, e.wait())
    });
    std::thread::sleep(Duration::from_millis(20));
    older.shutdown();
    let ended = promptly(move || host.join().unwrap());
    assert_eq!(
        ended,
        Some((Err(ResultCode::TIMED_OUT), Err(ResultCode::CANCELLED)))
    );
}

/// Whether a guest thread has ended, without joining it.
trait FinishedHint {
    fn is_finished_hint(&self) -> bool;
}

impl<T> FinishedHint for hos::thread::JoinHandle<T> {
    fn is_finished_hint(&self) -> bool {
        self.thread().is_finished()
    }
}

/// Two async tasks on one host thread wait at once, each with its own waker: shutdown wakes
/// both (a host thread's kept shutdown watch holds its parker's waker only; a task's wait
/// registers its own).
#[test]
fn shutdown_ends_every_task_waiting_on_one_host_thread() {
    let _turn = serial();
    let rt = runtime();
    let (a, b) = (
        Arc::new(Event::new(ClearMode::Auto)),
        Arc::new(Event::new(ClearMode::Auto)),
    );
    let ended = promptly(move || {
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        tokio.block_on(async move {
            let first = tokio::spawn(async move { a.wait_async().await });
            let second = tokio::spawn(async move { b.wait_async().await });
            // Both have polled (and registered) before the shutdown.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let r = rt.clone();
            std::thread::spawn(move || r.shutdown()).join().unwrap();
            (first.await.unwrap(), second.await.unwrap())
        })
    });
    assert_eq!(
        ended,
        Some((Err(ResultCode::CANCELLED), Err(ResultCode::CANCELLED)))
    );
}
