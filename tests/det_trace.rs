//! The trace of a deterministic run lines up with its decisions (docs/determinism.md section
//! 7): each turn opens with a `decision N` instant on the track of the thread that took it,
//! one for every decision the run took, numbered as the witnesses, a softlock's turns and a
//! replay's divergence are; with the mode off there is none.

mod det_scenes;
mod tracefile;

use det_scenes::{lock_order_deadlock, softlock};
use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::os::{ClearMode, Event};
use hos::{Calibration, Runtime};
use std::collections::{BTreeSet, HashMap};
use tracefile::{load, scratch, track, Item};

/// Rounds of the ping-pong.
const ROUNDS: usize = 20;

fn det_runtime(spec: Spec) -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        .det(Some(spec))
        .det_pace(Pacing::Free)
        .det_quantum(2)
        .build()
        .expect("a runtime in the deterministic mode")
}

/// Runs `body` as the main guest thread of `rt` and waits for it.
fn main_thread(rt: &Runtime, body: impl FnOnce(&Runtime) + Send + 'static) {
    det_scenes::main_thread(rt, body)
        .join()
        .expect("main did not panic");
}

/// The trace of `rt` now: its instants and track names.
fn trace(rt: &Runtime, name: &str) -> (Vec<Item>, HashMap<u64, String>) {
    let path = scratch(name).join("t.json");
    rt.write_trace(&path).expect("the trace");
    let (items, names, _) = load(&path);
    (items, names)
}

/// The decision indices of the `decision N (vt T ns)` instants among `items`, in order.
fn decisions(items: &[Item]) -> Vec<u64> {
    items
        .iter()
        .filter(|i| i.ph == "i")
        .filter_map(|i| i.name.strip_prefix("decision "))
        .map(|rest| rest.split(' ').next().unwrap().parse().expect("an index"))
        .collect()
}

/// Two guests ping-pong an event pair on two cores.
fn ping_pong(rt: &Runtime) {
    let (ping, pong) = (Event::new(ClearMode::Auto), Event::new(ClearMode::Auto));
    let other = rt
        .thread()
        .name("Pong")
        .priority(44)
        .ideal_core(1)
        .spawn({
            let (ping, pong) = (ping.clone(), pong.clone());
            move || {
                for _ in 0..ROUNDS {
                    ping.wait().expect("ping");
                    pong.signal();
                }
            }
        })
        .expect("pong");
    for _ in 0..ROUNDS {
        ping.signal();
        pong.wait().expect("pong");
    }
    hos::svc::wait_synchronization(&[other.thread().handle()], -1).expect("pong ends");
    other.join().expect("pong did not panic");
}

#[test]
fn every_decision_opens_a_turn_on_the_track_of_its_thread() {
    let rt = det_runtime(Spec::Random { seed: 5 });
    main_thread(&rt, ping_pong);
    let taken = rt.det_stats().expect("the mode is on").decisions;
    let (items, names) = trace(&rt, "det-decisions");
    rt.shutdown();
    let mut all = decisions(&items);
    all.sort_unstable();
    assert!(taken > 2 * ROUNDS as u64, "{taken} decisions");
    assert_eq!(all, (0..taken).collect::<Vec<_>>(), "one marker a decision");
    // Each guest's markers come in the order its turns came.
    for name in ["MainThread", "Pong"] {
        let (_, mine) = track(&items, &names, name);
        let ds = decisions(&mine);
        assert!(ds.len() > ROUNDS, "{name}: {ds:?}");
        assert!(ds.windows(2).all(|w| w[0] < w[1]), "{name}: {ds:?}");
    }
}

#[test]
fn a_softlocks_turns_are_the_markers_on_each_threads_track() {
    let rt = det_runtime(Spec::Stable);
    let stuck = rt.clone();
    // The main thread ends at the shutdown (its wait is cancelled).
    let main = std::thread::spawn(move || {
        main_thread(&stuck, |rt| {
            let [a, b] = lock_order_deadlock(rt);
            let _ = Event::new(ClearMode::Manual).wait();
            let _ = (a.join(), b.join());
        });
    });
    let s = softlock(&rt);
    let (items, names) = trace(&rt, "det-softlock-turns");
    rt.shutdown();
    main.join().expect("main ends at the shutdown");
    for t in &s.threads {
        let (_, mine) = track(&items, &names, &t.name);
        let markers: BTreeSet<u64> = decisions(&mine).into_iter().collect();
        assert!(!t.turns.is_empty(), "{s}");
        for turn in &t.turns {
            assert!(
                markers.contains(&turn.decision),
                "{}'s turn at decision {} is not on its track: {markers:?}",
                t.name,
                turn.decision
            );
        }
        // Every marker comes before the decision that found the softlock.
        assert!(markers.iter().all(|&d| d < s.decision), "{s}");
    }
}

#[test]
fn with_the_mode_off_the_trace_has_no_decisions() {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .expect("a runtime");
    main_thread(&rt, ping_pong);
    let (items, _) = trace(&rt, "det-off");
    rt.shutdown();
    assert!(items.iter().any(|i| i.name.starts_with("wake ")), "a trace");
    assert_eq!(decisions(&items), Vec::<u64>::new());
}
