//! det_search: runs seeds of the deterministic mode on a bug of the zoo in parallel child
//! processes until enough fail, prints the failing seeds, shrinks the first one (its setup,
//! then its schedule by its decision log, written as a `.hosrec` that replays it), and
//! puts beside it how often normal mode (the mode off) shows the same bug
//! (docs/determinism.md section 9; `--help` for the flags).
//!
//! Invariant: every figure printed comes from trials that ran: a failing seed is printed
//! with the outcome and the decisions its trial gave, and nothing is extrapolated.
//!
//! | file | part |
//! | --- | --- |
//! | `args.rs` | the command line |
//! | `zoo.rs` | the bug zoo's programs (shared with `tests/det_zoo.rs`) |
//! | `trial.rs` | one trial and its outcome (shared with `tests/det_zoo.rs`) |
//! | `child.rs` | a child's batch of trials and its result lines |
//! | `pool.rs` | the children, a few at a time |
//! | `shrink.rs` | a failing setup made smaller |
//! | `schedule.rs` | a failing schedule made smaller by its decision log |
//! | `ddmin.rs` | delta debugging's minimisation |

mod args;
mod child;
mod ddmin;
mod pool;
mod schedule;
mod shrink;
mod trial;
mod zoo;

use args::{Kind, Options, Parsed};
use child::{Line, NORMAL};
use hos::det::selector::Spec;
use pool::Pool;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zoo::{pct_seeds, Bug, STEPS};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(child::CHILD) {
        return match child::run(&argv[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("det_search child: {e}");
                ExitCode::from(2)
            }
        };
    }
    match args::parse(argv) {
        Err(e) => {
            eprintln!("det_search: {e}");
            ExitCode::from(2)
        }
        Ok(Parsed::Help) => {
            print!("{}", args::HELP);
            ExitCode::SUCCESS
        }
        Ok(Parsed::Search(o)) => match search(&o) {
            Ok(false) => ExitCode::SUCCESS,
            Ok(true) => ExitCode::from(1),
            Err(e) => {
                eprintln!("det_search: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// The selector `kind` names for `seed`.
fn spec(kind: Kind, depth: u32, seed: u64) -> Spec {
    match kind {
        Kind::Pct => Spec::Pct {
            depth,
            seed,
            steps: STEPS,
        },
        Kind::Random => Spec::Random { seed },
        Kind::Chaos => Spec::Chaos { seed },
    }
}

/// The median and the largest of `v` (sorted here); `None` when empty.
fn median_most(mut v: Vec<u64>) -> Option<(u64, u64)> {
    v.sort_unstable();
    Some((*v.get(v.len() / 2)?, *v.last()?))
}

/// Seeds a find took: from the first seed to the first failing one, then from each failing
/// one to the next (in the order of `jobs`).
fn seeds_per_find(lines: &[Line], fails: impl Fn(&Line) -> bool) -> Vec<u64> {
    let mut gaps = Vec::new();
    let mut since = 0u64;
    for l in lines {
        since += 1;
        if fails(l) {
            gaps.push(since);
            since = 0;
        }
    }
    gaps
}

/// Runs the search of every bug `o` names; `true` if a seed failed.
fn search(o: &Options) -> Result<bool, String> {
    let pool = Pool {
        jobs: o.jobs,
        batch: o.batch,
        quantum: o.quantum,
        stall: o.stall,
        silence: Duration::from_secs(30),
    };
    let fails = |l: &Line| o.fail_on.fails(&l.kind);
    let mut any = false;
    for &bug in &o.bugs {
        let depth = o.depth.unwrap_or(bug.depth());
        let seeds = o.seeds.unwrap_or(match o.kind {
            Kind::Pct => pct_seeds(bug.threads(), depth, 0.99),
            Kind::Random | Kind::Chaos => 1000,
        });
        let jobs: Vec<String> = (0..seeds)
            .map(|i| spec(o.kind, depth, o.from.saturating_add(i)).to_string())
            .collect();
        let start = Instant::now();
        let lines = pool.run(bug, &jobs, |ls| {
            o.until > 0 && ls.iter().filter(|l| fails(l)).count() as u64 >= o.until
        })?;
        let failed: Vec<&Line> = lines.iter().filter(|l| fails(l)).collect();
        any |= !failed.is_empty();
        println!(
            "{}: {} of {} trials failed ({} seeds from {}, quantum {}, {:.1?}, {} jobs)",
            bug.name(),
            failed.len(),
            lines.len(),
            seeds,
            jobs.first().map_or("-", String::as_str),
            o.quantum,
            start.elapsed(),
            o.jobs,
        );
        for l in &failed {
            let figures = l.figures.map_or(String::new(), |(d, h, vt)| {
                format!(" [decisions {d}, hash {h:#018x}, vt {vt} ns]")
            });
            println!("  FAIL {}: {}{figures}", l.job, l.text);
        }
        if o.until == 0 {
            if let Some((median, most)) = median_most(seeds_per_find(&lines, fails)) {
                println!("  seeds a find took: median {median}, most {most}");
            }
        }
        if let Some(first) = failed.first().filter(|_| o.shrink) {
            let spec: Spec = first.job.parse().map_err(|e| format!("{e}"))?;
            let out = std::env::temp_dir().join(format!(
                "det_search-{}-{}.hosrec",
                bug.name(),
                std::process::id()
            ));
            let s = shrink::shrink(bug, &spec, o.quantum, o.stall, o.fail_on, &out);
            print_shrunk(&s);
        }
        if let Some(n) = o.normal {
            normal(&pool, bug, n, &fails)?;
        }
    }
    Ok(any)
}

/// Prints a shrink: the setup's steps and smallest setup, then the schedule's.
fn print_shrunk(s: &shrink::Shrunk) {
    println!("  shrink, the setup:");
    for step in &s.steps {
        println!("    {step}");
    }
    if let Some((spec, q, t)) = &s.best {
        let d = t.figures.map_or(0, |f| f.decisions);
        println!(
            "  smallest setup: {spec} --quantum {q}: {} ({d} decisions)",
            t.outcome
        );
    }
    match &s.schedule {
        None => {}
        Some(Err(why)) => println!("  shrink, the schedule: failed: {why}"),
        Some(Ok(c)) => {
            println!("  shrink, the schedule (by its decision log):");
            for step in &c.steps {
                println!("    {step}");
            }
            let d = c.trial.figures.map_or(0, |f| f.decisions);
            println!(
                "  shrunk schedule: the first {} decisions then stable, {} of {} deviations \
                 from stable, {d} decisions, {} trials: {}",
                c.prefix,
                c.deviations.len(),
                c.recorded,
                c.trials,
                c.trial.outcome
            );
            for v in &c.deviations {
                println!(
                    "    decision {}: thread {} (candidate #{})",
                    v.decision, v.thread, v.choice
                );
            }
            println!(
                "  written: {} (HOS_DET=replay:{} HOS_DET_QUANTUM={} HOS_CORES=3 \
                 HOS_DET_PACE=free); replayed to the same trial {} of {}",
                c.path.display(),
                c.path.display(),
                s.best.as_ref().map_or(0, |b| b.1),
                c.reproduced,
                shrink::CONFIRM
            );
        }
    }
}

/// Runs `bug` `n` times in normal mode and prints how often it showed.
fn normal(pool: &Pool, bug: Bug, n: u64, fails: &impl Fn(&Line) -> bool) -> Result<(), String> {
    let jobs = vec![NORMAL.to_string(); n as usize];
    let start = Instant::now();
    let lines = pool.run(bug, &jobs, |_| false)?;
    let count = |kind: &str| lines.iter().filter(|l| l.kind == kind).count();
    println!(
        "  normal mode: {} of {} runs failed (bug {}, hang {}, panic {}, exit {}; {:.1?})",
        lines.iter().filter(|l| fails(l)).count(),
        lines.len(),
        count("bug"),
        count("hang"),
        count("panic"),
        count("exit"),
        start.elapsed(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str) -> Line {
        Line {
            job: "j".into(),
            kind: kind.into(),
            figures: None,
            text: String::new(),
        }
    }

    #[test]
    fn seeds_per_find_counts_from_the_start_and_between_finds() {
        let ls: Vec<Line> = ["ok", "ok", "bug", "hang", "ok", "ok", "ok", "bug", "ok"]
            .into_iter()
            .map(line)
            .collect();
        let gaps = seeds_per_find(&ls, |l| l.kind != "ok");
        assert_eq!(gaps, [3, 1, 4]);
        assert_eq!(median_most(gaps), Some((3, 4)));
        assert_eq!(median_most(Vec::new()), None);
    }

    #[test]
    fn a_kind_names_its_spec() {
        assert_eq!(spec(Kind::Pct, 2, 9).to_string(), "pct:2:9:24");
        assert_eq!(spec(Kind::Random, 2, 9).to_string(), "random:9");
        assert_eq!(spec(Kind::Chaos, 1, 3).to_string(), "chaos:3");
    }
}
