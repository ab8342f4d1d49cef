//! Hand-off benches: event ping-pong to a parked and to a spinning waiter against a std
//! park/unpark pair, each with the virtual cores on (the guest waiter gives its core back and
//! takes it again on every wait) and off (`_no_vcores`: the difference is what the core's
//! release and re-acquire add to a wait), and the parked one without the wake slice
//! (`_no_slice`: what the OS's shorter slice for the guest waiter adds); the same ping-pong
//! with the trace off, with the flight recorder and with a full trace, in one run, then
//! alternated round by round, both through hos's own events and through the SDK's light
//! events on the kernel's WaitForAddress/SignalToAddress (the arbiter's waits, traced under
//! its lock), and one event's cost (in criterion's rows, then off and flight alternated, the
//! wake timed and untimed); the ping-pong with wake claims (HOS_VCORE_CLAIM) on and
//! off, alternated; the parked ping-pong against the std pair, alternated (`parked_cost`:
//! the ratio BENCHMARKS.md's target reads) and the spinning one with the virtual cores on and
//! off, alternated (`spin_cost`); MessageQueue throughput with 1 and 4 producers; one wait's
//! bracket on a guest thread alone (`wait_bracket`: a wake already there when it waits; the
//! trace off, and the flight recorder on);
//! reading the own thread's CPU time against a raw `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`.
//!
//! `cargo bench --bench handoff`. Criterion gives the mean of a round trip (two hand-offs);
//! the tails of the round trip come from hdrhistogram, printed after each hand-off bench.

// Shared with the other benches; this one has no use for its wait counters.
#[allow(unused)]
mod alternate;
#[path = "../tests/sdk/mod.rs"]
mod sdk;

use alternate::{alternate, filtered_in, mean_trip_ns, median};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hdrhistogram::Histogram;
use hos::os::{ClearMode, Event, MessageQueue};
use hos::Config;
use hos::{Calibration, Runtime};
use sdk::stratosphere::InternalLightEvent;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A runtime whose waits spin `spin_us` before they park (0: park at once), with or without
/// the virtual cores, the trace off.
fn runtime(spin_us: u64, vcores: bool) -> Runtime {
    build(config(spin_us, vcores, Trace::Off))
}

/// What the trace keeps.
#[derive(Clone, Copy)]
enum Trace {
    Off,
    Flight,
    Full,
}

/// `runtime(spin_us, true)` with the trace off, the flight recorder only, or a full trace
/// (written to the null device at shutdown).
fn traced(spin_us: u64, trace: Trace) -> Runtime {
    build(config(spin_us, true, trace))
}

/// `runtime(spin_us, true)` with wake claims on or off (HOS_VCORE_CLAIM).
fn claiming(spin_us: u64, on: bool) -> Runtime {
    build(Config {
        vcore_claim: on,
        ..config(spin_us, true, Trace::Off)
    })
}

/// `runtime(spin_us, true)` with the wake slice off (HOS_WAKE_SLICE_US=0): the guest waiter
/// keeps the OS's default slice, as the std pair's threads do.
fn without_slice(spin_us: u64) -> Runtime {
    build(Config {
        wake_slice_us: 0,
        ..config(spin_us, true, Trace::Off)
    })
}

/// The config of every arm.
fn config(spin_us: u64, vcores: bool, trace: Trace) -> Config {
    Config {
        spin_us,
        spin_other_us: Some(spin_us),
        flight: !matches!(trace, Trace::Off),
        trace: matches!(trace, Trace::Full).then(|| "/dev/null".into()),
        vcores,
        ..Config::default()
    }
}

/// A runtime of `config` with the default calibration pinned.
fn build(config: Config) -> Runtime {
    Runtime::builder()
        .config(config)
        .calibration(Calibration::default())
        .build()
        .expect("runtime")
}

/// One round trip: ping, then wait for the pong.
trait PingPong {
    fn round_trip(&self);
}

/// An auto-clear event as the ping-pongs use it.
trait Signal: Send + Sync + 'static {
    fn new() -> Self;
    fn signal(&self);
    /// `false` once the runtime shut down.
    fn wait(&self) -> bool;
}

impl Signal for Event {
    fn new() -> Self {
        Event::new(ClearMode::Auto)
    }
    fn signal(&self) {
        Event::signal(self);
    }
    fn wait(&self) -> bool {
        Event::wait(self).is_ok()
    }
}

/// stratosphère's light event: guest atomics, and WaitForAddress/SignalToAddress when a
/// side must wait or wake.
impl Signal for InternalLightEvent {
    fn new() -> Self {
        InternalLightEvent::new(false)
    }
    fn signal(&self) {
        self.signal_with_auto_clear();
    }
    fn wait(&self) -> bool {
        self.wait_with_auto_clear();
        true
    }
}

/// Two auto-clear events of kind `S` and a guest partner thread that answers each ping.
struct Events<S: Signal> {
    ping: Arc<S>,
    pong: Arc<S>,
    stop: Arc<AtomicBool>,
    partner: Option<hos::thread::JoinHandle<()>>,
}

impl<S: Signal> Events<S> {
    fn start(rt: &Runtime) -> Self {
        let (ping, pong) = (Arc::new(S::new()), Arc::new(S::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (pi, po, st) = (ping.clone(), pong.clone(), stop.clone());
        let partner = rt
            .thread()
            .name("PresentationPartner")
            .spawn(move || {
                while pi.wait() && !st.load(Ordering::Relaxed) {
                    po.signal();
                }
            })
            .expect("partner");
        Events {
            ping,
            pong,
            stop,
            partner: Some(partner),
        }
    }
}

impl<S: Signal> PingPong for Events<S> {
    fn round_trip(&self) {
        self.ping.signal();
        let _ = self.pong.wait();
    }
}

impl<S: Signal> Drop for Events<S> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.ping.signal();
        if let Some(p) = self.partner.take() {
            let _ = p.join();
        }
    }
}

/// A ping-pong of events of kind `S` on a runtime of its own, shut down when it is dropped.
struct Hosted<S: Signal> {
    pp: Option<Events<S>>,
    rt: Runtime,
}

/// Starts the ping-pong on `rt`, which it owns from now on.
fn hosted<S: Signal>(rt: Runtime) -> Box<dyn PingPong> {
    Box::new(Hosted {
        pp: Some(Events::<S>::start(&rt)),
        rt,
    })
}

impl<S: Signal> PingPong for Hosted<S> {
    fn round_trip(&self) {
        if let Some(pp) = &self.pp {
            pp.round_trip();
        }
    }
}

impl<S: Signal> Drop for Hosted<S> {
    fn drop(&mut self) {
        drop(self.pp.take());
        self.rt.shutdown();
    }
}

/// The raw pair: flags and std park/unpark (a futex on Linux).
struct StdPark {
    ping: Arc<AtomicBool>,
    pong: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    partner: Option<std::thread::JoinHandle<()>>,
    me: std::thread::Thread,
}

impl StdPark {
    fn start() -> Self {
        let ping = Arc::new(AtomicBool::new(false));
        let pong = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let me = std::thread::current();
        let (pi, po, st, main) = (ping.clone(), pong.clone(), stop.clone(), me.clone());
        let partner = std::thread::spawn(move || loop {
            while !pi.swap(false, Ordering::Acquire) {
                std::thread::park();
            }
            if st.load(Ordering::Relaxed) {
                return;
            }
            po.store(true, Ordering::Release);
            main.unpark();
        });
        StdPark {
            ping,
            pong,
            stop,
            partner: Some(partner),
            me,
        }
    }
}

impl PingPong for StdPark {
    fn round_trip(&self) {
        self.ping.store(true, Ordering::Release);
        if let Some(p) = &self.partner {
            p.thread().unpark();
        }
        while !self.pong.swap(false, Ordering::Acquire) {
            std::thread::park();
        }
        debug_assert_eq!(std::thread::current().id(), self.me.id());
    }
}

impl Drop for StdPark {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.ping.store(true, Ordering::Release);
        if let Some(p) = self.partner.take() {
            p.thread().unpark();
            let _ = p.join();
        }
    }
}

/// Prints the round trip's p50, p99 and p99.9 over `n` samples.
fn tails(name: &str, pp: &dyn PingPong, n: usize) {
    let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).expect("histogram");
    for _ in 0..n {
        let t = Instant::now();
        pp.round_trip();
        let _ = h.record(t.elapsed().as_nanos() as u64);
    }
    eprintln!(
        "{name:>24}: round trip p50 {:>7} ns, p99 {:>8} ns, p99.9 {:>9} ns ({n} samples)",
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999)
    );
}

fn handoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("handoff_round_trip");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    // One runtime at a time: the bench thread is a host thread, whose waits follow the
    // newest running runtime's spin.
    // `_no_slice`: the wait path compared with the std pair under the same scheduling.
    let arms: [(RuntimeArm, u64); 5] = [
        (("event_parked", |s| runtime(s, true)), 0),
        (("event_parked_no_vcores", |s| runtime(s, false)), 0),
        (("event_parked_no_slice", without_slice), 0),
        (("event_spinning", |s| runtime(s, true)), 20),
        (("event_spinning_no_vcores", |s| runtime(s, false)), 20),
    ];
    for ((name, make), spin_us) in arms {
        let rt = make(spin_us);
        let pp = Events::<Event>::start(&rt);
        g.bench_function(name, |b| b.iter(|| pp.round_trip()));
        tails(name, &pp, 20_000);
        drop(pp);
        rt.shutdown();
    }
    let pp = StdPark::start();
    g.bench_function("std_park_unpark", |b| b.iter(|| pp.round_trip()));
    tails("std_park_unpark", &pp, 20_000);
    g.finish();
}

/// The ping-pongs (hos's events: `event_*`; the SDK's light events on the kernel's svcs:
/// `light_event_svc_*`) with the trace off, with the flight recorder, and with a full trace,
/// one runtime at a time, in one run; then the same arms alternated round by round, whose
/// ratios BENCHMARKS.md quotes (see [`alternated`]).
fn trace_cost(c: &mut Criterion) {
    let mut g = c.benchmark_group("trace_cost");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for (wait, spin_us) in [("parked", 0), ("spinning", 20)] {
        for (name, trace) in [
            ("off", Trace::Off),
            ("flight", Trace::Flight),
            ("full", Trace::Full),
        ] {
            let rt = traced(spin_us, trace);
            let pp = Events::<Event>::start(&rt);
            g.bench_function(format!("event_{wait}_{name}"), |b| {
                b.iter(|| pp.round_trip());
            });
            drop(pp);
            let pp = Events::<InternalLightEvent>::start(&rt);
            g.bench_function(format!("light_event_svc_{wait}_{name}"), |b| {
                b.iter(|| pp.round_trip());
            });
            drop(pp);
            rt.shutdown();
        }
    }
    // One event site (a wake) with no session, and with the flight recorder recording, timed
    // (the wake of a parked thread: a clock read) and untimed (of a thread not parked); in
    // the thread's CPU time, which other work on the machine does not stretch.
    for (name, trace, parked) in [
        ("one_event_off", Trace::Off, true),
        ("one_event_flight", Trace::Flight, true),
        ("one_event_flight_untimed", Trace::Flight, false),
    ] {
        let rt = traced(0, trace);
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                let start = raw_thread_cpu();
                (0..n).for_each(|i| wake(black_box(i), parked));
                raw_thread_cpu().checked_sub(start).unwrap()
            });
        });
        rt.shutdown();
    }
    g.finish();
    let arms: [RuntimeArm; 3] = [
        ("off", |s| traced(s, Trace::Off)),
        ("flight", |s| traced(s, Trace::Flight)),
        ("full", |s| traced(s, Trace::Full)),
    ];
    for (wait, spin_us) in [("parked", 0), ("spinning", 20)] {
        if filtered_in("trace_cost/alternated/event") {
            let case = format!("trace_cost/alternated event_{wait}");
            alternated(&case, &on_runtimes::<Event, 3>(arms, spin_us), 41, 2_000);
        }
        if filtered_in("trace_cost/alternated/light_event_svc") {
            let case = format!("trace_cost/alternated light_event_svc_{wait}");
            let arms = on_runtimes::<InternalLightEvent, 3>(arms, spin_us);
            alternated(&case, &arms, 41, 2_000);
        }
    }
    if filtered_in("trace_cost/alternated/one_event") {
        one_event_alternated(41, 200_000);
    }
}

/// One event site (a wake), `parked` saying whether its target is parked (a hint the trace
/// reads at once, as the parker's load is).
#[inline]
fn wake(target: u64, parked: bool) {
    hos_runtime::internal::trace::wake(target, || black_box(parked));
}

/// One event site (a wake) with no session and with the flight recorder recording, timed and
/// untimed, alternated round by round (a runtime of each started for its turn: sessions are
/// process-wide, so two never overlap): `events` events a round, in the thread's CPU time,
/// with the medians of the rounds' means and of their differences to off.
fn one_event_alternated(rounds: usize, events: u64) {
    let arms = [
        ("off", Trace::Off, true),
        ("flight", Trace::Flight, true),
        ("flight_untimed", Trace::Flight, false),
    ];
    let mut means: Vec<[f64; 3]> = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut round = [0.0; 3];
        for i in (0..3).map(|k| (k + r) % 3) {
            let (_, trace, parked) = arms[i];
            let rt = traced(0, trace);
            (0..events / 10).for_each(|e| wake(black_box(e), parked));
            let start = raw_thread_cpu();
            (0..events).for_each(|e| wake(black_box(e), parked));
            let spent = raw_thread_cpu().checked_sub(start).unwrap_or_default();
            round[i] = spent.as_nanos() as f64 / events as f64;
            rt.shutdown();
        }
        means.push(round);
    }
    let arm = |i: usize| median(means.iter().map(|m| m[i]).collect());
    let added = |i: usize| median(means.iter().map(|m| m[i] - m[0]).collect());
    eprintln!(
        "trace_cost/alternated one_event: off {:.2} ns, flight {:.2} ns, flight_untimed {:.2} \
         ns; median of {rounds} rounds' differences to off: flight {:.2} ns, flight_untimed \
         {:.2} ns an event",
        arm(0),
        arm(1),
        arm(2),
        added(1),
        added(2)
    );
}

/// What wake claims (HOS_VCORE_CLAIM) add to a hand-off to a guest waiter, parked (where the
/// waker claims its core) and spinning (where nothing is claimed), claims on and off
/// alternated round by round (see [`alternated`]).
fn claim_cost(_: &mut Criterion) {
    let arms: [RuntimeArm; 2] = [
        ("off", |s| claiming(s, false)),
        ("on", |s| claiming(s, true)),
    ];
    for (wait, spin_us) in [("parked", 0), ("spinning", 20)] {
        if filtered_in("claim_cost/alternated/event") {
            let case = format!("claim_cost/alternated event_{wait}");
            alternated(&case, &on_runtimes::<Event, 2>(arms, spin_us), 41, 2_000);
        }
    }
}

/// The event hand-off to a parked guest waiter against the std park/unpark pair (the first
/// arm), alternated round by round (see [`alternated`]): the parked hand-off target's ratio with the
/// machine's drift between criterion's arms taken out; `no_vcores` and `no_slice` split out
/// what the virtual cores' release and re-acquire and the wake slice add to it.
fn parked_cost(_: &mut Criterion) {
    if !filtered_in("parked_cost/alternated") {
        return;
    }
    let events: [RuntimeArm; 3] = [
        ("event_parked", |s| runtime(s, true)),
        ("event_parked_no_vcores", |s| runtime(s, false)),
        ("event_parked_no_slice", without_slice),
    ];
    let [parked, no_vcores, no_slice] = on_runtimes::<Event, 3>(events, 0);
    let std_pair: Arm = ("std_park_unpark", Box::new(|| Box::new(StdPark::start())));
    let arms = [std_pair, parked, no_vcores, no_slice];
    alternated("parked_cost/alternated", &arms, 41, 2_000);
}

/// The event hand-off caught by the waiter's 20 us spin, with the virtual cores off (the first
/// arm) and on, alternated round by round (see [`alternated`]): what the core's release and
/// re-acquire add to a wait that never parks, where they are the largest share.
fn spin_cost(_: &mut Criterion) {
    if !filtered_in("spin_cost/alternated") {
        return;
    }
    let arms: [RuntimeArm; 2] = [
        ("event_spinning_no_vcores", |s| runtime(s, false)),
        ("event_spinning", |s| runtime(s, true)),
    ];
    alternated(
        "spin_cost/alternated",
        &on_runtimes::<Event, 2>(arms, 20),
        41,
        20_000,
    );
}

/// One arm of an alternated comparison: its name, and what starts its ping-pong (which owns
/// what it runs on, and stops it when dropped).
type Arm = (&'static str, Box<dyn Fn() -> Box<dyn PingPong>>);

/// An arm that is a runtime: its name, and its runtime for a spin in us.
type RuntimeArm = (&'static str, fn(u64) -> Runtime);

/// Arms of event ping-pongs of kind `S`, each on its runtime of `arms` for `spin_us`.
fn on_runtimes<S: Signal, const N: usize>(arms: [RuntimeArm; N], spin_us: u64) -> [Arm; N] {
    arms.map(|(name, make)| -> Arm { (name, Box::new(move || hosted::<S>(make(spin_us)))) })
}

/// `arms` alternated (see [`alternate`]): each arm started afresh for its turn.
fn alternated<const N: usize>(case: &str, arms: &[Arm; N], rounds: usize, trips: u32) {
    alternate(case, arms.each_ref().map(|a| a.0), rounds, |i| {
        let pp = (arms[i].1)();
        mean_trip_ns(trips, || pp.round_trip())
    });
}

fn queue_throughput(c: &mut Criterion) {
    const MESSAGES: u64 = 20_000;
    let mut g = c.benchmark_group("message_queue");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(MESSAGES));
    let rt = runtime(5, true);
    for producers in [1u64, 4] {
        g.bench_with_input(
            BenchmarkId::new("producers", producers),
            &producers,
            |b, &producers| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let q = Arc::new(MessageQueue::<u64>::new(64));
                        let start = Instant::now();
                        let senders: Vec<_> = (0..producers)
                            .map(|_| {
                                let q = q.clone();
                                rt.thread()
                                    .spawn(move || {
                                        for i in 0..MESSAGES / producers {
                                            let _ = q.send(i);
                                        }
                                    })
                                    .expect("producer")
                            })
                            .collect();
                        for _ in 0..MESSAGES {
                            let _ = q.receive();
                        }
                        total += start.elapsed();
                        for s in senders {
                            let _ = s.join();
                        }
                    }
                    total
                });
            },
        );
    }
    g.finish();
    rt.shutdown();
}

/// A future pending at its first poll, which wakes its own waiter as it says so: a wait whose
/// wake is there before its spin begins.
struct WokenAtOnce(bool);

impl std::future::Future for WokenAtOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// One wait's bracket on a guest thread, with no other thread in it: the activity marked,
/// the core given back, the spin's start, the wake's take, the core taken again; with the
/// trace off and with the flight recorder on (its begin and end recorded too).
fn wait_bracket(c: &mut Criterion) {
    let mut g = c.benchmark_group("wait_bracket");
    // `guest`: the trace off; `guest_flight`: the flight recorder on, as a runtime starts.
    for (name, trace) in [("guest", Trace::Off), ("guest_flight", Trace::Flight)] {
        let rt = traced(20, trace);
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                rt.thread()
                    .name("MainThread")
                    .spawn(move || {
                        let start = Instant::now();
                        for _ in 0..n {
                            hos_runtime::internal::block_on(
                                WokenAtOnce(false),
                                hos_runtime::internal::Wait::objects(),
                            );
                        }
                        start.elapsed()
                    })
                    .expect("a guest thread")
                    .join()
                    .expect("the bracket's thread")
            });
        });
        rt.shutdown();
    }
    g.finish();
}

fn raw_thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid and writable for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn cpu_time(c: &mut Criterion) {
    let mut g = c.benchmark_group("own_cpu_time");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("hos_thread_cpu_time", |b| b.iter(hos::thread::cpu_time));
    g.bench_function("raw_clock_gettime", |b| b.iter(raw_thread_cpu));
    g.finish();
}

/// The group criterion_main! runs (criterion_group! makes a public fn no doc comment reaches).
mod group {
    use super::*;
    criterion_group!(
        benches,
        handoff,
        trace_cost,
        claim_cost,
        parked_cost,
        spin_cost,
        queue_throughput,
        wait_bracket,
        cpu_time
    );
}
criterion_main!(group::benches);
