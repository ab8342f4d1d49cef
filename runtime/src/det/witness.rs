//! A decision's witness, what the deterministic mode decided and why, and the rolling hash
//! that lets two runs compare their witness streams cheaply.
//!
//! Invariant: a witness hashes to the same value on every build and platform: its fields go
//! into FNV-1a 64 as fixed-width little-endian integers in one written-out order (never
//! through std's `Hash`, whose output may change between Rust versions), so a recording's
//! checks made on one machine verify on another.

use std::fmt;

/// One candidate of a decision: a logical core with a runnable thread, and that thread (the
/// best its core may run, by Horizon's rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The logical core.
    pub core: u8,
    /// The guest thread's id (from the creation counter, so the same in every run).
    pub thread: u64,
    /// The thread's Horizon priority (0 is the highest).
    pub priority: u8,
}

/// Why a decision is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The run starts, or a new thread is ready for its first turn.
    Start,
    /// The token holder waits.
    Wait,
    /// The token holder yields.
    Yield,
    /// The token holder used up its quantum of checkpoints.
    QuantumEnd,
    /// The token holder exits.
    Exit,
    /// Nothing could run and the clock jumped to a timer's deadline.
    Timer,
    /// A posted host event was applied.
    Post,
}

impl Reason {
    /// The reason's code in the hash (stable: never renumber).
    fn code(self) -> u8 {
        match self {
            Reason::Start => 0,
            Reason::Wait => 1,
            Reason::Yield => 2,
            Reason::QuantumEnd => 3,
            Reason::Exit => 4,
            Reason::Timer => 5,
            Reason::Post => 6,
        }
    }
}

/// What a selector decides: which candidate runs, and for how many checkpoints at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    /// The index of the chosen candidate in the decision's candidate list.
    pub choice: u32,
    /// The chosen core's quantum, in checkpoints.
    pub quantum: u32,
}

/// One decision, as the deterministic mode takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// The decision's index, from 0.
    pub decision: u64,
    /// The virtual time of the decision, in ns.
    pub vt: u64,
    /// The candidates, in core order.
    pub candidates: Vec<Candidate>,
    /// What was picked.
    pub pick: Pick,
    /// Why the decision was taken.
    pub reason: Reason,
    /// The object the previous holder waited on, signalled or exited from (0 if none).
    pub object: u64,
    /// The result its operation returned (0 if none).
    pub result: u32,
}

impl Witness {
    /// Folds the witness into `h` (module invariant: fixed widths, one order).
    pub fn hash_into(&self, h: &mut Fnv64) {
        h.u64(self.decision);
        h.u64(self.vt);
        h.u64(self.candidates.len() as u64);
        for c in &self.candidates {
            h.bytes(&[c.core, c.priority]);
            h.u64(c.thread);
        }
        h.u32(self.pick.choice);
        h.u32(self.pick.quantum);
        h.bytes(&[self.reason.code()]);
        h.u64(self.object);
        h.u32(self.result);
    }

    /// The witness's own hash.
    pub fn hash(&self) -> u64 {
        let mut h = Fnv64::new();
        self.hash_into(&mut h);
        h.finish()
    }
}

impl fmt::Display for Witness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "decision {} at vt {} ns, {:?} (object {}, result {:#x}): candidates [",
            self.decision, self.vt, self.reason, self.object, self.result
        )?;
        for (i, c) in self.candidates.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(
                f,
                "{sep}core {} thread {} priority {}",
                c.core, c.thread, c.priority
            )?;
        }
        write!(
            f,
            "], picked #{} for {} checkpoints",
            self.pick.choice, self.pick.quantum
        )
    }
}

/// FNV-1a, 64 bits (Fowler, Noll and Vo): a byte-at-a-time hash with a published definition,
/// so its values never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv64(u64);

impl Fnv64 {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01B3;

    /// The empty hash.
    pub fn new() -> Fnv64 {
        Fnv64(Self::OFFSET)
    }

    /// Folds in `bytes`.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
    }

    /// Folds in `v`, little-endian.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// Folds in `v`, little-endian.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv64 {
    fn default() -> Fnv64 {
        Fnv64::new()
    }
}

/// Decisions between two checks.
pub const CHECK_EVERY: u64 = 4096;

/// A check: the rolling hash after a multiple of [`CHECK_EVERY`] decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// Decisions hashed (a multiple of [`CHECK_EVERY`]).
    pub decisions: u64,
    /// The hash of every witness so far.
    pub hash: u64,
}

/// The rolling hash over a run's witnesses, in decision order.
#[derive(Clone, Debug, Default)]
pub struct Rolling {
    hash: Fnv64,
    decisions: u64,
}

impl Rolling {
    /// Before the first decision.
    pub fn new() -> Rolling {
        Rolling::default()
    }

    /// Folds in the next witness; every [`CHECK_EVERY`]th gives a check.
    pub fn push(&mut self, w: &Witness) -> Option<Check> {
        w.hash_into(&mut self.hash);
        self.decisions += 1;
        (self.decisions % CHECK_EVERY == 0).then(|| Check {
            decisions: self.decisions,
            hash: self.hash.finish(),
        })
    }

    /// Decisions folded in so far.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// The hash so far.
    pub fn hash(&self) -> u64 {
        self.hash.finish()
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
    use super::*;

    /// A witness for decision `i`, with two candidates.
    pub(crate) fn witness(i: u64) -> Witness {
        Witness {
            decision: i,
            vt: i * 1_000,
            candidates: vec![
                Candidate {
                    core: 0,
                    thread: 1,
                    priority: 44,
                },
                Candidate {
                    core: 2,
                    thread: 7,
                    priority: 28,
                },
            ],
            pick: Pick {
                choice: (i % 2) as u32,
                quantum: 1_000,
            },
            reason: Reason::Wait,
            object: 0x1234,
            result: 0,
        }
    }

    #[test]
    fn fnv1a_gives_its_published_answers() {
        let of = |s: &str| {
            let mut h = Fnv64::new();
            h.bytes(s.as_bytes());
            h.finish()
        };
        assert_eq!(of(""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(of("a"), 0xAF63_DC4C_8601_EC8C);
        assert_eq!(of("foobar"), 0x8594_4171_F739_67E8);
    }

    #[test]
    fn a_witness_hash_is_pinned() {
        // Pinned: a change here makes every recording's checks fail.
        assert_eq!(witness(3).hash(), 6_954_216_674_313_481_438);
    }

    #[test]
    fn every_field_changes_the_hash() {
        let base = witness(5);
        let mut changed = Vec::new();
        let mut w = base.clone();
        w.decision += 1;
        changed.push(w);
        let mut w = base.clone();
        w.vt += 1;
        changed.push(w);
        let mut w = base.clone();
        w.candidates[1].core = 3;
        changed.push(w);
        let mut w = base.clone();
        w.candidates[0].thread = 2;
        changed.push(w);
        let mut w = base.clone();
        w.candidates[0].priority = 45;
        changed.push(w);
        let mut w = base.clone();
        w.candidates.pop();
        changed.push(w);
        let mut w = base.clone();
        w.pick.choice = 0;
        changed.push(w);
        let mut w = base.clone();
        w.pick.quantum = 1;
        changed.push(w);
        let mut w = base.clone();
        w.reason = Reason::Yield;
        changed.push(w);
        let mut w = base.clone();
        w.object = 1;
        changed.push(w);
        let mut w = base.clone();
        w.result = 0xE401;
        changed.push(w);
        for w in changed {
            assert_ne!(w.hash(), base.hash(), "{w}");
        }
    }

    #[test]
    fn a_check_comes_every_4096_decisions() {
        let mut r = Rolling::new();
        let checks: Vec<Check> = (0..3 * CHECK_EVERY)
            .filter_map(|i| r.push(&witness(i)))
            .collect();
        assert_eq!(checks.len(), 3);
        assert_eq!(checks[0].decisions, CHECK_EVERY);
        assert_eq!(checks[2].decisions, 3 * CHECK_EVERY);
        assert_eq!(checks[2].hash, r.hash());
        assert_eq!(r.decisions(), 3 * CHECK_EVERY);
        let mut again = Rolling::new();
        let first = (0..CHECK_EVERY).find_map(|i| again.push(&witness(i)));
        assert_eq!(first, Some(checks[0]), "the same stream hashes the same");
    }

    #[test]
    fn a_witness_reads_well() {
        let text = witness(1).to_string();
        assert!(text.contains("decision 1 at vt 1000 ns"), "{text}");
        assert!(text.contains("core 2 thread 7 priority 28"), "{text}");
        assert!(text.contains("picked #1 for 1000 checkpoints"), "{text}");
    }
}
