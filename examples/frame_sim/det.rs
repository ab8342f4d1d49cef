//! `--det SPEC` and `--det-pace free|paced`: a cell's arms run in the deterministic mode
//! (docs/determinism.md), each run printing the token's figures.
//!
//! Invariant: a bad value is an error naming the flag and the value (the selector's own
//! message), never a panic; with `--det` off nothing here touches a run. The figures are
//! read at the measured window's end, while the load still runs: frame_sim's Presentation
//! Thread paces on the host clock (`Instant::now`, `host_sleep`) and the controller stops the
//! run at a wall-time point, so the load does not keep the host contract (docs/determinism.md
//! section 8) and two runs' figures differ; they say how many decisions a run took, not
//! that it reproduces.

use crate::args::ArgError;
use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::{DetStats, RuntimeBuilder};

/// The mode for a cell's runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Det {
    /// The selector (`--det`).
    pub(crate) spec: Spec,
    /// `--det-pace` (paced unless given, as HOS_DET_PACE).
    pub(crate) pacing: Pacing,
}

/// `--det`'s value.
pub(crate) fn spec(flag: &str, v: &str) -> Result<Spec, ArgError> {
    match v.trim().parse::<Spec>() {
        Ok(Spec::Replay(_)) => Err(ArgError(format!("{flag} {v:?}: replay is not wired yet"))),
        Ok(s) => Ok(s),
        Err(e) => Err(ArgError(format!("{flag} {v:?}: {e}"))),
    }
}

/// `--det-pace`'s value.
pub(crate) fn pacing(flag: &str, v: &str) -> Result<Pacing, ArgError> {
    match v.trim() {
        "paced" => Ok(Pacing::Paced),
        "free" => Ok(Pacing::Free),
        _ => Err(ArgError(format!("{flag} {v:?}: expected paced or free"))),
    }
}

/// `b` in the mode `det` names, or as it is.
pub(crate) fn apply(b: RuntimeBuilder, det: Option<&Det>) -> RuntimeBuilder {
    match det {
        Some(d) => b.det(Some(d.spec.clone())).det_pace(d.pacing),
        None => b,
    }
}

/// A run's line: its arm, pair and figures.
pub(crate) fn line(arm: &str, pair: usize, stats: Option<DetStats>) -> String {
    match stats {
        Some(s) => format!(
            "det {arm} pair {pair}: {} decisions, hash {:#018x}, vt {:.3} s",
            s.decisions,
            s.hash,
            s.vt as f64 / 1e9
        ),
        None => format!("det {arm} pair {pair}: the mode was off"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_their_errors() {
        assert_eq!(
            spec("--det", "pct:2:7"),
            Ok(Spec::Pct {
                depth: 2,
                seed: 7,
                steps: 10_000
            })
        );
        assert_eq!(
            spec("--det", "pct:0:1"),
            Err(ArgError(
                "--det \"pct:0:1\": selector `pct:0:1`: depth `0` is not 1 to 4294967295".into()
            ))
        );
        assert_eq!(
            spec("--det", "replay:x.hosrec"),
            Err(ArgError(
                "--det \"replay:x.hosrec\": replay is not wired yet".into()
            ))
        );
        assert_eq!(pacing("--det-pace", "free"), Ok(Pacing::Free));
        assert_eq!(
            pacing("--det-pace", "fast"),
            Err(ArgError(
                "--det-pace \"fast\": expected paced or free".into()
            ))
        );
    }

    fn parse(args: &[&str]) -> Result<crate::args::Parsed, ArgError> {
        crate::args::parse(args.iter().map(ToString::to_string))
    }

    #[test]
    fn the_flags_reach_the_options_and_their_combinations_are_checked() {
        let Ok(crate::args::Parsed::Run(o)) = parse(&["--det-pace", "free", "--det", "stable"])
        else {
            panic!("--det stable --det-pace free");
        };
        let want = Det {
            spec: Spec::Stable,
            pacing: Pacing::Free,
        };
        assert_eq!(o.det, Some(want));
        let err = |args: &[&str]| parse(args).err().map(|e| e.0);
        assert_eq!(
            err(&["--det-pace", "free"]),
            Some("--det-pace without --det".into())
        );
        assert_eq!(
            err(&["--det", "stable", "--matrix", "2"]),
            Some("--det with --matrix, --check-reference or --fit: it runs one cell".into())
        );
    }

    #[test]
    fn a_line_names_the_run_and_its_figures() {
        let s = DetStats {
            decisions: 12,
            hash: 0xab,
            vt: 1_500_000_000,
        };
        assert_eq!(
            line("reactor", 2, Some(s)),
            "det reactor pair 2: 12 decisions, hash 0x00000000000000ab, vt 1.500 s"
        );
        assert_eq!(line("auto", 1, None), "det auto pair 1: the mode was off");
    }
}
