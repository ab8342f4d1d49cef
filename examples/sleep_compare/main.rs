//! Side by side, in one run: overshoot and CPU of 20 us, 100 us and 1 ms sleeps for hos in
//! each short-sleep mode and for the sleepers a host would use instead; then 5 idle pollers.
//!
//! `cargo run --release --example sleep_compare [-- --quick]`

mod sleepers;

use sleepers::{Sleeper, ALL_TARGETS};
use std::time::Duration;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
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
    println!();
    let run = Duration::from_millis(if quick { 500 } else { 2000 });
    println!("5 idle pollers (sleep 20 us, check an atomic) for {run:?}:");
    println!(
        "{:<20} {:>9} {:>15} {:>12}  sleeps by path",
        "sleeper", "CPU s/s", "polls/s/poller", "reactor s/s"
    );
    for who in Sleeper::ALL {
        let p = sleepers::pollers(who, 5, run);
        println!(
            "{:<20} {:>9.3} {:>15.0} {:>12.3}  {}",
            who.name(),
            p.cpu_per_s,
            p.polls_per_s,
            p.reactor_cpu_per_s,
            p.paths
        );
    }
}
