//! `--det SPEC`, `--det-pace free|paced` and `--det-record[-decisions] PATH`: a cell's arms
//! run in the deterministic mode (docs/determinism.md), each run printing the token's
//! figures, what its game thread read of the posted pad (`input.rs`), and with `--det
//! replay:PATH` whether it followed the recording.
//!
//! Invariant: a bad value is an error naming the flag and the value (the selector's own
//! message), never a panic; with `--det` off nothing here touches a run. In the mode the
//! load keeps the host contract (docs/determinism.md section 8): a guest thread starts it,
//! its bursts, linger and frame limiter run on the virtual clock (`vclock.rs`), its inputs
//! are posted, and the figures are taken by the Presentation Thread itself as it presents
//! the last measured frame, a point of the run; so one selector gives one set of figures,
//! run after run, for a scene without host threads (`field`, `forest`). A scene's host
//! threads (renderer, GPU submit, audio) still run on wall time, outside the contract. A
//! recorded run replays with the same flags and arm (the recording's header is checked
//! against the run's config at build).

use crate::args::ArgError;
use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::{DetStats, RuntimeBuilder};
use std::path::{Path, PathBuf};

/// The mode for a cell's runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Det {
    /// The selector (`--det`; `replay:PATH` replays a recording).
    pub(crate) spec: Spec,
    /// `--det-pace` (paced unless given, as HOS_DET_PACE).
    pub(crate) pacing: Pacing,
    /// `--det-record` or `--det-record-decisions`, if given.
    pub(crate) record: Option<Record>,
}

/// Where a cell's runs are recorded, and whether with their decisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// The file of a cell of one run; with more runs, one file a run beside it
    /// ([`Record::path`]).
    pub(crate) path: PathBuf,
    /// Whether the recording holds every decision (HOS_DET_RECORD_DECISIONS).
    pub(crate) decisions: bool,
}

impl Record {
    /// Run (`arm`, `pair`)'s file in a cell of `runs` runs: the path itself for one run,
    /// else `<stem>-<arm>-<pair>.<extension>` beside it.
    pub(crate) fn path(&self, arm: &str, pair: usize, runs: usize) -> PathBuf {
        if runs <= 1 {
            return self.path.clone();
        }
        let stem = self.path.file_stem().unwrap_or_default().to_string_lossy();
        let mut name = format!("{stem}-{arm}-{pair}");
        if let Some(ext) = self.path.extension() {
            name = format!("{name}.{}", ext.to_string_lossy());
        }
        self.path.with_file_name(name)
    }
}

/// What the Presentation Thread took as it presented the last measured frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AtEnd {
    /// The token's figures.
    pub(crate) stats: DetStats,
    /// Pad samples the pump took, and the game thread's fold of what it read
    /// (`Inputs::figures`).
    pub(crate) inputs: (u64, u64),
}

/// `--det`'s value.
pub(crate) fn spec(flag: &str, v: &str) -> Result<Spec, ArgError> {
    v.trim()
        .parse::<Spec>()
        .map_err(|e| ArgError(format!("{flag} {v:?}: {e}")))
}

/// `--det-pace`'s value.
pub(crate) fn pacing(flag: &str, v: &str) -> Result<Pacing, ArgError> {
    match v.trim() {
        "paced" => Ok(Pacing::Paced),
        "free" => Ok(Pacing::Free),
        _ => Err(ArgError(format!("{flag} {v:?}: expected paced or free"))),
    }
}

/// `--det-record`'s or `--det-record-decisions`'s value.
pub(crate) fn record(flag: &str, v: &str) -> Result<Record, ArgError> {
    if v.trim().is_empty() {
        return Err(ArgError(format!("{flag} {v:?}: expected a path")));
    }
    Ok(Record {
        path: PathBuf::from(v),
        decisions: flag == "--det-record-decisions",
    })
}

/// `b` in the mode `det` names, recording to `file` if given; or as it is.
pub(crate) fn apply(b: RuntimeBuilder, det: Option<&Det>, file: Option<&Path>) -> RuntimeBuilder {
    match det {
        Some(d) => b
            .det(Some(d.spec.clone()))
            .det_pace(d.pacing)
            .det_record(file.map(Path::to_path_buf))
            .det_record_decisions(d.record.as_ref().is_some_and(|r| r.decisions)),
        None => b,
    }
}

/// A replayed run's outcome, read after its shutdown: `None` for a live run.
pub(crate) fn replayed(det: Option<&Det>, rt: &hos::Runtime) -> Option<Result<(), String>> {
    match det.map(|d| &d.spec) {
        Some(Spec::Replay(_)) => Some(match rt.det_divergence() {
            None => Ok(()),
            Some(d) => Err(d.to_string()),
        }),
        _ => None,
    }
}

/// A run's line: its arm, pair and figures.
pub(crate) fn line(
    arm: &str,
    pair: usize,
    at_end: Option<AtEnd>,
    replay: Option<&Result<(), String>>,
) -> String {
    let mut l = match at_end {
        Some(AtEnd {
            stats: s,
            inputs: (taken, fold),
        }) => format!(
            "det {arm} pair {pair}: {} decisions, hash {:#018x}, vt {:.3} s; inputs {taken} \
             taken, read {fold:#018x}",
            s.decisions,
            s.hash,
            s.vt as f64 / 1e9
        ),
        None => format!("det {arm} pair {pair}: the mode was off"),
    };
    match replay {
        Some(Ok(())) => l.push_str("; replay: no divergence"),
        Some(Err(d)) => l.push_str(&format!("; replay {d}")),
        None => {}
    }
    l
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
            Ok(Spec::Replay("x.hosrec".into()))
        );
        assert_eq!(
            record("--det-record", " "),
            Err(ArgError("--det-record \" \": expected a path".into()))
        );
        let r = record("--det-record-decisions", "/r/run.hosrec").expect("a path");
        assert!(r.decisions);
        assert_eq!(r.path("reactor", 1, 1), PathBuf::from("/r/run.hosrec"));
        assert_eq!(
            r.path("reactor", 2, 6),
            PathBuf::from("/r/run-reactor-2.hosrec")
        );
        assert!(!record("--det-record", "run").expect("a path").decisions);
        assert_eq!(
            record("--det-record", "run")
                .expect("a path")
                .path("auto", 3, 2),
            PathBuf::from("run-auto-3")
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
            record: None,
        };
        assert_eq!(o.det, Some(want));
        let Ok(crate::args::Parsed::Run(o)) =
            parse(&["--det-record-decisions", "r.hosrec", "--det", "stable"])
        else {
            panic!("--det-record-decisions r.hosrec --det stable");
        };
        let want = Record {
            path: "r.hosrec".into(),
            decisions: true,
        };
        assert_eq!(o.det.and_then(|d| d.record), Some(want));
        let err = |args: &[&str]| parse(args).err().map(|e| e.0);
        assert_eq!(
            err(&["--det-pace", "free"]),
            Some("--det-pace without --det".into())
        );
        assert_eq!(
            err(&["--det", "stable", "--matrix", "2"]),
            Some("--det with --matrix, --check-reference or --fit: it runs one cell".into())
        );
        assert_eq!(
            err(&["--det-record", "r"]),
            Some("--det-record without --det".into())
        );
        assert_eq!(
            err(&["--det", "stable", "--det-record", "r", "--det-record", "s"]),
            Some("--det-record \"s\": one of --det-record and --det-record-decisions, once".into())
        );
    }

    /// One short run of the field scene in the mode `det`, of `frames` measured frames.
    fn run(det: &Det, frames: usize) -> crate::arms::Run {
        let run_spec = crate::arms::RunSpec {
            load: crate::scenes::Scene::Field.load(),
            warmup: 2,
            frames,
            calibration: Some(hos::Calibration::default()),
            trace: None,
            det: Some(det),
            runs: 1,
        };
        let mut progress = crate::progress::Progress::new("", 1, 2, frames);
        crate::arms::run(crate::arms::Arm::Reactor, 1, &run_spec, &mut progress)
            .expect("a run in the mode")
    }

    /// The figures of one short run of the field scene under `spec`.
    fn figures(spec: Spec) -> Option<AtEnd> {
        let det = Det {
            spec,
            pacing: Pacing::Free,
            record: None,
        };
        run(&det, 4).det
    }

    #[test]
    fn a_selector_gives_one_run_and_seeds_explore() {
        let first = figures(Spec::Random { seed: 1 }).expect("figures");
        assert!(first.stats.decisions > 1000, "the load ran: {first:?}");
        // The limiter slept on the virtual clock: five periods of 60 fps between the six
        // presents, where the frame's bursts alone are about 11 ms.
        assert!(first.stats.vt >= 5 * 16_666_666, "{first:?}");
        // The pad's samples came in on the virtual clock, one a period, and the game thread
        // read them.
        let (taken, read) = first.inputs;
        assert!((5..=7).contains(&taken), "{first:?}");
        assert_ne!(read, 0, "{first:?}");
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
    fn a_recorded_run_replays_and_a_shorter_one_diverges() {
        let dir = std::env::temp_dir().join(format!("frame_sim-det-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp folder");
        let file = dir.join("run.hosrec");
        let recorded = run(
            &Det {
                spec: Spec::Random { seed: 3 },
                pacing: Pacing::Free,
                record: Some(Record {
                    path: file.clone(),
                    decisions: false,
                }),
            },
            4,
        );
        assert_eq!(recorded.replay, None, "a live run");
        let replay = Det {
            spec: Spec::Replay(file.clone()),
            pacing: Pacing::Free,
            record: None,
        };
        let replayed = run(&replay, 4);
        assert_eq!(replayed.replay, Some(Ok(())));
        assert_eq!(replayed.det, recorded.det, "the same run, inputs included");
        // The load ended itself after the window (`load.rs`): the recording ends at rest,
        // not where the host's stop happened to land.
        let rec = hos::det::record::Recording::open(&file).expect("the recording");
        assert!(!rec.cut, "the run came to rest");
        assert!(rec.inputs.len() as u64 >= recorded.det.expect("figures").inputs.0);
        // A run that stops short of the recording's end diverges, and is told so.
        let shorter = run(&replay, 2);
        let Some(Err(d)) = shorter.replay else {
            panic!("no divergence: {:?}", shorter.replay);
        };
        assert!(d.contains("the end after"), "{d}");
        std::fs::remove_dir_all(&dir).expect("the temp folder removed");
    }

    #[test]
    fn a_line_names_the_run_and_its_figures() {
        let s = AtEnd {
            stats: DetStats {
                decisions: 12,
                hash: 0xab,
                vt: 1_500_000_000,
            },
            inputs: (90, 0xcd),
        };
        assert_eq!(
            line("reactor", 2, Some(s), None),
            "det reactor pair 2: 12 decisions, hash 0x00000000000000ab, vt 1.500 s; inputs 90 \
             taken, read 0x00000000000000cd"
        );
        assert_eq!(
            line("reactor", 2, Some(s), Some(&Ok(()))),
            format!(
                "{}; replay: no divergence",
                line("reactor", 2, Some(s), None)
            )
        );
        assert_eq!(
            line("auto", 1, None, Some(&Err("diverged at decision 7".into()))),
            "det auto pair 1: the mode was off; replay diverged at decision 7"
        );
    }
}
