//! The guided selector (`det::guide`): a recording's prefix then `stable`, dropped
//! deviations, a recorded thread followed to another index or missing, the errors that name
//! what is wrong, and the `guided:` switch through a file.

use crate::det::clock::Costs;
use crate::det::decisions::Decisions;
use crate::det::guide::{GuideError, Guided};
use crate::det::record::{Header, RecordError, Writer};
use crate::det::selector::{Pct, Selector, Spec, Stable};
use crate::det::witness::{Candidate, Pick, Reason, Witness};
use std::collections::BTreeSet;
use std::path::PathBuf;

const Q: u32 = 5;

/// Decision `i`'s candidates: threads 10, 11, 12 on cores 0, 1, 2, a changing subset.
fn candidates(i: u64) -> Vec<Candidate> {
    let mask = [0b111u8, 0b011, 0b110, 0b101, 0b111][(i % 5) as usize];
    (0..3u8)
        .filter(|c| mask & (1 << c) != 0)
        .map(|core| Candidate {
            core,
            thread: 10 + u64::from(core),
            priority: 44,
        })
        .collect()
}

/// `n` decisions by `sel` over [`candidates`]: each one's witness and `Stable`'s pick for it.
fn run(sel: &mut dyn Selector, n: u64) -> Vec<(Witness, Pick)> {
    run_over(sel, (0..n).map(candidates).collect())
}

/// [`run`] over the given candidate lists.
fn run_over(sel: &mut dyn Selector, lists: Vec<Vec<Candidate>>) -> Vec<(Witness, Pick)> {
    let mut current = None;
    lists
        .into_iter()
        .enumerate()
        .map(|(i, candidates)| {
            let stable = Stable::new(Q).next(&candidates, current, Reason::Wait);
            let pick = sel.next(&candidates, current, Reason::Wait).unwrap();
            current = Some(candidates[pick.choice as usize].core);
            let w = Witness {
                decision: i as u64,
                vt: i as u64 * 1_000,
                candidates,
                pick,
                reason: Reason::Wait,
                object: 0,
                result: 0,
            };
            (w, stable.unwrap())
        })
        .collect()
}

/// The decision log of `run`.
fn log_of(run: &[(Witness, Pick)]) -> Decisions {
    let mut log = Decisions::new();
    for (w, stable) in run {
        log.push(*stable, w.pick, w.candidates[w.pick.choice as usize].thread);
    }
    log
}

/// The decisions of `run` whose pick is not `Stable`'s.
fn deviations(run: &[(Witness, Pick)]) -> Vec<u64> {
    run.iter()
        .filter(|(w, stable)| w.pick != *stable)
        .map(|(w, _)| w.decision)
        .collect()
}

fn pct_run(n: u64) -> Vec<(Witness, Pick)> {
    let r = run(&mut Pct::new(3, 21, 200, Q), n);
    assert!(deviations(&r).len() >= 5, "pct deviates from stable");
    r
}

fn guided(log: &Decisions, prefix: u64, drop: &[u64]) -> Guided {
    Guided::new(log, prefix, &drop.iter().copied().collect(), Q).unwrap()
}

#[test]
fn the_whole_recording_guided_gives_back_its_picks() {
    let recorded = pct_run(200);
    let log = log_of(&recorded);
    assert_eq!(run(&mut guided(&log, 200, &[]), 200), recorded);
    assert_eq!(run(&mut guided(&log, u64::MAX, &[]), 200), recorded);
}

#[test]
fn a_prefix_is_followed_then_stable() {
    let recorded = pct_run(200);
    let log = log_of(&recorded);
    let devs = deviations(&recorded);
    let k = devs[3] + 1;
    let r = run(&mut guided(&log, k, &[]), 200);
    assert_eq!(r[..k as usize], recorded[..k as usize], "the prefix");
    assert!(
        r[k as usize..].iter().all(|(w, stable)| w.pick == *stable),
        "stable after it"
    );
    assert_eq!(deviations(&r), devs[..4]);
    let none = run(&mut guided(&log, 0, &[]), 200);
    assert_eq!(
        none,
        run(&mut Stable::new(Q), 200),
        "a prefix of 0 is stable"
    );
}

#[test]
fn a_dropped_deviation_picks_as_stable_and_the_others_are_kept() {
    let recorded = pct_run(200);
    let log = log_of(&recorded);
    let devs = deviations(&recorded);
    let (dropped, kept) = (devs[2], devs[4]);
    let r = run(&mut guided(&log, 200, &[dropped]), 200);
    let at = |d: u64| &r[d as usize];
    assert_eq!(at(dropped).0.pick, at(dropped).1, "dropped: stable's pick");
    // The candidates are the same whatever was picked here, so every other deviation is
    // followed, to the same thread.
    let thread = |w: &Witness| w.candidates[w.pick.choice as usize].thread;
    let recorded_at = |d: u64| &recorded[d as usize].0;
    assert_eq!(thread(&at(kept).0), thread(recorded_at(kept)));
    let mut left = devs.clone();
    left.retain(|&d| d != dropped);
    // A kept deviation whose recorded thread is now stable's own pick is no deviation.
    let r_devs = deviations(&r);
    assert!(
        r_devs.iter().all(|d| left.contains(d)),
        "{r_devs:?} {left:?}"
    );
    assert!(!r_devs.contains(&dropped));
}

#[test]
fn a_recorded_thread_is_followed_by_id_not_index() {
    // Recorded: core 0 then core 2 of three (a deviation from stable, which takes core 1).
    let three = candidates(0);
    let recorded = run_over(
        &mut guided(
            &{
                let mut log = Decisions::new();
                log.push(
                    Pick {
                        choice: 0,
                        quantum: Q,
                    },
                    Pick {
                        choice: 0,
                        quantum: Q,
                    },
                    10,
                );
                log.push(
                    Pick {
                        choice: 1,
                        quantum: Q,
                    },
                    Pick {
                        choice: 2,
                        quantum: 7,
                    },
                    12,
                );
                log
            },
            2,
            &[],
        ),
        vec![three.clone(), three.clone()],
    );
    assert_eq!(
        recorded[1].0.pick,
        Pick {
            choice: 2,
            quantum: 7
        }
    );
    let log = log_of(&recorded);
    // Live, core 1 has nothing at decision 1: thread 12 is candidate #1 now.
    let two = vec![three[0], three[2]];
    let r = run_over(&mut guided(&log, 2, &[]), vec![three.clone(), two]);
    assert_eq!(
        r[1].0.pick,
        Pick {
            choice: 1,
            quantum: 7
        }
    );
    // Thread 12 is no candidate: stable's pick (core 1, after core 0).
    let without = vec![three[0], three[1]];
    let r = run_over(&mut guided(&log, 2, &[]), vec![three, without]);
    assert_eq!(
        r[1].0.pick,
        Pick {
            choice: 1,
            quantum: Q
        }
    );
    assert_eq!(r[1].0.pick, r[1].1);
}

#[test]
fn only_a_deviation_can_be_dropped() {
    let recorded = pct_run(100);
    let log = log_of(&recorded);
    let devs = deviations(&recorded);
    let same = (0..100).find(|d| !devs.contains(d)).unwrap();
    let e = Guided::new(&log, 100, &BTreeSet::from([devs[0], same]), Q).unwrap_err();
    assert_eq!(
        e,
        GuideError::NotADeviation {
            decision: same,
            deviations: devs.len()
        }
    );
    assert!(e.to_string().contains(&format!("decision {same}")), "{e}");
}

fn header(selector: Spec, decisions: bool) -> Header {
    Header {
        build: 0xB11D,
        cores: 3,
        quantum: Q,
        costs: Costs::default(),
        selector,
        entropy_seed: 0,
        build_id: String::new(),
        decisions,
    }
}

fn write(path: &PathBuf, header: &Header, run: &[(Witness, Pick)]) {
    let mut w = Writer::new(Vec::new(), header).unwrap();
    for (witness, stable) in run {
        w.decision(witness, *stable).unwrap();
    }
    std::fs::write(path, w.finish(false).unwrap()).unwrap();
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hos-guide-{}-{name}.hosrec", std::process::id()))
}

#[test]
fn a_guided_switch_reads_its_recording() {
    let recorded = pct_run(120);
    let devs = deviations(&recorded);
    let path = temp("switch");
    let pct = Spec::Pct {
        depth: 3,
        seed: 21,
        steps: 200,
    };
    write(&path, &header(pct.clone(), true), &recorded);
    let spec: Spec = format!("guided:{}:{}:{}", devs[1] + 1, devs[0], path.display())
        .parse()
        .unwrap();
    let r = run(&mut *crate::det::selector(&spec, Q).unwrap(), 120);
    let thread = |w: &Witness| w.candidates[w.pick.choice as usize].thread;
    let at = |d: u64| &r[d as usize];
    assert_eq!(at(devs[0]).0.pick, at(devs[0]).1, "the first dropped");
    assert_eq!(
        thread(&at(devs[1]).0),
        thread(&recorded[devs[1] as usize].0),
        "the second kept"
    );
    assert!(deviations(&r).iter().all(|&d| d == devs[1]), "stable after");

    // A guided run recorded without its decisions replays by reading its guide again.
    let again = temp("again");
    write(&again, &header(spec.clone(), false), &r);
    let replay = Spec::Replay(again.clone());
    assert_eq!(run(&mut *crate::det::selector(&replay, Q).unwrap(), 120), r);

    // A recording without decisions cannot guide.
    write(&path, &header(pct, false), &recorded);
    let e = crate::det::selector(&spec, Q).err().unwrap();
    assert_eq!(e, RecordError::Guide(GuideError::NoDecisions));
    assert!(e.to_string().contains("HOS_DET_RECORD_DECISIONS"), "{e}");
    for p in [&path, &again] {
        std::fs::remove_file(p).unwrap();
    }
    assert!(matches!(
        crate::det::selector(&spec, Q),
        Err(RecordError::Io { .. })
    ));
}

#[test]
fn a_guided_switch_prints_as_it_parses_and_names_a_bad_value() {
    let spec: Spec = "guided:0x10:9,3:C:/runs/a.hosrec".parse().unwrap();
    assert_eq!(
        spec,
        Spec::Guided {
            path: PathBuf::from("C:/runs/a.hosrec"),
            prefix: 16,
            drop: BTreeSet::from([3, 9]),
        }
    );
    assert_eq!(spec.to_string(), "guided:16:3,9:C:/runs/a.hosrec");
    let none: Spec = "guided:40:-:a.hosrec".parse().unwrap();
    assert_eq!(none.to_string(), "guided:40:-:a.hosrec");
    assert!(none.seeded(Q).is_none(), "built from its file");
    let err = |s: &str| s.parse::<Spec>().unwrap_err().to_string();
    for bad in ["guided", "guided:4", "guided:4:-", "guided:4:-:"] {
        assert!(
            err(bad).contains("expected `guided:PREFIX:DROP:PATH`"),
            "{bad}"
        );
    }
    assert!(err("guided:x:-:a").contains("prefix `x` is not a number"));
    assert!(err("guided:4:3,,5:a").contains("dropped decision `` is not a number"));
    assert!(err("guided:4:y:a").contains("`guided:4:y:a`"));
}
