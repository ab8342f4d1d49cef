//! `--matrix`: the standard cells at each processor count of a list, in one command, and one
//! summary of them.
//!
//! Invariant: cells run most processors first (the process's mask narrows cell by cell), each
//! at its own count; every ratio in the summary is taken pair by pair inside one cell; a
//! count the process does not have is skipped and said so, never run at fewer. With
//! `--repeat N` the whole matrix runs N times, every cell on fresh runtimes each time, and
//! what holds over the repeats is read from their summaries (`repeats.rs`).

use crate::args::Options;
use crate::arms::Arm;
use crate::cell::{self, Cell, CellSpec};
use crate::figures::Figures;
use crate::grace::{self, GraceRound, GraceVerdict};
use crate::headline;
use crate::output;
use crate::repeats::Repeats;
use crate::report::{self, Context};
use crate::scenes::Scene;
use crate::verdict::{Verdict, DEFAULT};
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

/// Runs the matrix over `list`, `o.repeat` times, and prints each repeat's summary and, over
/// several, what holds over them.
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
    let mut repeats = Repeats::default();
    for repeat in 1..=o.repeat {
        let at = output::repeat_dir(&dir, repeat, o.repeat);
        let tag = if o.repeat > 1 {
            format!("r{repeat}/{} ", o.repeat)
        } else {
            String::new()
        };
        let cells = run_cells(o, &counts, &at, &tag, &kernel)?;
        for (n, std, cell) in &cells {
            repeats.add(&format!("p{n} {}", std.name), cell);
        }
        let mut t = summary(&cells);
        if o.repeat > 1 {
            t.insert_str(0, &format!("\n== repeat {repeat} of {}", o.repeat));
        }
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
        report::write(&at.join("summary.txt"), &t)?;
    }
    if o.repeat > 1 {
        let t = repeats.text();
        print!("{t}");
        report::write(&dir.join("repeats.txt"), &t)?;
    }
    let json = repeats.json();
    report::write(&dir.join("summary.json"), &json)?;
    if let Some(j) = &o.json {
        report::write(j, &json)?;
    }
    println!(
        "each cell's table, frames and plot: {}/p<N>-<cell>/; the summary's JSON: {}",
        if o.repeat > 1 {
            dir.join("repeat<R>").display().to_string()
        } else {
            dir.display().to_string()
        },
        dir.join("summary.json").display()
    );
    Ok(())
}

/// Every standard cell at each of `counts` (most first: the mask narrows cell by cell, and a
/// next repeat widens it again), each cell's files under `at`; `tag` starts each cell's name
/// on stderr.
fn run_cells(
    o: &Options,
    counts: &[usize],
    at: &Path,
    tag: &str,
    kernel: &str,
) -> Result<Vec<(usize, &'static Standard, Cell)>, String> {
    let mut cells = Vec::new();
    for &n in counts {
        hos::machine::restrict_processors(n).map_err(|e| format!("restricting to {n}: {e}"))?;
        for std in STANDARD.iter().filter(|s| s.only_at.is_none_or(|p| p == n)) {
            let mut load = std.scene.load();
            if let Some(fps) = std.fps {
                load.fps = fps;
            }
            let cell = cell::run(
                CellSpec {
                    load,
                    arms: o.arms.clone().unwrap_or_else(|| Arm::MATRIX.to_vec()),
                    pairs: o.pairs.unwrap_or(3),
                    warmup: o.warmup.unwrap_or(30),
                    frames: o.frames.unwrap_or(180),
                    calibrate_once: std.once,
                    trace: None,
                    det: None,
                },
                &format!("{tag}p{n} {}", std.name),
            )?;
            let ctx = Context {
                scene: std.name,
                cell: &cell,
                kernel,
            };
            let cell_dir = at.join(format!("p{n}-{}", slug(std.name)));
            report::save(&ctx, &cell_dir, Some(&cell_dir.join("cell.json")))?;
            report::write(&cell_dir.join("table.txt"), &report::table(&ctx))?;
            cells.push((n, std, cell));
        }
    }
    Ok(cells)
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
        "{:>5}  {:<23}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}{:>9}{:>8}{:>11}{:>8}{:>9}{:>12}{:>11}{:>8}{:>8}",
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
        "own/bursts",
        "r fps",
        "fps r/a",
        "p99 r/best",
        "revokes/f",
        ">100ms",
        "escapes"
    );
    for (n, std, c) in cells {
        let s = &c.summary;
        let (key, own) = ("cpu_ms_per_frame", "own_cost_ms_per_frame");
        let h = headline::of(c);
        let escapes = headline::totals(c).1.map_or("-".into(), |e| e.to_string());
        let _ = writeln!(
            t,
            "{n:>5}  {:<23}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}{:>9}{:>8.2}{:>11}{:>8}{:>9}{:>12}{:>11}{:>8}{escapes:>8}",
            std.name,
            cell_text(s.median(Arm::Seeds, key), 2),
            cell_text(s.median(Arm::Auto, key), 2),
            cell_text(s.median(DEFAULT, key), 2),
            cell_text(h[0], 3),
            cell_text(s.ratio(DEFAULT, Arm::Seeds, key), 3),
            cell_text(s.median(DEFAULT, own), 2),
            cell_text(h[1], 3),
            c.spec.load.cpu_per_frame().as_secs_f64() * 1e3,
            cell_text(h[2], 3),
            cell_text(s.median(DEFAULT, "fps"), 2),
            cell_text(h[3], 3),
            cell_text(h[4], 3),
            cell_text(h[5], 3),
            cell_text(h[6], 0),
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
    let graces: Vec<_> = cells
        .iter()
        .filter_map(|(n, std, c)| Some((n, std.name, GraceRound::of(&c.summary)?)))
        .collect();
    if !graces.is_empty() {
        let _ = writeln!(
            t,
            "\nthe kick's grace: {} against the default, pair by pair (turned on where it buys \
             {:.0} % of fps or p99 beyond the spread):",
            grace::GRACE.name(),
            grace::KEEP * 100.0
        );
        for (n, name, round) in graces {
            if let Some(v) = GraceVerdict::of(&[round]) {
                let _ = writeln!(t, "{n:>5}  {name:<23}{v}");
            }
        }
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
own/bursts = that over the bursts; r fps, fps r/a = the reactor's fps and its ratio to
auto's; p99 r/best = its frame p99 over the best arm's in the same pair; revokes/f = its
revokes a frame (cores taken after a kick's grace: each lets one thread more than the virtual
cores run guest code until its next checkpoint; 0 under the strict bound, the default); >100ms,
escapes = its frames over 100 ms and virtual-core escapes, every pair; a verdict as under a
cell's table (--help says how); a grace line: the grace arm's fps, p99 and own cost over
the reactor's (strict, the grace off) in the same pair, each arm's revokes a frame, and the
gain in fps and p99 against the range of the pairs' ratios.
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headline::tests::cell;
    use crate::repeats::tests::run;

    #[test]
    fn the_summary_counts_revokes_and_judges_the_grace_where_it_ran() {
        let pairs = |fps: f64, revokes: f64| vec![run(fps, revokes), run(fps * 1.002, revokes)];
        let with = cell(vec![
            (Arm::Auto, pairs(60.0, 0.0)),
            (Arm::Reactor, pairs(63.0, 0.25)),
            (Arm::Grace, pairs(66.15, 0.5)),
        ]);
        let without = cell(vec![
            (Arm::Auto, pairs(60.0, 0.0)),
            (Arm::Reactor, pairs(60.0, 0.25)),
        ]);
        let t = summary(&[(4, &STANDARD[0], with), (4, &STANDARD[2], without)]);
        let line = |start: &str, has: &str| {
            t.lines()
                .filter(|l| l.starts_with(start) && l.contains(has))
                .count()
        };
        assert_eq!(line("    4  field   ", "  0.250   "), 1, "revokes/f: {t}");
        assert_eq!(line("    4  field   ", "  1.050  "), 1, "fps r/a: {t}");
        assert_eq!(
            line("    4  ", "grace buys"),
            1,
            "only where grace ran: {t}"
        );
        assert_eq!(
            line(
                "    4  field   ",
                "grace buys 5.0 % fps / 0.0 % p99 against a spread of 0.0 %"
            ),
            1,
            "{t}"
        );
        assert_eq!(
            line("    4  field   ", "turn it on (fps at least 1 %"),
            1,
            "{t}"
        );
        assert_eq!(
            line("    4  field   ", "wins against auto"),
            1,
            "grace is no other design: {t}"
        );
    }
}
