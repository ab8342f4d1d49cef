//! frame_sim: the main job. A game-shaped load on hos, run under each arm (a runtime
//! configuration), the arms alternating, the figures of docs/design.md section 11 side by side.
//!
//! Invariant: arms are compared only on runs made the same way in the same invocation:
//! the same load, the same processors (`--procs` is applied before the first runtime is
//! built), arms alternating A B C A B C, each run on a fresh runtime; and everything the
//! run prints comes from the same figures (table, CSV, JSON, plot).
//!
//! `cargo run --release --example frame_sim [-- --help]`
//!
//! | module | what |
//! | --- | --- |
//! | `args` | flags, scenes, bad values |
//! | `load` | the threads: game thread, executors, job workers, presentation; calibrated bursts |
//! | `arms` | the arms' configs and one run of one arm |
//! | `figures` | a run's figures, medians and ratios over pairs |
//! | `report` | the table, `frames.csv`, the JSON |
//! | `plot` | the SVG frame-time plot |
//! | `progress` | the progress bar on stderr |
//! | `critical` | `--trace`: the first pair's trace files and each arm's critical path |

mod args;
mod arms;
mod critical;
mod figures;
mod load;
mod plot;
mod progress;
mod report;

use args::{Options, Parsed};
use figures::{Figures, Summary};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let opts = match args::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            print!("{}", args::HELP);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("frame_sim: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(n) = opts.procs {
        if let Err(e) = hos::machine::restrict_processors(n) {
            eprintln!("frame_sim: --procs {n}: {e}");
            return ExitCode::from(2);
        }
    }
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("frame_sim: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(o: &Options) -> Result<(), String> {
    std::fs::create_dir_all(&o.out).map_err(|e| format!("--out {}: {e}", o.out.display()))?;
    if let Some(dir) = &o.trace {
        std::fs::create_dir_all(dir).map_err(|e| format!("--trace {}: {e}", dir.display()))?;
    }
    let processors = hos::machine::logical_processors();
    let calibration = if o.calibrate_once {
        Some(arms::calibrate()?)
    } else {
        None
    };
    let mut progress = progress::Progress::new(o.arms.len() * o.pairs, o.warmup, o.frames);
    let mut runs = Vec::new();
    for pair in 1..=o.pairs {
        for &arm in &o.arms {
            progress.run(arm.name(), pair, o.pairs);
            let r = arms::run(arm, pair, o, calibration, &mut progress)
                .inspect_err(|_| progress.clear())?;
            let f = Figures::of(&r);
            progress.run_done(&format!(
                "{:.2} fps, {:.2} CPU ms/frame, p99 {:.2} ms",
                f.fps, f.cpu_ms_frame, f.p99
            ));
            runs.push((r, f));
        }
    }
    progress.clear();

    let summary = Summary::new(
        o.arms
            .iter()
            .map(|&a| {
                let figs = runs
                    .iter()
                    .filter(|(r, _)| r.arm == a)
                    .map(|(_, f)| f.clone())
                    .collect();
                (a, figs)
            })
            .collect(),
    );
    let mut ctx = report::Context {
        opts: o,
        processors,
        calibration,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into()),
        critical: None,
    };
    print!("{}", report::table(&ctx, &summary));
    println!();

    let runs: Vec<arms::Run> = runs.into_iter().map(|(r, _)| r).collect();
    if let Some(dir) = &o.trace {
        print!("{}", critical::table(&runs));
        println!("traces: {} (one file an arm of pair 1)\n", dir.display());
        ctx.critical = Some(critical::json(&runs));
    }
    let csv = o.out.join("frames.csv");
    report::csv(&csv, &runs).map_err(|e| format!("writing {}: {e}", csv.display()))?;
    let svg_path = o.out.join("frame_sim.svg");
    let series: Vec<plot::Series> = o
        .arms
        .iter()
        .map(|&arm| plot::Series {
            arm,
            pairs: runs
                .iter()
                .filter(|r| r.arm == arm)
                .map(|r| r.frame_ms.as_slice())
                .collect(),
        })
        .collect();
    let title = format!(
        "frame_sim, scene {}: {} frames x {} pair{}, {} logical processors",
        o.scene.name(),
        o.frames,
        o.pairs,
        if o.pairs == 1 { "" } else { "s" },
        processors.map_or("?".to_string(), |n| n.to_string())
    );
    let cap_ms = (o.load.fps > 0).then(|| 1e3 / o.load.fps as f64);
    write(&svg_path, &plot::svg(&title, &series, cap_ms))?;
    println!("frames: {}", csv.display());
    println!("plot:   {}", svg_path.display());
    if let Some(j) = &o.json {
        if let Some(dir) = j.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("--json {}: {e}", j.display()))?;
        }
        write(j, &report::json(&ctx, &summary))?;
        println!("json:   {}", j.display());
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}
