//! Horizon's three yields in the deterministic mode (docs/determinism.md section 0,
//! `runtime/src/token/yielding.rs`), as mesosphère's scheduler makes them within a core:
//! svcSleepThread(0) and (-1) go behind the yielder's equals only, so a better thread that
//! yield-loops never lets its core's lower-priority thread run; (-2) takes the yielder off its
//! core's queue until nothing else there is ready, lower priorities included; and a (-1) on
//! that core pulls it back to the front if it is better than the yielder, or equal and the
//! yielder's first equal ran no less recently than it (the kernel's "waited longer"; the yielder
//! itself when it has no equal). Each holds under every selector tried.

use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::os::{ClearMode, Event};
use hos::svc;
use hos::{Calibration, Runtime};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Yields the spinner makes before it gives up.
const SPINS: u32 = 50;

/// Rounds of the lower-priority worker's loop.
const ROUNDS: u32 = 5;

/// The selectors each case runs under.
fn specs() -> [Spec; 3] {
    [
        Spec::Stable,
        Spec::Random { seed: 1 },
        Spec::Pct {
            depth: 2,
            seed: 3,
            steps: 100,
        },
    ]
}

/// Runs `body` as the main guest thread (core 1) of a runtime in the mode under `spec`, and
/// returns once it has.
fn run(spec: &Spec, body: impl FnOnce(&Runtime) + Send + 'static) {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(3)
        .det(Some(spec.clone()))
        .det_pace(Pacing::Free)
        .det_quantum(1)
        .build()
        .expect("a runtime in the deterministic mode");
    let inner = rt.clone();
    let main = rt
        .thread()
        .name("MainThread")
        .priority(44)
        .ideal_core(1)
        .spawn(move || body(&inner))
        .expect("the main guest thread");
    main.join().expect("main did not panic");
    assert_eq!(rt.det_softlock(), None, "{spec}");
    rt.shutdown();
}

/// Spawns `body` on core 0 at `priority`, waiting for `go` first; its handle is waited for
/// by [`finish`].
fn worker(
    rt: &Runtime,
    name: &str,
    priority: i32,
    go: &Event,
    body: impl FnOnce() + Send + 'static,
) -> hos::thread::JoinHandle<()> {
    let go = go.clone();
    rt.thread()
        .name(name)
        .priority(priority)
        .ideal_core(0)
        .spawn(move || {
            go.wait().expect("go");
            body();
        })
        .expect("a worker")
}

/// Lets the workers go together (all become ready at one decision, so core 0's better one
/// runs first) and waits for them, for one virtual second at most each.
fn finish(go: &Event, workers: impl IntoIterator<Item = hos::thread::JoinHandle<()>>) {
    go.signal();
    for w in workers {
        let ended = svc::wait_synchronization(&[w.thread().handle()], 1_000_000_000);
        assert!(
            ended.is_ok(),
            "{} did not end: {ended:?}",
            w.thread().name()
        );
        w.join().expect("a worker did not panic");
    }
}

/// A priority-40 thread yield-loops by `kind` for a flag its core's priority-50 thread sets:
/// how many yields it made before it saw the flag (`SPINS`: never).
fn spinner_and_setter(spec: &Spec, kind: i64) -> u32 {
    let yields = Arc::new(AtomicU32::new(SPINS));
    run(spec, {
        let yields = yields.clone();
        move |rt| {
            let flag = Arc::new(AtomicBool::new(false));
            let go = Event::new(ClearMode::Manual);
            let spinner = worker(rt, "Spinner", 40, &go, {
                let flag = flag.clone();
                move || {
                    for n in 0..SPINS {
                        // Acquire: pairs with the setter's store.
                        if flag.load(Ordering::Acquire) {
                            // Relaxed: read after the run, once every thread ended.
                            yields.store(n, Ordering::Relaxed);
                            return;
                        }
                        svc::sleep_thread(kind);
                    }
                }
            });
            // Release: pairs with the spinner's load.
            let setter = worker(rt, "Setter", 50, &go, move || {
                flag.store(true, Ordering::Release);
            });
            finish(&go, [spinner, setter]);
        }
    });
    // Relaxed: the run is over.
    yields.load(Ordering::Relaxed)
}

#[test]
fn only_a_yield_to_any_thread_lets_a_lower_priority_thread_of_its_core_run() {
    for spec in specs() {
        assert_eq!(spinner_and_setter(&spec, 0), SPINS, "{spec}: yield 0");
        assert_eq!(spinner_and_setter(&spec, -1), SPINS, "{spec}: yield -1");
        assert_eq!(spinner_and_setter(&spec, -2), 1, "{spec}: yield -2");
    }
}

/// A priority-`high` thread yields to any thread once while its core's priority-50 thread
/// loops `ROUNDS` times (a checkpoint and a yield by `kind` a round): how many rounds the
/// loop had made when the first thread ran again.
fn away_while_the_other_loops(spec: &Spec, high: i32, kind: i64) -> u32 {
    let seen = Arc::new(AtomicU32::new(u32::MAX));
    run(spec, {
        let seen = seen.clone();
        move |rt| {
            let rounds = Arc::new(AtomicU32::new(0));
            let go = Event::new(ClearMode::Manual);
            let away = worker(rt, "Away", high, &go, {
                let rounds = rounds.clone();
                move || {
                    svc::sleep_thread(-2);
                    // Relaxed: both threads run under the token, one at a time.
                    seen.store(rounds.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            });
            let looper = worker(rt, "Looper", 50, &go, move || {
                for _ in 0..ROUNDS {
                    // Relaxed: as above.
                    rounds.fetch_add(1, Ordering::Relaxed);
                    svc::checkpoint();
                    svc::sleep_thread(kind);
                }
            });
            finish(&go, [away, looper]);
        }
    });
    // Relaxed: the run is over.
    seen.load(Ordering::Relaxed)
}

#[test]
fn a_yield_to_any_thread_waits_until_nothing_else_on_its_core_is_ready() {
    for spec in specs() {
        // Quantum ends and same-priority yields leave the looper ready: the core never idles.
        assert_eq!(away_while_the_other_loops(&spec, 40, 0), ROUNDS, "{spec}");
    }
}

#[test]
fn a_yield_with_core_migration_pulls_the_away_thread_back_to_the_front() {
    for spec in specs() {
        // Better than the yielder: pulled back at the looper's first yield.
        assert_eq!(away_while_the_other_loops(&spec, 40, -1), 1, "{spec}");
        // Equal, and no other equal waits: pulled back too.
        assert_eq!(away_while_the_other_loops(&spec, 50, -1), 1, "{spec}");
    }
}

/// One priority-50 thread on core 0 for each role: the threads take the roles in the order
/// they first run (which thread of equals released together runs first is the waiter list's
/// business, not this test's), each notes its role's name, yields by its role's kind, then
/// notes the name again with a `+`: the notes in the order the roles ran.
fn equals_yield(spec: &Spec, roles: &[(&'static str, i64)]) -> Vec<String> {
    let notes = Arc::new(Mutex::new(Vec::new()));
    let count = roles.len();
    let roles = Arc::new(Mutex::new(VecDeque::from(roles.to_vec())));
    run(spec, {
        let notes = notes.clone();
        move |rt| {
            let go = Event::new(ClearMode::Manual);
            let workers: Vec<_> = (0..count)
                .map(|i| {
                    let (notes, roles) = (notes.clone(), roles.clone());
                    worker(rt, &format!("Equal{i}"), 50, &go, move || {
                        let role = roles.lock().expect("roles").pop_front();
                        let (name, kind) = role.expect("a role a thread");
                        let note = |s: String| notes.lock().expect("notes").push(s);
                        note(name.to_string());
                        svc::sleep_thread(kind);
                        note(format!("{name}+"));
                    })
                })
                .collect();
            finish(&go, workers);
        }
    });
    let notes = notes.lock().expect("notes").clone();
    notes
}

#[test]
fn an_equal_away_thread_comes_back_when_the_yielders_first_equal_ran_after_it() {
    for spec in specs() {
        // Away went away before Equal's turn: Equal ran more recently, so Yielder's -1 pulls
        // Away to the front, before Equal and Yielder run again.
        let notes = equals_yield(&spec, &[("Away", -2), ("Equal", 0), ("Yielder", -1)]);
        assert_eq!(
            notes,
            ["Away", "Equal", "Yielder", "Away+", "Equal+", "Yielder+"],
            "{spec}"
        );
    }
}

#[test]
fn an_equal_away_thread_stays_away_when_the_yielders_first_equal_waited_longer() {
    for spec in specs() {
        // Equal last ran before Away went away: Equal has waited longer, so it runs next and
        // Away comes back only once its core has nothing else ready.
        let notes = equals_yield(&spec, &[("Equal", 0), ("Away", -2), ("Yielder", -1)]);
        assert_eq!(
            notes,
            ["Equal", "Away", "Yielder", "Equal+", "Yielder+", "Away+"],
            "{spec}"
        );
    }
}

#[test]
fn an_equal_away_thread_comes_back_when_the_yielder_has_no_equal_but_itself() {
    for spec in specs() {
        // Yielder is its own comparison, and it ran last: Away is pulled back before it runs
        // again. A yield 0 instead leaves Away away until Yielder has ended: the core never
        // idles before.
        let notes = equals_yield(&spec, &[("Away", -2), ("Yielder", -1)]);
        assert_eq!(notes, ["Away", "Yielder", "Away+", "Yielder+"], "{spec}");
        let notes = equals_yield(&spec, &[("Away", -2), ("Yielder", 0)]);
        assert_eq!(notes, ["Away", "Yielder", "Yielder+", "Away+"], "{spec}");
    }
}
