//! Start and stop many runtimes in one process, each with guest and host threads blocked in
//! every kind of wait: the shutdown's latency, and the threads, descriptors and resident
//! memory the process holds before and after (docs/design.md section 15).
//!
//! `cargo run --release --example restart [-- --cycles 1000 --guests 64 --hosts 2 --measure-every 10]`

mod blocked;
mod process;

use std::time::Duration;

struct Args {
    cycles: usize,
    guests: usize,
    hosts: usize,
    measure_every: usize,
}

fn args() -> Args {
    let mut a = Args {
        cycles: 1000,
        guests: 64,
        hosts: 2,
        measure_every: 10,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || -> usize {
            let v = it.next().unwrap_or_default();
            v.parse()
                .unwrap_or_else(|_| panic!("{flag} wants a number, not {v:?}"))
        };
        match flag.as_str() {
            "--cycles" => a.cycles = value(),
            "--guests" => a.guests = value().max(1),
            "--hosts" => a.hosts = value(),
            "--measure-every" => a.measure_every = value(),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn main() {
    let a = args();
    println!(
        "machine: {:?} logical processors; {} cycles, {} guest + {} host threads blocked in {} kinds of wait, calibration measured every {} cycles",
        hos::machine::logical_processors(),
        a.cycles,
        a.guests,
        a.hosts,
        blocked::KINDS,
        a.measure_every
    );
    // Two warm-up cycles: lazily made process state (tracing's call sites, the fallback's
    // tables) is made once, not leaked per cycle.
    let base = process::base_after(|| {
        for _ in 0..2 {
            blocked::Cycle::start(a.guests, a.hosts, true).stop();
        }
    });
    let mut shutdowns = Vec::with_capacity(a.cycles);
    for i in 0..a.cycles {
        let measure = a.measure_every > 0 && i % a.measure_every == 0;
        let cycle = blocked::Cycle::start(a.guests, a.hosts, measure);
        // Let every thread reach its wait.
        std::thread::sleep(Duration::from_millis(2));
        shutdowns.push(cycle.stop().elapsed);
    }
    let end = process::settled(base);
    shutdowns.sort_unstable();
    println!(
        "shutdown with {} guest threads blocked: p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        a.guests,
        quantile(&shutdowns, 0.5),
        quantile(&shutdowns, 0.99),
        shutdowns.last().copied().unwrap_or_default()
    );
    let kb = |h: process::Held| {
        h.rss_kb
            .map_or("?".into(), |k| format!("{:.1} MB", k as f64 / 1024.0))
    };
    println!(
        "before: {:?} threads, {:?} descriptors, {} resident",
        base.threads,
        base.fds,
        kb(base)
    );
    println!(
        "after:  {:?} threads, {:?} descriptors, {} resident",
        end.threads,
        end.fds,
        kb(end)
    );
    let grown_kb = end
        .rss_kb
        .zip(base.rss_kb)
        .map(|(e, b)| e as i64 - b as i64);
    let leaked = end.threads != base.threads || end.fds != base.fds;
    println!(
        "leaked: {} threads, {} descriptors; resident {} kB",
        end.threads
            .zip(base.threads)
            .map_or(0, |(e, b)| e as i64 - b as i64),
        end.fds
            .zip(base.fds)
            .map_or(0, |(e, b)| e as i64 - b as i64),
        grown_kb.map_or("?".into(), |k| format!("{k:+}")),
    );
    if leaked || grown_kb.is_some_and(|k| k > 10 * 1024) {
        std::process::exit(1);
    }
}
