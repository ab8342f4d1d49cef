//! Where a run stops following its reference: a recording it replays ([`Verifier`]) or an
//! earlier run's witnesses ([`compare`]), and the report of the first place it left it
//! ([`Divergence`]).
//!
//! Invariant: a divergence names the first decision where the live run and its reference
//! differ (a pick that differs with a decision log, else the first check hash or the end),
//! with what the reference expected there and the live witness; nothing here changes what
//! the run decides.

use super::decisions::{Cursor, Decisions};
use super::record::Recording;
use super::witness::{Pick, Rolling, Witness, CHECK_EVERY};
use std::fmt;

/// Where a run stopped following its recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The decision at which it was seen.
    pub decision: u64,
    /// Its virtual time.
    pub vt: u64,
    /// What the recording holds there.
    pub expected: Expected,
    /// What the run did there; `None`: the run ended there.
    pub actual: Option<Box<Witness>>,
}

/// What a recording expected at a divergence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The whole witness (two live runs compared).
    Witness(Box<Witness>),
    /// This pick (the recording holds its decisions).
    Pick(Pick),
    /// This rolling hash: the run diverged at or after decision `since`.
    Hash {
        /// The first decision the hash covers that the previous check did not.
        since: u64,
        /// The recorded hash.
        recorded: u64,
        /// The run's.
        live: u64,
    },
    /// The end: the recording has this many decisions.
    End(u64),
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "diverged at decision {} (vt {} ns): expected ",
            self.decision, self.vt
        )?;
        match &self.expected {
            Expected::Witness(w) => write!(f, "{w}")?,
            Expected::Pick(p) => write!(f, "pick #{} for {} checkpoints", p.choice, p.quantum)?,
            Expected::Hash {
                since,
                recorded,
                live,
            } => write!(
                f,
                "witness hash {recorded:#018x}, got {live:#018x} (a difference since decision {since})"
            )?,
            Expected::End(n) => write!(f, "the end after {n} decisions")?,
        }
        match &self.actual {
            Some(w) => write!(f, "; actual {w}"),
            None => write!(f, "; actual: the run ended"),
        }
    }
}

/// `actual` against `expected`, the same decision of two runs that should agree.
pub fn compare(expected: &Witness, actual: &Witness) -> Result<(), Divergence> {
    if expected == actual {
        return Ok(());
    }
    Err(Divergence {
        decision: actual.decision,
        vt: actual.vt,
        expected: Expected::Witness(Box::new(expected.clone())),
        actual: Some(Box::new(actual.clone())),
    })
}

/// Follows a live run's witnesses against a recording: each pick against the recorded one
/// (if the recording holds decisions), and the rolling hash at each check.
#[derive(Debug)]
pub struct Verifier {
    recording: Recording,
    rolling: Rolling,
    cursor: Option<Cursor>,
    /// The virtual time of the last decision observed.
    vt: u64,
}

impl Verifier {
    /// Before the first decision of a replay of `recording`.
    pub fn new(recording: Recording) -> Verifier {
        let cursor = recording.decisions.as_ref().map(Decisions::cursor);
        Verifier {
            recording,
            rolling: Rolling::new(),
            cursor,
            vt: 0,
        }
    }

    /// The recording followed.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// The decision count at which the replay holds: the recording's end, where its host
    /// stopped a run that could have gone on ([`Recording::cut`]); `None` where it had come
    /// to rest.
    pub fn holds_at(&self) -> Option<u64> {
        self.recording.cut.then_some(self.recording.total)
    }

    /// The next decision: its witness, and `Stable`'s pick for it.
    pub fn observe(&mut self, w: &Witness, stable: Pick) -> Result<(), Divergence> {
        let diverged = |expected| Divergence {
            decision: w.decision,
            vt: w.vt,
            expected,
            actual: Some(Box::new(w.clone())),
        };
        self.vt = w.vt;
        let total = self.recording.total;
        if self.rolling.decisions() >= total {
            return Err(diverged(Expected::End(total)));
        }
        if let (Some(cursor), Some(log)) = (&mut self.cursor, &self.recording.decisions) {
            match cursor.next(log, stable) {
                Some(p) if p == w.pick => {}
                Some(p) => return Err(diverged(Expected::Pick(p))),
                None => return Err(diverged(Expected::End(total))),
            }
        }
        if let Some(check) = self.rolling.push(w) {
            let k = (check.decisions / CHECK_EVERY - 1) as usize;
            if let Some(&recorded) = self.recording.checks.get(k) {
                if recorded != check.hash {
                    return Err(diverged(Expected::Hash {
                        since: check.decisions - CHECK_EVERY,
                        recorded,
                        live: check.hash,
                    }));
                }
            }
        }
        Ok(())
    }

    /// The run ended: a replay that took fewer decisions than the recording diverged where
    /// it ended, and one whose witnesses since the last check differ, at its end.
    pub fn finish(&self) -> Result<(), Divergence> {
        let done = self.rolling.decisions();
        let (total, recorded) = (self.recording.total, self.recording.hash);
        let expected = if done < total {
            Expected::End(total)
        } else if self.rolling.hash() != recorded {
            Expected::Hash {
                since: done / CHECK_EVERY * CHECK_EVERY,
                recorded,
                live: self.rolling.hash(),
            }
        } else {
            return Ok(());
        };
        Err(Divergence {
            decision: done,
            vt: self.vt,
            expected,
            actual: None,
        })
    }
}
