//! The svcs on guest memory against hos's own nn::os objects, side by side in one run:
//!
//! - `lock_handoff`: a lock passed from its holder to a waiter parked on it, through libnx's
//!   mutex on ArbitrateLock/Unlock and through `hos::os::Mutex`. Each round the holder takes
//!   the lock, lets the waiter block on it for 100 us (long past its spin: parked), then
//!   unlocks; the time from that unlock to the waiter holding the lock is what is summed. (A
//!   loop of both threads locking would measure the locks' policies instead: the kernel
//!   hands a contended lock over, `os::Mutex` lets its releaser take it back.)
//! - `address_ping_pong`: a round trip (two hand-offs) between two guest threads through two
//!   of stratosphère's auto-clear light events on WaitForAddress/SignalToAddress, and through
//!   two auto-clear `hos::os::Event`s, with the waiter parked (spin 0) and spinning (20 us).
//!
//! After each group, p50/p90/p99 of the same cases run alternately (A B A B ...), which the
//! machine's drift hits alike: on a shared VM, read those ratios first. And
//! `address_ping_pong/alternated`: the two forms of the ping-pong alternated over 41 rounds of
//! 2,000 timed round trips (after 500 untimed), parked and spinning: each form's mean, the
//! median of the rounds' ratios to `os::Event`'s (the figure BENCHMARKS.md reports), and each
//! form's waits a round trip. `address_ping_pong/pairs`: the same with one to three
//! ping-pongs at once on addresses of their own (what the arbiter's one lock costs as more
//! threads use it).
//!
//! `cargo bench --bench arbiter`; targets: the svc forms within 1.2x of the nn::os ones.

// Shared with the other benches; this one has no use for `mean_trip_ns`.
#[allow(dead_code)]
mod alternate;
#[path = "../tests/sdk/mod.rs"]
mod sdk;

use alternate::{alternate, filtered_in, print_waits, waits_of, Waits};
use criterion::{criterion_group, criterion_main, Criterion};
use hdrhistogram::Histogram;
use hos::os::{ClearMode, Event, Mutex};
use hos::thread::JoinHandle;
use hos::{Calibration, Config, Runtime};

use sdk::libnx;
use sdk::stratosphere::InternalLightEvent;
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Release};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// A runtime whose waits spin `spin_us` before they park (0: park at once).
fn runtime(spin_us: u64) -> Runtime {
    Runtime::builder()
        .config(Config {
            spin_us,
            spin_other_us: Some(spin_us),
            ..Config::default()
        })
        .calibration(Calibration::default())
        .build()
        .expect("runtime")
}

/// A lock as the hand-off bench uses it: `f` runs holding it.
trait Lock: Send + Sync + 'static {
    fn hold(&self, f: &mut dyn FnMut());
}

impl Lock for libnx::Mutex {
    fn hold(&self, f: &mut dyn FnMut()) {
        self.lock();
        f();
        self.unlock();
    }
}

impl Lock for Mutex {
    fn hold(&self, f: &mut dyn FnMut()) {
        let guard = self.lock().map_err(|e| e.code()).expect("never abandoned");
        f();
        drop(guard);
    }
}

/// `rounds` hand-offs of `lock` from a holder to a parked waiter; the sum of the times from
/// each unlock to the waiter holding the lock. Outside that stretch the two threads meet on
/// std channels (blocking, so neither takes a processor from the other).
fn handoffs<L: Lock>(rt: &Runtime, lock: Arc<L>, rounds: u64) -> Duration {
    handoff_samples(rt, lock, rounds).iter().sum()
}

/// The hand-offs of [`handoffs`], one a round.
fn handoff_samples<L: Lock>(rt: &Runtime, lock: Arc<L>, rounds: u64) -> Vec<Duration> {
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let unlocked_at = Arc::new(AtomicU64::new(0));
    let origin = Instant::now();
    let (l, at) = (lock.clone(), unlocked_at.clone());
    let waiter = rt
        .thread()
        .name("LockWaiter")
        .spawn(move || {
            let mut samples = Vec::with_capacity(rounds as usize);
            for _ in 0..rounds {
                go_rx.recv().expect("holder");
                l.hold(&mut || {
                    let got = origin.elapsed();
                    samples.push(got.saturating_sub(Duration::from_nanos(at.load(Acquire))));
                });
                done_tx.send(()).expect("holder");
            }
            samples
        })
        .expect("waiter");
    let holder = rt
        .thread()
        .name("LockHolder")
        .spawn(move || {
            for _ in 0..rounds {
                lock.hold(&mut || {
                    go_tx.send(()).expect("waiter");
                    // Long past the waiter's spin: it is parked on the lock.
                    std::thread::sleep(Duration::from_micros(100));
                    // The last thing before the unlock.
                    unlocked_at.store(origin.elapsed().as_nanos() as u64, Release);
                });
                done_rx.recv().expect("waiter");
            }
        })
        .expect("holder");
    holder.join().expect("holder ran");
    waiter.join().expect("waiter ran")
}

fn lock_handoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("lock_handoff");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    let rt = runtime(5);
    g.bench_function("libnx_mutex_svc", |b| {
        b.iter_custom(|n| handoffs(&rt, Arc::new(libnx::Mutex::new()), n));
    });
    g.bench_function("os_mutex", |b| {
        b.iter_custom(|n| handoffs(&rt, Arc::new(Mutex::new(false)), n));
    });
    g.finish();
    // Tails, alternating the two (A B A B) so that the machine's drift hits both alike.
    let (mut svc, mut os) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        svc.extend(handoff_samples(&rt, Arc::new(libnx::Mutex::new()), 1_000));
        os.extend(handoff_samples(&rt, Arc::new(Mutex::new(false)), 1_000));
    }
    tails("libnx_mutex_svc", &svc);
    tails("os_mutex", &os);
    rt.shutdown();
}

/// Prints the p50, p90 and p99 of `samples`.
fn tails(name: &str, samples: &[Duration]) {
    let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).expect("histogram");
    for s in samples {
        let _ = h.record(s.as_nanos().max(1) as u64);
    }
    eprintln!(
        "{name:>28}: p50 {:>7} ns, p90 {:>7} ns, p99 {:>8} ns ({} samples)",
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.9),
        h.value_at_quantile(0.99),
        samples.len()
    );
}

/// An auto-clear event as both ping-pongs use it.
trait Signal: Send + Sync + 'static {
    fn signal(&self);
    fn wait(&self);
}

impl Signal for InternalLightEvent {
    fn signal(&self) {
        self.signal_with_auto_clear();
    }
    fn wait(&self) {
        self.wait_with_auto_clear();
    }
}

impl Signal for Event {
    fn signal(&self) {
        Event::signal(self);
    }
    fn wait(&self) {
        Event::wait(self).expect("not cancelled");
    }
}

/// `rounds` round trips from a guest thread to a guest partner and back; their total time.
fn ping_pong<S: Signal>(rt: &Runtime, make: fn() -> S, rounds: u64) -> Duration {
    ping_pong_samples(rt, make, rounds).iter().sum()
}

/// The round trips of [`ping_pong`], one a sample.
fn ping_pong_samples<S: Signal>(rt: &Runtime, make: fn() -> S, rounds: u64) -> Vec<Duration> {
    PingPong::start(rt, make, rounds, Arc::new(Barrier::new(1))).join()
}

/// A [`ping_pong`] running on two guest threads of its own.
struct PingPong {
    partner: JoinHandle<()>,
    measurer: JoinHandle<Vec<Duration>>,
}

impl PingPong {
    /// Starts `rounds` round trips from a new guest thread to a new partner and back, once
    /// the measurer has passed `together` (the ping-pongs that share it start together; the
    /// measurers hold their virtual cores while they wait there).
    fn start<S: Signal>(
        rt: &Runtime,
        make: fn() -> S,
        rounds: u64,
        together: Arc<Barrier>,
    ) -> Self {
        let (ping, pong) = (Arc::new(make()), Arc::new(make()));
        let (pi, po) = (ping.clone(), pong.clone());
        let partner = rt
            .thread()
            .name("PingPartner")
            .spawn(move || {
                for _ in 0..rounds {
                    pi.wait();
                    po.signal();
                }
            })
            .expect("partner");
        let measurer = rt
            .thread()
            .name("PingMeasurer")
            .spawn(move || {
                let mut samples = Vec::with_capacity(rounds as usize);
                together.wait();
                for _ in 0..rounds {
                    let start = Instant::now();
                    ping.signal();
                    pong.wait();
                    samples.push(start.elapsed());
                }
                samples
            })
            .expect("measurer");
        PingPong { partner, measurer }
    }

    /// Waits for both threads: each round trip's time.
    fn join(self) -> Vec<Duration> {
        self.partner.join().expect("partner ran");
        self.measurer.join().expect("measurer ran")
    }
}

fn address_ping_pong(c: &mut Criterion) {
    let mut g = c.benchmark_group("address_ping_pong");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    // One runtime at a time: its spin applies to both forms alike.
    for (waiter, spin_us) in [("parked", 0), ("spinning", 20)] {
        let rt = runtime(spin_us);
        g.bench_function(format!("light_event_svc_{waiter}"), |b| {
            b.iter_custom(|n| ping_pong(&rt, || InternalLightEvent::new(false), n));
        });
        g.bench_function(format!("os_event_{waiter}"), |b| {
            b.iter_custom(|n| ping_pong(&rt, || Event::new(ClearMode::Auto), n));
        });
        let (mut svc, mut os) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            svc.extend(ping_pong_samples(
                &rt,
                || InternalLightEvent::new(false),
                4_000,
            ));
            os.extend(ping_pong_samples(
                &rt,
                || Event::new(ClearMode::Auto),
                4_000,
            ));
        }
        tails(&format!("light_event_svc_{waiter}"), &svc);
        tails(&format!("os_event_{waiter}"), &os);
        rt.shutdown();
    }
    g.finish();
}

/// Round trips a form of [`address_ping_pong_alternated`] times in one round, after
/// [`WARM_TRIPS`] it does not (the partner's start and its first waits' entries).
const ALTERNATED_TRIPS: usize = 2_000;
/// Round trips before the timed ones of a round.
const WARM_TRIPS: usize = 500;
/// The ping-pong's forms as the alternated cases name them, the peer first.
const FORMS: [&str; 2] = ["os_event", "light_event_svc"];

/// The mean round trip in nanoseconds over a round's ping-pongs (each one's round trips, as
/// [`PingPong::join`] answers them), past the first [`WARM_TRIPS`] of each.
fn timed_mean_ns(pings: impl IntoIterator<Item = Vec<Duration>>) -> f64 {
    let timed: Vec<Duration> = pings
        .into_iter()
        .flat_map(|mut trips| trips.split_off(WARM_TRIPS))
        .collect();
    timed.iter().sum::<Duration>().as_nanos() as f64 / timed.len() as f64
}

/// The svc form's ping-pong and `os::Event`'s alternated round by round (see [`alternate`]),
/// parked and spinning, each on a runtime of its own: each round's mean round trip, then
/// each form's waits a round trip (how its waits ended: a ratio between a form that spins
/// and one that parks measures the spin gate, not the form).
fn address_ping_pong_alternated(_: &mut Criterion) {
    if !filtered_in("address_ping_pong/alternated") {
        return;
    }
    const ROUNDS: usize = 41;
    let trips = (WARM_TRIPS + ALTERNATED_TRIPS) as u64;
    for (waiter, spin_us) in [("parked", 0), ("spinning", 20)] {
        let rt = runtime(spin_us);
        let case = format!("address_ping_pong/alternated {waiter}");
        let mut waits: [Waits; 2] = [[0; 5]; 2];
        alternate(&case, FORMS, ROUNDS, |arm| {
            let before = waits_of!(rt.stats());
            let ns = match arm {
                0 => timed_mean_ns([ping_pong_samples(
                    &rt,
                    || Event::new(ClearMode::Auto),
                    trips,
                )]),
                _ => timed_mean_ns([ping_pong_samples(
                    &rt,
                    || InternalLightEvent::new(false),
                    trips,
                )]),
            };
            let after = waits_of!(rt.stats());
            for (sum, (a, b)) in waits[arm].iter_mut().zip(after.iter().zip(before)) {
                *sum += a - b;
            }
            ns
        });
        for (form, counts) in FORMS.iter().zip(waits) {
            print_waits(&case, form, [0; 5], counts, ROUNDS as u64 * trips);
        }
        rt.shutdown();
    }
}

/// The most pairs [`address_ping_pong_pairs`] runs at once: six guest threads, one a virtual
/// core, the most that can be in the arbiter at once on the console's six cores.
const MOST_PAIRS: usize = 3;

/// [`address_ping_pong_alternated`] with 1 to [`MOST_PAIRS`] ping-pongs at once, each on
/// its own events (its own addresses): whether the arbiter's one lock, shared by every
/// address, costs the svc form more as more threads use it. Each round's figure is the mean
/// round trip over every pair's timed trips.
fn address_ping_pong_pairs(_: &mut Criterion) {
    if !filtered_in("address_ping_pong/pairs") {
        return;
    }
    const ROUNDS: usize = 21;
    let trips = (WARM_TRIPS + ALTERNATED_TRIPS) as u64;
    let run = |rt: &Runtime, pairs: usize, svc: bool| {
        let together = Arc::new(Barrier::new(pairs));
        let runs: Vec<PingPong> = (0..pairs)
            .map(|_| {
                let together = together.clone();
                if svc {
                    PingPong::start(rt, || InternalLightEvent::new(false), trips, together)
                } else {
                    PingPong::start(rt, || Event::new(ClearMode::Auto), trips, together)
                }
            })
            .collect();
        timed_mean_ns(runs.into_iter().map(PingPong::join))
    };
    for (waiter, spin_us) in [("parked", 0), ("spinning", 20)] {
        let rt = runtime(spin_us);
        for pairs in 1..=MOST_PAIRS {
            let case = format!("address_ping_pong/pairs {waiter} x{pairs}");
            alternate(&case, FORMS, ROUNDS, |arm| run(&rt, pairs, arm == 1));
        }
        rt.shutdown();
    }
}

/// The group criterion_main! runs (criterion_group! makes a public fn no doc comment reaches).
mod group {
    use super::*;
    criterion_group!(
        benches,
        lock_handoff,
        address_ping_pong,
        address_ping_pong_alternated,
        address_ping_pong_pairs
    );
}
criterion_main!(group::benches);
