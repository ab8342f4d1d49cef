//! Randomized schedules over the whole runtime: the soak's load, small, once per seed with
//! chaos on (seeded yields and short delays at every wait, wake and virtual-core decision
//! point, and at the reactor's fires and shutdown's steps). A failure names its seed;
//! `HOS_CHAOS_SEEDS=A..B` runs those seeds (the same seed replays the same disturbances), and
//! `examples/soak -- --chaos 1..5000` runs thousands.

#[path = "../examples/soak/load.rs"]
mod load;
#[path = "../examples/soak/stations.rs"]
mod stations;

use std::time::Duration;

/// The seeds CI runs.
const CI_SEEDS: std::ops::RangeInclusive<u64> = 1..=24;

fn seeds() -> std::ops::RangeInclusive<u64> {
    let Ok(v) = std::env::var("HOS_CHAOS_SEEDS") else {
        return CI_SEEDS;
    };
    let (a, b) = v.split_once("..").unwrap_or((&v, &v));
    let n = |s: &str| s.trim().parse().expect("HOS_CHAOS_SEEDS=A..B");
    n(a)..=n(b)
}

#[test]
fn every_seed_loses_nothing_and_never_hangs() {
    for seed in seeds() {
        let p = load::Params {
            workers: 24,
            stations: 8,
            tokens: 12,
            handoffs: 2_000,
            host_tasks: 4,
            stall: Duration::from_secs(20),
            ..load::Params::ci(seed)
        };
        hos_runtime::internal::chaos::enable(seed);
        let out = load::run(&p);
        hos_runtime::internal::chaos::disable();
        if let Ok(f) = &out {
            assert!(f.handoffs >= p.handoffs, "{f}");
        }
        if let Err(e) = out {
            panic!(
                "chaos seed {seed} failed: {e}\nreplay: HOS_CHAOS_SEEDS={seed}..{seed} cargo test --release --test chaos"
            );
        }
    }
}
