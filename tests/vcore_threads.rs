//! The virtual cores with real guest threads: never more holders than cores (with the kick's
//! grace: no more than its revocations allow), kicks at the next checkpoint, a panic gives the
//! core back, escape ends a wait nobody ends. Bounded in
//! time by the escape time where a bug would otherwise hang; no timing asserts.

use hos::{Calibration, Config};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn runtime(cores: usize, slice_us: u64, escape_ms: u64) -> hos::Runtime {
    // The semaphore's exact rules: a kicked holder keeps its core until its checkpoint,
    // however late; the kick's grace (on by default) lets a seventh thread run for a moment,
    // which "never seven at once" forbids. The grace has its own tests
    // (runtime/src/tests/vcore_grace.rs, and one below).
    graced(cores, slice_us, escape_ms, 0)
}

/// [`runtime`] with a kick's grace of `grace_us`.
fn graced(cores: usize, slice_us: u64, escape_ms: u64, grace_us: u64) -> hos::Runtime {
    hos::Runtime::builder()
        .config(Config {
            cores,
            vcore_slice_us: slice_us,
            vcore_escape_ms: escape_ms,
            vcore_grace_us: grace_us,
            calibration: Some(Calibration::default()),
            // No flight recorder dumps from the escapes forced here (tests/trace.rs tests them).
            flight: false,
            ..Config::default()
        })
        .build()
        .expect("a valid config")
}

/// Counts the threads between two checkpoints (in guest code) and the most seen at once.
#[derive(Default)]
struct Inside {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Inside {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(n, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn twelve_busy_threads_on_six_cores_never_run_seven_at_once() {
    const THREADS: usize = 12;
    const ROUNDS: usize = 40;
    // Escape at 20 s bounds the test if turns were broken; it must not happen.
    let rt = runtime(6, 2_000, 20_000);
    let inside = Arc::new(Inside::default());
    let done = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let (inside, done) = (inside.clone(), done.clone());
            rt.thread()
                .name(format!("Busy{i}"))
                .priority(44)
                .spawn(move || {
                    let mut rounds = 0;
                    // Busy until every thread has run its rounds: the first six hold their
                    // cores all along, so the others run only by slice turns.
                    while done.load(Ordering::SeqCst) < THREADS {
                        inside.enter();
                        for _ in 0..200 {
                            std::hint::spin_loop();
                        }
                        inside.leave();
                        hos::svc::checkpoint();
                        rounds += 1;
                        if rounds == ROUNDS {
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    rounds
                })
                .expect("spawn")
        })
        .collect();
    for h in handles {
        assert!(h.join().expect("no panic") >= ROUNDS);
    }
    let s = rt.stats();
    assert!(
        inside.most.load(Ordering::SeqCst) <= 6,
        "{} threads ran guest code at once on 6 cores",
        inside.most.load(Ordering::SeqCst)
    );
    assert_eq!(s.vcore_escapes, 0);
    assert!(
        s.vcore_waits >= 6,
        "six threads had to wait: {}",
        s.vcore_waits
    );
    assert!(
        s.vcore_kicks_slice >= 6,
        "waiters ran by turns: {}",
        s.vcore_kicks_slice
    );
    assert!(s.threads.iter().all(|t| t.name.starts_with("Busy")));
    rt.shutdown();
}

#[test]
fn with_the_grace_on_only_revoked_holders_run_past_the_cores_and_everyone_finishes() {
    const ROUNDS: usize = 40;
    // Bursts of 100 us against a grace of 50 us: a holder kicked early in a burst is likely to
    // lose its core before its checkpoint. Escape at 20 s bounds the test if a revoked
    // thread never got a core back; it must not happen.
    let rt = graced(6, 2_000, 20_000, 50);
    let inside = Arc::new(Inside::default());
    let (started, go) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let busy = |inside: &Inside| {
        inside.enter();
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_micros(100) {
            std::hint::spin_loop();
        }
        inside.leave();
        hos::svc::checkpoint();
    };
    // Six worse threads take the six cores and keep coming back for them until the better
    // six are done, so every better thread arrives to six held cores.
    let worse: Vec<_> = (0..6)
        .map(|i| {
            let (inside, started, go) = (inside.clone(), started.clone(), go.clone());
            rt.thread()
                .name(format!("Worse{i}"))
                .priority(48)
                .spawn(move || {
                    started.fetch_add(1, Ordering::SeqCst);
                    while !go.load(Ordering::SeqCst) {
                        busy(&inside);
                    }
                })
                .expect("spawn")
        })
        .collect();
    while started.load(Ordering::SeqCst) < 6 {
        std::thread::yield_now();
    }
    let better: Vec<_> = (0..6)
        .map(|i| {
            let inside = inside.clone();
            rt.thread()
                .name(format!("Better{i}"))
                .priority([40, 44][i % 2])
                .spawn(move || (0..ROUNDS).for_each(|_| busy(&inside)))
                .expect("spawn")
        })
        .collect();
    for h in better {
        h.join().expect("no panic");
    }
    go.store(true, Ordering::SeqCst);
    for h in worse {
        h.join().expect("no panic");
    }
    let s = rt.stats();
    // Each revocation lets one thread more run until its next checkpoint, no more.
    let most = inside.most.load(Ordering::SeqCst) as u64;
    assert!(
        most <= 6 + s.vcore_revokes,
        "{most} threads ran guest code at once on 6 cores with {} revocations",
        s.vcore_revokes
    );
    assert_eq!(s.vcore_escapes, 0);
    assert!(s.vcore_kicks_priority >= 1, "the better threads kicked");
    rt.shutdown();
}

#[test]
fn a_better_thread_gets_the_core_at_the_holders_next_checkpoint() {
    // One core; the longest slice (1 s) and a far escape, so only a kick hands the core over
    // at once.
    let rt = runtime(1, 1_000_000, 60_000);
    let started = Arc::new(Barrier::new(2));
    let go = Arc::new(AtomicBool::new(false));
    let better_ran = Arc::new(AtomicBool::new(false));
    let holder = {
        let (started, go, better_ran) = (started.clone(), go.clone(), better_ran.clone());
        rt.thread()
            .name("Holder")
            .priority(44)
            .spawn(move || {
                started.wait();
                while !go.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                // The one checkpoint after the kick: it returns once the better thread ran.
                hos::svc::checkpoint();
                better_ran.load(Ordering::SeqCst)
            })
            .expect("spawn")
    };
    started.wait();
    let better = {
        let better_ran = better_ran.clone();
        rt.thread()
            .name("Better")
            .priority(10)
            .spawn(move || better_ran.store(true, Ordering::SeqCst))
            .expect("spawn")
    };
    while rt.stats().vcore_kicks_priority == 0 {
        std::thread::yield_now();
    }
    assert!(
        !better_ran.load(Ordering::SeqCst),
        "ran before the holder's checkpoint"
    );
    go.store(true, Ordering::SeqCst);
    assert!(
        holder.join().expect("no panic"),
        "the holder's next checkpoint handed the core over"
    );
    better.join().expect("no panic");
    let s = rt.stats();
    assert_eq!(s.vcore_kicks_priority, 1);
    assert_eq!(s.vcore_kicks_slice, 0);
    assert_eq!(s.vcore_escapes, 0);
    rt.shutdown();
}

#[test]
fn a_raised_priority_re_ranks_a_waiting_thread_at_once() {
    // One core held at priority 44; a waiter at 50 cannot kick it (and never gets a turn:
    // it is worse). svcSetThreadPriority to 10 must re-rank the waiter where it waits, so it
    // kicks the holder without waiting again.
    let rt = runtime(1, 1_000_000, 60_000);
    let started = Arc::new(Barrier::new(2));
    let waiter_ran = Arc::new(AtomicBool::new(false));
    let holder = {
        let (started, waiter_ran) = (started.clone(), waiter_ran.clone());
        rt.thread()
            .name("Holder")
            .priority(44)
            .spawn(move || {
                started.wait();
                let limit = std::time::Instant::now() + std::time::Duration::from_secs(5);
                while !waiter_ran.load(Ordering::SeqCst) && std::time::Instant::now() < limit {
                    hos::svc::checkpoint();
                }
                waiter_ran.load(Ordering::SeqCst)
            })
            .expect("spawn")
    };
    started.wait();
    let waiter = {
        let waiter_ran = waiter_ran.clone();
        rt.thread()
            .name("Waiter")
            .priority(50)
            .spawn(move || waiter_ran.store(true, Ordering::SeqCst))
            .expect("spawn")
    };
    while rt.stats().vcore_waits == 0 {
        std::thread::yield_now();
    }
    waiter.thread().set_priority(10).expect("a valid priority");
    assert!(
        holder.join().expect("no panic"),
        "the re-ranked waiter never got the core"
    );
    waiter.join().expect("no panic");
    assert_eq!(rt.stats().vcore_escapes, 0);
    rt.shutdown();
}

#[test]
fn a_panic_while_holding_a_core_gives_it_back() {
    // A leaked core would make the next thread escape after 10 s: counted, asserted below.
    let rt = runtime(1, 2_000, 10_000);
    let h = rt
        .thread()
        .name("Panics")
        .spawn(|| panic!("guest code panics while it holds the only core"))
        .expect("spawn");
    assert!(h.join().is_err());
    let h = rt.thread().name("Next").spawn(|| 7).expect("spawn");
    assert_eq!(h.join().expect("no panic"), 7);
    let s = rt.stats();
    assert_eq!(s.vcore_waits, 0, "the core was free at once");
    assert_eq!(s.vcore_escapes, 0);
    rt.shutdown();
}

#[test]
fn a_waiter_escapes_by_itself_when_nobody_releases() {
    let rt = runtime(1, 2_000, 50);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(Barrier::new(2));
    let hog = {
        let (stop, started) = (stop.clone(), started.clone());
        rt.thread()
            .name("Hog")
            .spawn(move || {
                started.wait();
                // Never a checkpoint, never a block: only escape lets anyone else run.
                while !stop.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
            })
            .expect("spawn")
    };
    started.wait();
    let waiter = rt.thread().name("Waiter").spawn(|| 1).expect("spawn");
    let kept = waiter.thread().clone(); // keeps the thread in the stats after it ends
    assert_eq!(waiter.join().expect("no panic"), 1);
    stop.store(true, Ordering::SeqCst);
    hog.join().expect("no panic");
    let s = rt.stats();
    assert_eq!(s.vcore_escapes, 1);
    assert_eq!(s.vcore_waits, 1);
    let waited = s
        .threads
        .iter()
        .find(|t| t.name == "Waiter")
        .map(|t| t.vcore_wait);
    assert!(waited >= Some(Duration::from_millis(50)), "{waited:?}");
    drop(kept);
    rt.shutdown();
}

#[test]
fn yields_hand_the_core_to_an_equal_waiter() {
    // One core: a yielder waits for a worker of its priority by yielding; the worker runs.
    let rt = runtime(1, 2_000, 20_000);
    let started = Arc::new(Barrier::new(2));
    let worked = Arc::new(AtomicBool::new(false));
    let yielder = {
        let (started, worked) = (started.clone(), worked.clone());
        rt.thread()
            .name("Yielder")
            .priority(44)
            .spawn(move || {
                started.wait();
                while !worked.load(Ordering::SeqCst) {
                    hos::svc::sleep_thread(0);
                }
            })
            .expect("spawn")
    };
    started.wait();
    let worker = {
        let worked = worked.clone();
        rt.thread()
            .name("Worker")
            .priority(44)
            .spawn(move || worked.store(true, Ordering::SeqCst))
            .expect("spawn")
    };
    worker.join().expect("no panic");
    yielder.join().expect("no panic");
    assert_eq!(rt.stats().vcore_escapes, 0);
    rt.shutdown();
}

#[test]
fn with_the_semaphore_off_nothing_waits() {
    let rt = hos::Runtime::builder()
        .config(Config {
            cores: 1,
            vcores: false,
            calibration: Some(Calibration::default()),
            ..Config::default()
        })
        .build()
        .expect("a valid config");
    let both = Arc::new(Barrier::new(2));
    // Two threads in guest code at once on one core: only possible with the semaphore off.
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let both = both.clone();
            rt.thread()
                .spawn(move || {
                    both.wait();
                    hos::svc::checkpoint();
                    hos::svc::sleep_thread(-2);
                })
                .expect("spawn")
        })
        .collect();
    for h in hs {
        h.join().expect("no panic");
    }
    assert_eq!(rt.stats().vcore_waits, 0);
    rt.shutdown();
}
