//! What a deterministic run's decisions are written to and checked against: the `.hosrec`
//! it records (HOS_DET_RECORD), the recording it replays (HOS_DET=replay:PATH), and the
//! witnesses of an earlier run it is verified against (`verify`).
//!
//! Invariant: the journal sees every decision of the run in order, with the posts applied
//! before it, and keeps the first divergence it finds and only that one (a run that left its
//! recording once differs from it ever after: later reports would only be echoes). Nothing
//! here changes what the run decides: a replay is reported, never stopped. The one thing
//! the journal tells the token is where its reference was cut ([`Journal::holds_at`]), so
//! that a replay or a verify's second run takes no decision its reference never took.

use super::post::Post;
use super::record::{Header, Recording, Writer};
use super::selector::{Selector, Stable};
use super::verifier::{compare, Divergence, Expected, Verifier};
use super::witness::{Pick, Witness};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

/// The earlier run a `verify` compares with.
#[derive(Debug)]
enum Trail {
    /// The first run: every witness kept, and at its end whether it was cut
    /// ([`Recording::cut`](super::record::Recording::cut)).
    Keep(Vec<Witness>, bool),
    /// The second: the first run's witnesses, how many were compared, and whether the first
    /// run was cut.
    Follow(Vec<Witness>, usize, bool),
}

/// The recording being written, and where.
struct Recorder {
    path: PathBuf,
    writer: Writer<BufWriter<File>>,
}

/// A deterministic run's journal (module doc).
pub struct Journal {
    /// `Stable` with the run's quantum: a decision log stores the picks that differ from it.
    stable: Stable,
    recorder: Option<Recorder>,
    replay: Option<Verifier>,
    trail: Option<Trail>,
    divergence: Option<Divergence>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("recording_to", &self.recorder.as_ref().map(|r| &r.path))
            .field("replaying", &self.replay.is_some())
            .field("divergence", &self.divergence)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// A journal of a run whose turns are `quantum` checkpoints, writing and checking
    /// nothing yet.
    pub fn new(quantum: u32) -> Journal {
        Journal {
            stable: Stable::new(quantum),
            recorder: None,
            replay: None,
            trail: None,
            divergence: None,
        }
    }

    /// Records the run to `path` (created or replaced), configured as `header`.
    ///
    /// # Errors
    /// The file cannot be created or its header written.
    pub fn record(&mut self, path: &Path, header: &Header) -> io::Result<()> {
        let file = BufWriter::new(File::create(path)?);
        self.recorder = Some(Recorder {
            path: path.to_path_buf(),
            writer: Writer::new(file, header)?,
        });
        Ok(())
    }

    /// Checks the run against `recording`, which it replays.
    pub fn replay(&mut self, recording: Recording) {
        self.replay = Some(Verifier::new(recording));
    }

    /// Keeps every witness of the run (a `verify`'s first run).
    pub fn keep(&mut self) {
        self.trail = Some(Trail::Keep(Vec::new(), false));
    }

    /// Compares every witness of the run with `first`'s (a `verify`'s second run), `cut`
    /// saying whether the first run was cut ([`Journal::take_kept`]).
    pub fn follow(&mut self, first: Vec<Witness>, cut: bool) {
        self.trail = Some(Trail::Follow(first, 0, cut));
    }

    /// The decision count at which the run holds, while it still follows a reference that its
    /// host cut there (a replay, or a verify's second run): the token takes no decision at
    /// that count, so the run stops where its reference was stopped and waits for its own
    /// host's stop. `None` without such a reference, or once the run left it.
    pub fn holds_at(&self) -> Option<u64> {
        if let Some(v) = &self.replay {
            return v.holds_at();
        }
        match &self.trail {
            Some(Trail::Follow(first, _, true)) => Some(first.len() as u64),
            _ => None,
        }
    }

    /// Post `post` is applied at the coming decision.
    pub fn input(&mut self, post: &Post) {
        if let Some(r) = &mut self.recorder {
            let written = r.writer.input(post);
            self.write_result(written);
        }
    }

    /// Decision `w`, taken after the holder on core `current`.
    pub fn decision(&mut self, w: &Witness, current: Option<u8>) {
        if self.recorder.is_none() && self.replay.is_none() && self.trail.is_none() {
            return;
        }
        // `Stable` keeps no state between picks: its pick for these candidates after
        // `current`. A decision always has a candidate; were it to have none, no pick of
        // `Stable` matches (the log then holds the decision's own pick).
        let stable = self
            .stable
            .next(&w.candidates, current, w.reason)
            .unwrap_or(Pick {
                choice: u32::MAX,
                quantum: 0,
            });
        if let Some(r) = &mut self.recorder {
            let written = r.writer.decision(w, stable);
            self.write_result(written);
        }
        if let Some(v) = &mut self.replay {
            if let Err(d) = v.observe(w, stable) {
                self.diverged(d);
            }
        }
        match &mut self.trail {
            Some(Trail::Keep(kept, _)) => kept.push(w.clone()),
            Some(Trail::Follow(first, next, _)) => {
                let seen = match first.get(*next) {
                    Some(expected) => compare(expected, w),
                    None => Err(Divergence {
                        decision: w.decision,
                        vt: w.vt,
                        expected: Expected::End(first.len() as u64),
                        actual: Some(Box::new(w.clone())),
                    }),
                };
                *next += 1;
                if let Err(d) = seen {
                    self.diverged(d);
                }
            }
            None => {}
        }
    }

    /// The run's mode ends, `cut` saying whether a thread could still run: the recording
    /// gets its end and is flushed; a replay or a verify that ended short of its reference
    /// diverged there. Only the first call does anything.
    pub fn finish(&mut self, vt: u64, cut: bool) {
        if let Some(Trail::Keep(_, was_cut)) = &mut self.trail {
            *was_cut = cut;
        }
        if let Some(r) = self.recorder.take() {
            let path = r.path;
            if let Err(e) = r.writer.finish(cut) {
                crate::error!(
                    "the recording {} could not be finished: {e}",
                    path.display()
                );
            }
        }
        if let Some(v) = self.replay.take() {
            if let Err(d) = v.finish() {
                self.diverged(d);
            }
        }
        if let Some(Trail::Follow(first, next, _)) = &self.trail {
            if *next < first.len() {
                let d = Divergence {
                    decision: *next as u64,
                    vt,
                    expected: Expected::Witness(Box::new(first[*next].clone())),
                    actual: None,
                };
                self.diverged(d);
            }
        }
    }

    /// The first divergence found, if any.
    pub fn divergence(&self) -> Option<&Divergence> {
        self.divergence.as_ref()
    }

    /// The witnesses kept ([`Journal::keep`]), taken, and whether the run was cut.
    pub fn take_kept(&mut self) -> Option<(Vec<Witness>, bool)> {
        match self.trail.take() {
            Some(Trail::Keep(kept, cut)) => Some((kept, cut)),
            other => {
                self.trail = other;
                None
            }
        }
    }

    /// A divergence: the first is kept and said loudly; the checks stop (module invariant).
    fn diverged(&mut self, d: Divergence) {
        crate::error!("the deterministic run left its reference: {d}");
        self.divergence.get_or_insert(d);
        self.replay = None;
        self.trail = None;
    }

    /// A write to the recording failed: said once, and the recording stops (its file,
    /// without an end, reads as truncated).
    fn write_result(&mut self, written: io::Result<()>) {
        if let Err(e) = written {
            if let Some(r) = self.recorder.take() {
                crate::error!(
                    "the recording {} stops, a write failed: {e}",
                    r.path.display()
                );
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::det::witness::{Candidate, Reason};

    fn witness(decision: u64, thread: u64) -> Witness {
        Witness {
            decision,
            vt: decision * 1_000,
            candidates: vec![Candidate {
                core: 0,
                thread,
                priority: 44,
            }],
            pick: Pick {
                choice: 0,
                quantum: 5,
            },
            reason: Reason::Wait,
            object: 0,
            result: 0,
        }
    }

    #[test]
    fn a_verify_names_the_first_witness_that_differs_and_only_it() {
        let mut first = Journal::new(5);
        first.keep();
        (0..6).for_each(|i| first.decision(&witness(i, 1), None));
        first.finish(6_000, false);
        let (kept, cut) = first.take_kept().unwrap();
        assert_eq!((kept.len(), cut), (6, false));

        let mut same = Journal::new(5);
        same.follow(kept.clone(), false);
        assert_eq!(same.holds_at(), None, "the first run came to rest");
        (0..6).for_each(|i| same.decision(&witness(i, 1), None));
        same.finish(6_000, false);
        assert_eq!(same.divergence(), None);

        let mut other = Journal::new(5);
        other.follow(kept.clone(), false);
        (0..6).for_each(|i| other.decision(&witness(i, if i >= 3 { 2 } else { 1 }), None));
        let d = other.divergence().unwrap();
        assert_eq!((d.decision, d.vt), (3, 3_000));
        assert_eq!(d.expected, Expected::Witness(Box::new(witness(3, 1))));

        let mut short = Journal::new(5);
        short.follow(kept.clone(), false);
        (0..4).for_each(|i| short.decision(&witness(i, 1), None));
        short.finish(4_000, false);
        let d = short.divergence().unwrap();
        assert_eq!((d.decision, d.actual.is_none()), (4, true));
    }

    #[test]
    fn a_cut_run_is_kept_as_cut_and_its_follower_holds_at_its_end() {
        let mut first = Journal::new(5);
        first.keep();
        (0..6).for_each(|i| first.decision(&witness(i, 1), None));
        first.finish(6_000, true);
        let (kept, cut) = first.take_kept().unwrap();
        assert!(cut);
        let mut second = Journal::new(5);
        second.follow(kept, cut);
        assert_eq!(second.holds_at(), Some(6));
        (0..6).for_each(|i| second.decision(&witness(i, 1), None));
        second.finish(6_000, true);
        assert_eq!(second.divergence(), None);
        // A run that left its reference holds nowhere: it goes on, reported.
        let mut other = Journal::new(5);
        other.follow(vec![witness(0, 1)], true);
        other.decision(&witness(0, 2), None);
        assert!(other.divergence().is_some());
        assert_eq!(other.holds_at(), None);
    }
}
