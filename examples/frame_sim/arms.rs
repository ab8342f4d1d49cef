//! The arms, and one run of one arm: a fresh runtime, the load, a warm-up, the measured
//! window, the shutdown.
//!
//! Invariant: a run owns its runtime from build to shutdown; nothing of one run (threads,
//! counters, calibration) outlives it into the next, so runs differ only by the arm's config
//! and by the machine's noise, which alternating the arms spreads over all of them. The
//! window's two snapshots are taken right after presents `warmup` and `warmup + frames`.

use crate::figures::median;
use crate::group::Group;
use crate::load::{self, Load, Mark, PickupFigures};
use crate::progress::Progress;
use hos::{Calibration, Config, CpuTime, PrecisePath, ShortSleep};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// The `grace` arm's kick's grace, us: the default's until the strict bound replaced it.
pub(crate) const GRACE_US: u64 = 100;

/// One runtime configuration under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Arm {
    /// The reference host's old design: every short sleep yields, every thread spins 20 us
    /// before a wait, no poller cap; no wake claims, no kick's grace and no wake slice (the
    /// reference host has none of them).
    Seeds,
    /// The reference host today: ShortSleep::Auto with its defaults (the count rule, the
    /// poller cap, spin by group); no wake claims, no kick's grace and no wake slice (the
    /// reference host has none of them).
    Auto,
    /// hos's default: every switch at its default (the calibrated reactor).
    Reactor,
    /// The reactor with idle polls off (HOS_IDLE_POLL=0): the pollers' sleeps precise.
    Precise,
    /// The reactor with idle polls relaxed at their deadline (HOS_IDLE_POLL_STRETCH_US=0).
    Stretch0,
    /// The reactor without wake claims (HOS_VCORE_CLAIM=0): a woken guest thread asks for its
    /// virtual core once it runs.
    NoClaim,
    /// The reactor with a kick's grace of [`GRACE_US`] (HOS_VCORE_GRACE_US, the default until
    /// the repeated matrix showed it buys nothing): a waiter whose kick a holder has not
    /// answered in that long takes the holder's core, and the holder runs on beside the
    /// virtual cores until its next checkpoint, so the strict bound is relaxed.
    Grace,
    /// The reactor without the wake slice (HOS_WAKE_SLICE_US=0): every guest thread keeps the
    /// OS default slice.
    NoSlice,
    /// The reactor without deferred claim wakes (HOS_VCORE_CLAIM_DEFER=0): a woken thread whose
    /// claim found no free core is woken by its waker at once, to queue, not by the holder
    /// that hands it the core (the default before the device's uncapped 8-processor cell
    /// chose deferral, BENCHMARKS.md).
    NoDefer,
    /// The reactor with idle pollers promoted at once (HOS_IDLE_POLL_DEFER=0): a job send of
    /// the MainThread wakes the sleeping job workers while it still runs, not when it gives
    /// its core up (the default before the device's uncapped cells chose deferral,
    /// BENCHMARKS.md).
    Eager,
}

impl Arm {
    /// Every arm.
    pub(crate) const ALL: [Arm; 10] = [
        Arm::Seeds,
        Arm::Auto,
        Arm::Reactor,
        Arm::Precise,
        Arm::Stretch0,
        Arm::NoClaim,
        Arm::Grace,
        Arm::NoSlice,
        Arm::NoDefer,
        Arm::Eager,
    ];

    /// The arms run by default, in order.
    pub(crate) const DEFAULT: [Arm; 3] = [Arm::Seeds, Arm::Auto, Arm::Reactor];

    /// The arms `--matrix` runs by default, in order: the default ones, and `grace` beside
    /// the reactor, so that every cell measures what the kick's grace would buy (`grace.rs`).
    pub(crate) const MATRIX: [Arm; 4] = [Arm::Seeds, Arm::Auto, Arm::Reactor, Arm::Grace];

    /// Its name on the command line and in every output.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arm::Seeds => "seeds",
            Arm::Auto => "auto",
            Arm::Reactor => "reactor",
            Arm::Precise => "precise",
            Arm::Stretch0 => "stretch0",
            Arm::NoClaim => "noclaim",
            Arm::Grace => "grace",
            Arm::NoSlice => "noslice",
            Arm::NoDefer => "nodefer",
            Arm::Eager => "eager",
        }
    }

    /// The arm named `s`.
    pub(crate) fn parse(s: &str) -> Option<Arm> {
        Arm::ALL.into_iter().find(|a| a.name() == s)
    }

    /// Whether the arm is the default one with one rule changed (an ablation), rather than a
    /// design of its own (the default, `seeds`, `auto`).
    pub(crate) fn is_variant(self) -> bool {
        !matches!(self, Arm::Seeds | Arm::Auto | Arm::Reactor)
    }

    /// The runtime configuration of the arm, with `calibration` pinned if given. Built in
    /// code, the environment is not read: an arm is the same config on every machine.
    pub(crate) fn config(self, calibration: Option<Calibration>) -> Config {
        let config = match self {
            Arm::Seeds => Config {
                short_sleep: ShortSleep::Yield,
                spin_us: 20,
                spin_other_us: Some(20),
                short_sleep_pollers: Some(0),
                vcore_claim: false,
                vcore_grace_us: 0,
                wake_slice_us: 0,
                ..Config::default()
            },
            Arm::Auto => Config {
                short_sleep: ShortSleep::Auto,
                vcore_claim: false,
                vcore_grace_us: 0,
                wake_slice_us: 0,
                ..Config::default()
            },
            Arm::Reactor => Config::default(),
            Arm::Precise => Config {
                idle_poll: false,
                ..Config::default()
            },
            Arm::Stretch0 => Config {
                idle_poll_stretch_us: 0,
                ..Config::default()
            },
            Arm::NoClaim => Config {
                vcore_claim: false,
                ..Config::default()
            },
            Arm::Grace => Config {
                vcore_grace_us: GRACE_US,
                ..Config::default()
            },
            Arm::NoSlice => Config {
                wake_slice_us: 0,
                ..Config::default()
            },
            Arm::NoDefer => Config {
                vcore_claim_defer: false,
                ..Config::default()
            },
            Arm::Eager => Config {
                idle_poll_defer: false,
                ..Config::default()
            },
        };
        Config {
            calibration,
            ..config
        }
    }
}

/// What one run measured, raw: the figures are computed from it (`figures.rs`).
#[derive(Debug)]
pub(crate) struct Run {
    /// The arm.
    pub(crate) arm: Arm,
    /// The pair (round), from 1.
    pub(crate) pair: usize,
    /// Frame times of the measured frames, ms: each present minus the one before it (the
    /// first from the last warm-up present).
    pub(crate) frame_ms: Vec<f64>,
    /// Snapshot at the window's start.
    pub(crate) before: hos::Stats,
    /// Snapshot at the window's end.
    pub(crate) after: hos::Stats,
    /// The host threads' CPU at the window's start, by group.
    pub(crate) host_before: Vec<(Group, CpuTime)>,
    /// The same at the window's end.
    pub(crate) host_after: Vec<(Group, CpuTime)>,
    /// Pickup latencies of the measured frames.
    pub(crate) pickup: PickupFigures,
    /// Wall time between the two snapshots.
    pub(crate) window: Duration,
    /// Frames presented between the two snapshots.
    pub(crate) window_frames: u64,
    /// The measured frames' mean critical path, when the run was traced.
    pub(crate) critical: Option<hos::Breakdown>,
    /// The deterministic mode's figures at the window's end (`--det`; module `det`).
    pub(crate) det: Option<crate::det::AtEnd>,
    /// A replayed run's outcome (`--det replay:PATH`): `Err` names the first divergence.
    pub(crate) replay: Option<Result<(), String>>,
}

/// Boot calibrations [`calibrate`] takes the median of.
const CALIBRATIONS: usize = 3;

/// Measures the machine as a runtime does at build, [`CALIBRATIONS`] times (runtimes built
/// and shut down), and keeps each figure's median and the path most of them picked: one boot
/// measurement is 24 samples of one moment, and every arm of a cell runs with what this
/// returns pinned, so one unlucky sample would load them all (seen under the Windows
/// simulation's `0.5ms` profile: a 1.08 ms lateness where 0.49 ms is usual, and the reactor
/// spinning 0.8 ms a frame in every arm for it).
///
/// # Errors
/// The default runtime would not build.
pub(crate) fn calibrate() -> Result<Calibration, String> {
    let mut taken = Vec::with_capacity(CALIBRATIONS);
    for _ in 0..CALIBRATIONS {
        let rt = hos::Runtime::builder()
            .build()
            .map_err(|e| format!("building the calibration runtime: {e}"))?;
        taken.push(rt.stats().calibration);
        rt.shutdown();
    }
    Ok(median_of(&taken))
}

/// Each figure's median over `taken` (figures are nanoseconds, exact in an `f64`), and the
/// precise path most of them picked (the reactor on a tie).
fn median_of(taken: &[Calibration]) -> Calibration {
    let mid = |f: fn(&Calibration) -> u64| median(taken.iter().map(|c| f(c) as f64)) as u64;
    let reactor = taken
        .iter()
        .filter(|c| c.precise == PrecisePath::Reactor)
        .count();
    Calibration {
        timer_lateness_ns: mid(|c| c.timer_lateness_ns),
        timer_margin_ns: mid(|c| c.timer_margin_ns),
        poller_margin_ns: mid(|c| c.poller_margin_ns),
        wake_latency_ns: mid(|c| c.wake_latency_ns),
        precise: if 2 * reactor >= taken.len() {
            PrecisePath::Reactor
        } else {
            PrecisePath::OwnTimer
        },
        own_cpu_ns: mid(|c| c.own_cpu_ns),
        reactor_cpu_ns: mid(|c| c.reactor_cpu_ns),
        waker_cpu_ns: mid(|c| c.waker_cpu_ns),
    }
}

/// How long without a present before a run is called stalled.
fn stall_limit(load: &Load) -> Duration {
    Duration::from_secs(10).max(load.cpu_per_frame() * 20)
}

/// How one run is made: the load, its frames, the calibration to pin, where traces go.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunSpec<'a> {
    /// The load.
    pub(crate) load: Load,
    /// Warm-up frames (>= 1).
    pub(crate) warmup: usize,
    /// Measured frames (>= 1).
    pub(crate) frames: usize,
    /// The calibration pinned in the run, if any.
    pub(crate) calibration: Option<Calibration>,
    /// The folder of the first pair's traces (`--trace`), if any.
    pub(crate) trace: Option<&'a std::path::Path>,
    /// The deterministic mode (`--det`), if on.
    pub(crate) det: Option<&'a crate::det::Det>,
    /// The runs of the cell (a recording's file is named by its run where there are several).
    pub(crate) runs: usize,
}

/// Runs `arm` once.
///
/// # Errors
/// The runtime would not build, a thread would not spawn or panicked, or no frame was
/// presented for the stall limit (a hang: the message says after which frame).
pub(crate) fn run(
    arm: Arm,
    pair: usize,
    spec: &RunSpec,
    progress: &mut Progress,
) -> Result<Run, String> {
    let trace = crate::critical::trace_file(spec.trace, arm, pair);
    let record = spec
        .det
        .and_then(|d| d.record.as_ref())
        .map(|r| r.path(arm.name(), pair, spec.runs));
    let rt = crate::det::apply(
        crate::critical::traced(
            hos::Runtime::builder().config(arm.config(spec.calibration)),
            &trace,
        ),
        spec.det,
        record.as_deref(),
    )
    .build()
    .map_err(|e| format!("building the {} runtime: {e}", arm.name()))?;
    crate::vclock::set_virtual(spec.det.is_some());
    let running = match load::spawn(&rt, spec.load, spec.warmup, spec.frames) {
        Ok(r) => r,
        Err(e) => {
            rt.shutdown();
            return Err(e);
        }
    };
    let stall = stall_limit(&spec.load);
    let wait = |want: Mark, progress: &mut Progress| -> Result<(), String> {
        let mut seen = running.presented();
        let mut since = Instant::now();
        loop {
            match running.marks.recv_timeout(Duration::from_millis(100)) {
                Ok(m) if m == want => return Ok(()),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    let n = running.presented();
                    progress.frame(n as usize);
                    if n != seen {
                        (seen, since) = (n, Instant::now());
                    } else if since.elapsed() > stall {
                        return Err(format!(
                            "stalled: no frame presented for {stall:?} (after frame {n})"
                        ));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("the Presentation Thread ended early".into())
                }
            }
        }
    };
    let window = wait(Mark::WindowStart, progress).and_then(|()| {
        let before = (rt.stats(), running.host_cpu());
        let (t0, n0) = (Instant::now(), running.presented());
        wait(Mark::WindowEnd, progress)?;
        let after = (rt.stats(), running.host_cpu(), running.det_at_end());
        let (t1, n1) = (Instant::now(), running.presented());
        Ok((before, after, t1 - t0, n1.saturating_sub(n0).max(1)))
    });
    let critical = trace
        .is_some()
        .then(|| crate::critical::window(&rt.critical_path(), spec.warmup, spec.frames));
    let ended = running.stop(&rt, window.is_ok());
    let replay = crate::det::replayed(spec.det, &rt);
    let ((before, host_before), (after, host_after, det), window, window_frames) =
        window.map_err(|e| format!("{} pair {pair}: {e}", arm.name()))?;
    let ended = ended.map_err(|e| format!("{} pair {pair}: {e}", arm.name()))?;
    let times = ended.times;
    if times.len() != spec.warmup + spec.frames {
        return Err(format!(
            "{} pair {pair}: {} present times kept, {} expected",
            arm.name(),
            times.len(),
            spec.warmup + spec.frames
        ));
    }
    let frame_ms = times[spec.warmup - 1..]
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e3)
        .collect();
    Ok(Run {
        arm,
        pair,
        frame_ms,
        before,
        after,
        host_before,
        host_after,
        pickup: ended.pickup,
        window,
        window_frames,
        critical,
        det,
        replay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One unlucky boot measurement among three is outvoted, figure by figure.
    #[test]
    fn the_pinned_calibration_is_each_figures_median() {
        let at = |late: u64, wake: u64, precise| Calibration {
            timer_lateness_ns: late,
            timer_margin_ns: late / 2,
            wake_latency_ns: wake,
            precise,
            ..Calibration::default()
        };
        let c = median_of(&[
            at(490_000, 40_000, PrecisePath::OwnTimer),
            at(1_080_000, 9_000, PrecisePath::Reactor),
            at(500_000, 30_000, PrecisePath::OwnTimer),
        ]);
        assert_eq!(
            (c.timer_lateness_ns, c.timer_margin_ns, c.wake_latency_ns),
            (500_000, 250_000, 30_000)
        );
        assert_eq!(c.precise, PrecisePath::OwnTimer, "two of three");
    }
}
