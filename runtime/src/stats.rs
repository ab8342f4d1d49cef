//! Counters the runtime keeps, and the snapshot a host reads.
//!
//! Invariant: every counter is a relaxed atomic that only grows (gauges excepted, named as
//! such), kept in stripes that the threads count in by turn of arrival, so that no line is
//! written by every processor ([`Counters`]); a snapshot is a set of independent reads
//! summed over the stripes, not a consistent cut, which is all a rate over a window needs. What only live threads can say (their figures, the reactor's
//! CPU) is kept once as the shutdown begins ([`LastSeen`]), and every snapshot after it reads
//! that instead of the threads the shutdown tore down. A snapshot prints as a summary that
//! fits a screen (`Display`, and `Debug` too); every figure is in its fields.

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{lock, Mutex};
use crate::sys::CpuTime;
use std::fmt;
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
    /// Relaxed: the sleeper's own OS timer alone, no spin (a long sleep of a job worker).
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

    /// Adds these counts to `l` (a stripe's share of a snapshot's).
    fn add_to(&self, l: &mut Lateness) {
        l.count += self.count.load(Ordering::Relaxed);
        l.sum_ns += self.sum_ns.load(Ordering::Relaxed);
        for (sum, b) in l.buckets.iter_mut().zip(&self.buckets) {
            *sum += b.load(Ordering::Relaxed);
        }
    }
}

/// A read of one path's lateness. `Debug` prints the count, the mean and the quantiles' bounds,
/// not the histogram's buckets (they are in [`Lateness::buckets`]).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Lateness {
    /// Sleeps served.
    pub count: u64,
    /// Sum of their lateness.
    pub sum_ns: u64,
    /// The log2 histogram (see [`LATE_BUCKETS`]).
    pub buckets: Vec<u64>,
}

impl Lateness {
    /// No sleeps, with every bucket.
    fn zero() -> Lateness {
        Lateness {
            buckets: vec![0; LATE_BUCKETS],
            ..Lateness::default()
        }
    }

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

impl fmt::Debug for Lateness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lateness")
            .field("count", &self.count)
            .field("mean", &self.mean())
            .field("p50_at_most", &self.quantile_upper(0.5))
            .field("p99_at_most", &self.quantile_upper(0.99))
            .finish_non_exhaustive()
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

/// Stripes of the counters: threads bump the stripe of their turn of arrival modulo this, so
/// that threads on different processors write different cache lines (a counter that every
/// wait and sleep bumps was a line that every processor wrote, a transfer each time); a
/// snapshot sums them. About 3.4 KB a stripe. One under loom, whose models count every atomic.
#[cfg(not(loom))]
const STRIPES: usize = 16;
#[cfg(loom)]
const STRIPES: usize = 1;

/// The runtime's counters: the hot ones in `STRIPES` stripes, the wake slices' once (their
/// first count picks a log line).
#[derive(Debug)]
pub struct Counters {
    stripes: Box<[Stripe]>,
    /// Wake slices the OS took.
    pub wake_slices: AtomicU64,
    /// Wake slices the OS did not take.
    pub wake_slices_ignored: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
            wake_slices: AtomicU64::new(0),
            wake_slices_ignored: AtomicU64::new(0),
        }
    }
}

/// One stripe of the counters (cache-line aligned, so that no two stripes share a line).
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Stripe {
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
    /// Promoted idle polls whose promoter held the promotion until it gave its core up.
    pub idle_deferred: AtomicU64,
    /// Precise sleeps served as unseen pollers' (`policy::unseen_poller`).
    pub unseen_polls: AtomicU64,
    /// Lock heirs whose spin saw their hand-off come.
    pub heir_caught: AtomicU64,
    /// Lock heirs whose spin ran out before their hand-off: they parked again.
    pub heir_missed: AtomicU64,
    /// Lock heirs whose hand-off came before they ran.
    pub heir_late: AtomicU64,
}

impl Stripe {
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
}

#[cfg(not(loom))]
std::thread_local! {
    /// The calling thread's stripe, drawn at its first count.
    static STRIPE: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The calling thread's stripe: the threads' turn of arrival modulo `STRIPES`.
#[cfg(not(loom))]
fn stripe_index() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    STRIPE
        .try_with(|s| match s.get() {
            Some(i) => i,
            None => {
                // Relaxed: a ticket; which stripe a thread gets orders nothing.
                let i = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES;
                s.set(Some(i));
                i
            }
        })
        // A thread whose thread-locals are gone counts in the first stripe.
        .unwrap_or(0)
}

#[cfg(loom)]
fn stripe_index() -> usize {
    0
}

impl Counters {
    /// The calling thread's stripe, for its counts.
    #[inline]
    pub fn here(&self) -> &Stripe {
        &self.stripes[stripe_index()]
    }

    /// Reads every counter: each the sum of its stripes.
    pub fn snapshot(&self) -> Stats {
        let sum = |f: fn(&Stripe) -> &AtomicU64| -> u64 {
            self.stripes
                .iter()
                .map(|s| f(s).load(Ordering::Relaxed))
                .sum()
        };
        Stats {
            sleeps: SleepPath::ALL
                .iter()
                .map(|p| {
                    let mut l = Lateness::zero();
                    for s in self.stripes.iter() {
                        s.sleeps[p.index()].add_to(&mut l);
                    }
                    (*p, l)
                })
                .collect(),
            bad_sleeps: sum(|s| &s.bad_sleeps),
            yields: sum(|s| &s.yields),
            spins_caught: sum(|s| &s.spins_caught),
            spins_missed: sum(|s| &s.spins_missed),
            spins_skipped: sum(|s| &s.spins_skipped),
            parks: sum(|s| &s.parks),
            vcore_waits: sum(|s| &s.vcore_waits),
            vcore_kicks_priority: sum(|s| &s.vcore_kicks[KickReason::Priority as usize]),
            vcore_kicks_slice: sum(|s| &s.vcore_kicks[KickReason::Slice as usize]),
            vcore_kicks_first: sum(|s| &s.vcore_kicks[KickReason::First as usize]),
            vcore_escapes: sum(|s| &s.vcore_escapes),
            vcore_revokes: sum(|s| &s.vcore_revokes),
            reactor_fired: sum(|s| &s.reactor_fired),
            reactor_wakeups: sum(|s| &s.reactor_wakeups),
            idle_polls: sum(|s| &s.idle_polls),
            idle_relaxed: sum(|s| &s.idle_relaxed),
            idle_promoted: sum(|s| &s.idle_promoted),
            idle_coalesced: sum(|s| &s.idle_coalesced),
            idle_deferred: sum(|s| &s.idle_deferred),
            unseen_polls: sum(|s| &s.unseen_polls),
            heir_caught: sum(|s| &s.heir_caught),
            heir_missed: sum(|s| &s.heir_missed),
            heir_late: sum(|s| &s.heir_late),
            wake_slices: self.wake_slices.load(Ordering::Relaxed),
            wake_slices_ignored: self.wake_slices_ignored.load(Ordering::Relaxed),
            ..Stats::default()
        }
    }
}

/// One thread's figures in a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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

/// A read of the runtime's counters, threads and calibration. `Display` and `Debug` print
/// [`Stats::summary`]'s screen of it.
///
/// After a shutdown, `threads` and `reactor_cpu` are those read as it began, just before the
/// threads were torn down (the threads live then, the reactor's CPU to that moment); the
/// counters, the calibration and the process's CPU are read at the call, as always.
#[derive(Clone, Default, PartialEq, Eq)]
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
    /// Promoted idle polls whose promotion was deferred (HOS_IDLE_POLL_DEFER): the guest
    /// thread that readied what they polled ranked better, and promoted them when it next
    /// gave its core up. Counted in `idle_promoted` too.
    pub idle_deferred: u64,
    /// Precise short sleeps served as unseen pollers': a job worker's, after 8 or more short
    /// sleeps in a row with no other svc or nn::os call between them, armed by the timer's
    /// median lateness (`Calibration::poller_margin_ns`) rather than its 75th percentile.
    pub unseen_polls: u64,
    /// Lock heirs (a lock waiter the next unlock will hand its mutex to, woken ahead of the
    /// hand-off to spin for it; docs/svc.md) whose spin saw the hand-off come: a hand-off
    /// that cost no OS wake on the mutex's path.
    pub heir_caught: u64,
    /// Lock heirs whose spin ran out before the hand-off (the owner held the mutex longer
    /// than the heir's role spins): they parked again, and the hand-off woke them.
    pub heir_missed: u64,
    /// Lock heirs whose hand-off came before the OS ran them: they found it at their first
    /// look, and their OS wake still lay on the mutex's path (an owner that unlocks within
    /// about a wake of the moment its heir was woken). Every heir woken and run counts once,
    /// in one of the three.
    pub heir_late: u64,
    /// Guest threads' wake slices (HOS_WAKE_SLICE_US) the OS took: at each thread's start
    /// and at each priority or role change that changed its slice.
    pub wake_slices: u64,
    /// Wake slices asked that the OS did not take (a kernel before Linux 6.12, another OS, a
    /// real-time thread): those threads kept the OS default.
    pub wake_slices_ignored: u64,
    /// Which bound the virtual cores keep: strict, or relaxed after a kick's grace (how often
    /// it was relaxed: `vcore_revokes`).
    pub vcore_bound: Bound,
    /// The calibration in force when the snapshot was taken.
    pub calibration: crate::machine::Calibration,
    /// The process's CPU time.
    pub process_cpu: crate::sys::CpuTime,
    /// The reactor thread's CPU time (after a shutdown: to the moment it began).
    pub reactor_cpu: crate::sys::CpuTime,
    /// Every live guest thread (after a shutdown: those live when it began).
    pub threads: Vec<ThreadStats>,
}

/// The bound the virtual cores keep on guest threads running guest code at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bound {
    /// No virtual cores (HOS_VCORES off): guest threads run as the OS schedules them.
    #[default]
    Off,
    /// Never more than the cores (HOS_VCORE_GRACE_US 0): a kicked holder keeps its core to
    /// its next checkpoint however long the OS keeps it from running.
    Strict,
    /// The cores, relaxed for a kicked holder that has not given its core up within `grace`:
    /// the core goes to the waiter and the holder runs on beside the cores to its next
    /// checkpoint (each a revoke).
    Relaxed {
        /// The kick's grace (HOS_VCORE_GRACE_US).
        grace: Duration,
    },
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Off => f.write_str("none (virtual cores off)"),
            Bound::Strict => f.write_str("strict"),
            Bound::Relaxed { grace } => {
                write!(f, "relaxed after a {} us kick grace", grace.as_micros())
            }
        }
    }
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

    /// The snapshot on one screen (under 40 lines whatever the thread count): counts, the
    /// sleeps by path with their lateness, idle polls, waits, virtual cores, the reactor, CPU,
    /// and the threads (the first 20, then how many more).
    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let c = &self.calibration;
        let mut t = format!(
            "hos stats: {} guest threads, {} virtual cores held; calibration: timer late \
             {:.1} us, wake {:.1} us, precise path {:?}\n",
            self.threads.len(),
            self.vcores_held,
            c.timer_lateness_ns as f64 / 1e3,
            c.wake_latency_ns as f64 / 1e3,
            c.precise
        );
        t += &format!(
            "sleeps: {} (yields {}, bad {})\n  {:<17}{:>10}{:>10}{:>11}{:>11}\n",
            self.total_sleeps(),
            self.yields,
            self.bad_sleeps,
            "path",
            "count",
            "mean us",
            "p50 us <=",
            "p99 us <="
        );
        for (path, l) in &self.sleeps {
            t += &format!(
                "  {:<17}{:>10}{:>10.1}{:>11.1}{:>11.1}\n",
                path.name(),
                l.count,
                us(l.mean()),
                us(l.quantile_upper(0.5)),
                us(l.quantile_upper(0.99))
            );
        }
        let waited: Duration = self.threads.iter().map(|t| t.vcore_wait).sum();
        t += &format!(
            "idle polls: {} (relaxed {}, promoted {} (deferred {}), coalesced {}); unseen \
             pollers' sleeps {}\n\
             waits: parks {}, spins caught {}, missed {}, skipped {}; lock heirs caught {}, \
             missed {}, late {}\n\
             virtual cores: waits {} ({:.2} ms over the threads), kicks by priority {}, slice \
             {}, first {}; escapes {}; bound {}, revokes {}\n\
             reactor: fired {}, woke {}, CPU {:.2} ms (kernel {:.2})\n\
             process CPU {:.2} ms (kernel {:.2}); wake slices taken {}, ignored {}\n",
            self.idle_polls,
            self.idle_relaxed,
            self.idle_promoted,
            self.idle_deferred,
            self.idle_coalesced,
            self.unseen_polls,
            self.parks,
            self.spins_caught,
            self.spins_missed,
            self.spins_skipped,
            self.heir_caught,
            self.heir_missed,
            self.heir_late,
            self.vcore_waits,
            ms(waited),
            self.vcore_kicks_priority,
            self.vcore_kicks_slice,
            self.vcore_kicks_first,
            self.vcore_escapes,
            self.vcore_bound,
            self.vcore_revokes,
            self.reactor_fired,
            self.reactor_wakeups,
            ms(self.reactor_cpu.total()),
            ms(self.reactor_cpu.kernel),
            ms(self.process_cpu.total()),
            ms(self.process_cpu.kernel),
            self.wake_slices,
            self.wake_slices_ignored,
        );
        t += &format!(
            "  {:<24}{:>5}{:>7}{:>10}{:>10}{:>15}\n",
            "thread", "prio", "serial", "CPU ms", "sleeps", "vcore wait ms"
        );
        for th in self.threads.iter().take(SUMMARY_THREADS) {
            t += &format!(
                "  {:<24}{:>5}{:>7}{:>10.2}{:>10}{:>15.2}\n",
                th.name,
                th.priority,
                if th.serial { "yes" } else { "no" },
                ms(th.cpu.total()),
                th.sleeps,
                ms(th.vcore_wait)
            );
        }
        if let Some(more) = self
            .threads
            .len()
            .checked_sub(SUMMARY_THREADS)
            .filter(|&n| n > 0)
        {
            t += &format!("  ... and {more} more (Stats::threads has them all)\n");
        }
        t
    }
}

/// Threads [`Stats::summary`] lists one a line.
pub(crate) const SUMMARY_THREADS: usize = 20;

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

/// The summary, not the fields one a line: a snapshot's fields run to hundreds of lines.
impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

/// What only live threads can tell a snapshot: read from them while they run, and once, as
/// the shutdown begins, kept in [`LastSeen`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Live {
    /// The reactor thread's CPU time (its clock cannot be read once it is joined).
    pub(crate) reactor_cpu: CpuTime,
    /// The live guest threads' figures (their records go as they leave).
    pub(crate) threads: Vec<ThreadStats>,
}

/// The [`Live`] read kept as the shutdown began: empty until then, set once.
pub(crate) struct LastSeen(Mutex<Option<Live>>);

impl LastSeen {
    /// Nothing kept yet.
    pub(crate) fn new() -> LastSeen {
        LastSeen(Mutex::new(None))
    }

    /// Keeps `read()` unless a read was kept already. A concurrent caller waits on the lock
    /// until the first has kept its read, so no caller returns before one is kept.
    pub(crate) fn keep(&self, read: impl FnOnce() -> Live) {
        let mut kept = lock(&self.0);
        if kept.is_none() {
            *kept = Some(read());
        }
    }

    /// The read kept, if the shutdown has begun.
    pub(crate) fn get(&self) -> Option<Live> {
        lock(&self.0).clone()
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
        let mut s = Lateness::zero();
        l.add_to(&mut s);
        assert_eq!(s.count, 7);
        assert_eq!(s.quantile_upper(0.0), Duration::ZERO);
        assert!(s.quantile_upper(0.5) >= Duration::from_nanos(1_000));
        assert!(s.quantile_upper(1.0) >= Duration::from_millis(1));
        let debug = format!("{s:#?}");
        assert!(debug.lines().count() < 10, "no buckets one a line: {debug}");
    }

    #[test]
    fn threads_count_in_stripes_of_their_own_and_a_snapshot_sums_them() {
        let c = std::sync::Arc::new(Counters::default());
        for i in 0..8 {
            let c = c.clone();
            std::thread::spawn(move || {
                for _ in 0..=i {
                    Stripe::bump(&c.here().yields);
                    c.here().kick(KickReason::Slice);
                    c.here().sleep(SleepPath::PreciseOwn, 1_000);
                }
            })
            .join()
            .unwrap();
        }
        let used = c
            .stripes
            .iter()
            .filter(|s| s.yields.load(Ordering::Relaxed) > 0);
        assert!(used.count() > 1, "one stripe for all");
        let s = c.snapshot();
        // 1 + 2 + ... + 8 of each.
        assert_eq!((s.yields, s.vcore_kicks_slice), (36, 36));
        let own = s.path(SleepPath::PreciseOwn);
        assert_eq!((own.count, own.sum_ns), (36, 36_000));
        assert_eq!(own.buckets.iter().sum::<u64>(), 36);
    }

    #[test]
    fn the_summary_fits_a_screen_whatever_the_threads() {
        let c = Counters::default();
        for p in SleepPath::ALL {
            c.here().sleep(p, 20_000);
        }
        let mut s = c.snapshot();
        s.reactor_cpu.user = Duration::from_millis(3);
        s.threads = (0..64)
            .map(|i| ThreadStats {
                name: format!("ModuleSystemWorker{i}"),
                priority: 45,
                sleeps: 10,
                ..ThreadStats::default()
            })
            .collect();
        for text in [
            s.summary(),
            format!("{s}"),
            format!("{s:?}"),
            format!("{s:#?}"),
        ] {
            assert!(
                text.lines().count() < 40,
                "{} lines:\n{text}",
                text.lines().count()
            );
            assert!(text.contains("64 guest threads") && text.contains("and 44 more"));
            assert!(
                text.contains("reactor: fired 0, woke 0, CPU 3.00 ms"),
                "{text}"
            );
            for p in SleepPath::ALL {
                assert!(text.contains(p.name()), "{text}");
            }
        }
        assert!(s.summary().contains("ModuleSystemWorker19"));
        assert!(!s.summary().contains("ModuleSystemWorker20 "));
    }

    #[test]
    fn the_last_seen_read_is_kept_once() {
        let last = LastSeen::new();
        assert_eq!(last.get(), None);
        let read = |n: usize| Live {
            threads: vec![ThreadStats::default(); n],
            ..Live::default()
        };
        last.keep(|| read(2));
        last.keep(|| read(5));
        assert_eq!(last.get(), Some(read(2)), "the first read stays");
    }
}
