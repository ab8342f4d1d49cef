//! The std-only fallback: compiles on any platform, and under loom.
//!
//! Invariant: `futex_wait` checks the word under its bucket's lock and `futex_wake` takes the
//! same lock before notifying, so a wake that follows a store is never lost. Under loom the
//! futex is a yield (a futex may always return spuriously; callers recheck), so models explore
//! the callers' state machines without a global table.

use super::{CpuTime, TickScale};
use crate::sync::atomic::AtomicU32;
#[cfg(not(loom))]
use crate::sync::lock;
#[cfg(not(loom))]
use std::sync::LazyLock;
use std::time::Duration;
#[cfg(not(loom))]
use std::time::Instant;

/// Which implementation this is, for logs and stats.
pub const KIND: &str = "fallback";

#[cfg(not(loom))]
static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Monotonic nanoseconds since the first call in this process.
#[cfg(not(loom))]
#[inline]
pub fn now() -> u64 {
    crate::time::nanos(ORIGIN.elapsed())
}

#[cfg(loom)]
loom::thread_local! {
    static LOOM_CLOCK: std::cell::Cell<u64> = std::cell::Cell::new(0);
}

/// Under loom: a per-model-thread clock that advances 5 us a reading, so that every spin and
/// timeout ends after a few steps and each execution is deterministic.
#[cfg(loom)]
pub fn now() -> u64 {
    LOOM_CLOCK.with(|c| {
        let t = c.get() + 5_000;
        c.set(t);
        t
    })
}

/// The event clock is `now()` itself.
#[inline]
pub fn ticks() -> u64 {
    now()
}

/// The identity: ticks are `now()` values.
pub fn tick_scale() -> TickScale {
    TickScale::IDENTITY
}

fn until(deadline: u64) -> Duration {
    Duration::from_nanos(deadline.saturating_sub(now()))
}

#[cfg(not(loom))]
mod table {
    use std::sync::{Condvar, Mutex};

    pub(super) struct Bucket {
        pub lock: Mutex<()>,
        pub cond: Condvar,
    }

    const BUCKETS: usize = 64;
    static TABLE: [Bucket; BUCKETS] = [const {
        Bucket {
            lock: Mutex::new(()),
            cond: Condvar::new(),
        }
    }; BUCKETS];

    pub(super) fn bucket(addr: usize) -> &'static Bucket {
        &TABLE[(addr >> 2) % BUCKETS]
    }
}

/// std's timed condition-variable wait and its `thread::sleep` are different timers (on
/// Windows a millisecond `WaitOnAddress` timeout against a high-resolution sleep): each keeps
/// its own lateness estimate.
pub const PRECISE_WAIT_SHARES_TIMER: bool = false;

/// Sleeps while `*word == expected`, until woken, until `deadline`, or spuriously: std has
/// no finer wait that a wake can end, so this is [`futex_wait`] (its timeout as std serves
/// it, which is why its lateness is tracked apart).
#[inline]
pub fn wait_precise(word: &AtomicU32, expected: u32, deadline: Option<u64>) {
    futex_wait(word, expected, deadline);
}

/// Sleeps while `*word == expected`, until woken, until the absolute `deadline`, or spuriously.
#[cfg(not(loom))]
pub fn futex_wait(word: &AtomicU32, expected: u32, deadline: Option<u64>) {
    use crate::sync::atomic::Ordering;
    let b = table::bucket(word as *const _ as usize);
    let guard = lock(&b.lock);
    // Relaxed: the bucket lock orders this load after any store that precedes a wake.
    if word.load(Ordering::Relaxed) != expected {
        return;
    }
    // A poisoned bucket only means another waiter panicked; the wait itself is still sound.
    match deadline {
        None => drop(b.cond.wait(guard)),
        Some(d) => drop(b.cond.wait_timeout(guard, until(d))),
    }
}

/// Wakes every thread waiting on `word`.
#[cfg(not(loom))]
pub fn futex_wake(word: &AtomicU32) {
    let b = table::bucket(word as *const _ as usize);
    drop(lock(&b.lock));
    b.cond.notify_all();
}

/// Under loom: a spurious return, which lets another thread run.
#[cfg(loom)]
pub fn futex_wait(_word: &AtomicU32, _expected: u32, _deadline: Option<u64>) {
    loom::thread::yield_now();
}

/// Under loom: nothing to do, waiters recheck the word.
#[cfg(loom)]
pub fn futex_wake(_word: &AtomicU32) {}

/// `std::thread::sleep` to `deadline`, repeated until it has passed.
pub fn sleep_until(deadline: u64) {
    loop {
        let left = until(deadline);
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left);
    }
}

/// std cannot read the timer slack.
pub fn timer_slack_ns() -> Option<u64> {
    None
}

/// No timer slack control in std.
pub fn set_timer_slack_ns(_ns: u64) -> bool {
    false
}

/// std has no scheduler slices: nothing is set.
pub fn set_wake_slice(_tid: u64, _ns: u64) -> bool {
    false
}

/// std has no scheduler slices: none is reported.
pub fn wake_slice_ns(_tid: u64) -> Option<u64> {
    None
}

/// std cannot read CPU time; the fallback reports zero.
pub fn thread_cpu() -> CpuTime {
    CpuTime::default()
}

/// std cannot read CPU time; the fallback reports zero.
pub fn process_cpu() -> CpuTime {
    CpuTime::default()
}

/// A thread's CPU clock; the fallback reports zero.
#[derive(Clone, Copy, Debug)]
pub struct ThreadClock {
    id: u64,
}

impl ThreadClock {
    /// The calling thread's clock.
    pub fn current() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        std::thread_local!(static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed));
        ThreadClock {
            id: ID.with(|id| *id),
        }
    }

    /// A process-unique thread number (not an OS id).
    pub fn tid(&self) -> u64 {
        self.id
    }

    /// Zero: std has no per-thread CPU clock.
    pub fn read(&self) -> CpuTime {
        CpuTime::default()
    }
}

/// `std::thread::available_parallelism`, where it knows.
pub fn logical_processors() -> Option<usize> {
    std::thread::available_parallelism()
        .ok()
        .map(std::num::NonZeroUsize::get)
}

/// std cannot change affinity.
pub fn set_affinity_first(_n: usize) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "processor affinity needs the Linux OS layer",
    ))
}

/// Nothing: std has no prefetch.
#[inline]
pub fn prefetch_write(_addr: usize) {}

/// `std::thread::yield_now`.
#[inline]
pub fn yield_now() {
    std::thread::yield_now();
}
