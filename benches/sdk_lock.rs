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
//! The workloads are `tests/sdk/workload.rs`, which `tests/sdk_clients.rs` checks.
//! `cargo bench --bench sdk_lock`.

#[path = "../tests/sdk/mod.rs"]
mod sdk;

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

fn sdk_mutex(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("sdk_mutex_8");
    g.sample_size(20);
    g.bench_function("libnx_svc", |b| {
        b.iter_custom(|n| count::<libnx::Mutex>(On::Guest(&rt), n))
    });
    g.bench_function("std_pthread", |b| {
        b.iter_custom(|n| count::<std::sync::Mutex<()>>(On::Os, n))
    });
    g.finish();
    rt.shutdown();
}

fn sdk_condvar(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("sdk_condvar_4x4");
    g.sample_size(20);
    g.bench_function("libnx_svc", |b| {
        b.iter_custom(|n| pass::<LibnxQueue>(On::Guest(&rt), n))
    });
    g.bench_function("std_pthread", |b| {
        b.iter_custom(|n| pass::<StdQueue>(On::Os, n))
    });
    g.finish();
    rt.shutdown();
}

criterion_group!(benches, sdk_mutex, sdk_condvar);
criterion_main!(benches);
