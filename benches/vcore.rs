//! The virtual-core semaphore: what an uncontended thread pays, and what a hand-off to a
//! parked waiter costs next to a bare futex hand-off.
//!
//! `cargo bench --bench vcore`
//!
//! | bench | what |
//! | --- | --- |
//! | `uncontended/acquire+release` | take a free core and give it back while nobody waits: one compare-and-swap of the slot's cell each (the fast path) |
//! | `uncontended/acquire+release, locked` | the same while a waiter for another core keeps the table busy: two lock round trips and an event-clock read (the slot's stamp), the path every step took before the fast path |
//! | `uncontended/checkpoint` | a checkpoint nobody asks anything of: one load of the thread's kick word |
//! | `uncontended/yield` | a yield with nobody to hand the core to: the same load |
//! | `handoff/vcore` | release to a waiter parked in `acquire`, until the waiter runs |
//! | `handoff/futex` | a store and `futex_wake` to a thread in `futex_wait`, until it runs |
//! | `handoff/futex+spin` | the same, the waiter having spun 20 us before its `futex_wait` as the vcore wait does |
//!
//! The hand-offs time only the stretch from the release (or store) to the waiter running; the
//! waiter is given 200 us to park first, longer than the vcore wait's 20 us spin.
//!
//! Figures, with the machine and the command: BENCHMARKS.md, "Fast paths" and "Hand-offs".
//! Reading them: a thread that spun before its futex wait wakes later than one that went
//! straight to sleep, whatever wakes it, so the vcore hand-off is compared with the futex
//! hand-off after the same spin; the semaphore's own share (lock, table, wake) is the
//! difference.

use criterion::{criterion_group, criterion_main, Criterion};
use hos_runtime::internal::{sys, Counters, Spin, ThreadRecord, ThreadSpec, Vcores, YieldKind};
use hos_runtime::Config;
use hos_runtime::Role;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A semaphore of `cores`, and its counters.
fn vcores(cores: usize) -> (Arc<Vcores>, Arc<Counters>) {
    let config = Config {
        cores,
        ..Config::default()
    };
    let counters = Arc::new(Counters::default());
    (Arc::new(Vcores::new(&config, counters.clone())), counters)
}

fn record(id: u64, core_mask: u64) -> Arc<ThreadRecord> {
    let spec = ThreadSpec {
        name: format!("Bench{id}"),
        priority: 44,
        core_mask,
        ideal_core: 0,
        role: Role::Auto,
    };
    Arc::new(ThreadRecord::new(id, &spec, false, false))
}

fn uncontended(c: &mut Criterion) {
    let mut g = c.benchmark_group("uncontended");
    let (v, counters) = vcores(6);
    let t = record(1, 0b1_1111);
    let spin = Spin::without_runtime();
    let pair = || {
        let _ = v.acquire(&*t, spin);
        black_box(v.release(&*t));
    };
    g.bench_function("acquire+release", |b| b.iter(pair));
    // Core 5 held, and a waiter for it queued: the table is busy, so no slot is lent and the
    // bench thread's pair on cores 0-4 takes the lock.
    let (holder, waiter) = (record(2, 1 << 5), record(3, 1 << 5));
    let _ = v.acquire(&*holder, Spin::without_runtime());
    let th = {
        let v = v.clone();
        std::thread::spawn(move || {
            let _ = v.acquire(&*waiter, Spin::without_runtime());
            v.release(&*waiter);
        })
    };
    while counters.snapshot().vcore_waits == 0 {
        std::thread::sleep(POLL_GAP);
    }
    g.bench_function("acquire+release, locked", |b| b.iter(pair));
    v.release(&*holder);
    th.join().expect("waiter");
    let _ = v.acquire(&*t, Spin::without_runtime());
    g.bench_function("checkpoint", |b| {
        b.iter(|| v.checkpoint(black_box(&*t), spin));
    });
    g.bench_function("yield", |b| {
        b.iter(|| black_box(v.yield_core(&*t, YieldKind::SamePriority, spin).handed));
    });
    v.release(&*t);
    g.finish();
}

/// Lets the waiter park: longer than any spin before a park.
const PARK_GAP: Duration = Duration::from_micros(200);
/// How often the bench thread looks whether the waiter ran (it sleeps in between).
const POLL_GAP: Duration = Duration::from_micros(20);

/// Times `iters` hand-offs: after a gap that lets the waiter park, `hand` hands over, the
/// waiter stores `sys::now()` in `ran` when it runs, and `back` readies the next round.
/// Returns the summed times from the hand to the waiter running.
fn handoffs(
    iters: u64,
    ran: &AtomicU64,
    mut hand: impl FnMut(),
    mut back: impl FnMut(),
) -> Duration {
    let mut total = 0u64;
    for _ in 0..iters {
        std::thread::sleep(PARK_GAP);
        ran.store(0, Ordering::SeqCst);
        let t0 = sys::now();
        hand();
        // Sleep, not spin: on a machine of few processors a spinning bench thread takes the
        // processor the woken waiter needs, and the figure becomes the scheduler's.
        let t1 = loop {
            let t1 = ran.load(Ordering::SeqCst);
            if t1 != 0 {
                break t1;
            }
            std::thread::sleep(POLL_GAP);
        };
        total += t1.saturating_sub(t0);
        back();
    }
    Duration::from_nanos(total)
}

fn handoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("handoff");
    g.sample_size(20).measurement_time(Duration::from_secs(3));

    // The bench thread holds the one core; the waiter parks in `acquire`, runs when the core
    // is handed to it, gives it back at once, and parks (std) until the next round.
    let (v, _) = vcores(1);
    let (holder, waiter) = (record(1, 1), record(2, 1));
    let ran = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let _ = v.acquire(&*holder, Spin::without_runtime());
    let th = {
        let (v, ran, next, stop) = (v.clone(), ran.clone(), next.clone(), stop.clone());
        std::thread::spawn(move || loop {
            let _ = v.acquire(&*waiter, Spin::without_runtime());
            ran.store(sys::now(), Ordering::SeqCst);
            v.release(&*waiter);
            while !next.swap(false, Ordering::SeqCst) {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::park();
            }
        })
    };
    g.bench_function("vcore", |b| {
        b.iter_custom(|iters| {
            handoffs(
                iters,
                &ran,
                || {
                    v.release(&*holder);
                },
                || {
                    let _ = v.acquire(&*holder, Spin::without_runtime());
                    next.store(true, Ordering::SeqCst);
                    th.thread().unpark();
                },
            )
        });
    });
    v.release(&*holder);
    stop.store(true, Ordering::SeqCst);
    th.thread().unpark();
    th.join().expect("waiter");

    futex_handoff(&mut g, "futex", &ran, 0);
    futex_handoff(&mut g, "futex+spin", &ran, SPIN_NS);
    g.finish();
}

/// The vcore wait's spin before it parks (no runtime: block_on's default, 20 us).
const SPIN_NS: u64 = 20_000;

/// The hand-off's shape on a bare futex word (1 = go); the waiter spins `spin_ns` on the word
/// before each `futex_wait`, as block_on does, or not at all.
fn futex_handoff(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    ran: &Arc<AtomicU64>,
    spin_ns: u64,
) {
    let word = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let th = {
        let (word, ran, stop) = (word.clone(), ran.clone(), stop.clone());
        std::thread::spawn(move || loop {
            let end = sys::now() + spin_ns;
            while word.load(Ordering::SeqCst) == 0 && sys::now() < end {
                std::hint::spin_loop();
            }
            while word.load(Ordering::SeqCst) == 0 {
                sys::futex_wait(&word, 0, None);
            }
            if stop.load(Ordering::SeqCst) {
                return;
            }
            ran.store(sys::now(), Ordering::SeqCst);
            word.store(0, Ordering::SeqCst);
        })
    };
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            handoffs(
                iters,
                ran,
                || {
                    word.store(1, Ordering::SeqCst);
                    sys::futex_wake(&word);
                },
                || {
                    while word.load(Ordering::SeqCst) != 0 {
                        std::thread::sleep(POLL_GAP);
                    }
                },
            )
        });
    });
    stop.store(true, Ordering::SeqCst);
    word.store(1, Ordering::SeqCst);
    sys::futex_wake(&word);
    th.join().expect("futex waiter");
}

/// The group criterion_main! runs (criterion_group! makes a public fn no doc comment reaches).
mod group {
    use super::*;
    criterion_group!(benches, uncontended, handoff);
}
criterion_main!(group::benches);
