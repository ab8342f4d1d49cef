//! `verify`: a deterministic run made twice and compared witness by witness (Hermit's
//! `run --verify`, shuttle's check scheduler), so a host that breaks the contract (a host
//! thread that signals a guest on wall time, a guest that reads the host's clock) is named
//! at the first decision it changed.
//!
//! Invariant: the two runs are built alike by the caller's function and run the caller's
//! program alike; the first keeps every witness, the second compares each of its own with the
//! first's (and its end with the first's end), and the first difference is the report. The
//! first run's witnesses are held in memory (about 64 bytes a decision plus 16 a candidate):
//! for long runs, record one run (HOS_DET_RECORD) and replay it, which checks every 4,096
//! decisions instead.

use crate::build_error::BuildError;
use crate::det::journal::Journal;
use crate::det::verifier::Divergence;
use crate::runtime::Runtime;
use crate::token::DetStats;
use std::fmt;

/// What a verify found ([`verify`]; the `hos` crate's `Runtime::det_verify`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetVerified {
    /// The two runs' figures, first then second.
    pub runs: [DetStats; 2],
    /// The first witness that differs (`None`: the runs agree, decision by decision).
    pub divergence: Option<Divergence>,
}

/// Why a verify ([`verify`]) could not compare.
#[derive(Debug)]
#[non_exhaustive]
pub enum VerifyError {
    /// A run's runtime did not start.
    Build(BuildError),
    /// A run's runtime is not in the deterministic mode, or it decided before its program
    /// ran (a verify needs every decision).
    NotFromTheStart,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Build(e) => write!(f, "verify: a run did not start: {e}"),
            VerifyError::NotFromTheStart => write!(
                f,
                "verify: the runtime is not in the deterministic mode (HOS_DET), or it decided \
                 before the program ran"
            ),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Runs `program` twice, each time in a fresh runtime from `build` (which must put it in the
/// deterministic mode), and compares the two runs witness by witness. `program` starts the
/// guest threads and returns when they are done; each runtime is then shut down by
/// `shutdown`. `inner` reaches the runtime inside a host's handle `R` (the `hos` crate's
/// `Runtime::det_verify` and C's `hos_det_verify` are this).
///
/// # Errors
/// [`VerifyError::Build`] if `build` fails, [`VerifyError::NotFromTheStart`] if its runtime
/// is not in the mode or decided before the program ran.
///
/// # Blocking
/// For the two runs.
pub fn verify<R>(
    build: impl Fn() -> Result<R, BuildError>,
    program: impl Fn(&R),
    inner: impl Fn(&R) -> &Runtime,
    shutdown: impl Fn(&R),
) -> Result<DetVerified, VerifyError> {
    let once = |setup: &mut dyn FnMut(&mut Journal)| {
        let rt = build().map_err(VerifyError::Build)?;
        let token = inner(&rt).token().ok_or(VerifyError::NotFromTheStart)?;
        if token.stats().decisions > 0 {
            return Err(VerifyError::NotFromTheStart);
        }
        token.with_journal(setup);
        program(&rt);
        let stats = token.stats();
        shutdown(&rt);
        let kept = token.with_journal(Journal::take_kept);
        Ok((stats, token.divergence(), kept))
    };
    let (first, _, kept) = once(&mut Journal::keep)?;
    let mut kept = kept;
    let (second, divergence, _) = once(&mut |j| {
        let (first, cut) = kept.take().unwrap_or_default();
        j.follow(first, cut);
    })?;
    Ok(DetVerified {
        runs: [first, second],
        divergence,
    })
}
