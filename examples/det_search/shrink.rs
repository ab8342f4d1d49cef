//! Shrinking a failing run: its setup first, then its schedule by its decision log. The
//! setup's steps are a few trials run here, in this process:
//!
//! 1. confirm: the setup fails [`CONFIRM`] times with the same outcome and figures;
//! 2. depth: pct's depth lowered, 1 first, while the same seed still fails (fewer change
//!    points: a simpler schedule);
//! 3. quantum: doubled up to [`MOST_QUANTUM`] while it still fails (fewer preemption
//!    points);
//! 4. the schedule (`schedule.rs`): the smallest setup's run recorded, the shortest prefix
//!    of its decisions that fails followed by `stable`, the fewest of its deviations from
//!    `stable` that still fail, written as a `.hosrec` that `HOS_DET=replay:PATH` replays to
//!    the same failure.
//!
//! Invariant: every setup reported as failing was seen failing, and the last one reported
//! is the smallest found: it fails, and each step only ever replaces a failing setup by a
//! failing one; the schedule cut from it fails the same way (`schedule.rs`).

use crate::args::FailOn;
use crate::child::setup;
use crate::schedule::{self, Cut};
use crate::trial::{self, Trial};
use crate::zoo::Bug;
use hos::det::selector::Spec;
use std::path::Path;
use std::time::Duration;

/// Runs that must agree before a setup counts as failing.
pub(crate) const CONFIRM: usize = 3;

/// The largest quantum tried.
pub(crate) const MOST_QUANTUM: u32 = 1024;

/// A shrink's result.
#[derive(Clone, Debug)]
pub(crate) struct Shrunk {
    /// What each step tried and saw, in order.
    pub(crate) steps: Vec<String>,
    /// The smallest failing setup, and its trial; `None` if the start did not reproduce.
    pub(crate) best: Option<(Spec, u32, Trial)>,
    /// Its schedule cut by its decisions, or why it could not be; `None` with no setup.
    pub(crate) schedule: Option<Result<Cut, String>>,
}

/// The trial of `spec` at `quantum`, if it fails by `fail_on`.
fn failing(
    bug: Bug,
    spec: &Spec,
    quantum: u32,
    stall: Option<Duration>,
    fail_on: FailOn,
) -> Option<Trial> {
    let s = setup(&spec.to_string(), quantum, stall).ok()?;
    let t = trial::run(bug, &s);
    fail_on.fails(t.outcome.kind()).then_some(t)
}

/// Shrinks `spec` at `quantum`, a setup seen failing `bug`; the shrunk schedule's recording
/// goes to `out`.
pub(crate) fn shrink(
    bug: Bug,
    spec: &Spec,
    quantum: u32,
    stall: Option<Duration>,
    fail_on: FailOn,
    out: &Path,
) -> Shrunk {
    let mut steps = Vec::new();
    let first = failing(bug, spec, quantum, stall, fail_on);
    let agree = first.as_ref().is_some_and(|f| {
        (1..CONFIRM).all(|_| failing(bug, spec, quantum, stall, fail_on).as_ref() == Some(f))
    });
    let Some(first) = first.filter(|_| agree) else {
        steps.push(format!(
            "{spec} q={quantum}: did not fail the same way {CONFIRM} times"
        ));
        return Shrunk {
            steps,
            best: None,
            schedule: None,
        };
    };
    steps.push(format!(
        "{spec} q={quantum}: fails {CONFIRM} of {CONFIRM}, {}",
        first.outcome.kind()
    ));
    let mut best = (spec.clone(), quantum, first);
    if let Spec::Pct {
        depth,
        seed,
        steps: k,
    } = *spec
    {
        for d in 1..depth {
            let lower = Spec::Pct {
                depth: d,
                seed,
                steps: k,
            };
            let t = failing(bug, &lower, quantum, stall, fail_on);
            steps.push(format!(
                "{lower} q={quantum}: {}",
                if t.is_some() { "fails" } else { "passes" }
            ));
            if let Some(t) = t {
                best = (lower, quantum, t);
                break;
            }
        }
    }
    let mut q = best.1.saturating_mul(2);
    while q <= MOST_QUANTUM {
        let t = failing(bug, &best.0, q, stall, fail_on);
        steps.push(format!(
            "{} q={q}: {}",
            best.0,
            if t.is_some() { "fails" } else { "passes" }
        ));
        let Some(t) = t else {
            break;
        };
        best = (best.0.clone(), q, t);
        q = q.saturating_mul(2);
    }
    let schedule = schedule::cut(bug, &best.0, best.1, &best.2, out);
    Shrunk {
        steps,
        best: Some(best),
        schedule: Some(schedule),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: FailOn = FailOn {
        bug: true,
        hang: true,
        panic: true,
        exit: true,
    };

    #[test]
    fn a_failing_setup_shrinks_to_one_that_fails() {
        let bug = Bug::UseBeforePublish;
        let seed = (0..500)
            .find(|&s| failing(bug, &bug.pct(s), 1, None, ALL).is_some())
            .expect("a failing seed");
        let out = std::env::temp_dir().join(format!("det_search-{}.hosrec", std::process::id()));
        let s = shrink(bug, &bug.pct(seed), 1, None, ALL, &out);
        let (spec, q, t) = s.best.clone().expect("it reproduces");
        let cut = s.schedule.clone().expect("a schedule").expect("it cuts");
        assert_eq!(cut.trial.outcome, t.outcome, "the same verdict");
        std::fs::remove_file(&out).expect("the recording written");
        assert_ne!(t.outcome.kind(), "ok", "{s:?}");
        assert_eq!(
            failing(bug, &spec, q, None, ALL),
            Some(t),
            "the best fails as reported"
        );
        assert!(s.steps.len() >= 3, "{s:?}");
    }

    #[test]
    fn a_passing_setup_does_not_shrink() {
        let out = Path::new("never-written.hosrec");
        let s = shrink(Bug::SignalBeforeWait, &Spec::Stable, 1, None, ALL, out);
        assert!(s.best.is_none() && s.schedule.is_none(), "{s:?}");
        assert!(!out.exists());
        assert_eq!(s.steps.len(), 1);
    }
}
