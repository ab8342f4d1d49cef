//! frame_sim: the main job. A game-shaped load on hos, run under each arm (a runtime
//! configuration), the arms alternating, the figures of docs/design.md section 11 side by side;
//! the standard cells in one command (`--matrix`), either of them repeated (`--repeat`); the
//! reference host's published A/B reproduced (`--check-reference`) and fitted (`--fit`).
//! docs/frame_sim.md describes the model, the scenes and the fitting procedure.
//!
//! Invariant: arms are compared only on runs made the same way in the same cell (`cell.rs`),
//! and everything a cell prints comes from the same figures (table, CSV, JSON, plot).
//!
//! `cargo run --release --example frame_sim [-- --help]`
//!
//! | module | what |
//! | --- | --- |
//! | `args` | flags, modes, bad values |
//! | `scenes` | the presets and why their bursts are what they are |
//! | `load` | the guest threads: game thread, executors, job workers, presentation |
//! | `host` | the host's own threads: renderer pool, GPU submit, audio renderer |
//! | `burst` | CPU work on the thread's own clock |
//! | `pickup` | post-to-start latency of jobs and executor messages |
//! | `arms` | the arms' configs and one run of one arm |
//! | `cell` | the arms alternating over pairs, at one processor count |
//! | `group` | the thread groups CPU is split by |
//! | `figures` | a run's figures, medians and ratios over pairs |
//! | `report` | the table, `frames.csv`, the JSON; a cell's files |
//! | `plot`, `svg` | the SVG plot, and its drawing primitives |
//! | `progress` | the progress bar on stderr |
//! | `matrix` | `--matrix`: the standard cells at several processor counts |
//! | `reference` | the reference host's rows, `--check-reference` |
//! | `fit` | `--fit`: probes, a local model, the fitted preset, its check |
//! | `critical` | `--trace`: the first pair's trace files and each arm's critical path |
//! | `verdict` | a cell's verdict: the default arm against the strongest other, and over repeats |
//! | `headline` | the default's figures the matrix summary prints and the repeats spread |
//! | `grace` | the kick's grace on evidence: the `grace` arm against the default (strict) |
//! | `repeats` | `--repeat`: what holds over the repeats of the cells |
//! | `spread` | min / median / max over repeats (sleep_compare's, shared) |
//! | `output` | where a run's files go |
//! | `sync` | the poison-free lock |

mod args;
mod arms;
mod burst;
mod cell;
mod critical;
mod det;
mod figures;
mod fit;
mod grace;
mod group;
mod headline;
mod host;
mod input;
mod load;
mod matrix;
mod output;
mod pickup;
mod plot;
mod progress;
mod reference;
mod repeats;
mod report;
mod scenes;
#[path = "../sleep_compare/spread.rs"]
mod spread;
mod svg;
mod vclock;
mod verdict;

use args::{Mode, Options, Parsed};
use arms::Arm;
use cell::CellSpec;
use grace::{GraceRound, GraceVerdict};
use repeats::Repeats;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let opts = match args::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            print!("{}{}", args::HELP, report::legend());
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
    let done = output::resolve(opts.out.as_deref()).and_then(|out| {
        println!("output: {}", out.display());
        match &opts.mode {
            Mode::Cell => one_cell(&opts, &out),
            Mode::Matrix(list) => matrix::run(&opts, list, &out),
            Mode::CheckReference(scenes) => reference::run(&opts, scenes, &out),
            Mode::Fit(scene) => fit::run(&opts, *scene, &out),
        }
    });
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("frame_sim: {e}");
            ExitCode::from(1)
        }
    }
}

/// One cell of the scene, `o.repeat` times: each repeat's table (and, where the default and
/// strict ran, what the grace buys), the legend, and over several repeats what holds over
/// them; each repeat's frames, plot and JSON in `out` (a folder a repeat, over several).
fn one_cell(o: &Options, out: &Path) -> Result<(), String> {
    if let Some(dir) = &o.trace {
        std::fs::create_dir_all(dir).map_err(|e| format!("--trace {}: {e}", dir.display()))?;
    }
    let kernel = report::kernel();
    let mut repeats = Repeats::default();
    for repeat in 1..=o.repeat {
        let cell = cell::run(
            CellSpec {
                load: o.load,
                arms: o.arms.clone().unwrap_or_else(|| Arm::DEFAULT.to_vec()),
                pairs: o.pairs.unwrap_or(3),
                warmup: o.warmup.unwrap_or(60),
                frames: o.frames.unwrap_or(300),
                calibrate_once: o.calibrate_once,
                trace: o.trace.clone(),
                det: o.det.clone(),
            },
            &if o.repeat > 1 {
                format!("r{repeat}/{}", o.repeat)
            } else {
                String::new()
            },
        )?;
        let ctx = report::Context {
            scene: o.scene.name(),
            cell: &cell,
            kernel: &kernel,
        };
        if o.repeat > 1 {
            println!("\n== repeat {repeat} of {}", o.repeat);
        }
        print!("{}", report::table(&ctx));
        if let Some(v) = GraceRound::of(&cell.summary).and_then(|r| GraceVerdict::of(&[r])) {
            println!("grace, {} over the default: {v}", grace::GRACE.name());
        }
        if o.det.is_some() {
            for r in &cell.runs {
                println!(
                    "{}",
                    det::line(r.arm.name(), r.pair, r.det, r.replay.as_ref())
                );
            }
        }
        if let Some(dir) = &o.trace {
            print!("\n{}", critical::table(&cell.runs));
            println!("traces: {} (one file an arm of pair 1)", dir.display());
        }
        let at = output::repeat_dir(out, repeat, o.repeat);
        // A lone run's JSON goes to --json; over repeats each repeat's to its folder and the
        // repeats' to --json.
        let json = match (&o.json, o.repeat) {
            (Some(j), 1) => Some(j.clone()),
            (_, 1) => None,
            _ => Some(at.join("cell.json")),
        };
        let written = report::save(&ctx, &at, json.as_deref())?;
        for (what, path) in ["frames:", "plot:  ", "json:  "].iter().zip(&written) {
            println!("{what} {}", path.display());
        }
        repeats.add(o.scene.name(), &cell);
    }
    println!("\n{}", report::legend());
    if o.repeat > 1 {
        let text = repeats.text();
        print!("{text}");
        report::write(&out.join("repeats.txt"), &text)?;
        let json = repeats.json();
        report::write(&out.join("repeats.json"), &json)?;
        if let Some(j) = &o.json {
            report::write(j, &json)?;
        }
        println!("repeats: {}", out.join("repeats.json").display());
    }
    Ok(())
}
