//! Shrinking a failing schedule by its decision log, each step a few trials run here, in this
//! process, under `HOS_DET=guided:PREFIX:DROP:PATH` (`hos::det::guide`):
//!
//! 1. record: the failing setup is run again recording its decisions; its deviations from
//!    `stable` are the schedule to shrink;
//! 2. prefix bisection: the shortest prefix that fails, the recording's first K decisions
//!    then `stable`, binary-searched over the deviations (K just past one of them; K = 0 is
//!    `stable` itself), the point from which the failure is inevitable (Antithesis);
//! 3. fewest deviations: ddmin over the deviations inside the prefix (`ddmin.rs`, Choi and
//!    Zeller's schedule delta debugging), a deviation dropped picking as `stable` does, within
//!    a budget of [`BUDGET`] trials;
//! 4. the result is run once more recording its decisions to the file asked for, and that
//!    recording is replayed (`HOS_DET=replay:PATH`) [`CONFIRM`] times.
//!
//! A trial "fails the same" when its outcome is the one being shrunk: the same verdict, or a
//! hang of the same kind with every thread waiting on what it waited on (not at the same
//! decision: a shorter schedule softlocks sooner).
//!
//! Invariant: every schedule reported as failing was seen failing the same; the file written
//! is a recording of the last one, and it is reported reproduced only for the replays that
//! gave that trial again (outcome and figures) with no divergence.

use crate::ddmin::ddmin;
use crate::shrink::CONFIRM;
use crate::trial::{self, Outcome, Setup, Trial};
use crate::zoo::Bug;
use hos::det::record::Recording;
use hos::det::selector::Spec;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most trials the deviation minimisation runs.
pub(crate) const BUDGET: usize = 64;

/// One deviation from `stable` of a recorded schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deviation {
    /// The decision's index.
    pub(crate) decision: u64,
    /// The thread it ran.
    pub(crate) thread: u64,
    /// Its place among the candidates.
    pub(crate) choice: u32,
}

/// A schedule shrunk.
#[derive(Clone, Debug)]
pub(crate) struct Cut {
    /// What each step tried and saw, in order.
    pub(crate) steps: Vec<String>,
    /// The recorded schedule's deviations.
    pub(crate) recorded: usize,
    /// The prefix kept: the first `prefix` decisions, then `stable`.
    pub(crate) prefix: u64,
    /// The shrunk schedule's deviations, as its recording holds them.
    pub(crate) deviations: Vec<Deviation>,
    /// The trials the shrink ran (the replays aside).
    pub(crate) trials: usize,
    /// The shrunk schedule's trial.
    pub(crate) trial: Trial,
    /// Its recording.
    pub(crate) path: PathBuf,
    /// The replays of it that gave its trial again, of [`CONFIRM`].
    pub(crate) reproduced: usize,
}

/// Whether `t` fails as `want` does (module doc).
pub(crate) fn same_failure(want: &Outcome, t: &Outcome) -> bool {
    match (want, t) {
        (Outcome::Hang(a), Outcome::Hang(b)) => {
            std::mem::discriminant(&a.why) == std::mem::discriminant(&b.why)
                && a.threads == b.threads
        }
        (Outcome::Ok, _) => false,
        _ => want == t,
    }
}

/// The deviations of the recording at `path`.
fn deviations(path: &Path) -> Result<Vec<Deviation>, String> {
    let rec = Recording::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let log = rec
        .decisions
        .ok_or_else(|| format!("{}: no decisions recorded", path.display()))?;
    Ok(log
        .indexed()
        .map(|(decision, d)| Deviation {
            decision,
            thread: d.thread,
            choice: d.pick.choice,
        })
        .collect())
}

/// The trials of one bug's shrink.
struct Trials<'a> {
    bug: Bug,
    quantum: u32,
    want: &'a Outcome,
    guide: &'a Path,
    run: usize,
}

impl Trials<'_> {
    fn setup(&self, spec: Spec, record: Option<PathBuf>) -> Setup {
        Setup {
            quantum: self.quantum,
            record,
            ..Setup::det(spec)
        }
    }

    /// The guided schedule's trial: the guide's first `prefix` decisions less `drop`.
    fn guided(&mut self, prefix: u64, drop: BTreeSet<u64>, record: Option<PathBuf>) -> Trial {
        let spec = Spec::Guided {
            path: self.guide.to_path_buf(),
            prefix,
            drop,
        };
        self.run += 1;
        trial::run(self.bug, &self.setup(spec, record))
    }

    fn fails(&mut self, prefix: u64, drop: BTreeSet<u64>) -> bool {
        let t = self.guided(prefix, drop, None);
        same_failure(self.want, &t.outcome)
    }
}

/// Prefix bisection: the smallest `j` in `0..=n` for which `fails(j)` is true, `n` being known
/// to fail: `0` is tried first, then the halves of the range between the largest `j` seen
/// passing and the smallest seen failing (so at most 1 + ceil(log2 n) calls). When failing is
/// not monotonic in `j`, a `j` that fails where `j - 1` passes.
fn bisect(n: usize, mut fails: impl FnMut(usize) -> bool) -> usize {
    if n == 0 || fails(0) {
        return 0;
    }
    let (mut lo, mut hi) = (0, n);
    while hi > lo + 1 {
        let mid = lo + (hi - lo) / 2;
        if fails(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Shrinks the schedule of `spec` at `quantum`, whose trial `want` failed `bug`, and writes
/// the shrunk one's recording to `out`.
pub(crate) fn cut(
    bug: Bug,
    spec: &Spec,
    quantum: u32,
    want: &Trial,
    out: &Path,
) -> Result<Cut, String> {
    let guide = out.with_extension("guide.hosrec");
    let mut steps = Vec::new();
    let mut t = Trials {
        bug,
        quantum,
        want: &want.outcome,
        guide: &guide,
        run: 1,
    };
    let first = trial::run(bug, &t.setup(spec.clone(), Some(guide.clone())));
    if !same_failure(&want.outcome, &first.outcome) {
        return Err(format!("{spec} recorded: {}, not as before", first.outcome));
    }
    let devs = deviations(&guide)?;
    let total = first.figures.map_or(0, |f| f.decisions);
    steps.push(format!(
        "{spec} recorded: {total} decisions, {} deviations from stable",
        devs.len()
    ));

    // Prefix bisection over the deviations: `j` keeps the first j (0: stable).
    let prefix_of = |j: usize| if j == 0 { 0 } else { devs[j - 1].decision + 1 };
    let hi = bisect(devs.len(), |j| {
        let fails = t.fails(prefix_of(j), BTreeSet::new());
        steps.push(format!(
            "the first {} decisions (deviations kept: {j}) then stable: {}",
            prefix_of(j),
            if fails { "fails" } else { "passes" }
        ));
        fails
    });
    let prefix = prefix_of(hi);
    steps.push(format!(
        "prefix: the first {prefix} decisions (deviations kept: {hi}) then stable fail the same"
    ));

    // Fewest deviations: ddmin over those inside the prefix.
    let inside: Vec<u64> = devs[..hi].iter().map(|d| d.decision).collect();
    let m = ddmin(inside.clone(), BUDGET, |kept| {
        let drop = inside
            .iter()
            .filter(|d| !kept.contains(d))
            .copied()
            .collect();
        t.fails(prefix, drop)
    });
    steps.push(format!(
        "deviations: {} of {} kept ({} trials{})",
        m.items.len(),
        inside.len(),
        m.tests,
        if m.minimal {
            ", none can go"
        } else {
            ", the budget ran out"
        }
    ));
    // The schedule ends at its last kept deviation: `stable` from there on, as it was.
    let prefix = m.items.last().map_or(0, |d| d + 1);
    let drop: BTreeSet<u64> = inside
        .iter()
        .filter(|&&d| d < prefix && !m.items.contains(&d))
        .copied()
        .collect();

    let last = t.guided(prefix, drop, Some(out.to_path_buf()));
    let _ = std::fs::remove_file(&guide);
    if !same_failure(&want.outcome, &last.outcome) {
        return Err(format!("the shrunk schedule recorded: {}", last.outcome));
    }
    let shrunk = deviations(out)?;
    let replay = t.setup(Spec::Replay(out.to_path_buf()), None);
    let reproduced = (0..CONFIRM)
        .filter(|_| trial::run(bug, &replay) == last)
        .count();
    Ok(Cut {
        steps,
        recorded: devs.len(),
        prefix,
        deviations: shrunk,
        trials: t.run,
        trial: last,
        path: out.to_path_buf(),
        reproduced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zoo::pct_seeds;

    /// Replays of a shrunk schedule that must give its trial again.
    const REPRODUCE: usize = 10;

    fn guided(bug: Bug, guide: &Path, prefix: u64, drop: BTreeSet<u64>) -> Trial {
        let spec = Spec::Guided {
            path: guide.to_path_buf(),
            prefix,
            drop,
        };
        trial::run(bug, &Setup::det(spec))
    }

    /// Every zoo bug, from the first seed pct finds it with (quantum 1, the zoo's): its
    /// schedule shrinks to a short prefix and a few deviations that still fail the same; no
    /// shorter prefix fails, no kept deviation can go (when the budget allowed the search);
    /// and the recording written replays to the same trial 10 times of 10.
    #[test]
    fn each_bug_pct_finds_shrinks_to_a_few_deviations_that_replay() {
        let dir = std::env::temp_dir();
        for bug in Bug::ALL {
            let name = bug.name();
            let (seed, found) = (0..pct_seeds(bug.threads(), bug.depth(), 0.99))
                .map(|seed| (seed, trial::run(bug, &Setup::det(bug.pct(seed)))))
                .find(|(_, t)| t.outcome != Outcome::Ok)
                .unwrap_or_else(|| panic!("{name}: no failing seed"));
            let out = dir.join(format!(
                "det_search-test-{name}-{}.hosrec",
                std::process::id()
            ));
            let c = cut(bug, &bug.pct(seed), 1, &found, &out)
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            eprintln!(
                "{name} pct seed {seed}: {} deviations recorded, prefix {}, {} kept, {} trials",
                c.recorded,
                c.prefix,
                c.deviations.len(),
                c.trials
            );
            assert!(
                same_failure(&found.outcome, &c.trial.outcome),
                "{name}: {c:?}"
            );
            assert!(c.deviations.len() <= 3, "{name}: {c:?}");
            assert!(c.deviations.len() <= c.recorded, "{name}: {c:?}");
            assert!(c.deviations.iter().all(|d| d.decision < c.prefix), "{c:?}");
            assert_eq!(c.reproduced, CONFIRM, "{name}: {c:?}");

            // Its own recording guides it again: past the last kept deviation it is stable.
            let kept: BTreeSet<u64> = c.deviations.iter().map(|d| d.decision).collect();
            if let Some(&last) = kept.last() {
                let passes = |t: &Trial| !same_failure(&found.outcome, &t.outcome);
                let shorter = guided(bug, &out, last, BTreeSet::new());
                assert!(passes(&shorter), "{name}: a shorter prefix fails: {c:?}");
                for &d in &kept {
                    let less = guided(bug, &out, c.prefix, BTreeSet::from([d]));
                    assert!(passes(&less), "{name}: deviation {d} can go: {c:?}");
                }
            }
            let replay = Setup::det(Spec::Replay(out.clone()));
            for _ in 0..REPRODUCE {
                assert_eq!(trial::run(bug, &replay), c.trial, "{name}: replay");
            }
            std::fs::remove_file(&out).expect("the recording written");
        }
    }

    #[test]
    fn bisection_finds_where_failing_starts_in_log_calls() {
        for (n, from) in [(1, 1), (10, 0), (10, 1), (10, 7), (10, 10), (1000, 613)] {
            let mut calls = Vec::new();
            let j = bisect(n, |j| {
                calls.push(j);
                j >= from
            });
            assert_eq!(j, from, "n {n}");
            let most = 1 + (n as f64).log2().ceil() as usize;
            assert!(calls.len() <= most, "n {n}: {calls:?}");
            assert!(!calls.contains(&n), "n is known to fail: {calls:?}");
        }
        assert_eq!(bisect(0, |_| unreachable!()), 0);
        // Not monotonic: a j that fails after one that passes.
        let fails = |j: usize| j % 3 == 1 || j == 8;
        let j = bisect(8, fails);
        assert!(fails(j) && !fails(j - 1), "{j}");
    }

    #[test]
    fn a_hang_fails_the_same_whatever_its_decision() {
        use crate::trial::{Hang, Why};
        let hang = |d, on| {
            Outcome::Hang(Hang {
                why: Why::Softlock(d),
                threads: vec![("A".into(), Some(on))],
            })
        };
        assert!(same_failure(&hang(12, "mutex"), &hang(7, "mutex")));
        assert!(!same_failure(&hang(12, "mutex"), &hang(12, "event")));
        let bug = |s: &str| Outcome::Bug(s.into());
        assert!(same_failure(&bug("3, not 6"), &bug("3, not 6")));
        assert!(!same_failure(&bug("3, not 6"), &bug("4, not 6")));
        assert!(!same_failure(&bug("x"), &Outcome::Ok));
        assert!(
            !same_failure(&Outcome::Ok, &Outcome::Ok),
            "ok is no failure"
        );
    }
}
