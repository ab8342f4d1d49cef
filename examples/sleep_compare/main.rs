//! Side by side, in one run: overshoot and CPU of 20 us, 100 us and 1 ms sleeps for hos in
//! each short-sleep mode and for the sleepers a host would use instead (each sleeper's sleeps
//! in ten turns, the sleepers alternated turn by turn, so that the host's noise falls on every
//! row alike); then 5 idle pollers of
//! an hos message queue, of a guest word (WaitForAddress) and of a plain atomic, a job posted
//! every millisecond.
//!
//! `cargo run --release --example sleep_compare [-- --quick] [--pollers-only] [--repeat N]
//! [--stretch 0,250,1000] [--coalesce] [--blind 4]`: `--stretch` adds an hos reactor row for
//! each HOS_IDLE_POLL_STRETCH_US value to the queue pollers, `--coalesce` one with
//! HOS_IDLE_POLL_COALESCE on, `--blind` an HOS_IDLE_POLL_BLIND row to the atomic pollers.
//! `--repeat N` runs everything N times, each row on fresh runtimes (so a fresh calibration),
//! and ends with each figure's min / median / max, each arm's ratios to the yield loop's and
//! to the floor's taken within a round, and the default's p99 and poller CPU round by round.
//! The floor is a bare `clock_nanosleep` at 1 ns of slack (one OS timer sleep, no spin, no
//! bookkeeping): a figure over 1.0 CPU s/s can be read as its ratio to the floor.
//! Under each hos reactor row: its estimates at build and at the end, and its sleeps' paths.

mod pollers;
mod sleepers;
mod spread;

use hos::ShortSleep;
use pollers::{Arm, Source, Tune};
use sleepers::{Sleeper, ALL_TARGETS};
use spread::Spread;
use std::time::Duration;

/// The value after `flag` on the command line, split at commas.
fn list(flag: &str) -> Vec<u64> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.split(',')
                .map(|x| x.trim().parse().expect("a number list"))
                .collect()
        })
        .unwrap_or_default()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let pollers_only = std::env::args().any(|a| a == "--pollers-only");
    let procs = hos::machine::logical_processors();
    println!(
        "machine: {:?} logical processors, kernel {}",
        procs,
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    let repeat = list("--repeat").first().copied().unwrap_or(1).max(1);
    let (mut sleeps, mut polls) = (Spread::default(), Spread::default());
    for round in 1..=repeat {
        if repeat > 1 {
            println!();
            println!("== round {round} of {repeat}");
        }
        let cal = sleepers::runtime(hos::ShortSleep::Reactor);
        println!("calibration: {:?}", cal.stats().calibration);
        cal.shutdown();
        if !pollers_only {
            cells(quick, &mut sleeps);
        }
        poller_runs(quick, &mut polls);
    }
    if repeat > 1 {
        print!("{}", sleeps.text("Single sleepers"));
        print!("{}", polls.text("5 idle pollers"));
        println!();
        println!("By round (fresh runtimes, in run order):");
        for (row, column) in [
            ("   20us hos reactor", "p99 late us"),
            ("   20us hos reactor", "own CPU / yield's"),
            ("Atomic: hos reactor", "CPU s/s"),
            ("Atomic: hos reactor", "/ floor's"),
            ("Atomic: floor (nanosleep)", "CPU s/s"),
            ("Atomic: hos reactor", "polls / yield's"),
        ] {
            if let Some(figures) = sleeps.rounds(row, column).or(polls.rounds(row, column)) {
                let text: Vec<String> = figures.into_iter().map(spread::short).collect();
                println!("  {}, {column}: {}", row.trim(), text.join(" "));
            }
        }
    }
}

/// The turns each single sleeper's sleeps are split into, alternated with the others'.
const TURNS: usize = 10;

/// The single-sleeper table: overshoot and CPU of each sleep length, by sleeper (each on a
/// fresh runtime, the sleepers alternated in [`TURNS`] turns); each row's figures also go to
/// `spread`, with its CPU over the yield loop's.
fn cells(quick: bool, spread: &mut Spread) {
    println!();
    println!(
        "{:>7} {:<20} {:>9} {:>9} {:>9} {:>12} {:>12}",
        "sleep", "sleeper", "p50 late", "p99 late", "max late", "own CPU/sl", "+reactor/sl"
    );
    for d in ALL_TARGETS {
        let n =
            (if quick { 20_000_000 } else { 100_000_000 } / d.as_nanos() as usize).clamp(50, 3000);
        let measured = sleepers::alternated(d, n, TURNS);
        let cpu_of = |of: Sleeper| {
            measured
                .iter()
                .find(|(who, _)| *who == of)
                .map_or(f64::NAN, |(_, c)| c.sleeper_cpu_ns)
        };
        let (yield_cpu, floor_cpu) = (cpu_of(Sleeper::YieldLoop), cpu_of(Sleeper::Floor));
        for (who, c) in measured {
            let us = |ns: u64| ns as f64 / 1000.0;
            spread.add(
                &format!("{:>5}us {}", d.as_micros(), who.name()),
                &[
                    "p50 late us",
                    "p99 late us",
                    "own CPU/sl us",
                    "own CPU / yield's",
                    "own CPU / floor's",
                ],
                vec![
                    us(c.overshoot.value_at_quantile(0.5)),
                    us(c.overshoot.value_at_quantile(0.99)),
                    c.sleeper_cpu_ns / 1000.0,
                    c.sleeper_cpu_ns / yield_cpu,
                    c.sleeper_cpu_ns / floor_cpu,
                ],
            );
            println!(
                "{:>5}us {:<20} {:>7.1}us {:>7.1}us {:>7.1}us {:>10.1}us {:>10.1}us",
                d.as_micros(),
                who.name(),
                us(c.overshoot.value_at_quantile(0.5)),
                us(c.overshoot.value_at_quantile(0.99)),
                us(c.overshoot.max()),
                c.sleeper_cpu_ns / 1000.0,
                c.with_reactor_ns / 1000.0,
            );
            if let (Sleeper::Hos(ShortSleep::Reactor), Some(run)) = (who, &c.hos) {
                println!("{:>28}{}; {}", "", run.estimates(), run.paths);
            }
        }
    }
}

/// The poller runs: queue pollers (hos sees them), then atomic pollers (it does not); each
/// arm's figures also go to `spread`, with its CPU and polls over the yield loop's.
fn poller_runs(quick: bool, spread: &mut Spread) {
    let run = Duration::from_millis(if quick { 500 } else { 2000 });
    let every = Duration::from_millis(1);
    let others = [
        Sleeper::Hos(ShortSleep::Timer),
        Sleeper::Hos(ShortSleep::Auto),
        Sleeper::Std,
        Sleeper::SpinSleep,
        Sleeper::YieldLoop,
        Sleeper::Floor,
    ];
    let reactor = |label: &str, tune| Arm::reactor(label.to_string(), tune);
    let idle_off = Tune {
        idle: false,
        ..Tune::DEFAULT
    };
    let mut queue = vec![
        reactor("hos reactor", Tune::DEFAULT),
        reactor("hos reactor, idle off", idle_off),
    ];
    for us in list("--stretch") {
        let tune = Tune {
            stretch_us: Some(us),
            ..Tune::DEFAULT
        };
        queue.push(reactor(&format!("hos reactor, stretch {us}"), tune));
    }
    if std::env::args().any(|a| a == "--coalesce") {
        let tune = Tune {
            coalesce: true,
            ..Tune::DEFAULT
        };
        queue.push(reactor("hos reactor, coalesced", tune));
    }
    let mut word = vec![
        reactor("hos reactor", Tune::DEFAULT),
        reactor("hos reactor, idle off", idle_off),
    ];
    let mut atomic = vec![reactor("hos reactor", Tune::DEFAULT)];
    for blind in list("--blind") {
        let tune = Tune {
            blind: blind as u32,
            ..Tune::DEFAULT
        };
        atomic.push(reactor(&format!("hos reactor, blind {blind}"), tune));
    }
    queue.extend(others.map(Arm::plain));
    word.extend(others.map(Arm::plain));
    atomic.extend(others.map(Arm::plain));
    for (source, arms, what) in [
        (
            Source::Queue,
            queue,
            "poll an hos MessageQueue (try_receive)",
        ),
        (
            Source::Word,
            word,
            "poll a guest word (WaitForAddress, zero timeout)",
        ),
        (Source::Atomic, atomic, "poll an atomic"),
    ] {
        println!();
        println!("5 idle pollers ({what}, else sleep 20 us), a job every {every:?}, for {run:?}:");
        println!(
            "{:<24} {:>8} {:>7} {:>14} {:>10} {:>10} {:>11} {:>9}  sleeps by path",
            "sleeper",
            "CPU s/s",
            "/ floor",
            "polls/s/poller",
            "pickup p50",
            "pickup p99",
            "jobs taken",
            "reactor"
        );
        let measured: Vec<_> = arms
            .iter()
            .map(|arm| (arm, pollers::run(arm, source, 5, run, every)))
            .collect();
        let of = |who: Sleeper| {
            measured
                .iter()
                .find(|(arm, _)| arm.who == who)
                .map_or((f64::NAN, f64::NAN), |(_, p)| (p.cpu_per_s, p.polls_per_s))
        };
        let ((yield_cpu, yield_polls), (floor_cpu, _)) =
            (of(Sleeper::YieldLoop), of(Sleeper::Floor));
        for (arm, p) in &measured {
            let us = |q: f64| p.pickup.value_at_quantile(q) as f64 / 1000.0;
            spread.add(
                &format!("{source:?}: {}", arm.label),
                &[
                    "CPU s/s",
                    "/ yield's",
                    "/ floor's",
                    "polls / yield's",
                    "reactor CPU s/s",
                    "pickup p50 us",
                ],
                vec![
                    p.cpu_per_s,
                    p.cpu_per_s / yield_cpu,
                    p.cpu_per_s / floor_cpu,
                    p.polls_per_s / yield_polls,
                    p.reactor_cpu_per_s,
                    us(0.5),
                ],
            );
            println!(
                "{:<24} {:>8.3} {:>6.2}x {:>14.0} {:>8.1}us {:>8.1}us {:>5}/{:<5} {:>9.3}  {}",
                arm.label,
                p.cpu_per_s,
                p.cpu_per_s / floor_cpu,
                p.polls_per_s,
                us(0.5),
                us(0.99),
                p.jobs.1,
                p.jobs.0,
                p.reactor_cpu_per_s,
                p.hos.as_ref().map_or(String::new(), |h| h.paths.clone())
            );
            if let Some(h) = &p.hos {
                println!("{:>26}{}", "", h.estimates());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contender_makes_all_its_sleeps_over_the_turns() {
        // 23 sleeps in 10 turns: the turns' shares (2 or 3) add up to 23 for every contender.
        let cells = sleepers::alternated(Duration::from_micros(20), 23, TURNS);
        assert_eq!(cells.len(), Sleeper::ALL.len());
        for (who, cell) in &cells {
            assert_eq!(cell.overshoot.len(), 23, "{}", who.name());
            assert_eq!(cell.hos.is_some(), matches!(who, Sleeper::Hos(_)));
        }
    }
}
