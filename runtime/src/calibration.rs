//! What the machine's timers and wake-ups cost, measured at build and tracked while running.
//!
//! Invariant: the estimates only steer where a precise sleeper wakes before its deadline and
//! which precise path it takes; correctness never depends on them (every precise sleeper
//! spins to its exact deadline, so a wrong estimate costs CPU or lateness, never an early
//! return). Pinned calibrations (from the config) are never updated.
//!
//! Machines differ tenfold in both figures (docs/design.md section 4), so nothing here is a
//! constant.

use crate::build_error::BuildError;
use crate::machine::{Calibration, PrecisePath, MAX_ESTIMATE_NS};
use crate::parker::Parker;
use crate::spawn::Spawn;
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use crate::sync::{lock, Mutex};
use crate::sys;
use crate::time::nanos;
use std::sync::Arc;

/// Live estimates, shared by the reactor and every sleeper.
#[derive(Debug)]
pub(crate) struct Tracker {
    timer_lateness_ns: Estimate,
    timer_margin_ns: Estimate,
    /// The unseen pollers' margin (`Calibration::poller_margin_ns`).
    poller_margin_ns: Estimate,
    /// The reactor's precise wait's lateness, where the OS layer serves it by another timer
    /// than a slack-1 sleep (`sys::PRECISE_WAIT_SHARES_TIMER`); unused where it is the same.
    wait_lateness_ns: Estimate,
    /// Whether the sleepers' timer is coarse now ([`coarse_timer`], with its hysteresis).
    coarse: AtomicBool,
    wake_latency_ns: Estimate,
    precise: AtomicU8,
    /// Precise sleeps that asked whether a wake-latency sample is due.
    samples: AtomicU64,
    /// CPU of the own path, the reactor path's sleeper and its waker, as measured at boot.
    measured: Mutex<(u64, u64, u64)>,
    pinned: bool,
}

impl Tracker {
    /// Starts from `c`; a pinned tracker never moves.
    pub(crate) fn new(c: Calibration, pinned: bool) -> Self {
        Tracker {
            timer_lateness_ns: Estimate::new(c.timer_lateness_ns),
            timer_margin_ns: Estimate::new(margin_of(&c)),
            poller_margin_ns: Estimate::new(poller_margin_of(&c)),
            wait_lateness_ns: Estimate::new(c.timer_lateness_ns),
            coarse: AtomicBool::new(coarse_timer(c.timer_lateness_ns, false)),
            wake_latency_ns: Estimate::new(c.wake_latency_ns),
            precise: AtomicU8::new(c.precise as u8),
            samples: AtomicU64::new(0),
            measured: Mutex::new((c.own_cpu_ns, c.reactor_cpu_ns, c.waker_cpu_ns)),
            pinned,
        }
    }

    /// Replaces every estimate (the boot measurement), each warming up again.
    pub(crate) fn reset(&self, c: Calibration) {
        self.timer_lateness_ns.reset(c.timer_lateness_ns);
        self.timer_margin_ns.reset(margin_of(&c));
        self.poller_margin_ns.reset(poller_margin_of(&c));
        self.wait_lateness_ns.reset(c.timer_lateness_ns);
        // Relaxed: published to other threads by the reactor's start handshake.
        self.coarse
            .store(coarse_timer(c.timer_lateness_ns, false), Ordering::Relaxed);
        self.wake_latency_ns.reset(c.wake_latency_ns);
        self.precise.store(c.precise as u8, Ordering::Relaxed);
        *lock(&self.measured) = (c.own_cpu_ns, c.reactor_cpu_ns, c.waker_cpu_ns);
    }

    /// The figures now.
    pub(crate) fn get(&self) -> Calibration {
        // Relaxed: each estimate is an independent hint (module invariant).
        let (own_cpu_ns, reactor_cpu_ns, waker_cpu_ns) = *lock(&self.measured);
        Calibration {
            timer_lateness_ns: self.timer_lateness_ns(),
            timer_margin_ns: self.timer_margin_ns(),
            poller_margin_ns: self.poller_margin_ns(),
            wake_latency_ns: self.wake_latency_ns(),
            precise: self.precise(),
            own_cpu_ns,
            reactor_cpu_ns,
            waker_cpu_ns,
        }
    }

    /// The timer's lateness estimate.
    #[inline]
    pub(crate) fn timer_lateness_ns(&self) -> u64 {
        self.timer_lateness_ns.get()
    }

    /// The lateness of the reactor's precise wait (`sys::wait_precise`): the timer's where
    /// the OS layer serves both by one timer, else its own estimate.
    #[inline]
    pub(crate) fn wait_lateness_ns(&self) -> u64 {
        if sys::PRECISE_WAIT_SHARES_TIMER {
            self.timer_lateness_ns()
        } else {
            self.wait_lateness_ns.get()
        }
    }

    /// The tick of the sleepers' timer where it is coarse (its lateness estimate, by
    /// [`coarse_timer`] with its hysteresis), `None` where it is fine enough to sleep on.
    pub(crate) fn coarse_tick(&self) -> Option<u64> {
        let lateness = self.timer_lateness_ns();
        // Relaxed: a hint; two sleepers that race on the flip only both decide it.
        let was = self.coarse.load(Ordering::Relaxed);
        let coarse = coarse_timer(lateness, was);
        if coarse != was {
            self.coarse.store(coarse, Ordering::Relaxed);
        }
        coarse.then_some(lateness)
    }

    /// How early a sleeper arms its own timer before its deadline.
    #[inline]
    pub(crate) fn timer_margin_ns(&self) -> u64 {
        self.timer_margin_ns.get()
    }

    /// How early an unseen poller's sleep arms its own timer before its deadline.
    #[inline]
    pub(crate) fn poller_margin_ns(&self) -> u64 {
        self.poller_margin_ns.get()
    }

    /// The wake latency estimate.
    #[inline]
    pub(crate) fn wake_latency_ns(&self) -> u64 {
        self.wake_latency_ns.get()
    }

    /// Wake latencies observed since the last reset, counted up to the warm-up's length.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn wake_samples(&self) -> u64 {
        // Relaxed: a count read after the sleeps that fed it were joined.
        self.wake_latency_ns.seen.load(Ordering::Relaxed)
    }

    /// The precise path in force.
    #[inline]
    pub(crate) fn precise(&self) -> PrecisePath {
        if self.precise.load(Ordering::Relaxed) == PrecisePath::Reactor as u8 {
            PrecisePath::Reactor
        } else {
            PrecisePath::OwnTimer
        }
    }

    /// Whether this call is the one in `every` whose sleep should park to measure the wake
    /// latency (never for a pinned tracker: it measures nothing).
    pub(crate) fn sample_due(&self, every: u64) -> bool {
        // Relaxed: a counter; which sleep samples does not matter.
        !self.pinned && self.samples.fetch_add(1, Ordering::Relaxed) % every.max(1) == 0
    }

    /// Feeds one observed timer lateness: its 90th percentile (the reactor wakes before most
    /// deadlines and spins the rest, which costs the reactor, not the sleeper), its 75th (the
    /// sleepers' own margin) and its median (unseen pollers' margin) are tracked.
    pub(crate) fn observe_timer(&self, late_ns: u64) {
        self.observe(&self.timer_lateness_ns, late_ns, P90);
        self.observe(&self.timer_margin_ns, late_ns, P75);
        self.observe(&self.poller_margin_ns, late_ns, P50);
    }

    /// Feeds one observed lateness of the reactor's precise wait: to the timer's estimates
    /// where it is the same timer, else to its own (so that one wait's coarse timeouts never
    /// move the other's estimate).
    pub(crate) fn observe_wait(&self, late_ns: u64) {
        if sys::PRECISE_WAIT_SHARES_TIMER {
            self.observe_timer(late_ns);
        } else {
            self.observe(&self.wait_lateness_ns, late_ns, P90);
        }
    }

    /// Feeds one observed wake latency (its 90th percentile too: a sleeper woken early spins
    /// a few microseconds, one woken late is late).
    pub(crate) fn observe_wake(&self, latency_ns: u64) {
        self.observe(&self.wake_latency_ns, latency_ns, P90);
    }

    /// One sample of `est`, at quantile `q`; none for a pinned tracker.
    fn observe(&self, est: &Estimate, sample: u64, q: Quantile) {
        if !self.pinned {
            est.observe(sample, q);
        }
    }
}

/// One tracked figure: a stochastic estimate of a quantile of its samples.
///
/// Invariant: the value stays within [0, [`MAX_ESTIMATE_NS`]]; each sample moves it by a
/// bounded step, a 16th of the value once [`WARM_SAMPLES`] samples have been seen and a
/// quarter of it before (the warm-up), never by the sample's size.
#[derive(Debug)]
struct Estimate {
    ns: AtomicU64,
    /// Samples seen since the last reset (counted to [`WARM_SAMPLES`] only).
    seen: AtomicU64,
}

/// Samples an estimate takes with the warm-up's larger step: the boot measurement is 24
/// samples of one moment (on the 16-core device its 90th percentile of the timer's lateness
/// ranged 8.5-33 us over fresh runtimes where the steady figure was 4.8 us), so a fresh
/// runtime forgets it within these samples (a 6-fold error, both quantiles) rather than a few
/// hundred: at one sample a 20 us sleep, under 2 ms of one poller's sleeps.
const WARM_SAMPLES: u64 = 64;

impl Estimate {
    fn new(ns: u64) -> Self {
        Estimate {
            ns: AtomicU64::new(ns),
            seen: AtomicU64::new(0),
        }
    }

    #[inline]
    fn get(&self) -> u64 {
        // Relaxed: each estimate is an independent hint (module invariant).
        self.ns.load(Ordering::Relaxed)
    }

    /// Starts again from `ns`, warming up.
    fn reset(&self, ns: u64) {
        // Relaxed: published to other threads by the reactor's start handshake.
        self.ns.store(ns, Ordering::Relaxed);
        self.seen.store(0, Ordering::Relaxed);
    }

    /// One step of a stochastic estimate of the quantile `q` (in twentieths): up by `q`
    /// twentieths of a step when the sample is above, down by `20 - q` when it is below, so
    /// the estimate settles where `20 - q` twentieths of samples lie above it. The step is a
    /// 16th of the estimate (a quarter while warming up; at least 100 ns), never the sample's
    /// size, so one 2 ms stall moves it by 6 %, not by a quarter millisecond: a
    /// gap-proportional average let heavy tails hold it far above the 90th percentile (seen
    /// on the 16-core device: 5 pollers' estimate passed their 20 us sleep and all of them
    /// spun).
    fn observe(&self, sample: u64, q: Quantile) {
        // Relaxed: a count for the warm-up; a lost increment lengthens it by one sample.
        let warm = self.seen.load(Ordering::Relaxed) >= WARM_SAMPLES;
        if !warm {
            self.seen.fetch_add(1, Ordering::Relaxed);
        }
        let old = self.get();
        let step = (old / if warm { 16 } else { 4 }).max(MIN_STEP_NS);
        let new = if sample.min(MAX_ESTIMATE_NS) > old {
            (old + step * q.0 / 20).min(MAX_ESTIMATE_NS)
        } else {
            old.saturating_sub(step * (20 - q.0) / 20)
        };
        // Relaxed store: a lost update between two observers only drops one sample.
        self.ns.store(new, Ordering::Relaxed);
    }
}

/// A timer whose lateness estimate reaches this is coarse: a timer-mode sleep rides its
/// ticks instead of sleeping on it. Half a millisecond above `timeBeginPeriod(1)`'s tick
/// (976.6 us, whose boot estimate lies at 0.97 ms), so that a 1 ms tick is not coarse.
pub(crate) const COARSE_ENTER_NS: u64 = 1_500_000;
/// A coarse timer stops being coarse once its estimate falls below this: the hysteresis
/// keeps an estimate that wanders about one threshold from flipping the sleeps to and fro.
pub(crate) const COARSE_LEAVE_NS: u64 = 1_000_000;

/// Whether a timer whose lateness estimate is `lateness_ns` is coarse, given whether it was
/// (`was`): it becomes coarse at [`COARSE_ENTER_NS`] and stays so down to [`COARSE_LEAVE_NS`].
pub(crate) fn coarse_timer(lateness_ns: u64, was: bool) -> bool {
    if was {
        lateness_ns >= COARSE_LEAVE_NS
    } else {
        lateness_ns >= COARSE_ENTER_NS
    }
}

/// The warning for a boot figure measured at `raw_ns`, where the estimates keep at most
/// [`MAX_ESTIMATE_NS`]: `None` below it. Past it the estimate sits at the cap, and deadlines
/// that steer by it are late by up to the difference (a coarse OS timer: on Windows, the
/// default 15.6 ms tick).
pub(crate) fn cap_warning(figure: &str, raw_ns: u64) -> Option<String> {
    (raw_ns > MAX_ESTIMATE_NS).then(|| {
        format!(
            "the boot calibration measured a {figure} of {:.3} ms, past the {:.3} ms its \
             estimates keep: precise deadlines may be late by up to {:.3} ms (a coarse OS \
             timer; on Windows ask for a finer timer resolution)",
            raw_ns as f64 / 1e6,
            MAX_ESTIMATE_NS as f64 / 1e6,
            (raw_ns - MAX_ESTIMATE_NS) as f64 / 1e6,
        )
    })
}

/// The estimate kept of a boot figure measured at `raw_ns` ([`MAX_ESTIMATE_NS`] at most),
/// warning where the cap cuts it.
fn kept(figure: &str, raw_ns: u64) -> u64 {
    if let Some(w) = cap_warning(figure, raw_ns) {
        crate::warn!("{w}");
    }
    raw_ns.min(MAX_ESTIMATE_NS)
}

/// The smallest step of the tracked estimates.
const MIN_STEP_NS: u64 = 100;

/// A quantile a tracked estimate settles at, in twentieths.
#[derive(Clone, Copy, Debug)]
struct Quantile(u64);
const P90: Quantile = Quantile(18);
const P75: Quantile = Quantile(15);
const P50: Quantile = Quantile(10);

/// A calibration's own-timer margin (a pinned one without it: its lateness).
fn margin_of(c: &Calibration) -> u64 {
    match c.timer_margin_ns {
        0 => c.timer_lateness_ns,
        m => m,
    }
}

/// A calibration's unseen pollers' margin (a pinned one without it: its own-timer margin).
fn poller_margin_of(c: &Calibration) -> u64 {
    match c.poller_margin_ns {
        0 => margin_of(c),
        m => m,
    }
}

fn quantile(mut v: Vec<u64>, q: f64) -> u64 {
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v.get(i).copied().unwrap_or(0)
}

/// Spins until `deadline` (a `sys::now()` value).
#[inline]
pub(crate) fn spin_until(deadline: u64) {
    while sys::now() < deadline {
        crate::sync::spin_hint();
    }
}

const SAMPLES: usize = 24;
const PROBE_NS: u64 = 50_000;
/// The longest one probe round may take before the calibration moves on.
const ROUND_LIMIT_NS: u64 = 50_000_000;

/// What the calibrating thread and its helper share.
#[derive(Default)]
struct Probe {
    parker: Parker,
    /// A time handed across: when the helper ran, or the deadline it must spin to.
    /// Relaxed: published by the parker's Release/Acquire or by `acks`.
    at: AtomicU64,
    acks: AtomicU64,
    /// The helper's CPU on the own and reactor paths, all rounds (published by its end,
    /// which the join orders before the reads).
    own_ns: AtomicU64,
    reactor_ns: AtomicU64,
}

impl Probe {
    fn ack(&self) {
        // Release: `at` written before the ack is seen by the waiter's Acquire.
        self.acks.fetch_add(1, Ordering::Release);
    }

    /// Waits (bounded) until `n` rounds are acknowledged; `false` if the bound passed.
    fn wait_ack(&self, n: u64) -> bool {
        let limit = sys::now() + ROUND_LIMIT_NS;
        while self.acks.load(Ordering::Acquire) < n {
            if sys::now() > limit {
                return false;
            }
            sys::yield_now();
        }
        true
    }
}

/// Measures the machine, in a few tens of milliseconds. Call it on a thread with timer slack
/// 1 ns (the reactor thread does); it starts one short-lived helper thread through `spawn`.
///
/// # Errors
/// [`BuildError::Calibration`] when the helper cannot start, panics, or never answers a
/// wake (then there is no wake latency to measure).
pub(crate) fn measure(spawn: Spawn) -> Result<Calibration, BuildError> {
    let fail = |why: String| BuildError::Calibration(why);
    // 1. The OS timer's lateness at 1 ns of slack.
    let lateness: Vec<u64> = (0..SAMPLES)
        .map(|_| {
            let d = sys::now() + PROBE_NS;
            sys::sleep_until(d);
            sys::now() - d
        })
        .collect();
    let timer_margin_ns = quantile(lateness.clone(), 0.75).min(MAX_ESTIMATE_NS);
    let poller_margin_ns = quantile(lateness.clone(), 0.5).min(MAX_ESTIMATE_NS);
    let timer_lateness_ns = kept("timer lateness", quantile(lateness, 0.9));

    // 2. Wake latency, and 3. the sleeper's CPU on each precise path, on a helper thread.
    // Each round is acknowledged (`acks`), so no two unparks ever fold into one token; every
    // wait is bounded, so a machine that stalls a thread for long only spoils a sample.
    let probe = Arc::new(Probe::default());
    let p = probe.clone();
    let margin = timer_margin_ns;
    let helper = spawn(
        "hos-calibrate",
        Box::new(move || {
            sys::set_timer_slack_ns(1);
            // Wake latency: park, note when we ran.
            for _ in 0..SAMPLES {
                p.parker.park(Some(sys::now() + ROUND_LIMIT_NS));
                p.at.store(sys::now(), Ordering::Relaxed);
                p.ack();
            }
            // Own path: a precise own-timer sleep of PROBE_NS, SAMPLES times.
            let before = sys::thread_cpu();
            for _ in 0..SAMPLES {
                let d = sys::now() + PROBE_NS;
                sys::sleep_until(d.saturating_sub(margin));
                spin_until(d);
            }
            let own = sys::thread_cpu().since(&before).total();
            // Relaxed: the join publishes it.
            p.own_ns.store(nanos(own), Ordering::Relaxed);
            p.ack();
            // Reactor path: park until unparked early, then spin to the deadline the waker set.
            let before = sys::thread_cpu();
            for _ in 0..SAMPLES {
                p.parker.park(Some(sys::now() + ROUND_LIMIT_NS));
                spin_until(p.at.load(Ordering::Relaxed));
                p.ack();
            }
            let reactor = sys::thread_cpu().since(&before).total();
            p.reactor_ns.store(nanos(reactor), Ordering::Relaxed);
        }),
    )
    .map_err(|e| fail(format!("its helper thread could not start: {e}")))?;
    let mut wake = Vec::with_capacity(SAMPLES);
    let mut round = 0;
    for _ in 0..SAMPLES {
        sys::sleep_until(sys::now() + PROBE_NS);
        let t0 = sys::now();
        probe.parker.unpark();
        round += 1;
        if probe.wait_ack(round) {
            wake.push(probe.at.load(Ordering::Relaxed).saturating_sub(t0));
        }
    }
    let answered = wake.len();
    let wake_latency_ns = quantile(wake, 0.9).min(MAX_ESTIMATE_NS);
    // Let the helper run its own-path probe, then act as its reactor: what this thread
    // spends on each deadline (its timer wake, its spin to the wake, the unpark) is what the
    // reactor spends on a precise sleep, measured round by round (not the wait for the ack).
    round += 1;
    let _ = (0..4).any(|_| probe.wait_ack(round));
    let mut waker = std::time::Duration::ZERO;
    for _ in 0..SAMPLES {
        let before = sys::thread_cpu();
        let d = sys::now() + PROBE_NS;
        let fire = d.saturating_sub(wake_latency_ns);
        sys::sleep_until(fire.saturating_sub(timer_lateness_ns));
        spin_until(fire);
        probe.at.store(d, Ordering::Relaxed);
        probe.parker.unpark();
        waker += sys::thread_cpu().since(&before).total();
        round += 1;
        probe.wait_ack(round);
    }
    helper
        .join()
        .map_err(|_| fail("its helper thread panicked".into()))?;
    if answered == 0 {
        return Err(fail(format!(
            "its helper thread answered none of {SAMPLES} wakes within {} ms each",
            ROUND_LIMIT_NS / 1_000_000
        )));
    }
    // Relaxed: the join above ordered the helper's stores before these reads.
    let own_cpu_ns = probe.own_ns.load(Ordering::Relaxed) / SAMPLES as u64;
    let reactor_cpu_ns = probe.reactor_ns.load(Ordering::Relaxed) / SAMPLES as u64;
    let waker_cpu_ns = nanos(waker) / SAMPLES as u64;
    Ok(Calibration {
        timer_lateness_ns,
        timer_margin_ns,
        poller_margin_ns,
        wake_latency_ns,
        precise: precise_path(own_cpu_ns, reactor_cpu_ns, waker_cpu_ns),
        own_cpu_ns,
        reactor_cpu_ns,
        waker_cpu_ns,
    })
}

/// The precise path that costs the process less: through the reactor, the sleeper's park,
/// wake and spin plus the reactor's own timer wake, spin and unpark; on its own timer, the
/// sleeper alone. Where the OS cannot say (fallback: 0 CPU every way), the own timer, which
/// needs no reactor. Counting the reactor's spin alone missed its wake and unpark
/// (docs/design.md section 4).
pub(crate) fn precise_path(own_cpu_ns: u64, reactor_cpu_ns: u64, waker_cpu_ns: u64) -> PrecisePath {
    if reactor_cpu_ns.saturating_add(waker_cpu_ns) < own_cpu_ns {
        PrecisePath::Reactor
    } else {
        PrecisePath::OwnTimer
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn tracker(start_ns: u64) -> Tracker {
        let c = Calibration {
            timer_lateness_ns: start_ns,
            wake_latency_ns: start_ns,
            ..Calibration::default()
        };
        Tracker::new(c, false)
    }

    #[test]
    fn heavy_tails_do_not_hold_the_estimate_up() {
        // 5 % of samples are 2 ms stalls, the rest 5 us: the 90th percentile is 5 us.
        let t = tracker(50_000);
        for i in 0..20_000u64 {
            t.observe_timer(if i % 20 == 0 { 2_000_000 } else { 5_000 });
        }
        let est = t.timer_lateness_ns();
        assert!((4_000..=10_000).contains(&est), "estimate {est} ns");
    }

    #[test]
    fn the_estimate_settles_near_the_90th_percentile() {
        // Uniform 1..=100 us: the 90th percentile is 90 us.
        let t = tracker(1_000);
        let mut x = 12345u64;
        for _ in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t.observe_wake(1_000 + (x >> 33) % 100_000);
        }
        let est = t.wake_latency_ns();
        assert!((80_000..=98_000).contains(&est), "estimate {est} ns");
    }

    #[test]
    fn the_margins_settle_near_the_75th_percentile_and_the_median_the_lateness_near_the_90th() {
        // Uniform 1..=100 us; so wide a spread keeps the estimates wandering by a fifth, so
        // their mean over the last 10,000 samples is checked.
        let t = tracker(1_000);
        let mut x = 777u64;
        let (mut margin, mut poller, mut late) = (0, 0, 0);
        for i in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t.observe_timer(1_000 + (x >> 33) % 100_000);
            if i >= 40_000 {
                margin += t.timer_margin_ns();
                poller += t.poller_margin_ns();
                late += t.timer_lateness_ns();
            }
        }
        let (margin, poller, late) = (margin / 10_000, poller / 10_000, late / 10_000);
        assert!((72_000..=80_000).contains(&margin), "margin {margin} ns");
        assert!(
            (46_000..=56_000).contains(&poller),
            "poller margin {poller} ns"
        );
        assert!((86_000..=94_000).contains(&late), "lateness {late} ns");
    }

    #[test]
    fn a_timer_that_gets_worse_or_better_is_followed_within_a_few_hundred_samples() {
        // 5 us, then 200 us late (another process's load), then 5 us again: at 20 us sleeps
        // a few hundred samples are a few milliseconds of one poller's sleeps.
        let t = tracker(5_000);
        for _ in 0..300 {
            t.observe_timer(200_000);
        }
        let (margin, late) = (t.timer_margin_ns(), t.timer_lateness_ns());
        assert!(margin > 150_000 && late > 150_000, "{margin} {late} ns");
        for _ in 0..2_000 {
            t.observe_timer(5_000);
        }
        let (margin, late) = (t.timer_margin_ns(), t.timer_lateness_ns());
        assert!(margin < 10_000 && late < 10_000, "{margin} {late} ns");
    }

    #[test]
    fn a_fresh_tracker_forgets_a_boot_figure_six_times_too_high_within_its_warm_up() {
        // The boot measured 30 us; every sleep then meets 5 us.
        let t = tracker(30_000);
        for _ in 0..WARM_SAMPLES {
            t.observe_timer(5_000);
            t.observe_wake(5_000);
        }
        let (margin, late, wake) = (
            t.timer_margin_ns(),
            t.timer_lateness_ns(),
            t.wake_latency_ns(),
        );
        assert!(margin <= 7_500, "margin {margin} ns");
        assert!(late <= 7_500, "lateness {late} ns");
        assert!(wake <= 7_500, "wake latency {wake} ns");
        // Warmed up, a sample moves the estimate by a 16th of it, not a quarter.
        t.observe_timer(1_000_000);
        let up = t.timer_lateness_ns() - late;
        assert!(up <= late / 16, "step {up} ns from {late} ns");
    }

    #[test]
    fn a_reset_warms_the_estimates_up_again() {
        let t = tracker(5_000);
        for _ in 0..WARM_SAMPLES {
            t.observe_timer(5_000);
        }
        t.reset(Calibration {
            timer_lateness_ns: 40_000,
            ..Calibration::default()
        });
        t.observe_timer(1_000);
        // A warm-up step of the 90th percentile: 2 twentieths of a quarter of 40 us.
        assert_eq!(t.timer_lateness_ns(), 39_000);
    }

    #[test]
    fn a_pinned_calibration_without_a_margin_arms_by_its_lateness() {
        let c = Calibration {
            timer_lateness_ns: 7_000,
            ..Calibration::default()
        };
        assert_eq!(Tracker::new(c, true).timer_margin_ns(), 7_000);
        assert_eq!(
            Tracker::new(c, true).poller_margin_ns(),
            7_000,
            "by the margin"
        );
        let c = Calibration {
            timer_margin_ns: 3_000,
            ..c
        };
        assert_eq!(Tracker::new(c, true).get().timer_margin_ns, 3_000);
        assert_eq!(Tracker::new(c, true).poller_margin_ns(), 3_000);
        let c = Calibration {
            poller_margin_ns: 2_000,
            ..c
        };
        assert_eq!(Tracker::new(c, true).get().poller_margin_ns, 2_000);
    }

    #[test]
    fn the_reactor_path_must_beat_the_own_timer_with_the_waker_counted() {
        assert_eq!(precise_path(10_000, 4_000, 5_000), PrecisePath::Reactor);
        assert_eq!(precise_path(10_000, 4_000, 6_000), PrecisePath::OwnTimer);
        assert_eq!(precise_path(10_000, 4_000, 7_000), PrecisePath::OwnTimer);
        assert_eq!(precise_path(0, 0, 0), PrecisePath::OwnTimer, "no CPU clock");
        assert_eq!(precise_path(u64::MAX, u64::MAX, 1), PrecisePath::OwnTimer);
    }

    #[test]
    fn the_reactors_waits_move_only_their_own_estimate_where_the_timers_differ() {
        // 200 waits 1.5 ms late (a millisecond timeout on a tick) against a 50 us timer.
        let t = tracker(50_000);
        for _ in 0..200 {
            t.observe_wait(1_500_000);
        }
        if sys::PRECISE_WAIT_SHARES_TIMER {
            // One timer: the reactor's waits are the timer's samples.
            assert!(t.timer_lateness_ns() > 1_000_000);
            assert_eq!(t.wait_lateness_ns(), t.timer_lateness_ns());
        } else {
            assert_eq!(
                t.timer_lateness_ns(),
                50_000,
                "the sleepers' timer was moved"
            );
            assert_eq!(t.timer_margin_ns(), 50_000);
            assert!(t.wait_lateness_ns() > 1_000_000);
            assert_eq!(t.coarse_tick(), None);
        }
    }

    #[test]
    fn a_pinned_tracker_never_moves() {
        let c = Calibration {
            timer_lateness_ns: 7_000,
            ..Calibration::default()
        };
        let t = Tracker::new(c, true);
        t.observe_timer(1_000_000);
        assert_eq!(t.timer_lateness_ns(), 7_000);
    }
}
