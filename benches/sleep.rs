//! Criterion: time per sleep (asked length plus overshoot) of 20 us, 100 us and 1 ms, for hos
//! in each short-sleep mode and the sleepers a host would use instead. The percentiles and
//! CPU a sleep are printed by `examples/sleep_compare`, whose sleepers this bench borrows.

#[path = "../examples/sleep_compare/sleepers.rs"]
#[allow(dead_code)]
mod sleepers;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use sleepers::{Sleeper, ALL_TARGETS};
use std::time::Duration;

fn sleep(c: &mut Criterion) {
    for d in ALL_TARGETS {
        let mut g = c.benchmark_group(format!("sleep_{}us", d.as_micros()));
        g.sample_size(10)
            .measurement_time(Duration::from_secs(1))
            .warm_up_time(Duration::from_millis(200));
        for who in Sleeper::ALL {
            g.bench_with_input(BenchmarkId::from_parameter(who.name()), &who, |b, &who| {
                b.iter_custom(|iters| {
                    let mut lane = sleepers::Lane::start(who, d);
                    lane.turn(iters as usize);
                    let cell = lane.end();
                    d * iters as u32
                        + Duration::from_nanos((cell.overshoot.mean() * iters as f64) as u64)
                });
            });
        }
        g.finish();
    }
}

/// The group criterion_main! runs (criterion_group! makes a public fn no doc comment reaches).
mod group {
    use super::*;
    criterion_group!(benches, sleep);
}
criterion_main!(group::benches);
