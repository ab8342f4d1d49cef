//! One cell: every arm run `pairs` times on one load at one processor count, the arms
//! alternating, and the summary of their figures.
//!
//! Invariant: arms are compared only on runs made the same way in the same cell: the same
//! load, the same processors (restricted before the cell starts), arms alternating
//! A B C A B C, each run on a fresh runtime, with one calibration measured before the first
//! run (each figure the median of three boot measurements) and pinned in every run
//! (`--calibrate once`) or each runtime measuring its own (`--calibrate each`).

use crate::arms::{self, Arm, Run, RunSpec};
use crate::figures::{Figures, Summary};
use crate::load::Load;
use crate::progress::Progress;
use hos::Calibration;
use std::path::PathBuf;

/// How a cell is made.
#[derive(Clone, Debug)]
pub(crate) struct CellSpec {
    /// The load.
    pub(crate) load: Load,
    /// Arms in run order (not empty).
    pub(crate) arms: Vec<Arm>,
    /// Rounds of the arms (>= 1).
    pub(crate) pairs: usize,
    /// Warm-up frames a run (>= 1).
    pub(crate) warmup: usize,
    /// Measured frames a run (>= 1).
    pub(crate) frames: usize,
    /// One calibration pinned in every run (true) or each runtime's own.
    pub(crate) calibrate_once: bool,
    /// Where the first pair's traces go (`--trace`), if anywhere.
    pub(crate) trace: Option<PathBuf>,
    /// The deterministic mode (`--det`), if on.
    pub(crate) det: Option<crate::det::Det>,
}

/// A cell, run.
pub(crate) struct Cell {
    /// How it was made.
    pub(crate) spec: CellSpec,
    /// Logical processors the process could use while it ran.
    pub(crate) processors: Option<usize>,
    /// The calibration pinned in every run, if `calibrate_once`.
    pub(crate) calibration: Option<Calibration>,
    /// Every run, in run order.
    pub(crate) runs: Vec<Run>,
    /// Their figures, by arm.
    pub(crate) summary: Summary,
}

impl Cell {
    /// The measured frame times of `arm`, one slice a pair.
    pub(crate) fn frames_of(&self, arm: Arm) -> Vec<&[f64]> {
        self.runs
            .iter()
            .filter(|r| r.arm == arm)
            .map(|r| r.frame_ms.as_slice())
            .collect()
    }
}

/// Runs a cell at the processors the process may use now; `label` names it on stderr.
///
/// # Errors
/// A run failed (the message names the arm and pair).
pub(crate) fn run(spec: CellSpec, label: &str) -> Result<Cell, String> {
    debug_assert!(!spec.arms.is_empty() && spec.pairs >= 1 && spec.warmup >= 1);
    let processors = hos::machine::logical_processors();
    let calibration = if spec.calibrate_once {
        Some(arms::calibrate()?)
    } else {
        None
    };
    let run_spec = RunSpec {
        load: spec.load,
        warmup: spec.warmup,
        frames: spec.frames,
        calibration,
        trace: spec.trace.as_deref(),
        det: spec.det.as_ref(),
        runs: spec.arms.len() * spec.pairs,
    };
    let mut progress = Progress::new(
        label,
        spec.arms.len() * spec.pairs,
        spec.warmup,
        spec.frames,
    );
    let mut runs = Vec::new();
    let mut figures: Vec<(Arm, Vec<Figures>)> =
        spec.arms.iter().map(|&a| (a, Vec::new())).collect();
    for pair in 1..=spec.pairs {
        for (k, &arm) in spec.arms.iter().enumerate() {
            progress.run(arm.name(), pair, spec.pairs);
            let r =
                arms::run(arm, pair, &run_spec, &mut progress).inspect_err(|_| progress.clear())?;
            let f = Figures::of(&r, &spec.load);
            progress.run_done(&format!(
                "{:.2} fps, {:.2} CPU ms/frame, p99 {:.2} ms",
                f.fps, f.cpu_ms_frame, f.p99
            ));
            figures[k].1.push(f);
            runs.push(r);
        }
    }
    progress.clear();
    Ok(Cell {
        spec,
        processors,
        calibration,
        runs,
        summary: Summary::new(figures),
    })
}
