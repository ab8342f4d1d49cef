//! `--det SPEC` and `--det-pace free|paced`: a cell's arms run in the deterministic mode
//! (docs/determinism.md), each run printing the token's figures.
//!
//! Invariant: a bad value is an error naming the flag and the value (the selector's own
//! message), never a panic; with `--det` off nothing here touches a run. In the mode the
//! load keeps the host contract (docs/determinism.md section 8): a guest thread starts it,
//! its bursts, linger and frame limiter run on the virtual clock (`vclock.rs`), and the
//! figures are taken by the Presentation Thread itself as it presents the last measured
//! frame, a point of the run; so one selector gives one set of figures, run after run, for
//! a scene without host threads (`field`, `forest`). A scene's host threads (renderer, GPU
//! submit, audio) still run on wall time, outside the contract.

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

    /// The figures of one short run of the field scene under `spec`.
    fn figures(spec: Spec) -> Option<DetStats> {
        let det = Det {
            spec,
            pacing: Pacing::Free,
        };
        let run_spec = crate::arms::RunSpec {
            load: crate::scenes::Scene::Field.load(),
            warmup: 2,
            frames: 4,
            calibration: Some(hos::Calibration::default()),
            trace: None,
            det: Some(&det),
        };
        let mut progress = crate::progress::Progress::new("", 1, 2, 4);
        let run = crate::arms::run(crate::arms::Arm::Reactor, 1, &run_spec, &mut progress);
        run.expect("a run in the mode").det
    }

    #[test]
    fn a_selector_gives_one_run_and_seeds_explore() {
        let first = figures(Spec::Random { seed: 1 }).expect("figures");
        assert!(first.decisions > 1000, "the load ran: {first:?}");
        // The limiter slept on the virtual clock: five periods of 60 fps between the six
        // presents, where the frame's bursts alone are about 11 ms.
        assert!(first.vt >= 5 * 16_666_666, "{first:?}");
        assert_eq!(
            figures(Spec::Random { seed: 1 }),
            Some(first),
            "the same seed again"
        );
        assert_ne!(
            figures(Spec::Random { seed: 2 }),
            Some(first),
            "another seed"
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
