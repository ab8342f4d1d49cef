//! Selectors: who runs next at a decision point of the deterministic mode, shaped like
//! shuttle's `Scheduler::next_task`: given the candidates (the logical cores with a runnable
//! thread), the core that held the token and why it stopped, a selector returns the pick.
//!
//! Invariant: a selector's picks depend only on its construction (seed, depth, quantum, log)
//! and the sequence of calls it is given, never on wall time, addresses or hash-map order
//! (maps here are `BTreeMap`), and a pick's index is always within the candidates it was
//! given. So the same calls give the same picks on every run and machine, and every pick is
//! Horizon-legal: selectors choose only across cores, each core's candidate already being
//! the thread Horizon's rules put there.

use super::decisions::{Cursor, Decisions};
use super::rng::{Rng, Stream};
use super::witness::{Candidate, Pick, Reason};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Why a selector gave no pick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectError {
    /// It was called with no candidate (the caller's quiescence, never a pick).
    NoCandidates,
    /// A replayed log ended before the run did.
    Exhausted {
        /// The decision that had no recorded pick.
        decision: u64,
    },
    /// A replayed log picked a candidate the run does not have: the run diverged.
    OutOfRange {
        /// The decision.
        decision: u64,
        /// The recorded candidate index.
        recorded: u32,
        /// Candidates the run has.
        candidates: usize,
    },
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectError::NoCandidates => write!(f, "a decision was asked with no candidate"),
            SelectError::Exhausted { decision } => {
                write!(f, "the replayed decisions end before decision {decision}")
            }
            SelectError::OutOfRange {
                decision,
                recorded,
                candidates,
            } => write!(
                f,
                "decision {decision}: the recording picked candidate #{recorded}, \
                 the run has {candidates} candidates"
            ),
        }
    }
}

impl std::error::Error for SelectError {}

/// Picks who runs next.
pub trait Selector {
    /// The pick among `candidates` (non-empty, in core order), where `current` is the core
    /// that held the token (`None` at the start) and `reason` why it gave it up.
    fn choose(
        &mut self,
        candidates: &[Candidate],
        current: Option<u8>,
        reason: Reason,
    ) -> Result<Pick, SelectError>;

    /// [`Selector::choose`], or [`SelectError::NoCandidates`] for an empty list.
    fn next(
        &mut self,
        candidates: &[Candidate],
        current: Option<u8>,
        reason: Reason,
    ) -> Result<Pick, SelectError> {
        if candidates.is_empty() {
            return Err(SelectError::NoCandidates);
        }
        self.choose(candidates, current, reason)
    }
}

/// Round-robin over the cores: the first candidate after `current` in core order, wrapping.
/// The default: a schedule that small code changes leave alone (Parrot's stability), and fair:
/// of N cores, a runnable one waits at most N - 1 turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stable {
    quantum: u32,
}

impl Stable {
    /// Round-robin, each core for `quantum` checkpoints.
    pub fn new(quantum: u32) -> Stable {
        Stable { quantum }
    }
}

impl Selector for Stable {
    fn choose(
        &mut self,
        candidates: &[Candidate],
        current: Option<u8>,
        _: Reason,
    ) -> Result<Pick, SelectError> {
        // Cores after `current` first (key false), then from the lowest core.
        let after = |c: &Candidate| (current.is_some_and(|cur| c.core <= cur), c.core);
        let choice = (0..candidates.len())
            .min_by_key(|&i| after(&candidates[i]))
            .ok_or(SelectError::NoCandidates)?;
        Ok(Pick {
            choice: choice as u32,
            quantum: self.quantum,
        })
    }
}

/// Uniformly random among the candidates.
#[derive(Clone, Debug)]
pub struct Random {
    rng: Rng,
    quantum: u32,
}

impl Random {
    /// Random picks from `seed`'s schedule stream.
    pub fn new(seed: u64, quantum: u32) -> Random {
        Random {
            rng: Rng::new(seed, Stream::Schedule),
            quantum,
        }
    }
}

impl Selector for Random {
    fn choose(
        &mut self,
        candidates: &[Candidate],
        _: Option<u8>,
        _: Reason,
    ) -> Result<Pick, SelectError> {
        Ok(Pick {
            choice: self.rng.below(candidates.len() as u64) as u32,
            quantum: self.quantum,
        })
    }
}

/// PCT (Burckhardt et al., "A Randomized Scheduler with Probabilistic Guarantees of Finding
/// Bugs", ASPLOS 2010), as shuttle's `pct.rs` ports Coyote's: each thread gets a random
/// distinct priority when first seen, the highest runs, and at `depth - 1` change points
/// drawn over the first `steps` steps the last thread picked drops below every other (as it
/// does when it yields, so a yield loop cannot starve the rest). A step is a decision with
/// two candidates or more. A bug of depth d is found with probability at least
/// 1 / (n * k^(d-1)) per run, for n threads and k steps.
#[derive(Clone, Debug)]
pub struct Pct {
    rng: Rng,
    quantum: u32,
    /// Thread id to priority, higher runs first. Initial ones lie in `2^63..`, lowered ones
    /// below `2^63`, each lower than the last (so lowered threads stay below every other).
    priorities: BTreeMap<u64, u64>,
    /// The steps at which the last picked thread is lowered, sorted.
    change_points: Vec<u64>,
    steps: u64,
    lowered: u64,
    last: Option<u64>,
}

/// Half the priority range: initial priorities lie above, lowered ones below.
const LOWERED: u64 = 1 << 63;

impl Pct {
    /// PCT of `depth` (1 or more) from `seed`, with its change points over `steps` steps.
    pub fn new(depth: u32, seed: u64, steps: u64, quantum: u32) -> Pct {
        let mut rng = Rng::new(seed, Stream::Schedule);
        // depth - 1 distinct points in 1..steps (step 0 needs none: the initial priorities
        // already choose who goes first).
        let wanted = u64::from(depth.saturating_sub(1)).min(steps.saturating_sub(1));
        let mut change_points = Vec::new();
        while (change_points.len() as u64) < wanted {
            let p = 1 + rng.below(steps - 1);
            if !change_points.contains(&p) {
                change_points.push(p);
            }
        }
        change_points.sort_unstable();
        Pct {
            rng,
            quantum,
            priorities: BTreeMap::new(),
            change_points,
            steps: 0,
            lowered: 0,
            last: None,
        }
    }

    /// The steps (decisions with two candidates or more) taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The change points, sorted.
    pub fn change_points(&self) -> &[u64] {
        &self.change_points
    }
}

impl Selector for Pct {
    fn choose(
        &mut self,
        candidates: &[Candidate],
        _: Option<u8>,
        reason: Reason,
    ) -> Result<Pick, SelectError> {
        for c in candidates {
            let rng = &mut self.rng;
            self.priorities
                .entry(c.thread)
                .or_insert_with(|| LOWERED + rng.below(LOWERED));
        }
        if candidates.len() > 1 {
            let change = self.change_points.binary_search(&self.steps).is_ok();
            if let Some(last) = self.last.filter(|_| change || reason == Reason::Yield) {
                self.lowered += 1;
                self.priorities
                    .insert(last, (LOWERED - 1).saturating_sub(self.lowered));
            }
            self.steps += 1;
        }
        let priority = |c: &Candidate| self.priorities.get(&c.thread).copied().unwrap_or(0);
        // Highest priority; equal ones (a 2^-63 chance) by the lower thread id.
        let choice = (0..candidates.len())
            .max_by_key(|&i| {
                (
                    priority(&candidates[i]),
                    std::cmp::Reverse(candidates[i].thread),
                )
            })
            .ok_or(SelectError::NoCandidates)?;
        self.last = Some(candidates[choice].thread);
        Ok(Pick {
            choice: choice as u32,
            quantum: self.quantum,
        })
    }
}

/// rr's chaos mode ("Deeper Into Chaos", O'Callahan 2016) in decisions: each thread is low
/// priority with probability 1/10, re-drawn after a random 0..10,000 decisions; starvation
/// intervals, at most a fifth of the decisions, run only high-priority threads when there
/// are any; between them picks are uniform. Quanta are short one time in five: a tenth
/// under 1/100 of the configured quantum, a tenth under 1/10, the rest anywhere up to it.
#[derive(Clone, Debug)]
pub struct Chaos {
    rng: Rng,
    quantum: u32,
    /// Thread id to (low priority, decision at which that is re-drawn).
    threads: BTreeMap<u64, (bool, u64)>,
    decisions: u64,
    starving: bool,
    /// The decision at which the current interval ends.
    interval_end: u64,
    /// The length of the last normal interval (a starvation interval is at most a quarter).
    normal: u64,
}

/// The longest normal interval, in decisions; also the longest wait for a priority re-draw.
const CHAOS_PERIOD: u64 = 10_000;

impl Chaos {
    /// Chaos from `seed`'s chaos stream, with quanta up to `quantum` checkpoints.
    pub fn new(seed: u64, quantum: u32) -> Chaos {
        let mut rng = Rng::new(seed, Stream::Chaos);
        let normal = 1 + rng.below(CHAOS_PERIOD);
        Chaos {
            rng,
            quantum,
            threads: BTreeMap::new(),
            decisions: 0,
            starving: false,
            interval_end: normal,
            normal,
        }
    }

    /// Whether the current interval starves low-priority threads.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn starving(&self) -> bool {
        self.starving
    }

    /// Whether `thread` is low priority now (as of its last draw).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn low(&self, thread: u64) -> bool {
        self.threads.get(&thread).is_some_and(|t| t.0)
    }

    /// A quantum: short one time in five (type doc).
    fn quantum(&mut self) -> u32 {
        let q = u64::from(self.quantum);
        let most = match self.rng.below(10) {
            0 => q / 100,
            1 => q / 10,
            _ => q,
        };
        (1 + self.rng.below(most.max(1))) as u32
    }
}

impl Selector for Chaos {
    fn choose(
        &mut self,
        candidates: &[Candidate],
        _: Option<u8>,
        _: Reason,
    ) -> Result<Pick, SelectError> {
        self.decisions += 1;
        if self.decisions >= self.interval_end {
            self.starving = !self.starving;
            let len = if self.starving {
                self.rng.below(self.normal / 4 + 1)
            } else {
                self.normal = 1 + self.rng.below(CHAOS_PERIOD);
                self.normal
            };
            self.interval_end = self.decisions + len;
        }
        let now = self.decisions;
        let mut high = Vec::with_capacity(candidates.len());
        for (i, c) in candidates.iter().enumerate() {
            let rng = &mut self.rng;
            let slot = self.threads.entry(c.thread).or_insert((false, 0));
            if now >= slot.1 {
                *slot = (rng.chance(1, 10), now + rng.below(CHAOS_PERIOD));
            }
            if !slot.0 {
                high.push(i as u32);
            }
        }
        let choice = if self.starving && !high.is_empty() {
            high[self.rng.below(high.len() as u64) as usize]
        } else {
            self.rng.below(candidates.len() as u64) as u32
        };
        Ok(Pick {
            choice,
            quantum: self.quantum(),
        })
    }
}

/// The picks of a recorded decision log, where the log's runs of "same as `Stable`" are
/// `Stable`'s picks of the replaying run.
#[derive(Clone, Debug)]
pub struct Replay {
    log: Decisions,
    cursor: Cursor,
    stable: Stable,
    decision: u64,
}

impl Replay {
    /// Replays `log`, whose run was configured with `quantum`.
    pub fn new(log: Decisions, quantum: u32) -> Replay {
        let cursor = log.cursor();
        Replay {
            log,
            cursor,
            stable: Stable::new(quantum),
            decision: 0,
        }
    }
}

impl Selector for Replay {
    fn choose(
        &mut self,
        candidates: &[Candidate],
        current: Option<u8>,
        reason: Reason,
    ) -> Result<Pick, SelectError> {
        let stable = self.stable.choose(candidates, current, reason)?;
        let decision = self.decision;
        let pick = self
            .cursor
            .next(&self.log, stable)
            .ok_or(SelectError::Exhausted { decision })?;
        if pick.choice as usize >= candidates.len() {
            return Err(SelectError::OutOfRange {
                decision,
                recorded: pick.choice,
                candidates: candidates.len(),
            });
        }
        self.decision += 1;
        Ok(pick)
    }
}

/// PCT's estimate of a run's steps when the switch names none.
pub const PCT_STEPS: u64 = 10_000;

/// A selector as a switch names it: `stable`, `random:SEED`, `pct:DEPTH:SEED[:STEPS]`,
/// `chaos:SEED`, `replay:PATH`, `guided:PREFIX:DROP:PATH` (numbers in decimal or `0x` hex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    /// [`Stable`].
    Stable,
    /// [`Random`].
    Random {
        /// Its seed.
        seed: u64,
    },
    /// [`Pct`].
    Pct {
        /// Bug depth: `depth - 1` change points.
        depth: u32,
        /// Its seed.
        seed: u64,
        /// The estimated steps its change points are drawn over.
        steps: u64,
    },
    /// [`Chaos`].
    Chaos {
        /// Its seed.
        seed: u64,
    },
    /// [`Replay`] of the recording at the path.
    Replay(PathBuf),
    /// [`Guided`](super::guide::Guided) by the recording at `path`, which holds its decisions.
    Guided {
        /// The recording.
        path: PathBuf,
        /// Its deviations are followed in the run's first `prefix` decisions; `stable` after.
        prefix: u64,
        /// The decisions (deviations of the recording) where `stable` picks instead.
        drop: BTreeSet<u64>,
    },
}

impl Spec {
    /// The selector, with `quantum` checkpoints a turn; `None` for [`Spec::Replay`] and
    /// [`Spec::Guided`], which are built from their recordings.
    pub fn seeded(&self, quantum: u32) -> Option<Box<dyn Selector + Send>> {
        Some(match *self {
            Spec::Stable => Box::new(Stable::new(quantum)),
            Spec::Random { seed } => Box::new(Random::new(seed, quantum)),
            Spec::Pct { depth, seed, steps } => Box::new(Pct::new(depth, seed, steps, quantum)),
            Spec::Chaos { seed } => Box::new(Chaos::new(seed, quantum)),
            Spec::Replay(_) | Spec::Guided { .. } => return None,
        })
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Stable => write!(f, "stable"),
            Spec::Random { seed } => write!(f, "random:{seed}"),
            Spec::Pct { depth, seed, steps } if *steps == PCT_STEPS => {
                write!(f, "pct:{depth}:{seed}")
            }
            Spec::Pct { depth, seed, steps } => write!(f, "pct:{depth}:{seed}:{steps}"),
            Spec::Chaos { seed } => write!(f, "chaos:{seed}"),
            Spec::Replay(path) => write!(f, "replay:{}", path.display()),
            Spec::Guided { path, prefix, drop } => {
                write!(f, "guided:{prefix}:")?;
                if drop.is_empty() {
                    f.write_str("-")?;
                }
                for (i, d) in drop.iter().enumerate() {
                    write!(f, "{}{d}", if i == 0 { "" } else { "," })?;
                }
                write!(f, ":{}", path.display())
            }
        }
    }
}

/// A selector switch that does not parse, naming the bad value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The switch as given.
    pub switch: String,
    /// What is wrong with it.
    pub what: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "selector `{}`: {}", self.switch, self.what)
    }
}

impl std::error::Error for SpecError {}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Spec, SpecError> {
        let err = |what: String| SpecError {
            switch: s.to_string(),
            what,
        };
        let number = |name: &str, v: &str| -> Result<u64, SpecError> {
            let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.map_err(|_| err(format!("{name} `{v}` is not a number (decimal or 0x hex)")))
        };
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        let fields: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(':').collect()
        };
        let arity = |want: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(err(format!("expected `{want}`")))
            }
        };
        match kind {
            "stable" => arity("stable", fields.is_empty()).map(|()| Spec::Stable),
            "random" => {
                arity("random:SEED", fields.len() == 1)?;
                Ok(Spec::Random {
                    seed: number("seed", fields[0])?,
                })
            }
            "chaos" => {
                arity("chaos:SEED", fields.len() == 1)?;
                Ok(Spec::Chaos {
                    seed: number("seed", fields[0])?,
                })
            }
            "pct" => {
                arity(
                    "pct:DEPTH:SEED or pct:DEPTH:SEED:STEPS",
                    matches!(fields.len(), 2 | 3),
                )?;
                let depth = number("depth", fields[0])?;
                let depth = u32::try_from(depth)
                    .ok()
                    .filter(|&d| d >= 1)
                    .ok_or_else(|| err(format!("depth `{depth}` is not 1 to {}", u32::MAX)))?;
                let seed = number("seed", fields[1])?;
                let steps = match fields.get(2) {
                    Some(v) => number("steps", v)?,
                    None => PCT_STEPS,
                };
                if steps == 0 {
                    return Err(err("steps `0`: a run has at least one step".into()));
                }
                Ok(Spec::Pct { depth, seed, steps })
            }
            "replay" if !rest.is_empty() => Ok(Spec::Replay(PathBuf::from(rest))),
            "replay" => Err(err("expected `replay:PATH`".into())),
            "guided" => {
                // The path last and whole: it may hold colons.
                let [prefix, drop, path] = rest.splitn(3, ':').collect::<Vec<_>>()[..] else {
                    return Err(err("expected `guided:PREFIX:DROP:PATH`".into()));
                };
                if path.is_empty() {
                    return Err(err("expected `guided:PREFIX:DROP:PATH`".into()));
                }
                let prefix = number("prefix", prefix)?;
                let drop = match drop {
                    "-" => BTreeSet::new(),
                    list => list
                        .split(',')
                        .map(|d| number("dropped decision", d))
                        .collect::<Result<_, _>>()?,
                };
                Ok(Spec::Guided {
                    path: PathBuf::from(path),
                    prefix,
                    drop,
                })
            }
            _ => Err(err(format!(
                "unknown selector `{kind}` (stable, random:SEED, pct:DEPTH:SEED, chaos:SEED, \
                 replay:PATH, guided:PREFIX:DROP:PATH)"
            ))),
        }
    }
}
