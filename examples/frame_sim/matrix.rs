//! `--matrix`: the standard cells at each processor count of a list, in one command, and one
//! summary of them.
//!
//! Invariant: cells run most processors first (the process's mask narrows cell by cell), each
//! at its own count; every ratio in the summary is taken pair by pair inside one cell; a
//! count the process does not have is skipped and said so, never run at fewer.

use crate::args::Options;
use crate::arms::Arm;
use crate::cell::{self, Cell, CellSpec};
use crate::figures::{median, Figures};
use crate::report::{self, Context};
use crate::scenes::Scene;
use crate::verdict::Verdict;
use hos::PrecisePath;
use std::fmt::Write as _;
use std::path::Path;

/// One standard cell.
struct Standard {
    /// Its name in the summary.
    name: &'static str,
    /// The scene.
    scene: Scene,
    /// The cap, where it is not the scene's.
    fps: Option<u32>,
    /// `--calibrate once` (true) or `each`.
    once: bool,
    /// The only processor count it runs at, if it is not every one.
    only_at: Option<usize>,
}

/// The standard cells, in run order at each count.
const STANDARD: [Standard; 4] = [
    Standard {
        name: "field",
        scene: Scene::Field,
        fps: None,
        once: true,
        only_at: None,
    },
    Standard {
        name: "field, calibrate each",
        scene: Scene::Field,
        fps: None,
        once: false,
        only_at: None,
    },
    Standard {
        name: "field, uncapped",
        scene: Scene::Field,
        fps: Some(0),
        once: true,
        only_at: None,
    },
    Standard {
        name: "heavy",
        scene: Scene::Heavy,
        fps: None,
        once: true,
        only_at: Some(4),
    },
];

/// Runs the matrix over `list` and prints its summary.
///
/// # Errors
/// A run failed or an output could not be written.
pub(crate) fn run(o: &Options, list: &[usize], out: &Path) -> Result<(), String> {
    let have = hos::machine::logical_processors().unwrap_or(usize::MAX);
    let mut counts = list.to_vec();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let (counts, skipped): (Vec<usize>, Vec<usize>) = counts.into_iter().partition(|&n| n <= have);
    let kernel = report::kernel();
    let dir = out.join("matrix");
    let mut cells: Vec<(usize, &Standard, Cell)> = Vec::new();
    for n in counts {
        hos::machine::restrict_processors(n).map_err(|e| format!("restricting to {n}: {e}"))?;
        for std in STANDARD.iter().filter(|s| s.only_at.is_none_or(|p| p == n)) {
            let mut load = std.scene.load();
            if let Some(fps) = std.fps {
                load.fps = fps;
            }
            let label = format!("p{n} {}", std.name);
            let cell = cell::run(
                CellSpec {
                    load,
                    arms: o.arms.clone().unwrap_or_else(|| Arm::DEFAULT.to_vec()),
                    pairs: o.pairs.unwrap_or(3),
                    warmup: o.warmup.unwrap_or(30),
                    frames: o.frames.unwrap_or(180),
                    calibrate_once: std.once,
                    trace: None,
                },
                &label,
            )?;
            let ctx = Context {
                scene: std.name,
                cell: &cell,
                kernel: &kernel,
            };
            let cell_dir = dir.join(format!("p{n}-{}", slug(std.name)));
            report::save(&ctx, &cell_dir, Some(&cell_dir.join("cell.json")))?;
            report::write(&cell_dir.join("table.txt"), &report::table(&ctx))?;
            cells.push((n, std, cell));
        }
    }
    let mut t = summary(&cells);
    if !skipped.is_empty() {
        let _ = writeln!(
            t,
            "skipped (the process may use {have} processors): {}",
            skipped
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    print!("{t}");
    report::write(&dir.join("summary.txt"), &t)?;
    println!(
        "each cell's table, frames and plot: {}/p<N>-<cell>/",
        dir.display()
    );
    Ok(())
}

fn slug(name: &str) -> String {
    name.replace(", ", "-").replace(' ', "-")
}

fn cell_text(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// Pair by pair: the reactor's p99 over the best arm's p99 of the same pair, the median.
fn p99_vs_best(cell: &Cell) -> f64 {
    let s = &cell.summary;
    let Some(r) = s.arm(Arm::Reactor) else {
        return f64::NAN;
    };
    median((0..r.runs.len()).map(|pair| {
        let best = s
            .arms
            .iter()
            .filter_map(|a| a.runs.get(pair).map(|f| f.p99))
            .fold(f64::INFINITY, f64::min);
        r.runs[pair].p99 / best
    }))
}

/// The reactor's runs: frames over 100 ms and escapes, summed.
fn reactor_totals(cell: &Cell) -> (u64, u64) {
    cell.summary.arm(Arm::Reactor).map_or((0, 0), |a| {
        a.runs
            .iter()
            .fold((0, 0), |(f, e), r| (f + r.over[1], e + r.escapes_total))
    })
}

/// The summary: CPU and fps, pickup latencies, and the calibrate-each cells' spread.
fn summary(cells: &[(usize, &Standard, Cell)]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\nframe_sim --matrix: medians of pairs; r = reactor (the default), a = auto, s = seeds; \
         ratios pair by pair within a cell\n"
    );
    let _ = writeln!(
        t,
        "{:>5}  {:<23}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}{:>9}{:>8}{:>8}{:>9}{:>12}{:>8}{:>8}",
        "procs",
        "cell",
        "s CPU",
        "a CPU",
        "r CPU",
        "r/a",
        "r/s",
        "r own",
        "own r/a",
        "bursts",
        "r fps",
        "fps r/a",
        "p99 r/best",
        ">100ms",
        "escapes"
    );
    for (n, std, c) in cells {
        let s = &c.summary;
        let (key, own) = ("cpu_ms_per_frame", "own_cost_ms_per_frame");
        let (over, escapes) = reactor_totals(c);
        let _ = writeln!(
            t,
            "{n:>5}  {:<23}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}{:>9}{:>8.2}{:>8}{:>9}{:>12}{over:>8}{escapes:>8}",
            std.name,
            cell_text(s.median(Arm::Seeds, key), 2),
            cell_text(s.median(Arm::Auto, key), 2),
            cell_text(s.median(Arm::Reactor, key), 2),
            cell_text(s.ratio(Arm::Reactor, Arm::Auto, key), 3),
            cell_text(s.ratio(Arm::Reactor, Arm::Seeds, key), 3),
            cell_text(s.median(Arm::Reactor, own), 2),
            cell_text(s.ratio(Arm::Reactor, Arm::Auto, own), 3),
            c.spec.load.cpu_per_frame().as_secs_f64() * 1e3,
            cell_text(s.median(Arm::Reactor, "fps"), 2),
            cell_text(s.ratio(Arm::Reactor, Arm::Auto, "fps"), 3),
            cell_text(p99_vs_best(c), 3),
        );
    }
    let _ = writeln!(t, "\nverdicts:");
    for (n, std, c) in cells {
        let _ = writeln!(
            t,
            "{n:>5}  {:<23}{}",
            std.name,
            Verdict::line(&c.summary).trim_start_matches("verdict: ")
        );
    }
    let _ = writeln!(
        t,
        "\npickup latency, post to start, us (auto, reactor, r/a):\n{:>5}  {:<23}{:>24}{:>24}{:>24}{:>24}",
        "procs", "cell", "job p50", "job p99", "exec msg p50", "exec msg p99"
    );
    for (n, std, c) in cells {
        let s = &c.summary;
        let mut line = format!("{n:>5}  {:<23}", std.name);
        for key in [
            "job_pickup_p50_us",
            "job_pickup_p99_us",
            "exec_pickup_p50_us",
            "exec_pickup_p99_us",
        ] {
            let _ = write!(
                line,
                "{:>24}",
                format!(
                    "{} {} {}",
                    cell_text(s.median(Arm::Auto, key), 1),
                    cell_text(s.median(Arm::Reactor, key), 1),
                    cell_text(s.ratio(Arm::Reactor, Arm::Auto, key), 2)
                )
            );
        }
        let _ = writeln!(t, "{line}");
    }
    let each: Vec<_> = cells.iter().filter(|(_, s, _)| !s.once).collect();
    if !each.is_empty() {
        let _ = writeln!(
            t,
            "\ncalibrate each (every runtime measures at build): the spread of its choices\n\
             {:>5}  {:<28}{:<22}{:<22}precise path, runs",
            "procs", "r/a CPU, pair by pair", "timer late us, runs", "wake us, runs",
        );
        for (n, _, c) in each {
            let ratios = c
                .summary
                .pair_ratios(Arm::Reactor, Arm::Auto, "cpu_ms_per_frame")
                .unwrap_or_default();
            let runs: Vec<&Figures> = c.summary.arms.iter().flat_map(|a| &a.runs).collect();
            let range = |get: fn(&Figures) -> f64| {
                let v: Vec<f64> = runs.iter().map(|f| get(f)).collect();
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                format!("{} - {}", cell_text(lo, 1), cell_text(hi, 1))
            };
            let reactor_path = runs
                .iter()
                .filter(|f| f.precise == PrecisePath::Reactor)
                .count();
            let _ = writeln!(
                t,
                "{n:>5}  {:<28}{:<22}{:<22}own timer {}, reactor {}",
                ratios
                    .iter()
                    .map(|r| format!("{r:.3}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                range(|f| f.timer_late_us),
                range(|f| f.wake_us),
                runs.len() - reactor_path,
                reactor_path
            );
        }
    }
    t.push_str(LEGEND);
    t
}

/// What the summary's columns mean, printed under it.
const LEGEND: &str = "
legend: X CPU = arm X's CPU ms a frame (the process's, over the window); r/a, r/s = the
reactor's over auto's, seeds' in the same pair; r own = the reactor's own cost, its CPU ms
a frame less the load's bursts (column bursts, ms a frame); own r/a = that over auto's;
r fps, fps r/a = the reactor's fps and its ratio to auto's; p99 r/best = its frame p99 over
the best arm's in the same pair; >100ms, escapes = the reactor's frames over 100 ms and
virtual-core escapes, every pair; a verdict as under a cell's table (--help says how).
";
