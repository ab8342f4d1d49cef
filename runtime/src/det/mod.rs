//! The deterministic mode's parts: one token lets one logical core's thread run at a time,
//! a [selector](mod@selector) picks who runs next at each decision point, a virtual clock
//! stands in for wall time, host events enter only at decisions, and a run records to and
//! replays from a `.hosrec` file with divergence detection (docs/determinism.md).
//!
//! Invariant: every part here is a pure function of its construction and the calls it is
//! given (seeds, decisions, virtual times, posted inputs), never of wall time, addresses,
//! thread timing or hash-map order, so two runs given the same calls decide the same. These
//! are the leaves; the runtime's `token.rs` wires them in.

pub mod clock;
pub mod decisions;
pub mod feed;
pub mod guide;
pub mod history;
pub mod journal;
pub mod post;
pub mod record;
pub mod rng;
pub mod selector;
pub mod softlock;
pub mod verifier;
pub mod witness;

use guide::{GuideError, Guided};
use record::{RecordError, Recording};
use selector::{Replay, Selector, Spec};
use std::collections::BTreeSet;

/// The selector `spec` names, each turn `quantum` checkpoints; `replay:PATH` and
/// `guided:PREFIX:DROP:PATH` read the recording there and use the recording's own quantum
/// (the caller checks the recording's header against its configuration with
/// [`record::Header::check`]).
pub fn selector(spec: &Spec, quantum: u32) -> Result<Box<dyn Selector + Send>, RecordError> {
    match spec {
        Spec::Replay(path) => replayer(&Recording::open(path)?),
        Spec::Guided { path, prefix, drop } => guided(&Recording::open(path)?, *prefix, drop),
        seeded => seeded.seeded(quantum).ok_or(RecordError::NoSchedule),
    }
}

/// The selector that replays `recording`: its decisions if it holds them, else the selector
/// its header names (a guided run's recording reads its guide again).
pub fn replayer(recording: &Recording) -> Result<Box<dyn Selector + Send>, RecordError> {
    let quantum = recording.header.quantum;
    match (&recording.decisions, &recording.header.selector) {
        (Some(log), _) => Ok(Box::new(Replay::new(log.clone(), quantum))),
        (None, Spec::Replay(_)) => Err(RecordError::NoSchedule),
        (None, spec) => selector(spec, quantum),
    }
}

/// The selector `recording` guides ([`Guided`]): its deviations below `prefix`, less those at
/// the decisions in `drop`, then `stable`, at the recording's quantum.
pub fn guided(
    recording: &Recording,
    prefix: u64,
    drop: &BTreeSet<u64>,
) -> Result<Box<dyn Selector + Send>, RecordError> {
    let log = recording
        .decisions
        .as_ref()
        .ok_or(RecordError::Guide(GuideError::NoDecisions))?;
    let guided = Guided::new(log, prefix, drop, recording.header.quantum);
    Ok(Box::new(guided.map_err(RecordError::Guide)?))
}
