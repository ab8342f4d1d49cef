//! The command line: flags, modes, and what a bad value says.
//!
//! Invariant: `parse` either returns options that every other module can use as they are
//! (every number inside its documented range, at least one arm, a non-empty output path, at
//! most one mode), or an [`ArgError`] naming the flag and the value; it never panics and
//! never clamps a value silently. Scene presets are applied first, explicit flags after,
//! whatever their order.

use crate::arms::Arm;
use crate::load::Load;
use crate::scenes::Scene;
use std::fmt;
use std::path::PathBuf;

/// The help text (`--help`).
pub(crate) const HELP: &str = "\
frame_sim: a game-shaped load on hos, arm against arm

USAGE: cargo run --release --example frame_sim -- [FLAGS]

The load mirrors the measured game (docs/design.md, the introduction): a MainThread (priority 44) runs a CPU burst
each frame, hands work to BaseProcExecutor0..5 (one pinned to each virtual core) and to
ModuleSystemWorker0..4 (job workers that poll a shared queue with 20 us sleeps), waits for
the last of them, and hands the frame to the Presentation Thread, which submits it (a burst)
and paces to the frame cap with the runtime's host sleep. The hyrule, hyrule240 and kokiri
scenes add the host's own threads: a renderer pool, a GPU-submit thread, an audio renderer.
Each burst is CPU time on the thread's own clock, so a frame is the same work on any machine.
docs/frame_sim.md has the model, the scenes and the fitting procedure.

Arms (each run builds a fresh runtime; arms alternate A B C A B C for every pair):
  seeds    every short sleep yields, every thread spins 20 us, no poller cap (the old design)
  auto     ShortSleep::Auto with its defaults (the reference host today)
           (seeds and auto without wake claims, a kick's grace or a wake slice,
           HOS_VCORE_CLAIM=0, HOS_VCORE_GRACE_US=0, HOS_WAKE_SLICE_US=0: the reference
           host has none of them)
  reactor  every default (hos's default)
  precise  the reactor with idle polls off: pollers' sleeps precise (HOS_IDLE_POLL=0)
  stretch0 the reactor with idle polls relaxed at their deadline (HOS_IDLE_POLL_STRETCH_US=0)
  noclaim  the reactor without wake claims: a woken thread asks for its core once it runs
           (HOS_VCORE_CLAIM=0)
  grace    the reactor with a kick's grace of 100 us (HOS_VCORE_GRACE_US=100, the default
           until the repeated matrix showed it buys nothing): a waiter whose kick a holder
           has not answered in that long takes its core, and the holder runs on beside the
           virtual cores until its next checkpoint (the default holds the strict bound)
  noslice  the reactor without the wake slice: every guest thread keeps the OS default
           slice (HOS_WAKE_SLICE_US=0)
  nodefer  the reactor without deferred claim wakes: a woken thread whose claim found no
           free core is woken by its waker, to queue, not by the holder that hands it the
           core (HOS_VCORE_CLAIM_DEFER=0)
  eager    the reactor with idle pollers promoted at once: a job send wakes the sleeping
           workers while its sender runs, not when it gives its core up
           (HOS_IDLE_POLL_DEFER=0)

MODES (one at most; without one, one cell of the scene below):
  --matrix LIST         the standard cells at each processor count of LIST (e.g.
                        2,4,6,8,16; counts above this machine's are skipped): field capped
                        with --calibrate once and each, field uncapped, and heavy at 4;
                        one summary table, with a line a cell on what the kick's grace
                        would buy. Defaults there: arms seeds,auto,reactor,grace, 3 pairs of
                        180 frames (+30)
  --check-reference S   hyrule, hyrule240, kokiri or all: the reference host's published
                        rows (hyrule240: the uncapped ones), each at its processors and
                        cap, beside frame_sim's figures and their ratio (3 pairs of 240
                        frames (+30) a row)
  --fit S               hyrule, hyrule240 or kokiri: probe cells around the scene (with any
                        load flags below), a local model, the fitted preset, then its
                        check. Probes 2 pairs of 100 frames (+25), the check 3 of 240
                        (+30); --pairs, --frames and --warmup set both (long probes: a
                        model above noise)
  With --procs, every cell of a mode runs at that count instead (a rehearsal).

FLAGS:
  --scene NAME          field: 12 jobs of 150 us a frame (busy); forest: no jobs, the workers
                        only poll (quiet); heavy: field's shape at 48 ms a frame; hyrule,
                        hyrule240, kokiri: the game's shape with host threads, for --fit
                        [default: field]
  --arms LIST           comma-separated arms                 [default: seeds,auto,reactor]
  --pairs N             rounds of the arms, 1..=100                            [default: 3]
  --frames N            measured frames a run, 1..=1000000                   [default: 300]
  --warmup N            frames before the window, 1..=100000                  [default: 60]
  --fps N               frame cap, 0 (none)..=1000                            [default: 60]
  --main-us N           main thread burst a frame, us
  --exec-us N           each executor's burst a frame, us
  --present-us N        presentation burst (submit) a frame, us
  --jobs N              jobs a frame, 0..=1024
  --job-us N            each job's burst, us
  --executors N         BaseProcExecutor threads, 1..=6 (one a core)
  --workers N           ModuleSystemWorker threads, 0..=64
  --poll-us N           a worker's sleep between polls, 1..=100000 us
  --linger-us N|none    a worker blocks once the queue was empty N us (none: polls for ever)
  --repoll-us N|none    with a linger, a blocked worker polls again after N us without a job
                        (none: it waits for the next job)
  --render-threads N|machine  host renderer pool threads (machine: its online processors)
  --render-us N         the renderer pool's CPU a frame, split over its threads (0: none)
  --gpu-us N            the GPU-submit thread's burst a frame
  --audio-us N          the audio renderer's burst a period (0: none)
  --audio-period-us N   the audio renderer's period, 1..=1000000 us
  --procs N             restrict the process to its first N logical processors first
  --calibrate once|each once: measure the machine once, before the first run, and pin
                        that calibration in every run (the arms differ by their config
                        alone); each: every runtime measures at build, as a host does
                                                                       [default: once]
  --repeat N            run the matrix, or the one cell, N times, 1..=100, each on fresh
                        runtimes; then per cell the min / median / max over the repeats of
                        the summary's figures, the verdict where it holds in every repeat,
                        and what the grace buys against the spread between repeats (--json:
                        every repeat's figures and the spread)                [default: 1]
  --out DIR             write every file into DIR itself  [default: a new directory a run,
                        <target>/frame_sim/<UTC time>-<pid>/, <target> the cargo target
                        directory this binary was built in (else CARGO_TARGET_DIR, else
                        ./target); <target>/frame_sim/latest links the newest]
  --json FILE           also write the table as JSON
  --trace DIR           trace the first pair: one Chrome trace-event file an arm in DIR
                        (open it in ui.perfetto.dev), and each arm's critical path
                        (one cell only, no mode)
  --det SPEC            run the arms in the deterministic mode under the selector SPEC
                        (stable, random:SEED, pct:DEPTH:SEED[:STEPS], chaos:SEED, or
                        replay:PATH, a recording made with the same flags and arm) and
                        print each run's decisions, hash and virtual time, its pad inputs
                        (a 60 Hz device posted on the virtual clock, read by the game
                        thread each frame) and a replay's divergence, taken as the last
                        measured frame is presented: the load's bursts, linger and frame
                        limiter run on the virtual clock (one cell only, no mode)
  --det-pace P          paced (the default) or free, with --det
  --det-record PATH     record each run to PATH (one run), else to PATH's stem plus
                        -ARM-PAIR beside it; with --det
  --det-record-decisions PATH
                        the same, with every decision in the recording
  -h, --help            this text

Bursts are 0..=1000000 us; the scene sets every one not given. Output: a progress bar on
stderr; on stdout the output directory, then the table, its verdict line and the legend
(below); in the directory frames.csv (every measured frame), frame_sim.svg (the plot) and,
with --matrix, --check-reference or --fit, every cell's table.txt and cell.json; with
--matrix, summary.txt and summary.json; with --repeat N, a folder repeat1..N for each
repeat's files, and repeats.txt and the JSON of the repeats (--matrix: summary.json). Exit
codes: 0 done, 1 a run failed, 2 a bad flag.

";

/// What the invocation does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One cell of the scene.
    Cell,
    /// The standard cells at each processor count of the list.
    Matrix(Vec<usize>),
    /// The reference rows of these scenes.
    CheckReference(Vec<Scene>),
    /// The fit of this scene.
    Fit(Scene),
}

/// Everything the command line decides.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// What to do.
    pub(crate) mode: Mode,
    /// The preset the load started from.
    pub(crate) scene: Scene,
    /// The load, preset then flags.
    pub(crate) load: Load,
    /// Whether a flag changed the load (other than `--fps`).
    pub(crate) load_flags: bool,
    /// Arms in run order, if given (never empty, no arm twice).
    pub(crate) arms: Option<Vec<Arm>>,
    /// Rounds of the arms (>= 1), if given.
    pub(crate) pairs: Option<usize>,
    /// Measured frames a run (>= 1), if given.
    pub(crate) frames: Option<usize>,
    /// Warm-up frames a run (>= 1: the first measured frame's time is taken from the last
    /// warm-up present), if given.
    pub(crate) warmup: Option<usize>,
    /// `--procs`, if given.
    pub(crate) procs: Option<usize>,
    /// `--calibrate once` (true, the default) or `each`.
    pub(crate) calibrate_once: bool,
    /// `--out`, if given: the output directory itself (else one of its own a run, `output.rs`).
    pub(crate) out: Option<PathBuf>,
    /// `--json`, if given.
    pub(crate) json: Option<PathBuf>,
    /// `--trace`, if given: where the first pair's traces go.
    pub(crate) trace: Option<PathBuf>,
    /// `--repeat`: how many times the cells run (>= 1; 1 unless given).
    pub(crate) repeat: usize,
    /// `--det` (with `--det-pace`), if given.
    pub(crate) det: Option<crate::det::Det>,
    /// `--det-pace`, if given.
    pub(crate) det_pace: Option<hos::det::clock::Pacing>,
    /// `--det-record` or `--det-record-decisions`, if given.
    pub(crate) det_record: Option<crate::det::Record>,
}

/// What `parse` returns besides options.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Run with these.
    Run(Box<Options>),
    /// Print the help and exit 0.
    Help,
}

/// A bad command line: says which flag, which value, and what is accepted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ArgError(pub String);

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

fn scene(flag: &str, value: &str, allowed: &[Scene]) -> Result<Scene, ArgError> {
    Scene::parse(value.trim())
        .filter(|s| allowed.contains(s))
        .ok_or_else(|| {
            let names: Vec<_> = allowed.iter().map(|s| s.name()).collect();
            ArgError(format!(
                "{flag} {value:?}: expected one of {}",
                names.join(", ")
            ))
        })
}

/// The scenes fitted to the reference host's rows.
const FITTED: [Scene; 3] = [Scene::Hyrule, Scene::Hyrule240, Scene::Kokiri];

fn mode(flag: &str, value: &str) -> Result<Mode, ArgError> {
    match flag {
        "--matrix" => {
            let mut list = Vec::new();
            for part in value.split(',') {
                // Counts above this machine's are skipped when the matrix runs, not refused here.
                let n = number(flag, part, 1, 4096, "a processor count")? as usize;
                if list.contains(&n) {
                    return Err(ArgError(format!("{flag} {value:?}: {n} is named twice")));
                }
                list.push(n);
            }
            Ok(Mode::Matrix(list))
        }
        "--check-reference" if value.trim() == "all" => Ok(Mode::CheckReference(FITTED.to_vec())),
        "--check-reference" => Ok(Mode::CheckReference(vec![scene(flag, value, &FITTED)?])),
        _ => Ok(Mode::Fit(scene(flag, value, &FITTED)?)),
    }
}

/// Parses the arguments after the program name.
///
/// # Errors
/// An unknown flag, a flag without its value, a value outside its range, two modes, or a
/// combination that could not run as asked.
pub(crate) fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Parsed, ArgError> {
    let mut chosen = None;
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
        let Some(value) = inline.or_else(|| it.next()) else {
            return Err(ArgError(format!("{flag} needs a value")));
        };
        if flag == "--scene" {
            chosen = Some(scene(&flag, &value, &Scene::ALL)?);
        } else {
            sets.push((flag, value));
        }
    }

    let o = apply(chosen.unwrap_or(Scene::Field), &sets)?;
    // A mode of one scene starts from that scene's preset unless --scene said otherwise.
    let single = match &o.mode {
        Mode::Fit(s) => Some(*s),
        Mode::CheckReference(v) if v.len() == 1 => Some(v[0]),
        _ => None,
    };
    let o = match (single, chosen) {
        (Some(s), None) => apply(s, &sets)?,
        _ => o,
    };
    check(&o, chosen, sets.iter().any(|(f, _)| f == "--fps"))?;
    Ok(Parsed::Run(Box::new(o)))
}

/// The options of `sets` (flag, value) applied in order onto the preset of `chosen`.
fn apply(chosen: Scene, sets: &[(String, String)]) -> Result<Options, ArgError> {
    let max_procs = hos::machine::logical_processors().unwrap_or(4096) as u64;
    let mut o = Options {
        mode: Mode::Cell,
        scene: chosen,
        load: chosen.load(),
        load_flags: false,
        arms: None,
        pairs: None,
        frames: None,
        warmup: None,
        procs: None,
        calibrate_once: true,
        out: None,
        json: None,
        trace: None,
        repeat: 1,
        det: None,
        det_pace: None,
        det_record: None,
    };
    const BURST: u64 = 1_000_000;
    for (flag, v) in sets {
        let f = flag.as_str();
        let n = |lo, hi, what| number(f, v, lo, hi, what);
        let l = &mut o.load;
        o.load_flags |= !matches!(
            f,
            "--arms"
                | "--pairs"
                | "--frames"
                | "--warmup"
                | "--fps"
                | "--procs"
                | "--calibrate"
                | "--out"
                | "--json"
                | "--trace"
                | "--repeat"
                | "--matrix"
                | "--check-reference"
                | "--fit"
                | "--det"
                | "--det-pace"
                | "--det-record"
                | "--det-record-decisions"
        );
        match f {
            "--arms" => o.arms = Some(arms(f, v)?),
            "--pairs" => o.pairs = Some(n(1, 100, "a count of pairs")? as usize),
            "--frames" => o.frames = Some(n(1, 1_000_000, "a count of frames")? as usize),
            "--warmup" => o.warmup = Some(n(1, 100_000, "a count of frames")? as usize),
            "--repeat" => o.repeat = n(1, 100, "a count of repeats")? as usize,
            "--fps" => l.fps = n(0, 1000, "a frame cap in fps (0: none)")? as u32,
            "--main-us" => l.main_us = n(0, BURST, "a burst in us")?,
            "--exec-us" => l.exec_us = n(0, BURST, "a burst in us")?,
            "--present-us" => l.present_us = n(0, BURST, "a burst in us")?,
            "--job-us" => l.job_us = n(0, BURST, "a burst in us")?,
            "--jobs" => l.jobs = n(0, 1024, "a count of jobs a frame")? as usize,
            "--executors" => l.executors = n(1, 6, "one executor a core")? as usize,
            "--workers" => l.workers = n(0, 64, "a count of workers")? as usize,
            "--poll-us" => l.poll_us = n(1, 100_000, "a poll sleep in us")?,
            "--linger-us" if v.trim() == "none" => l.linger_us = None,
            "--linger-us" => l.linger_us = Some(n(0, 10 * BURST, "a time in us, or none")?),
            "--repoll-us" if v.trim() == "none" => l.repoll_us = None,
            "--repoll-us" => l.repoll_us = Some(n(1, 10 * BURST, "a time in us, or none")?),
            "--render-threads" if v.trim() == "machine" => l.host.render_threads = None,
            "--render-threads" => {
                l.host.render_threads = Some(n(1, 256, "a count of threads, or machine")? as usize);
            }
            "--render-us" => l.host.render_us = n(0, BURST, "a burst in us")?,
            "--gpu-us" => l.host.gpu_us = n(0, BURST, "a burst in us")?,
            "--audio-us" => l.host.audio_us = n(0, BURST, "a burst in us")?,
            "--audio-period-us" => l.host.audio_period_us = n(1, BURST, "a period in us")?,
            "--procs" => {
                o.procs = Some(n(
                    1,
                    max_procs,
                    "a count of logical processors this process may use",
                )? as usize);
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
                match f {
                    "--out" => o.out = Some(PathBuf::from(v)),
                    "--json" => o.json = Some(PathBuf::from(v)),
                    _ => o.trace = Some(PathBuf::from(v)),
                }
            }
            "--det" => {
                o.det = Some(crate::det::Det {
                    spec: crate::det::spec(f, v)?,
                    pacing: hos::det::clock::Pacing::Paced,
                    record: None,
                });
            }
            "--det-pace" => o.det_pace = Some(crate::det::pacing(f, v)?),
            "--det-record" | "--det-record-decisions" => {
                if o.det_record.is_some() {
                    return Err(ArgError(format!(
                        "{f} {v:?}: one of --det-record and --det-record-decisions, once"
                    )));
                }
                o.det_record = Some(crate::det::record(f, v)?);
            }
            "--matrix" | "--check-reference" | "--fit" => {
                if o.mode != Mode::Cell {
                    return Err(ArgError(format!("{f} {v:?}: one mode at a time")));
                }
                o.mode = mode(f, v)?;
            }
            _ => unreachable!("KNOWN and this match disagree on {f}"),
        }
    }
    if let (Some(d), Some(p)) = (&mut o.det, o.det_pace) {
        d.pacing = p;
    }
    if let Some(d) = &mut o.det {
        d.record = o.det_record.clone();
    }
    Ok(o)
}

/// The combinations no mode could run as asked.
fn check(o: &Options, chosen: Option<Scene>, fps_given: bool) -> Result<(), ArgError> {
    if o.load.jobs > 0 && o.load.workers == 0 {
        return Err(ArgError(format!(
            "--workers 0 with --jobs {}: nobody would run the jobs",
            o.load.jobs
        )));
    }
    if o.trace.is_some() && o.mode != Mode::Cell {
        return Err(ArgError(
            "--trace with --matrix, --check-reference or --fit: it traces one cell's first pair"
                .into(),
        ));
    }
    if o.det_pace.is_some() && o.det.is_none() {
        return Err(ArgError("--det-pace without --det".into()));
    }
    if o.det_record.is_some() && o.det.is_none() {
        return Err(ArgError("--det-record without --det".into()));
    }
    if o.det.is_some() && o.mode != Mode::Cell {
        return Err(ArgError(
            "--det with --matrix, --check-reference or --fit: it runs one cell".into(),
        ));
    }
    if o.repeat > 1 && o.trace.is_some() {
        return Err(ArgError(format!(
            "--trace with --repeat {}: it traces one cell's first pair",
            o.repeat
        )));
    }
    if o.repeat > 1 && matches!(o.mode, Mode::CheckReference(_) | Mode::Fit(_)) {
        return Err(ArgError(format!(
            "--repeat {} with --check-reference or --fit: they run their own pairs; repeat \
             the command instead",
            o.repeat
        )));
    }
    let scenes = match &o.mode {
        Mode::Cell => return Ok(()),
        Mode::Matrix(_) if o.procs.is_some() => {
            return Err(ArgError(
                "--procs with --matrix: the matrix sets each cell's processors".into(),
            ))
        }
        Mode::Matrix(_) if o.load_flags || chosen.is_some() || fps_given => {
            return Err(ArgError(
                "load flags, --scene or --fps with --matrix: the matrix runs its standard cells"
                    .into(),
            ))
        }
        Mode::Matrix(_) => return Ok(()),
        Mode::CheckReference(s) => s.clone(),
        Mode::Fit(s) => vec![*s],
    };
    if fps_given {
        return Err(ArgError(
            "--fps with --check-reference or --fit: each row runs at its own cap".into(),
        ));
    }
    if scenes.len() > 1 && o.load_flags {
        return Err(ArgError(
            "load flags with --check-reference all: name one scene to check a changed load".into(),
        ));
    }
    match chosen {
        Some(c) if !scenes.contains(&c) => Err(ArgError(format!(
            "--scene {}: this mode runs its own scenes ({})",
            c.name(),
            scenes
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        _ => Ok(()),
    }
}

/// The flags that make `load` from any scene's preset (every load field but the cap): what
/// a fit prints and hands to the check it runs.
pub(crate) fn load_flags(l: &Load) -> Vec<String> {
    let h = &l.host;
    let mut f: Vec<(&str, String)> = vec![
        ("--executors", l.executors.to_string()),
        ("--workers", l.workers.to_string()),
        ("--main-us", l.main_us.to_string()),
        ("--exec-us", l.exec_us.to_string()),
        ("--present-us", l.present_us.to_string()),
        ("--jobs", l.jobs.to_string()),
        ("--job-us", l.job_us.to_string()),
        ("--poll-us", l.poll_us.to_string()),
        (
            "--linger-us",
            l.linger_us.map_or("none".into(), |v| v.to_string()),
        ),
        (
            "--repoll-us",
            l.repoll_us.map_or("none".into(), |v| v.to_string()),
        ),
        (
            "--render-threads",
            h.render_threads.map_or("machine".into(), |v| v.to_string()),
        ),
        ("--render-us", h.render_us.to_string()),
        ("--gpu-us", h.gpu_us.to_string()),
        ("--audio-us", h.audio_us.to_string()),
        ("--audio-period-us", h.audio_period_us.to_string()),
    ];
    f.drain(..)
        .flat_map(|(flag, v)| [flag.to_string(), v])
        .collect()
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
    "--linger-us",
    "--repoll-us",
    "--render-threads",
    "--render-us",
    "--gpu-us",
    "--audio-us",
    "--audio-period-us",
    "--procs",
    "--calibrate",
    "--out",
    "--json",
    "--trace",
    "--repeat",
    "--matrix",
    "--check-reference",
    "--fit",
    "--det",
    "--det-pace",
    "--det-record",
    "--det-record-decisions",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostLoad;

    fn run(args: &[&str]) -> Result<Options, ArgError> {
        match parse(args.iter().map(ToString::to_string))? {
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
        assert_eq!(
            (o.arms, o.pairs),
            (Some(vec![Arm::Reactor, Arm::Seeds]), Some(2))
        );
        assert!(matches!(parse(["-h".to_string()]), Ok(Parsed::Help)));
        let o = run(&["--linger-us", "none", "--scene", "hyrule"]).unwrap();
        assert_eq!(o.load.linger_us, None);
        assert!(o.load_flags);
        let o = run(&["--fit", "kokiri", "--render-threads", "4"]).unwrap();
        assert_eq!(o.mode, Mode::Fit(Scene::Kokiri));
        assert_eq!(
            o.scene,
            Scene::Kokiri,
            "a mode of one scene starts from its preset"
        );
        assert_eq!(
            o.load,
            Load {
                host: HostLoad {
                    render_threads: Some(4),
                    ..Scene::Kokiri.load().host
                },
                ..Scene::Kokiri.load()
            }
        );
        let o = run(&["--check-reference", "hyrule", "--jobs", "2"]).unwrap();
        assert_eq!((o.scene, o.load.jobs), (Scene::Hyrule, 2));
    }

    #[test]
    fn load_flags_make_the_load_from_any_preset() {
        let mut l = Scene::Hyrule.load().scaled(1.3);
        l.host.render_threads = Some(3);
        l.workers = 7;
        l.repoll_us = Some(2500);
        for from in Scene::ALL {
            let mut args = vec!["--scene".to_string(), from.name().to_string()];
            args.extend(load_flags(&l));
            let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
            assert_eq!(
                o.load,
                Load {
                    fps: from.load().fps,
                    ..l
                },
                "from {from:?}"
            );
        }
        let field = Scene::Field.load();
        let mut args = vec!["--scene".to_string(), "hyrule".to_string()];
        args.extend(load_flags(&field));
        let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        assert_eq!(o.load, field);
    }

    #[test]
    fn bad_values_name_flag_and_value() {
        for (args, flag, value) in [
            (&["--procs", "0"][..], "--procs", "\"0\""),
            (&["--frames", "abc"], "--frames", "\"abc\""),
            (&["--arms", "fast"], "--arms", "\"fast\""),
            (&["--wat"], "--wat", "--wat"),
            (&["--pairs"], "--pairs", "needs a value"),
            (&["--fit", "field"], "--fit", "\"field\""),
            (&["--matrix", "2,0"], "--matrix", "\"0\""),
            (&["--repeat", "0"], "--repeat", "\"0\""),
            (&["--repeat", "101"], "--repeat", "\"101\""),
            (&["--repeat", "x"], "--repeat", "\"x\""),
            (&["--repoll-us", "0"], "--repoll-us", "\"0\""),
            (
                &["--render-threads", "many"],
                "--render-threads",
                "\"many\"",
            ),
        ] {
            let e = run(args).unwrap_err().0;
            assert!(e.contains(flag) && e.contains(value), "{args:?}: {e}");
        }
    }

    #[test]
    fn repeats_go_with_the_matrix_and_with_every_flag_of_one_cell() {
        let o = run(&["--matrix", "2,4,8", "--repeat", "3"]).unwrap();
        assert_eq!((o.mode, o.repeat), (Mode::Matrix(vec![2, 4, 8]), 3));
        assert_eq!(run(&["--matrix", "2"]).unwrap().repeat, 1, "the default");
        let o = run(&[
            "--repeat=5",
            "--procs",
            "1",
            "--fps",
            "0",
            "--main-us",
            "8000",
            "--exec-us",
            "5000",
            "--present-us",
            "2000",
            "--job-us",
            "800",
            "--workers",
            "3",
            "--poll-us",
            "50",
            "--arms",
            "reactor,grace",
        ])
        .unwrap();
        assert_eq!((o.mode, o.repeat, o.procs), (Mode::Cell, 5, Some(1)));
        let l = o.load;
        assert_eq!(
            (l.fps, l.main_us, l.exec_us, l.present_us, l.job_us),
            (0, 8000, 5000, 2000, 800)
        );
        assert_eq!((l.workers, l.poll_us), (3, 50));
        assert!(o.load_flags, "--repeat is no load flag, the bursts are");
        let o = run(&["--scene", "forest", "--repeat", "2", "--fps", "30"]).unwrap();
        assert_eq!((o.scene, o.repeat, o.load.fps), (Scene::Forest, 2, 30));
        assert!(!run(&["--repeat", "4"]).unwrap().load_flags);
        let o = run(&["--repeat", "1", "--trace", "t"]).unwrap();
        assert_eq!(o.repeat, 1, "one repeat traces as a lone run does");
    }

    #[test]
    fn grace_is_the_reactor_with_the_grace() {
        let o = run(&["--arms", "reactor,grace"]).unwrap();
        assert_eq!(o.arms, Some(vec![Arm::Reactor, Arm::Grace]));
        let grace = |a: Arm| a.config(None).vcore_grace_us;
        assert_eq!((grace(Arm::Reactor), grace(Arm::Auto)), (0, 0));
        assert_eq!(grace(Arm::Grace), 100);
        assert_eq!(
            Arm::Grace.config(None),
            hos::Config {
                vcore_grace_us: 100,
                ..Arm::Reactor.config(None)
            },
            "grace differs from the default by the grace alone"
        );
        assert!(Arm::MATRIX.starts_with(&Arm::DEFAULT) && Arm::MATRIX.contains(&Arm::Grace));
    }

    #[test]
    fn modes_that_could_not_run_as_asked() {
        for args in [
            &["--matrix", "2", "--fit", "hyrule"][..],
            &["--matrix", "2", "--procs", "1"],
            &["--check-reference", "all", "--main-us", "10"],
            &["--fit", "hyrule", "--scene", "kokiri"],
            &["--check-reference", "kokiri", "--fps", "30"],
            &["--matrix", "2", "--scene", "field"],
            &["--matrix", "2", "--trace", "t"],
            &["--fit", "kokiri", "--trace", "t"],
            &["--repeat", "2", "--trace", "t"],
            &["--repeat", "2", "--fit", "kokiri"],
            &["--check-reference", "all", "--repeat", "3"],
            &["--matrix", "2", "--repeat", "2", "--scene", "forest"],
        ] {
            assert!(run(args).is_err(), "{args:?}");
        }
    }
}
