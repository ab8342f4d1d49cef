//! A guided schedule (`HOS_DET=guided:PREFIX:DROP:PATH`): a recorded run's deviations from
//! `Stable`, each followed by the thread it picked, in the run's first `prefix` decisions,
//! some of them dropped, and `Stable` everywhere else. It is how a failing schedule is cut
//! down (det_search's shrink): `prefix` alone gives "the recording's first K decisions, then
//! `stable`"; `drop` removes chosen deviations.
//!
//! Invariant: a pick is `Stable`'s, except at a kept deviation's decision below the prefix,
//! where it is the candidate running the deviation's thread, for the deviation's quantum; when
//! that thread is no candidate (the run has left the recording, as it does once a deviation
//! is dropped), it is `Stable`'s. So a guided run deviates from `stable` only at kept
//! deviations, and with nothing dropped it makes the recording's picks through its prefix: a
//! run that has followed the recording so far has the recording's candidates, where the
//! recorded thread stands at the recorded index.

use super::decisions::Decisions;
use super::selector::{SelectError, Selector, Stable};
use super::witness::{Candidate, Pick, Reason};
use std::collections::BTreeSet;
use std::fmt;

/// Why a recording cannot guide a run as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuideError {
    /// The recording holds no decision log (it was recorded without
    /// HOS_DET_RECORD_DECISIONS).
    NoDecisions,
    /// A dropped decision is not one of the recording's deviations.
    NotADeviation {
        /// The decision named.
        decision: u64,
        /// The recording's deviations.
        deviations: usize,
    },
}

impl fmt::Display for GuideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuideError::NoDecisions => write!(
                f,
                "the guide's recording holds no decisions (record it with \
                 HOS_DET_RECORD_DECISIONS)"
            ),
            GuideError::NotADeviation {
                decision,
                deviations,
            } => write!(
                f,
                "dropped decision {decision} is not one of the guide's {deviations} \
                 deviations from stable"
            ),
        }
    }
}

impl std::error::Error for GuideError {}

/// A kept deviation: at `decision`, run `thread` for `quantum` checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    decision: u64,
    thread: u64,
    quantum: u32,
}

/// The guided selector (module doc).
#[derive(Clone, Debug)]
pub struct Guided {
    /// The kept deviations below the prefix, in decision order.
    steps: Vec<Step>,
    /// The next step not yet reached.
    next: usize,
    stable: Stable,
    decision: u64,
}

impl Guided {
    /// Follows `log`'s deviations below decision `prefix`, except those at the decisions in
    /// `drop`, with `Stable` of `quantum` checkpoints elsewhere.
    ///
    /// # Errors
    /// [`GuideError::NotADeviation`] for a dropped decision that is not a deviation of `log`.
    pub fn new(
        log: &Decisions,
        prefix: u64,
        drop: &BTreeSet<u64>,
        quantum: u32,
    ) -> Result<Guided, GuideError> {
        let deviations: BTreeSet<u64> = log.indexed().map(|(at, _)| at).collect();
        if let Some(&decision) = drop.difference(&deviations).next() {
            return Err(GuideError::NotADeviation {
                decision,
                deviations: deviations.len(),
            });
        }
        let steps = log
            .indexed()
            .filter(|(at, _)| *at < prefix && !drop.contains(at))
            .map(|(decision, d)| Step {
                decision,
                thread: d.thread,
                quantum: d.pick.quantum,
            })
            .collect();
        Ok(Guided {
            steps,
            next: 0,
            stable: Stable::new(quantum),
            decision: 0,
        })
    }
}

impl Selector for Guided {
    fn choose(
        &mut self,
        candidates: &[Candidate],
        current: Option<u8>,
        reason: Reason,
    ) -> Result<Pick, SelectError> {
        let stable = self.stable.choose(candidates, current, reason)?;
        let decision = self.decision;
        self.decision += 1;
        let Some(step) = self.steps.get(self.next).filter(|s| s.decision == decision) else {
            return Ok(stable);
        };
        self.next += 1;
        Ok(candidates
            .iter()
            .position(|c| c.thread == step.thread)
            .map_or(stable, |i| Pick {
                choice: i as u32,
                quantum: step.quantum,
            }))
    }
}
