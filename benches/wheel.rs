//! The hierarchical timer wheel against a `BTreeMap<(deadline, seq), T>` timer queue.
//!
//! - `insert_cancel/{wheel,btree}/N`: insert one timer and remove it again by key, with N timers
//!   already pending (deadlines spread over 1 ms .. 10 s). One iteration = one insert + one remove.
//! - `expiry/{wheel,btree}/{insert_drain,drain}`: 10^5 timers over a 10 ms span, polled in 1 us
//!   steps until empty; `drain` times only the polls. Throughput is in timers.
//!
//! Run with `cargo bench --bench wheel`.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use hos_runtime::internal::{Wheel, WheelKey};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// The baseline: an ordered map keyed by `(deadline, sequence)`.
struct BTreeQueue<T> {
    map: BTreeMap<(u64, u64), T>,
    seq: u64,
}

impl<T> BTreeQueue<T> {
    fn new() -> Self {
        BTreeQueue {
            map: BTreeMap::new(),
            seq: 0,
        }
    }

    fn insert(&mut self, deadline: u64, value: T) -> (u64, u64) {
        self.seq += 1;
        let key = (deadline, self.seq);
        self.map.insert(key, value);
        key
    }

    fn remove(&mut self, key: (u64, u64)) -> Option<T> {
        self.map.remove(&key)
    }

    fn poll(&mut self, now: u64, out: &mut Vec<T>) {
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 > now {
                break;
            }
            out.push(entry.remove());
        }
    }
}

/// The operations the benches need, over both queues.
trait TimerQueue: Sized {
    type Key: Copy;
    const NAME: &'static str;
    fn new() -> Self;
    fn insert(&mut self, deadline: u64, value: u64) -> Self::Key;
    fn remove(&mut self, key: Self::Key) -> Option<u64>;
    fn poll(&mut self, now: u64, out: &mut Vec<u64>);
    fn is_empty(&self) -> bool;
}

impl TimerQueue for Wheel<u64> {
    type Key = WheelKey;
    const NAME: &'static str = "wheel";
    fn new() -> Self {
        Wheel::new()
    }
    fn insert(&mut self, deadline: u64, value: u64) -> WheelKey {
        Wheel::insert(self, deadline, value)
    }
    fn remove(&mut self, key: WheelKey) -> Option<u64> {
        Wheel::remove(self, key)
    }
    fn poll(&mut self, now: u64, out: &mut Vec<u64>) {
        Wheel::poll(self, now, out);
    }
    fn is_empty(&self) -> bool {
        Wheel::is_empty(self)
    }
}

impl TimerQueue for BTreeQueue<u64> {
    type Key = (u64, u64);
    const NAME: &'static str = "btree";
    fn new() -> Self {
        BTreeQueue::new()
    }
    fn insert(&mut self, deadline: u64, value: u64) -> (u64, u64) {
        BTreeQueue::insert(self, deadline, value)
    }
    fn remove(&mut self, key: (u64, u64)) -> Option<u64> {
        BTreeQueue::remove(self, key)
    }
    fn poll(&mut self, now: u64, out: &mut Vec<u64>) {
        BTreeQueue::poll(self, now, out);
    }
    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// splitmix64: reproducible deadlines without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform enough in `lo..hi` for a benchmark.
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

fn insert_cancel_one<Q: TimerQueue>(c: &mut Criterion, pending: usize) {
    let mut rng = Rng(pending as u64);
    let mut queue = Q::new();
    for i in 0..pending as u64 {
        queue.insert(rng.between(MS, 10 * S), i);
    }
    let mut group = c.benchmark_group("insert_cancel");
    group.bench_with_input(BenchmarkId::new(Q::NAME, pending), &pending, |b, _| {
        b.iter(|| {
            let key = queue.insert(rng.between(MS, 10 * S), 0);
            black_box(queue.remove(key))
        });
    });
    group.finish();
}

fn insert_cancel(c: &mut Criterion) {
    for pending in [1_000, 1_000_000] {
        insert_cancel_one::<Wheel<u64>>(c, pending);
        insert_cancel_one::<BTreeQueue<u64>>(c, pending);
    }
}

const TIMERS: u64 = 100_000;

/// Polls in 1 us steps until the queue is empty; returns how many fired.
fn drain<Q: TimerQueue>(queue: &mut Q, out: &mut Vec<u64>) -> usize {
    let (mut now, mut fired) = (0, 0);
    while !queue.is_empty() {
        now += US;
        queue.poll(now, out);
        fired += out.len();
        out.clear();
    }
    fired
}

fn expiry_one<Q: TimerQueue>(c: &mut Criterion, deadlines: &[u64]) {
    let fill = || {
        let mut queue = Q::new();
        for (i, &deadline) in (0..).zip(deadlines) {
            queue.insert(deadline, i);
        }
        queue
    };
    let mut out = Vec::with_capacity(1024);
    let mut group = c.benchmark_group("expiry");
    group.throughput(Throughput::Elements(TIMERS));
    group.bench_function(BenchmarkId::new(Q::NAME, "insert_drain"), |b| {
        b.iter(|| {
            let mut queue = fill();
            assert_eq!(drain(&mut queue, &mut out), deadlines.len());
            queue
        });
    });
    group.bench_function(BenchmarkId::new(Q::NAME, "drain"), |b| {
        b.iter_batched(
            fill,
            |mut queue| {
                assert_eq!(drain(&mut queue, &mut out), deadlines.len());
                queue
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

fn expiry(c: &mut Criterion) {
    let mut rng = Rng(7);
    let deadlines: Vec<u64> = (0..TIMERS).map(|_| rng.between(1, 10 * MS)).collect();
    expiry_one::<Wheel<u64>>(c, &deadlines);
    expiry_one::<BTreeQueue<u64>>(c, &deadlines);
}

/// The group criterion_main! runs (criterion_group! makes a public fn no doc comment reaches).
mod group {
    use super::*;
    criterion_group! {
        name = benches;
        config = Criterion::default()
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
            .sample_size(20);
        targets = insert_cancel, expiry
    }
}
criterion_main!(group::benches);
