//! The deterministic mode end to end (docs/determinism.md): guest threads that ping-pong
//! events, sleep, yield and read the tick run one at a time, so the same selector and seed
//! give the same decisions (hash), the same interleaving and the same virtual times, run
//! after run, whatever the OS does; different seeds explore different interleavings.

use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::os::{ClearMode, Event};
use hos::svc;
use hos::{Calibration, DetStats, Runtime};
use std::sync::{Arc, Mutex};

/// Rounds each of ping and pong plays.
const ROUNDS: usize = 50;

/// What one run did: its figures and each step of each thread in the order they ran, with
/// the tick it read.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    stats: DetStats,
    log: Vec<(&'static str, usize, u64)>,
}

/// One run under `spec`: a main guest thread starts ping and pong on cores 0 and 1 and a
/// noisy third thread on core 1, and waits for all three to end.
fn run(spec: Spec) -> Run {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .det(Some(spec))
        .det_pace(Pacing::Free)
        .det_quantum(3)
        .build()
        .expect("a runtime in the deterministic mode");
    let log = Arc::new(Mutex::new(Vec::new()));
    let main = rt
        .thread()
        .name("MainThread")
        .priority(44)
        .spawn({
            let rt = rt.clone();
            let log = log.clone();
            move || main(&rt, &log)
        })
        .expect("the main guest thread");
    main.join().expect("main did not panic");
    let stats = rt.det_stats().expect("the mode is on");
    // Waits, sleeps and yields that go on by themselves: no softlock.
    assert_eq!(rt.det_softlock(), None);
    rt.shutdown();
    let log = std::mem::take(&mut *log.lock().unwrap());
    Run { stats, log }
}

type Log = Arc<Mutex<Vec<(&'static str, usize, u64)>>>;

fn note(log: &Log, who: &'static str, i: usize) {
    let tick = svc::get_system_tick();
    log.lock().unwrap().push((who, i, tick));
}

fn main(rt: &Runtime, log: &Log) {
    let (ping, pong) = (Event::new(ClearMode::Auto), Event::new(ClearMode::Auto));
    let done = Event::new(ClearMode::Manual);
    let left = Arc::new(Mutex::new(3));
    let finish = {
        let (left, done) = (left.clone(), done.clone());
        move || {
            let mut n = left.lock().unwrap();
            *n -= 1;
            if *n == 0 {
                done.signal();
            }
        }
    };
    let spawn = |name: &'static str, core: i32, body: Box<dyn FnOnce() + Send>| {
        rt.thread()
            .name(name)
            .priority(44)
            .ideal_core(core)
            .spawn(body)
            .expect("a guest thread")
    };
    let a = spawn("Ping", 0, {
        let (ping, pong, log, finish) = (ping.clone(), pong.clone(), log.clone(), finish.clone());
        Box::new(move || {
            for i in 0..ROUNDS {
                note(&log, "ping", i);
                ping.signal();
                pong.wait().expect("pong");
            }
            finish();
        })
    });
    let b = spawn("Pong", 1, {
        let (ping, pong, log, finish) = (ping.clone(), pong.clone(), log.clone(), finish.clone());
        Box::new(move || {
            for i in 0..ROUNDS {
                ping.wait().expect("ping");
                note(&log, "pong", i);
                svc::checkpoint();
                pong.signal();
            }
            finish();
        })
    });
    let c = spawn("Noise", 1, {
        let (log, finish) = (log.clone(), finish.clone());
        Box::new(move || {
            for i in 0..ROUNDS {
                note(&log, "noise", i);
                match i % 3 {
                    0 => svc::sleep_thread(0),
                    1 => svc::sleep_thread(100_000),
                    _ => svc::checkpoint(),
                }
            }
            finish();
        })
    });
    done.wait().expect("all three end");
    // They have ended as guests (each signalled last); their OS threads end by themselves.
    drop((a, b, c));
}

#[test]
fn the_same_selector_twice_gives_the_same_run() {
    for spec in [Spec::Stable, Spec::Random { seed: 7 }] {
        let first = run(spec.clone());
        let second = run(spec.clone());
        assert!(
            first.stats.decisions > 2 * ROUNDS as u64,
            "{spec}: {first:?}"
        );
        assert_eq!(first, second, "{spec}: two runs differ");
        assert_eq!(first.log.len(), 3 * ROUNDS, "{spec}");
    }
}

#[test]
fn seeds_explore_other_interleavings() {
    let logs: std::collections::BTreeSet<_> =
        (0..6).map(|seed| run(Spec::Random { seed }).log).collect();
    assert!(logs.len() >= 2, "six seeds gave one interleaving");
}
