//! `--trace DIR`: the first pair's runs are traced (one Chrome trace-event file an arm), and
//! each traced arm's critical path is printed: where a measured frame's time went on the
//! chain that made it (guest code, virtual-core waits, object waits, sleeps and their
//! lateness, host time), walked back from each present over the wake edges.
//!
//! Invariant: only the first pair is traced, every arm of it, so the arms' paths compare
//! runs made the same way; the path is the mean over the measured window's frames.

use crate::arms::{Arm, Run};
use hos::{Breakdown, RuntimeBuilder};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The trace file of `arm`'s run in `pair`, if that run is traced (the first pair, with a
/// trace folder).
pub(crate) fn trace_file(dir: Option<&Path>, arm: Arm, pair: usize) -> Option<PathBuf> {
    let dir = dir.filter(|_| pair == 1)?;
    Some(dir.join(format!("{}.json", arm.name())))
}

/// `b`, tracing to `file` if given.
pub(crate) fn traced(b: RuntimeBuilder, file: &Option<PathBuf>) -> RuntimeBuilder {
    match file {
        Some(f) => b.trace(f),
        None => b,
    }
}

/// The mean path of the measured frames (marks `warmup` to `warmup + frames`).
pub(crate) fn window(frames: &[Breakdown], warmup: usize, n: usize) -> Breakdown {
    let from = (warmup - 1).min(frames.len());
    let to = (from + n).min(frames.len());
    Breakdown::mean(&frames[from..to])
}

/// The traced runs' paths, one column an arm, in ms a frame.
pub(crate) fn table(runs: &[Run]) -> String {
    let traced: Vec<(&Run, Breakdown)> =
        runs.iter().filter_map(|r| Some((r, r.critical?))).collect();
    let mut t = String::new();
    if traced.is_empty() {
        return t;
    }
    let _ = write!(t, "{:<30}", "critical path, ms a frame");
    for (r, _) in &traced {
        let _ = write!(t, "{:>10}", r.arm.name());
    }
    let _ = writeln!(t);
    let rows = std::iter::once(("frame", None))
        .chain(Breakdown::default().parts().map(|(k, _)| (k, Some(k))));
    for (label, key) in rows {
        let _ = write!(t, "{label:<30}");
        for (_, b) in &traced {
            let ns = match key {
                None => b.frame,
                Some(k) => b
                    .parts()
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map_or(0, |(_, v)| *v),
            };
            let _ = write!(t, "{:>10.3}", ns as f64 / 1e6);
        }
        let _ = writeln!(t);
    }
    t
}

/// The traced runs' paths as a JSON object: by arm, each part in ms a frame (`null` when
/// no run was traced).
pub(crate) fn json(runs: &[Run]) -> String {
    let arms: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            let b = r.critical?;
            let parts: Vec<String> = std::iter::once(("frame", b.frame))
                .chain(b.parts())
                .map(|(k, v)| format!("\"{k}\": {}", v as f64 / 1e6))
                .collect();
            Some(format!("\"{}\": {{{}}}", r.arm.name(), parts.join(", ")))
        })
        .collect();
    if arms.is_empty() {
        return "null".into();
    }
    format!("{{{}}}", arms.join(", "))
}
