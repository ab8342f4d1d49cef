//! Side by side, in one run: overshoot and CPU of 20 us, 100 us and 1 ms sleeps for hos in
//! each short-sleep mode and for the sleepers a host would use instead; then 5 idle pollers of
//! an hos message queue, of a guest word (WaitForAddress) and of a plain atomic, a job posted
//! every millisecond.
//!
//! `cargo run --release --example sleep_compare [-- --quick] [--pollers-only]
//! [--stretch 0,250,1000] [--coalesce] [--blind 4]`: `--stretch` adds an hos reactor row for
//! each HOS_IDLE_POLL_STRETCH_US value to the queue pollers, `--coalesce` one with
//! HOS_IDLE_POLL_COALESCE on, `--blind` an HOS_IDLE_POLL_BLIND row to the atomic pollers.

mod pollers;
mod sleepers;

use hos::ShortSleep;
use pollers::{Arm, Source, Tune};
use sleepers::{Sleeper, ALL_TARGETS};
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
    let cal = sleepers::runtime(hos::ShortSleep::Reactor);
    println!("calibration: {:?}", cal.stats().calibration);
    cal.shutdown();
    if !pollers_only {
        cells(quick);
    }
    poller_runs(quick);
}

/// The single-sleeper table: overshoot and CPU of each sleep length, by sleeper.
fn cells(quick: bool) {
    println!();
    println!(
        "{:>7} {:<20} {:>9} {:>9} {:>9} {:>12} {:>12}",
        "sleep", "sleeper", "p50 late", "p99 late", "max late", "own CPU/sl", "proc CPU/sl"
    );
    for d in ALL_TARGETS {
        let n =
            (if quick { 20_000_000 } else { 100_000_000 } / d.as_nanos() as usize).clamp(50, 3000);
        for who in Sleeper::ALL {
            let c = sleepers::cell(who, d, n);
            let us = |ns: u64| ns as f64 / 1000.0;
            println!(
                "{:>5}us {:<20} {:>7.1}us {:>7.1}us {:>7.1}us {:>10.1}us {:>10.1}us",
                d.as_micros(),
                who.name(),
                us(c.overshoot.value_at_quantile(0.5)),
                us(c.overshoot.value_at_quantile(0.99)),
                us(c.overshoot.max()),
                c.sleeper_cpu_ns / 1000.0,
                c.process_cpu_ns / 1000.0,
            );
        }
    }
}

/// The poller runs: queue pollers (hos sees them), then atomic pollers (it does not).
fn poller_runs(quick: bool) {
    let run = Duration::from_millis(if quick { 500 } else { 2000 });
    let every = Duration::from_millis(1);
    let others = [
        Sleeper::Hos(ShortSleep::Timer),
        Sleeper::Hos(ShortSleep::Auto),
        Sleeper::Std,
        Sleeper::SpinSleep,
        Sleeper::YieldLoop,
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
            "{:<24} {:>8} {:>14} {:>10} {:>10} {:>11} {:>9}  sleeps by path",
            "sleeper",
            "CPU s/s",
            "polls/s/poller",
            "pickup p50",
            "pickup p99",
            "jobs taken",
            "reactor"
        );
        for arm in &arms {
            let p = pollers::run(arm, source, 5, run, every);
            let us = |q: f64| p.pickup.value_at_quantile(q) as f64 / 1000.0;
            println!(
                "{:<24} {:>8.3} {:>14.0} {:>8.1}us {:>8.1}us {:>5}/{:<5} {:>9.3}  {}",
                arm.label,
                p.cpu_per_s,
                p.polls_per_s,
                us(0.5),
                us(0.99),
                p.jobs.1,
                p.jobs.0,
                p.reactor_cpu_per_s,
                p.paths
            );
        }
    }
}
