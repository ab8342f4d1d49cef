//! Counters the runtime keeps, and the snapshot a host reads.
//!
//! Invariant: every counter is a relaxed atomic that only grows (gauges excepted, named as
//! such); a snapshot is a set of independent reads, not a consistent cut, which is all a
//! rate over a window needs.

use crate::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How a sleep was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SleepPath {
    /// Yield loop to the deadline.
    Yield,
    /// The sleeper's own OS timer, no spin.
    Timer,
    /// Precise: own slack-1 timer to the deadline minus its lateness, then a spin.
    PreciseOwn,
    /// Precise: the reactor woke the sleeper early by the wake latency, then a spin.
    PreciseReactor,
    /// Relaxed: a reactor deadline, OS timer alone, no spin.
    Relaxed,
    /// An idle poll: the OS timer alone to a shared tick, promoted when the polled object
    /// becomes ready (docs/design.md section 4).
    IdlePoll,
}

impl SleepPath {
    /// Every path, in report order.
    pub const ALL: [SleepPath; 6] = [
        SleepPath::Yield,
        SleepPath::Timer,
        SleepPath::PreciseOwn,
        SleepPath::PreciseReactor,
        SleepPath::Relaxed,
        SleepPath::IdlePoll,
    ];

    /// A short lower-case name for tables and logs.
    pub fn name(self) -> &'static str {
        match self {
            SleepPath::Yield => "yield",
            SleepPath::Timer => "timer",
            SleepPath::PreciseOwn => "precise-own",
            SleepPath::PreciseReactor => "precise-reactor",
            SleepPath::Relaxed => "relaxed",
            SleepPath::IdlePoll => "idle-poll",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// LatenessCounter buckets: bucket `i` counts lateness in `[2^(i-1), 2^i)` ns (bucket 0: exactly 0).
pub const LATE_BUCKETS: usize = 40;

/// LatenessCounter of one sleep path: count, sum and a log2 histogram.
#[derive(Debug)]
pub(crate) struct LatenessCounter {
    count: AtomicU64,
    sum_ns: AtomicU64,
    buckets: [AtomicU64; LATE_BUCKETS],
}

impl Default for LatenessCounter {
    fn default() -> Self {
        LatenessCounter {
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl LatenessCounter {
    /// Records one sleep that ended `late_ns` after its deadline.
    pub(crate) fn record(&self, late_ns: u64) {
        // Clamped so the sum cannot wrap: no sleep is 18 minutes late in a run worth reading.
        let late_ns = late_ns.min(1 << 40);
        let b = (u64::BITS - late_ns.leading_zeros()) as usize;
        // Relaxed: independent counters (module invariant).
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(late_ns, Ordering::Relaxed);
        self.buckets[b.min(LATE_BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Lateness {
        Lateness {
            count: self.count.load(Ordering::Relaxed),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
            buckets: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

/// A read of one path's lateness.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lateness {
    /// Sleeps served.
    pub count: u64,
    /// Sum of their lateness.
    pub sum_ns: u64,
    /// The log2 histogram (see [`LATE_BUCKETS`]).
    pub buckets: Vec<u64>,
}

impl Lateness {
    /// Mean lateness.
    pub fn mean(&self) -> Duration {
        Duration::from_nanos(self.sum_ns.checked_div(self.count).unwrap_or(0))
    }

    /// An upper bound of the `q` quantile (0.0..=1.0): the top of the bucket that holds it.
    pub fn quantile_upper(&self, q: f64) -> Duration {
        let want = (self.count as f64 * q.clamp(0.0, 1.0)).ceil() as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want.max(1) {
                return Duration::from_nanos(if i == 0 { 0 } else { 1u64 << i });
            }
        }
        Duration::ZERO
    }
}

/// Why a virtual core was kicked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KickReason {
    /// A waiter strictly better by rank.
    Priority,
    /// The holder's time slice ran out and an equal waiter asked for a turn.
    Slice,
    /// A HOS_VCORE_FIRST waiter.
    First,
}

/// The runtime's counters.
#[derive(Debug, Default)]
pub struct Counters {
    sleeps: [LatenessCounter; SleepPath::ALL.len()],
    /// Sleeps of a negative, non-yield length (bad input; they return at once).
    pub bad_sleeps: AtomicU64,
    /// Yields (sleep_thread 0, -1, -2).
    pub yields: AtomicU64,
    /// Waits that were woken while spinning.
    pub spins_caught: AtomicU64,
    /// Spins that ran their whole length and parked.
    pub spins_missed: AtomicU64,
    /// Waits whose spin the object's miss counter skipped.
    pub spins_skipped: AtomicU64,
    /// Parks (a wait that reached the futex).
    pub parks: AtomicU64,
    /// Virtual-core acquisitions that had to wait.
    pub vcore_waits: AtomicU64,
    /// Kicks, by reason.
    pub vcore_kicks: [AtomicU64; 3],
    /// Waiters that took a core by escape.
    pub vcore_escapes: AtomicU64,
    /// Cores taken from a kicked holder after the kick's grace (HOS_VCORE_GRACE_US).
    pub vcore_revokes: AtomicU64,
    /// Deadlines the reactor fired.
    pub reactor_fired: AtomicU64,
    /// Times the reactor thread woke up.
    pub reactor_wakeups: AtomicU64,
    /// Guest sleeps found to be idle polls.
    pub idle_polls: AtomicU64,
    /// Idle polls that ended at their wake time, nothing having promoted them.
    pub idle_relaxed: AtomicU64,
    /// Idle polls that work promoted (an object they polled became ready).
    pub idle_promoted: AtomicU64,
    /// Idle polls that woke on a tick another idle poller had woken on.
    pub idle_coalesced: AtomicU64,
    /// Wake slices the OS took.
    pub wake_slices: AtomicU64,
    /// Wake slices the OS did not take.
    pub wake_slices_ignored: AtomicU64,
}

impl Counters {
    /// Records one sleep served by `path`, `late_ns` after its deadline.
    pub fn sleep(&self, path: SleepPath, late_ns: u64) {
        self.sleeps[path.index()].record(late_ns);
    }

    /// Adds one to a counter (relaxed: independent counters).
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a kick.
    pub fn kick(&self, reason: KickReason) {
        Self::bump(&self.vcore_kicks[reason as usize]);
    }

    /// Reads every counter.
    pub fn snapshot(&self) -> Stats {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            sleeps: SleepPath::ALL
                .iter()
                .map(|p| (*p, self.sleeps[p.index()].snapshot()))
                .collect(),
            bad_sleeps: r(&self.bad_sleeps),
            yields: r(&self.yields),
            spins_caught: r(&self.spins_caught),
            spins_missed: r(&self.spins_missed),
            spins_skipped: r(&self.spins_skipped),
            parks: r(&self.parks),
            vcore_waits: r(&self.vcore_waits),
            vcore_kicks_priority: r(&self.vcore_kicks[KickReason::Priority as usize]),
            vcore_kicks_slice: r(&self.vcore_kicks[KickReason::Slice as usize]),
            vcore_kicks_first: r(&self.vcore_kicks[KickReason::First as usize]),
            vcore_escapes: r(&self.vcore_escapes),
            vcore_revokes: r(&self.vcore_revokes),
            reactor_fired: r(&self.reactor_fired),
            reactor_wakeups: r(&self.reactor_wakeups),
            idle_polls: r(&self.idle_polls),
            idle_relaxed: r(&self.idle_relaxed),
            idle_promoted: r(&self.idle_promoted),
            idle_coalesced: r(&self.idle_coalesced),
            wake_slices: r(&self.wake_slices),
            wake_slices_ignored: r(&self.wake_slices_ignored),
            ..Stats::default()
        }
    }
}

/// One thread's figures in a snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadStats {
    /// The thread's name now.
    pub name: String,
    /// Horizon priority.
    pub priority: u8,
    /// Whether it is serial.
    pub serial: bool,
    /// CPU time since it started.
    pub cpu: crate::sys::CpuTime,
    /// Guest sleeps it made.
    pub sleeps: u64,
    /// Time it spent waiting for a virtual core.
    pub vcore_wait: Duration,
}

/// A read of the runtime's counters, threads and calibration.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Sleeps and their lateness, by path.
    pub sleeps: Vec<(SleepPath, Lateness)>,
    /// Guest sleeps of a negative length other than the three yields: bad input, returned at
    /// once.
    pub bad_sleeps: u64,
    /// Yields: `sleep_thread` of 0, -1 or -2.
    pub yields: u64,
    /// Waits woken while they spun (no park).
    pub spins_caught: u64,
    /// Spins that ran their whole length, then parked.
    pub spins_missed: u64,
    /// Waits whose spin the object's spin gate skipped (spins there kept missing).
    pub spins_skipped: u64,
    /// Parks: waits that reached the futex.
    pub parks: u64,
    /// Virtual-core acquisitions that had to wait.
    pub vcore_waits: u64,
    /// Kicks by a strictly better waiter.
    pub vcore_kicks_priority: u64,
    /// Kicks at the end of a time slice.
    pub vcore_kicks_slice: u64,
    /// Kicks by a HOS_VCORE_FIRST waiter.
    pub vcore_kicks_first: u64,
    /// Waiters that ran past the virtual cores by escape (a healthy run has none).
    pub vcore_escapes: u64,
    /// Virtual cores taken from a kicked holder that had not given its core up within the
    /// kick's grace (HOS_VCORE_GRACE_US; 0 while it is off). Each lets the holder run guest
    /// code beside the cores until its next checkpoint.
    pub vcore_revokes: u64,
    /// Virtual cores held when the snapshot was taken (a gauge: 0 once no guest thread runs
    /// guest code; more then is a leaked core).
    pub vcores_held: usize,
    /// Deadlines the reactor fired.
    pub reactor_fired: u64,
    /// Times the reactor thread woke from its timer.
    pub reactor_wakeups: u64,
    /// Guest sleeps found to be idle polls (a poll of hos objects that found nothing came
    /// just before, or HOS_IDLE_POLL_BLIND quiet sleeps in a row).
    pub idle_polls: u64,
    /// Idle polls served relaxed to the end: they woke at their wake time, nothing promoted them.
    pub idle_relaxed: u64,
    /// Idle polls promoted by work: an object they polled became ready while they slept.
    pub idle_promoted: u64,
    /// Idle polls that woke on a tick another idle poller had woken on (coalesced wakes).
    pub idle_coalesced: u64,
    /// Guest threads' wake slices (HOS_WAKE_SLICE_US) the OS took: at each thread's start
    /// and at each priority or role change that changed its slice.
    pub wake_slices: u64,
    /// Wake slices asked that the OS did not take (a kernel before Linux 6.12, another OS, a
    /// real-time thread): those threads kept the OS default.
    pub wake_slices_ignored: u64,
    /// The calibration in force when the snapshot was taken.
    pub calibration: crate::machine::Calibration,
    /// The process's CPU time.
    pub process_cpu: crate::sys::CpuTime,
    /// The reactor thread's CPU time.
    pub reactor_cpu: crate::sys::CpuTime,
    /// Every live guest thread.
    pub threads: Vec<ThreadStats>,
}

impl Stats {
    /// The lateness of one path.
    pub fn path(&self, path: SleepPath) -> &Lateness {
        &self.sleeps[path.index()].1
    }

    /// Sleeps over every path.
    pub fn total_sleeps(&self) -> u64 {
        self.sleeps.iter().map(|(_, l)| l.count).sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lateness_buckets_bound_the_quantiles() {
        let l = LatenessCounter::default();
        for ns in [0, 1, 900, 1_000, 5_000, 1_000_000, u64::MAX] {
            l.record(ns);
        }
        let s = l.snapshot();
        assert_eq!(s.count, 7);
        assert_eq!(s.quantile_upper(0.0), Duration::ZERO);
        assert!(s.quantile_upper(0.5) >= Duration::from_nanos(1_000));
        assert!(s.quantile_upper(1.0) >= Duration::from_millis(1));
    }
}
