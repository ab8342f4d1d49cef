//! The decision log: a run's picks, stored as runs of "the same as `Stable`" and the
//! deviations between them (each with the thread it picked), so that a schedule near the
//! default costs a few bytes.
//!
//! Invariant: replaying a log through [`Cursor::next`] with the same `Stable` picks gives back
//! exactly the picks pushed, in order; a log never holds an empty deviation (a pick equal to
//! `Stable`'s is always counted in a run).

use super::witness::Pick;

/// A pick that differs from `Stable`'s, after `same` decisions that did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deviation {
    /// Decisions before it that picked as `Stable` did.
    pub same: u64,
    /// What was picked instead.
    pub pick: Pick,
    /// The thread it picked (a guide follows it when the candidates differ).
    pub thread: u64,
}

/// A run's decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions {
    deviations: Vec<Deviation>,
    /// Decisions after the last deviation that picked as `Stable` did.
    tail: u64,
}

impl Decisions {
    /// No decisions yet.
    pub fn new() -> Decisions {
        Decisions::default()
    }

    /// A log from its parts, as a recording stores them.
    pub fn from_parts(deviations: Vec<Deviation>, tail: u64) -> Decisions {
        Decisions { deviations, tail }
    }

    /// Appends a decision: `actual`, which runs `thread`, was picked where `Stable` would have
    /// picked `stable`.
    pub fn push(&mut self, stable: Pick, actual: Pick, thread: u64) {
        if actual == stable {
            self.tail += 1;
        } else {
            self.deviations.push(Deviation {
                same: self.tail,
                pick: actual,
                thread,
            });
            self.tail = 0;
        }
    }

    /// The deviations, in order.
    pub fn deviations(&self) -> &[Deviation] {
        &self.deviations
    }

    /// The deviations with the index of the decision each was, in order.
    pub fn indexed(&self) -> impl Iterator<Item = (u64, &Deviation)> + '_ {
        let mut next = 0;
        self.deviations.iter().map(move |d| {
            let at = next + d.same;
            next = at + 1;
            (at, d)
        })
    }

    /// Decisions after the last deviation.
    pub fn tail(&self) -> u64 {
        self.tail
    }

    /// Decisions in the log.
    pub fn len(&self) -> u64 {
        self.deviations.iter().map(|d| d.same + 1).sum::<u64>() + self.tail
    }

    /// True if the log holds no decision.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A reader from the first decision.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            next: 0,
            same_left: self.deviations.first().map_or(self.tail, |d| d.same),
        }
    }
}

/// A position in a [`Decisions`] log.
#[derive(Clone, Copy, Debug)]
pub struct Cursor {
    /// The next deviation (the tail once past the last).
    next: usize,
    /// "Same as `Stable`" decisions left before it.
    same_left: u64,
}

impl Cursor {
    /// The next decision's pick, given `Stable`'s pick for it; `None` past the log's end.
    pub fn next(&mut self, log: &Decisions, stable: Pick) -> Option<Pick> {
        if self.same_left > 0 {
            self.same_left -= 1;
            return Some(stable);
        }
        let d = log.deviations.get(self.next)?;
        self.next += 1;
        self.same_left = log.deviations.get(self.next).map_or(log.tail, |d| d.same);
        Some(d.pick)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pick(choice: u32) -> Pick {
        Pick {
            choice,
            quantum: 100,
        }
    }

    #[test]
    fn same_picks_cost_one_run() {
        let mut log = Decisions::new();
        for _ in 0..1000 {
            log.push(pick(0), pick(0), 7);
        }
        log.push(pick(0), pick(1), 8);
        log.push(pick(1), pick(1), 8);
        assert_eq!(
            log.deviations(),
            [Deviation {
                same: 1000,
                pick: pick(1),
                thread: 8,
            }]
        );
        assert_eq!(log.tail(), 1);
        assert_eq!(log.len(), 1002);
        assert!(Decisions::new().is_empty());
    }

    proptest! {
        #[test]
        fn a_cursor_gives_back_every_pick(
            steps in proptest::collection::vec((0u32..3, 0u32..3, 1u32..3), 0..200)
        ) {
            let mut log = Decisions::new();
            for &(s, a, q) in &steps {
                log.push(pick(s), Pick { choice: a, quantum: q * 50 }, u64::from(a) + 10);
            }
            prop_assert_eq!(log.len(), steps.len() as u64);
            let deviating: Vec<(u64, u64)> = steps
                .iter()
                .enumerate()
                .filter(|(_, &(s, a, q))| (s, 100) != (a, q * 50))
                .map(|(i, &(_, a, _))| (i as u64, u64::from(a) + 10))
                .collect();
            let indexed: Vec<(u64, u64)> = log.indexed().map(|(i, d)| (i, d.thread)).collect();
            prop_assert_eq!(indexed, deviating);
            let rebuilt = Decisions::from_parts(log.deviations().to_vec(), log.tail());
            let mut c = rebuilt.cursor();
            for &(s, a, q) in &steps {
                prop_assert_eq!(c.next(&rebuilt, pick(s)), Some(Pick { choice: a, quantum: q * 50 }));
            }
            prop_assert_eq!(c.next(&rebuilt, pick(0)), None);
        }
    }
}
