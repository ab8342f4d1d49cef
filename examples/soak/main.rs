//! The soak: guest threads and async host tasks hand tokens through every kind of object,
//! with random timeouts, cancellations, yields, priority and core changes; every token is
//! counted at the end, and a watchdog names any thread that stalls (docs/design.md section 15).
//! With `--chaos A..B`, one run per seed with chaos on (yields and short delays at every wait,
//! wake and virtual-core decision point); a failing seed is printed, and `--chaos S..S`
//! replays it.
//!
//! `cargo run --release --example soak [-- --workers 1000 --handoffs 1000000]`
//! `cargo run --release --example soak -- --chaos 1..5000 --workers 24 --stations 8 --tokens 12 --handoffs 3000`

mod load;
mod stations;

use std::time::Duration;

fn range(v: &str) -> std::ops::RangeInclusive<u64> {
    let (a, b) = v.split_once("..").unwrap_or((v, v));
    let n = |s: &str| {
        s.parse::<u64>()
            .unwrap_or_else(|_| panic!("--chaos wants A..B, not {v:?}"))
    };
    n(a)..=n(b)
}

fn main() {
    let mut p = load::Params::ci(1);
    let mut chaos = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{flag} wants a value"));
        let n = || {
            v.parse::<u64>()
                .unwrap_or_else(|_| panic!("{flag} wants a number, not {v:?}"))
        };
        match flag.as_str() {
            "--workers" => p.workers = n() as usize,
            "--stations" => p.stations = n() as usize,
            "--tokens" => p.tokens = n() as usize,
            "--capacity" => p.capacity = n() as usize,
            "--handoffs" => p.handoffs = n(),
            "--host-tasks" => p.host_tasks = n() as usize,
            "--cores" => p.cores = n() as usize,
            "--escape-ms" => p.escape_ms = n(),
            "--seed" => p.seed = n(),
            "--stall-s" => p.stall = Duration::from_secs(n()),
            "--chaos" => chaos = Some(range(&v)),
            other => panic!("unknown flag {other}"),
        }
    }
    println!(
        "machine: {:?} logical processors; {p:?}",
        hos::machine::logical_processors()
    );
    let Some(seeds) = chaos else {
        match load::run(&p) {
            Ok(f) => println!("{f}"),
            Err(e) => {
                eprintln!("FAILED: {e}");
                std::process::exit(1);
            }
        }
        return;
    };
    let (first, last) = (*seeds.start(), *seeds.end());
    let mut handoffs = 0;
    let start = std::time::Instant::now();
    for seed in seeds {
        hos_runtime::internal::chaos::enable(seed);
        let out = load::run(&load::Params { seed, ..p.clone() });
        hos_runtime::internal::chaos::disable();
        match out {
            Ok(f) => handoffs += f.handoffs,
            Err(e) => {
                eprintln!("FAILED at chaos seed {seed}: {e}\nreplay: cargo run --release --example soak -- --chaos {seed}..{seed} (and the same sizes)");
                std::process::exit(1);
            }
        }
        if seed % 100 == 0 {
            println!(
                "seeds {first}..{seed}: pass ({handoffs} hand-offs, {:.0?})",
                start.elapsed()
            );
        }
    }
    println!(
        "chaos seeds {first}..{last}: {} runs, every one passed: 0 lost, 0 duplicated, 0 early, 0 hangs; {handoffs} hand-offs in {:.1?}",
        last - first + 1,
        start.elapsed()
    );
}
