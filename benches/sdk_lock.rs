//! The SDK's mutex and condition variable under contention, on hos's svcs, each beside the
//! same algorithm on std's (pthread's futex) mutex and condition variable in one run:
//!
//! - `sdk_mutex_8`: 8 threads each lock, increment a counter, unlock, in a loop: libnx's
//!   mutex on ArbitrateLock/Unlock (guest threads) against `std::sync::Mutex` (OS threads).
//!   A time is per lock operation. The lock convoy (every operation a hand-off to a parked
//!   waiter) shows here as a time many times the uncontended one.
//! - `sdk_condvar_4x4`: 4 producers and 4 consumers through a 64-slot queue of one mutex and
//!   two condition variables: libnx's on WaitProcessWideKeyAtomic/SignalProcessWideKey
//!   against std's. A time is per item. Target: within 2x of std's.
//!
//! After each group, what its target reads: `sdk_mutex_8/runs`, the mutex workload 10 times
//! (8 threads x 100k operations each) on a runtime of its own, each run's time and parks, and
//! the worst run over the best (target: <= 3x, no convoy mode); `sdk_condvar_4x4/alternated`,
//! libnx's queue and std's alternated round by round (target: <= 2x).
//!
//! The workloads are `tests/sdk/workload.rs`, which `tests/sdk_clients.rs` checks.
//! `cargo bench --bench sdk_lock` (`-- runs` or `-- alternated` for those alone).

// Shared with the other benches; this one has no use for `mean_trip_ns` or the wait counters.
#[allow(unused)]
mod alternate;
#[path = "../tests/sdk/mod.rs"]
mod sdk;

use alternate::{alternate, filtered_in};
use criterion::{criterion_group, criterion_main, Criterion};
use hos::{Calibration, Runtime};
use sdk::libnx;
use sdk::workload::{Counter, LibnxQueue, Lock, Queue, StdQueue};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Threads in the mutex group.
const THREADS: u64 = 8;
/// Producers, and as many consumers, in the queue group.
const PAIRS: u64 = 4;
/// The queue's slots.
const SLOTS: usize = 64;

/// Where a workload's threads run: guest threads of the runtime (the SDK's clients), or
/// plain OS threads (std's peers, as a native game's would).
#[derive(Clone, Copy)]
enum On<'a> {
    Guest(&'a Runtime),
    Os,
}

impl On<'_> {
    /// Runs `f(i)` on `n` threads of this kind at once; the time until all have ended.
    fn run(self, n: u64, f: impl Fn(u64) + Send + Sync + 'static) -> Duration {
        let f = Arc::new(f);
        let start = Instant::now();
        match self {
            On::Guest(rt) => {
                let hs: Vec<_> = (0..n)
                    .map(|i| {
                        let f = f.clone();
                        rt.thread()
                            .name(format!("SdkLock{i}"))
                            .spawn(move || f(i))
                            .expect("spawn")
                    })
                    .collect();
                hs.into_iter()
                    .for_each(|h| h.join().expect("the guest thread ran"));
            }
            On::Os => {
                let hs: Vec<_> = (0..n)
                    .map(|i| {
                        let f = f.clone();
                        std::thread::spawn(move || f(i))
                    })
                    .collect();
                hs.into_iter()
                    .for_each(|h| h.join().expect("the thread ran"));
            }
        }
        start.elapsed()
    }
}

/// `ops` lock operations over [`THREADS`] threads on one fresh counter.
fn count<L: Lock>(on: On<'_>, ops: u64) -> Duration {
    let c = Arc::new(Counter::<L>::default());
    let each = ops.div_ceil(THREADS);
    let c2 = c.clone();
    let took = on.run(THREADS, move |_| c2.count(each));
    assert_eq!(c.value(), each * THREADS, "no increment lost");
    took
}

/// `items` items (at least one each) from [`PAIRS`] producers to as many consumers through a
/// fresh queue of [`SLOTS`].
fn pass<Q: Queue>(on: On<'_>, items: u64) -> Duration {
    let q = Arc::new(Q::with_capacity(SLOTS));
    let each = items.div_ceil(PAIRS);
    let q2 = q.clone();
    let took = on.run(2 * PAIRS, move |i| {
        if i % 2 == 0 {
            (0..each).for_each(|v| q2.send(v));
        } else {
            (0..each).for_each(|_| {
                q2.receive();
            });
        }
    });
    assert_eq!(q.len(), 0, "every item received");
    took
}

fn runtime() -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .expect("runtime")
}

/// Runs of the mutex workload in [`sdk_mutex_runs`].
const RUNS: usize = 10;
/// Operations a thread in each of those runs.
const RUN_OPS: u64 = 100_000;

/// The mutex workload [`RUNS`] times on a runtime of its own, whose counters see only it:
/// each run's time and parks (a convoy parks about once an operation), then the worst run
/// over the best.
fn sdk_mutex_runs() {
    if !filtered_in("sdk_mutex_8/runs") {
        return;
    }
    let rt = runtime();
    let times: Vec<Duration> = (0..RUNS)
        .map(|run| {
            let parked = rt.stats().parks;
            let took = count::<libnx::Mutex>(On::Guest(&rt), THREADS * RUN_OPS);
            let parks = rt.stats().parks - parked;
            eprintln!(
                "sdk_mutex_8/runs: run {run}: {:.1} ms, {parks} parks for {} operations",
                took.as_secs_f64() * 1e3,
                THREADS * RUN_OPS
            );
            took
        })
        .collect();
    let best = times.iter().min().expect("runs");
    let worst = times.iter().max().expect("runs");
    eprintln!(
        "sdk_mutex_8/runs: best {:.1} ms, worst {:.1} ms: {:.2}x (target <= 3x)",
        best.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3,
        worst.as_secs_f64() / best.as_secs_f64()
    );
    rt.shutdown();
}

/// Items an arm of [`sdk_condvar_alternated`] passes in each round.
const ALTERNATED_ITEMS: u64 = 40_000;

/// libnx's queue and std's alternated over [`ROUNDS`] rounds: the median time an item and
/// ratio, then the libnx arm's waits an item (how its waits ended: the mechanism behind the
/// ratio).
fn sdk_condvar_alternated() {
    if !filtered_in("sdk_condvar_4x4/alternated") {
        return;
    }
    let rt = runtime();
    let per_item = |took: Duration| took.as_nanos() as f64 / ALTERNATED_ITEMS as f64;
    let before = rt.stats();
    alternate(
        "sdk_condvar_4x4/alternated",
        ["std_pthread", "libnx_svc"],
        ROUNDS,
        |arm| match arm {
            0 => per_item(pass::<StdQueue>(On::Os, ALTERNATED_ITEMS)),
            _ => per_item(pass::<LibnxQueue>(On::Guest(&rt), ALTERNATED_ITEMS)),
        },
    );
    let after = rt.stats();
    let each = |f: fn(&hos::Stats) -> u64| {
        (f(&after) - f(&before)) as f64 / (ROUNDS as u64 * ALTERNATED_ITEMS) as f64
    };
    eprintln!(
        "sdk_condvar_4x4/alternated: libnx_svc's waits an item: {:.2} parks, spins {:.2} \
         caught, {:.2} missed, {:.2} skipped; lock heirs {:.2} caught, {:.2} missed, {:.2} late; {:.2} \
         virtual-core waits",
        each(|s| s.parks),
        each(|s| s.spins_caught),
        each(|s| s.spins_missed),
        each(|s| s.spins_skipped),
        each(|s| s.heir_caught),
        each(|s| s.heir_missed),
        each(|s| s.heir_late),
        each(|s| s.vcore_waits),
    );
    rt.shutdown();
}

/// Rounds of [`sdk_condvar_alternated`].
const ROUNDS: usize = 7;

fn sdk_mutex(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("sdk_mutex_8");
    g.sample_size(20);
    g.bench_function("libnx_svc", |b| {
        b.iter_custom(|n| count::<libnx::Mutex>(On::Guest(&rt), n));
    });
    g.bench_function("std_pthread", |b| {
        b.iter_custom(|n| count::<std::sync::Mutex<()>>(On::Os, n));
    });
    g.finish();
    rt.shutdown();
    sdk_mutex_runs();
}

fn sdk_condvar(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("sdk_condvar_4x4");
    g.sample_size(20);
    g.bench_function("libnx_svc", |b| {
        b.iter_custom(|n| pass::<LibnxQueue>(On::Guest(&rt), n));
    });
    g.bench_function("std_pthread", |b| {
        b.iter_custom(|n| pass::<StdQueue>(On::Os, n));
    });
    g.finish();
    rt.shutdown();
    sdk_condvar_alternated();
}

/// The group criterion_main! runs (criterion_group! makes a public fn no doc comment reaches).
mod group {
    use super::*;
    criterion_group!(benches, sdk_mutex, sdk_condvar);
}
criterion_main!(group::benches);
