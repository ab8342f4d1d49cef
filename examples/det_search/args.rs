//! The command line: what to search, how, and what a bad value says.
//!
//! Invariant: `parse` either returns options every other module uses as they are (a bug or
//! `all`, every number inside its documented range, at least one failing kind) or an
//! [`ArgError`] naming the flag and the value; it never panics and never clamps a value.

use crate::zoo::Bug;
use std::fmt;
use std::time::Duration;

/// The help text (`--help`).
pub(crate) const HELP: &str = "\
det_search: search seeds of the deterministic mode for a zoo bug, shrink what fails

USAGE: cargo run --release --example det_search -- --bug NAME [FLAGS]

Each seed is one trial of the bug's program in a fresh runtime (docs/determinism.md section
9); trials run in batches in child processes (this program re-invoked), --jobs at a time; a
child that crashes or goes silent for 30 s fails the seed it was running.

  --bug NAME        lost-wakeup, signal-before-wait, use-before-publish, split-counter,
                    lock-order, yield-livelock, or all
  --selector KIND   pct (default; at the bug's depth, change points over its 24 steps),
                    random or chaos
  --depth D         pct's depth, 1..=8 (default: the bug's, 1 or 2)
  --from S          the first seed (default 0)
  --seeds N         seeds to try, 1..=1000000 (default: the pct bound's count for
                    P >= 0.99, 1000 for random and chaos)
  --until F         stop after F failing seeds, 0..=1000000 (default 1; 0: try them all and
                    print how many seeds a find took, median and most)
  --quantum Q       HOS_DET_QUANTUM, 1..=1000000 checkpoints (default 1)
  --stall-ms MS     a hang in normal mode: every guest thread waiting this long,
                    10..=60000 (default 250; in the mode a hang is the runtime's
                    softlock report, at once)
  --fail-on KINDS   which outcomes fail a seed, of bug,hang,panic,exit (default all)
  --jobs J          child processes at a time, 1..=256 (default: the processors)
  --batch B         trials a child runs, 1..=10000 (default 16)
  --shrink          shrink the first failing seed's setup, then its schedule (see below)
  --normal N        also run the bug N times in normal mode (the mode off), 1..=1000000,
                    and print how often it shows there
  --help            this text

Shrink: first the setup: the failure is confirmed 3 times with the same figures; pct's depth
is lowered while the seed still fails (fewer change points); the quantum is doubled up to
1024 while it still fails (fewer preemption points). Then the schedule, by its decision log
(HOS_DET=guided:PREFIX:DROP:PATH): the smallest setup is recorded with its decisions; prefix
bisection finds the shortest prefix of them that, followed by stable, fails the same; ddmin
keeps the fewest of its deviations from stable that still fail (at most 64 trials). The
result is recorded to det_search-BUG-PID.hosrec in the temp folder and replayed 3 times. It
prints each step, the shrunk schedule (its prefix, its deviations: decision, thread,
candidate) and the HOS_DET=replay:PATH line that reproduces it.
";

/// A selector kind the search seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Pct,
    Random,
    Chaos,
}

/// Which outcomes fail a seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FailOn {
    pub(crate) bug: bool,
    pub(crate) hang: bool,
    pub(crate) panic: bool,
    /// A child that exited, crashed or was killed mid-trial.
    pub(crate) exit: bool,
}

impl FailOn {
    /// Whether an outcome of kind `kind` (`ok`, `bug`, `hang`, `panic`, `exit`) fails.
    pub(crate) fn fails(self, kind: &str) -> bool {
        match kind {
            "bug" => self.bug,
            "hang" => self.hang,
            "panic" => self.panic,
            "exit" => self.exit,
            _ => false,
        }
    }
}

/// The search's options.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Options {
    /// The bugs, in order (one, or every one for `all`).
    pub(crate) bugs: Vec<Bug>,
    pub(crate) kind: Kind,
    /// `None`: the bug's own depth.
    pub(crate) depth: Option<u32>,
    pub(crate) from: u64,
    /// `None`: the default for the bug and kind.
    pub(crate) seeds: Option<u64>,
    pub(crate) until: u64,
    pub(crate) quantum: u32,
    /// `None`: the mode's default.
    pub(crate) stall: Option<Duration>,
    pub(crate) fail_on: FailOn,
    pub(crate) jobs: usize,
    pub(crate) batch: usize,
    pub(crate) shrink: bool,
    pub(crate) normal: Option<u64>,
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Parsed {
    Help,
    Search(Options),
}

/// A bad command line, naming the flag and the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArgError(pub(crate) String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (--help lists the flags)", self.0)
    }
}

/// A number of flag `flag` within `lo..=hi`.
fn number(flag: &str, v: &str, lo: u64, hi: u64) -> Result<u64, ArgError> {
    match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(ArgError(format!("{flag} `{v}`: expected {lo} to {hi}"))),
    }
}

/// Parses the command line (without the program's name).
pub(crate) fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Parsed, ArgError> {
    let mut o = Options {
        bugs: Vec::new(),
        kind: Kind::Pct,
        depth: None,
        from: 0,
        seeds: None,
        until: 1,
        quantum: 1,
        stall: None,
        fail_on: FailOn {
            bug: true,
            hang: true,
            panic: true,
            exit: true,
        },
        jobs: std::thread::available_parallelism().map_or(1, usize::from),
        batch: 16,
        shrink: false,
        normal: None,
    };
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(Parsed::Help);
        }
        if flag == "--shrink" {
            o.shrink = true;
            continue;
        }
        let v = args
            .next()
            .ok_or_else(|| ArgError(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--bug" if v == "all" => o.bugs = Bug::ALL.to_vec(),
            "--bug" => {
                let bug = Bug::named(&v).ok_or_else(|| {
                    let names: Vec<_> = Bug::ALL.iter().map(|b| b.name()).collect();
                    ArgError(format!(
                        "--bug `{v}`: not one of {} or all",
                        names.join(", ")
                    ))
                })?;
                o.bugs = vec![bug];
            }
            "--selector" => {
                o.kind = match v.as_str() {
                    "pct" => Kind::Pct,
                    "random" => Kind::Random,
                    "chaos" => Kind::Chaos,
                    _ => {
                        return Err(ArgError(format!(
                            "--selector `{v}`: expected pct, random or chaos"
                        )))
                    }
                }
            }
            "--depth" => o.depth = Some(number(&flag, &v, 1, 8)? as u32),
            "--from" => o.from = number(&flag, &v, 0, u64::MAX)?,
            "--seeds" => o.seeds = Some(number(&flag, &v, 1, 1_000_000)?),
            "--until" => o.until = number(&flag, &v, 0, 1_000_000)?,
            "--quantum" => o.quantum = number(&flag, &v, 1, 1_000_000)? as u32,
            "--stall-ms" => {
                o.stall = Some(Duration::from_millis(number(&flag, &v, 10, 60_000)?));
            }
            "--fail-on" => o.fail_on = fail_on(&v)?,
            "--jobs" => o.jobs = number(&flag, &v, 1, 256)? as usize,
            "--batch" => o.batch = number(&flag, &v, 1, 10_000)? as usize,
            "--normal" => o.normal = Some(number(&flag, &v, 1, 1_000_000)?),
            _ => return Err(ArgError(format!("unknown flag `{flag}`"))),
        }
    }
    if o.bugs.is_empty() {
        return Err(ArgError("--bug is required".into()));
    }
    if o.depth.is_some() && o.kind != Kind::Pct {
        return Err(ArgError("--depth is pct's alone".into()));
    }
    Ok(Parsed::Search(o))
}

/// `--fail-on`'s list.
fn fail_on(v: &str) -> Result<FailOn, ArgError> {
    let mut f = FailOn {
        bug: false,
        hang: false,
        panic: false,
        exit: false,
    };
    for kind in v.split(',') {
        match kind {
            "bug" => f.bug = true,
            "hang" => f.hang = true,
            "panic" => f.panic = true,
            "exit" => f.exit = true,
            _ => {
                return Err(ArgError(format!(
                    "--fail-on `{v}`: `{kind}` is not bug, hang, panic or exit"
                )))
            }
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Parsed, ArgError> {
        parse(s.split_whitespace().map(String::from))
    }

    fn options(s: &str) -> Options {
        match parse_str(s) {
            Ok(Parsed::Search(o)) => o,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn defaults_and_flags() {
        let o = options("--bug lock-order");
        assert_eq!(o.bugs, [Bug::LockOrder]);
        assert_eq!(
            (o.kind, o.depth, o.from, o.seeds, o.until),
            (Kind::Pct, None, 0, None, 1)
        );
        assert_eq!(
            (o.quantum, o.stall, o.batch, o.shrink, o.normal),
            (1, None, 16, false, None)
        );
        assert!(o.fail_on.fails("hang") && o.fail_on.fails("exit") && !o.fail_on.fails("ok"));
        let o = options(
            "--bug all --selector pct --depth 3 --from 7 --seeds 50 --until 0 --quantum 4 \
             --stall-ms 40 --fail-on hang,panic --jobs 3 --batch 2 --shrink --normal 9",
        );
        assert_eq!(o.bugs, Bug::ALL);
        assert_eq!(
            (o.depth, o.from, o.seeds, o.until),
            (Some(3), 7, Some(50), 0)
        );
        assert_eq!((o.quantum, o.stall), (4, Some(Duration::from_millis(40))));
        assert_eq!((o.jobs, o.batch, o.shrink, o.normal), (3, 2, true, Some(9)));
        assert!(o.fail_on.fails("hang") && !o.fail_on.fails("bug") && !o.fail_on.fails("exit"));
        assert_eq!(
            options("--bug split-counter --selector chaos").kind,
            Kind::Chaos
        );
        assert_eq!(parse_str("--quantum 3 --help"), Ok(Parsed::Help));
    }

    #[test]
    fn bad_values_name_the_flag_and_value() {
        let err = |s: &str| parse_str(s).expect_err(s).0;
        assert_eq!(err(""), "--bug is required");
        assert!(err("--bug lost").starts_with("--bug `lost`: not one of lost-wakeup,"));
        assert_eq!(
            err("--bug all --selector dfs"),
            "--selector `dfs`: expected pct, random or chaos"
        );
        assert_eq!(err("--bug all --depth 0"), "--depth `0`: expected 1 to 8");
        assert_eq!(
            err("--bug all --seeds -1"),
            "--seeds `-1`: expected 1 to 1000000"
        );
        assert_eq!(
            err("--bug all --quantum 0"),
            "--quantum `0`: expected 1 to 1000000"
        );
        assert_eq!(
            err("--bug all --stall-ms 5"),
            "--stall-ms `5`: expected 10 to 60000"
        );
        assert_eq!(err("--bug all --jobs 0"), "--jobs `0`: expected 1 to 256");
        assert_eq!(
            err("--bug all --fail-on bug,crash"),
            "--fail-on `bug,crash`: `crash` is not bug, hang, panic or exit"
        );
        assert_eq!(
            err("--bug all --selector random --depth 2"),
            "--depth is pct's alone"
        );
        assert_eq!(err("--bug all --seeds"), "--seeds needs a value");
        assert_eq!(err("--bug all --fast 1"), "unknown flag `--fast`");
    }
}
