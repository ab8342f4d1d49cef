//! The command line: flags, the two scenes, and what a bad value says.
//!
//! Invariant: `parse` either returns options that every other module can use as they are
//! (every number inside its documented range, at least one arm, a non-empty output path),
//! or an [`ArgError`] naming the flag and the value; it never panics and never clamps a
//! value silently. Scene presets are applied first, explicit flags after, whatever their order.

use crate::arms::Arm;
use crate::load::Load;
use std::fmt;
use std::path::PathBuf;

/// The help text (`--help`).
pub const HELP: &str = "\
frame_sim: a game-shaped load on hos, arm against arm

USAGE: cargo run --release --example frame_sim -- [FLAGS]

The load mirrors the measured game (docs/design.md, the introduction): a MainThread (priority 44) runs a CPU burst
each frame, hands work to BaseProcExecutor0..5 (one pinned to each virtual core) and to
ModuleSystemWorker0..4 (job workers that poll a shared queue with 20 us sleeps), waits for
the last of them, and hands the frame to the Presentation Thread, which submits it (a burst)
and paces to the frame cap with the runtime's host sleep. Each burst is CPU time on the
thread's own clock, so a frame is the same work on any machine.

Arms (each run builds a fresh runtime; arms alternate A B C A B C for every pair):
  seeds    every short sleep yields, every thread spins 20 us, no poller cap (the old design)
  auto     ShortSleep::Auto with its defaults (the reference host today)
  reactor  every default (hos's default)

FLAGS:
  --scene field|forest  field: 12 jobs of 150 us a frame (busy); forest: no jobs, the
                        workers only poll (quiet)                      [default: field]
  --arms LIST           comma-separated arms                 [default: seeds,auto,reactor]
  --pairs N             rounds of the arms, 1..=100                            [default: 3]
  --frames N            measured frames a run, 1..=1000000                   [default: 300]
  --warmup N            frames before the window, 1..=100000                  [default: 60]
  --fps N               frame cap, 0 (none)..=1000                            [default: 60]
  --main-us N           main thread burst a frame, us                       [default: 2000]
  --exec-us N           each executor's burst a frame, us                   [default: 1000]
  --present-us N        presentation burst (submit) a frame, us             [default: 1000]
  --jobs N              jobs a frame, 0..=1024                [default: 12 field, 0 forest]
  --job-us N            each job's burst, us                                 [default: 150]
  --executors N         BaseProcExecutor threads, 1..=6 (one a core)           [default: 6]
  --workers N           ModuleSystemWorker threads, 0..=64                     [default: 5]
  --poll-us N           a worker's sleep between polls, 1..=100000 us          [default: 20]
  --procs N             restrict the process to its first N logical processors first
  --calibrate once|each once: measure the machine once, before the first run, and pin
                        that calibration in every run (the arms differ by their config
                        alone); each: every runtime measures at build, as a host does
                                                                       [default: once]
  --out DIR             where frames.csv and frame_sim.svg go   [default: target/frame_sim]
  --json FILE           also write the table as JSON
  --trace DIR           trace the first pair: one Chrome trace-event file an arm in DIR
                        (open it in ui.perfetto.dev), and each arm's critical path
  -h, --help            this text

Bursts are 0..=1000000 us. Output: a progress bar on stderr, the table on stdout.
Exit codes: 0 done, 1 a run failed, 2 a bad flag.
";

/// Which preset fills the load's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scene {
    /// Busy: jobs every frame.
    Field,
    /// Quiet: no jobs; the workers only poll.
    Forest,
}

impl Scene {
    /// Its flag value.
    pub fn name(self) -> &'static str {
        match self {
            Scene::Field => "field",
            Scene::Forest => "forest",
        }
    }

    /// The preset load.
    ///
    /// Why these bursts: the measured game runs at a 60 fps cap, and a default run must fit it
    /// on a 2-core machine with room, so that the arms differ by what the runtime costs, not
    /// by a load that could never make its frame. A frame is main 2 ms, then 6 executors of
    /// 1 ms (3 ms on 2 cores), then (overlapped with the next frame) 1 ms of submit: a 5 ms
    /// critical path and 9 ms of CPU, 0.54 of one core at 60 fps of the 2 there are. The
    /// field scene adds 12 jobs of 150 us (1.8 ms more, spread over the workers); the forest
    /// scene none, so there the workers' polling is all that the arms change.
    pub fn load(self) -> Load {
        let base = Load {
            executors: 6,
            workers: 5,
            main_us: 2000,
            exec_us: 1000,
            present_us: 1000,
            jobs: 12,
            job_us: 150,
            poll_us: 20,
            fps: 60,
        };
        match self {
            Scene::Field => base,
            Scene::Forest => Load { jobs: 0, ..base },
        }
    }
}

/// Everything the command line decides.
#[derive(Clone, Debug)]
pub struct Options {
    /// The preset the load started from.
    pub scene: Scene,
    /// The load, preset then flags.
    pub load: Load,
    /// Arms in run order; never empty, no arm twice.
    pub arms: Vec<Arm>,
    /// Rounds of the arms (>= 1).
    pub pairs: usize,
    /// Measured frames a run (>= 1).
    pub frames: usize,
    /// Warm-up frames a run (>= 1: the first measured frame's time is taken from the last
    /// warm-up present).
    pub warmup: usize,
    /// `--procs`, if given.
    pub procs: Option<usize>,
    /// `--calibrate once` (true, the default) or `each`.
    pub calibrate_once: bool,
    /// Output directory.
    pub out: PathBuf,
    /// `--json`, if given.
    pub json: Option<PathBuf>,
    /// `--trace`, if given: where the first pair's traces go.
    pub trace: Option<PathBuf>,
}

/// What `parse` returns besides options.
#[derive(Debug)]
pub enum Parsed {
    /// Run with these.
    Run(Box<Options>),
    /// Print the help and exit 0.
    Help,
}

/// A bad command line: says which flag, which value, and what is accepted.
#[derive(Debug, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (see --help)", self.0)
    }
}

fn number(flag: &str, value: &str, lo: u64, hi: u64, what: &str) -> Result<u64, ArgError> {
    match value.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(ArgError(format!(
            "{flag} {value:?}: expected {what}, a whole number from {lo} to {hi}"
        ))),
    }
}

fn arms(flag: &str, value: &str) -> Result<Vec<Arm>, ArgError> {
    let mut out = Vec::new();
    for part in value.split(',').map(str::trim) {
        let arm = Arm::parse(part).ok_or_else(|| {
            let names: Vec<_> = Arm::ALL.iter().map(|a| a.name()).collect();
            ArgError(format!(
                "{flag} {value:?}: unknown arm {part:?}; the arms are {}",
                names.join(", ")
            ))
        })?;
        if out.contains(&arm) {
            return Err(ArgError(format!(
                "{flag} {value:?}: arm {part:?} is named twice"
            )));
        }
        out.push(arm);
    }
    Ok(out)
}

/// Parses the arguments after the program name.
///
/// # Errors
/// An unknown flag, a flag without its value, or a value outside its range.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Parsed, ArgError> {
    let mut scene = Scene::Field;
    // (flag, value) in order; applied onto the scene's preset afterwards.
    let mut sets: Vec<(String, String)> = Vec::new();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Parsed::Help);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if !KNOWN.contains(&flag.as_str()) {
            return Err(ArgError(if flag.starts_with('-') {
                format!("unknown flag {flag:?}")
            } else {
                format!("unexpected argument {flag:?}: every value follows its flag")
            }));
        }
        let value = match inline.or_else(|| it.next()) {
            Some(v) => v,
            None => return Err(ArgError(format!("{flag} needs a value"))),
        };
        if flag == "--scene" {
            scene = match value.trim() {
                "field" => Scene::Field,
                "forest" => Scene::Forest,
                _ => {
                    return Err(ArgError(format!(
                        "--scene {value:?}: expected field or forest"
                    )))
                }
            };
        } else {
            sets.push((flag, value));
        }
    }

    let mut o = Options {
        scene,
        load: scene.load(),
        arms: Arm::ALL.to_vec(),
        pairs: 3,
        frames: 300,
        warmup: 60,
        procs: None,
        calibrate_once: true,
        out: PathBuf::from("target/frame_sim"),
        json: None,
        trace: None,
    };
    const BURST: u64 = 1_000_000;
    for (flag, v) in &sets {
        let f = flag.as_str();
        let n = |lo, hi, what| number(f, v, lo, hi, what);
        match f {
            "--arms" => o.arms = arms(f, v)?,
            "--pairs" => o.pairs = n(1, 100, "a count of pairs")? as usize,
            "--frames" => o.frames = n(1, 1_000_000, "a count of frames")? as usize,
            "--warmup" => o.warmup = n(1, 100_000, "a count of frames")? as usize,
            "--fps" => o.load.fps = n(0, 1000, "a frame cap in fps (0: none)")? as u32,
            "--main-us" => o.load.main_us = n(0, BURST, "a burst in us")?,
            "--exec-us" => o.load.exec_us = n(0, BURST, "a burst in us")?,
            "--present-us" => o.load.present_us = n(0, BURST, "a burst in us")?,
            "--job-us" => o.load.job_us = n(0, BURST, "a burst in us")?,
            "--jobs" => o.load.jobs = n(0, 1024, "a count of jobs a frame")? as usize,
            "--executors" => o.load.executors = n(1, 6, "one executor a core")? as usize,
            "--workers" => o.load.workers = n(0, 64, "a count of workers")? as usize,
            "--poll-us" => o.load.poll_us = n(1, 100_000, "a poll sleep in us")?,
            "--procs" => {
                let max = hos::machine::logical_processors().unwrap_or(4096) as u64;
                o.procs =
                    Some(n(1, max, "a count of logical processors this process may use")? as usize);
            }
            "--calibrate" => {
                o.calibrate_once = match v.trim() {
                    "once" => true,
                    "each" => false,
                    _ => return Err(ArgError(format!("{f} {v:?}: expected once or each"))),
                }
            }
            "--out" | "--json" | "--trace" => {
                if v.trim().is_empty() {
                    return Err(ArgError(format!("{f} {v:?}: expected a path")));
                }
                if f == "--out" {
                    o.out = PathBuf::from(v);
                } else if f == "--trace" {
                    o.trace = Some(PathBuf::from(v));
                } else {
                    o.json = Some(PathBuf::from(v));
                }
            }
            _ => unreachable!("KNOWN and this match disagree on {f}"),
        }
    }
    if o.load.jobs > 0 && o.load.workers == 0 {
        return Err(ArgError(format!(
            "--workers 0 with --jobs {}: nobody would run the jobs",
            o.load.jobs
        )));
    }
    Ok(Parsed::Run(Box::new(o)))
}

/// Every flag that takes a value.
const KNOWN: &[&str] = &[
    "--scene",
    "--arms",
    "--pairs",
    "--frames",
    "--warmup",
    "--fps",
    "--main-us",
    "--exec-us",
    "--present-us",
    "--job-us",
    "--jobs",
    "--executors",
    "--workers",
    "--poll-us",
    "--procs",
    "--calibrate",
    "--out",
    "--json",
    "--trace",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options, ArgError> {
        match parse(args.iter().map(|s| s.to_string()))? {
            Parsed::Run(o) => Ok(*o),
            Parsed::Help => panic!("help for {args:?}"),
        }
    }

    #[test]
    fn presets_then_flags_whatever_the_order() {
        let o = run(&["--jobs", "3", "--scene", "forest"]).unwrap();
        assert_eq!((o.scene, o.load.jobs), (Scene::Forest, 3));
        let o = run(&["--scene=forest"]).unwrap();
        assert_eq!(o.load.jobs, 0);
        let o = run(&["--arms", "reactor, seeds", "--pairs=2"]).unwrap();
        assert_eq!((o.arms, o.pairs), (vec![Arm::Reactor, Arm::Seeds], 2));
        assert!(matches!(parse(["-h".to_string()]), Ok(Parsed::Help)));
    }

    #[test]
    fn bad_values_name_flag_and_value() {
        for (args, flag, value) in [
            (&["--procs", "0"][..], "--procs", "\"0\""),
            (&["--frames", "abc"], "--frames", "\"abc\""),
            (&["--arms", "fast"], "--arms", "\"fast\""),
            (&["--wat"], "--wat", "--wat"),
            (&["--pairs"], "--pairs", "needs a value"),
        ] {
            let e = run(args).unwrap_err().0;
            assert!(e.contains(flag) && e.contains(value), "{args:?}: {e}");
        }
    }
}
