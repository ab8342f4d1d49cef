//! The bug zoo in the deterministic mode (docs/determinism.md section 9): `stable` gives
//! each planted bug one outcome run after run; `pct` shows each within the seed count its
//! bound gives for P >= 0.99, and a failing seed fails the same way 10 times of 10; and the
//! token is fair: N same-priority threads of one core each wait behind at most N - 1 turns.
//!
//! The zoo's programs and the trial that runs one are the `det_search` example's (`#[path]`),
//! so the tool searches the very programs tested here.

#[path = "../examples/det_search/trial.rs"]
mod trial;
#[path = "../examples/det_search/zoo.rs"]
mod zoo;

use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::{svc, Calibration, Runtime};
use proptest::prelude::*;
use std::sync::{Arc, Mutex};
use trial::{run, Outcome, Setup, Trial};
use zoo::{pct_seeds, Bug, STEPS};

/// Runs of `stable` compared per bug.
const STABLE_RUNS: usize = 3;

/// Runs of a failing seed that must fail as it did.
const REPRODUCE: usize = 10;

/// Whether the bug showed (as the program saw it, a hang or a panic).
fn failed(t: &Trial) -> bool {
    t.outcome != Outcome::Ok
}

#[test]
fn stable_gives_each_bug_one_outcome() {
    for bug in Bug::ALL {
        let first = run(bug, &Setup::det(Spec::Stable));
        for _ in 1..STABLE_RUNS {
            assert_eq!(run(bug, &Setup::det(Spec::Stable)), first, "{}", bug.name());
        }
    }
}

#[test]
fn pct_finds_each_bug_within_its_bound_and_the_seed_reproduces() {
    for bug in Bug::ALL {
        let bound = pct_seeds(bug.threads(), bug.depth(), 0.99);
        let (seed, found) = (0..bound)
            .find_map(|seed| {
                let t = run(bug, &Setup::det(bug.pct(seed)));
                let figures = t.figures.expect("the mode is on");
                if !failed(&t) {
                    // A clean run's decisions bound its steps: the bound's k holds.
                    assert!(
                        figures.decisions <= STEPS,
                        "{} seed {seed}: {t:?}",
                        bug.name()
                    );
                }
                failed(&t).then_some((seed, t))
            })
            .unwrap_or_else(|| panic!("{}: no failing seed in {bound}", bug.name()));
        for _ in 0..REPRODUCE {
            let again = run(bug, &Setup::det(bug.pct(seed)));
            assert_eq!(again, found, "{} seed {seed} did not reproduce", bug.name());
        }
    }
}

#[test]
fn the_seed_count_follows_the_pct_bound() {
    // Depth 1, n = 3: 1 - (2/3)^12 >= 0.99 > 1 - (2/3)^11.
    assert_eq!(pct_seeds(3, 1, 0.99), 12);
    // Depth 2, n = 3, k = 24: p = 1/72.
    assert_eq!(pct_seeds(3, 2, 0.99), 330);
    // Depth 3, n = 4: p = 1/2304.
    assert_eq!(pct_seeds(4, 3, 0.5), 1597);
}

#[test]
fn a_clean_trial_is_ok_and_a_hang_names_the_waiters() {
    // Round-robin over the zoo's cores takes the two locks in turn: the deadlock.
    let t = run(Bug::LockOrder, &Setup::det(Spec::Stable));
    let Outcome::Hang(hang) = &t.outcome else {
        panic!("stable lock-order: {t:?}");
    };
    let names: Vec<_> = hang
        .threads
        .iter()
        .map(|(n, on)| (n.as_str(), *on))
        .collect();
    assert_eq!(
        names,
        [
            ("ZooMain", Some("several objects")),
            ("TakeAB", Some("mutex")),
            ("TakeBA", Some("mutex"))
        ]
    );
    assert_eq!(t.outcome.kind(), "hang");
    let t: Trial = run(Bug::SignalBeforeWait, &Setup::det(Spec::Stable));
    assert_eq!(
        t.outcome,
        Outcome::Ok,
        "stable signal-before-wait waits first"
    );
}

#[test]
fn bugs_go_by_their_names() {
    for bug in Bug::ALL {
        assert_eq!(Bug::named(bug.name()), Some(bug));
    }
    assert_eq!(Bug::named("lost"), None);
}

#[test]
fn a_normal_mode_trial_ends_and_leaves_nothing_running() {
    // Whichever way the OS runs it, the trial ends (a hang is shut down) with no figures.
    let t = run(Bug::SplitCounter, &Setup::normal());
    assert_eq!(t.figures, None, "{t:?}");
    assert!(matches!(t.outcome.kind(), "ok" | "bug"), "{t:?}");
}

/// Steps each fairness worker takes.
const FAIR_STEPS: usize = 12;

/// The fairness run: `n` workers of one priority on core 0, each logging its index then
/// ending its turn `FAIR_STEPS` times (a yield, or a checkpoint that may end its quantum); the
/// log in the order they ran. They are started by a main thread of better priority on their
/// core, so none runs before the main thread waits: all are ready from the same decision.
fn fair_log(spec: Spec, n: usize, quantum: u32, yields: bool) -> Vec<usize> {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(1)
        .det(Some(spec))
        .det_quantum(quantum)
        .det_pace(Pacing::Free)
        .build()
        .expect("a runtime in the mode");
    let log = Arc::new(Mutex::new(Vec::new()));
    let main = rt.thread().name("FairMain").priority(10).spawn({
        let (rt, log) = (rt.clone(), log.clone());
        move || {
            let workers: Vec<_> = (0..n)
                .map(|i| {
                    let log = log.clone();
                    rt.thread()
                        .name(format!("Fair{i}"))
                        .priority(44)
                        .spawn(move || {
                            for _ in 0..FAIR_STEPS {
                                log.lock().unwrap().push(i);
                                if yields {
                                    svc::sleep_thread(0);
                                } else {
                                    svc::checkpoint();
                                }
                            }
                        })
                        .expect("a worker")
                })
                .collect();
            for w in &workers {
                svc::wait_synchronization(&[w.thread().handle()], -1).expect("a worker's end");
            }
        }
    });
    main.expect("the main thread").join().expect("no panic");
    rt.shutdown();
    let log = std::mem::take(&mut *log.lock().unwrap());
    log
}

/// The most entries of other workers before one worker's first entry or between two of its
/// entries.
fn longest_wait(log: &[usize], n: usize) -> usize {
    (0..n)
        .flat_map(|i| {
            let mut from = 0;
            let mut gaps = Vec::new();
            for (at, _) in log.iter().enumerate().filter(|(_, &w)| w == i) {
                gaps.push(log[from..at].iter().filter(|&&w| w != i).count());
                from = at + 1;
            }
            gaps
        })
        .max()
        .unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Hermit's fairness property, in turns: a turn ends at a yield (one entry a turn) or at
    /// the quantum's end (at most `quantum` entries a turn), so none of the `n` workers waits
    /// behind more than (n - 1) turns, whatever the selector: they share one core, where the
    /// token's own FIFO among equals rules.
    #[test]
    fn same_priority_threads_of_one_core_wait_at_most_n_minus_1_turns(
        n in 2usize..=5,
        quantum in 1u32..=3,
        yields in any::<bool>(),
        kind in 0u8..4,
        seed in any::<u64>(),
    ) {
        let spec = match kind {
            0 => Spec::Stable,
            2 => Spec::Pct { depth: 2, seed, steps: 100 },
            // Chaos draws quanta down to one checkpoint: one can end at a yield's own
            // checkpoint, and the yield then takes a turn without an entry, which a count of
            // entries cannot tell from a turn skipped. So chaos only where each turn logs.
            3 if !yields => Spec::Chaos { seed },
            _ => Spec::Random { seed },
        };
        // A yield ends every turn; the quantum ends none then.
        let quantum = if yields { 1_000 } else { quantum };
        let per_turn = if yields { 1 } else { quantum as usize };
        let log = fair_log(spec.clone(), n, quantum, yields);
        prop_assert_eq!(log.len(), n * FAIR_STEPS, "{}", spec);
        let wait = longest_wait(&log, n);
        prop_assert!(wait <= (n - 1) * per_turn, "{spec}: waited {wait} entries: {log:?}");
    }
}

#[test]
fn longest_wait_counts_other_entries() {
    assert_eq!(longest_wait(&[0, 1, 0, 1], 2), 1);
    assert_eq!(longest_wait(&[0, 1, 1, 0, 0, 1], 2), 2);
    assert_eq!(longest_wait(&[1, 2, 0, 2, 1, 0], 3), 3);
    assert_eq!(
        longest_wait(&[0, 0, 0, 1], 2),
        3,
        "before a first entry counts"
    );
}
