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
pub mod history;
pub mod journal;
pub mod post;
pub mod record;
pub mod rng;
pub mod selector;
pub mod softlock;
pub mod verifier;
pub mod witness;

use record::{RecordError, Recording};
use selector::{Selector, Spec};

/// The selector `spec` names, each turn `quantum` checkpoints; `replay:PATH` reads the
/// recording there and replays it with the recording's own quantum (the caller checks the
/// recording's header against its configuration with [`record::Header::check`]).
pub fn selector(spec: &Spec, quantum: u32) -> Result<Box<dyn Selector + Send>, RecordError> {
    match spec {
        Spec::Replay(path) => Recording::open(path)?.selector(),
        seeded => seeded.seeded(quantum).ok_or(RecordError::NoSchedule),
    }
}
