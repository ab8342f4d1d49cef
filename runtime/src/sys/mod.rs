//! The OS layer: everything the runtime asks of the operating system, behind one contract.
//!
//! Invariant: nothing outside `sys/` calls an OS API directly. Each item below exists in
//! `linux.rs` (the platform we run and measure) and in `fallback.rs` (std only, compiles on
//! any platform). `--cfg hos_force_fallback` selects the fallback on Linux too, so CI tests it;
//! `--cfg loom` selects it as well, so loom models see only loom-aware primitives.
//!
//! # The contract
//!
//! | item | meaning |
//! | --- | --- |
//! | `now() -> u64` | a monotonic clock in nanoseconds; never goes back; cheap (vDSO on Linux) |
//! | `futex_wait(word, expected, deadline)` | sleep while `word == expected`, until woken, until `deadline` (a `now()` value, absolute) or spuriously; callers recheck |
//! | `futex_wake(word)` | wake every thread in `futex_wait` on `word` |
//! | `sleep_until(deadline)` | one OS timer sleep to an absolute `now()` value, no spin; may return late, never early |
//! | `set_timer_slack_ns(ns)` | ask the OS to fire this thread's timers within `ns`; `false` where it cannot |
//! | `timer_slack_ns()` | this thread's timer slack; `None` where unknown |
//! | `thread_cpu() -> CpuTime` | this thread's user and kernel time and voluntary switches, in one system call |
//! | `process_cpu() -> CpuTime` | the same for the whole process |
//! | `ThreadClock` | a handle, made once on a thread, that reads that thread's CPU time from any thread |
//! | `logical_processors()` | the processors in this process's affinity mask; `None` where unknown |
//! | `set_affinity_first(n)` | restrict the process to the first `n` processors it was allowed at the first call (a later call may widen it again) |
//! | `yield_now()` | give the processor to another ready thread |
//! | `KIND` | which implementation is compiled in, for logs and stats |
//!
//! Shared by both: [`deadline_after`], the `now()` value a `Duration` from now.

#[cfg(all(target_os = "linux", not(hos_force_fallback), not(loom)))]
mod linux;
#[cfg(all(target_os = "linux", not(hos_force_fallback), not(loom)))]
pub use linux::*;

#[cfg(any(not(target_os = "linux"), hos_force_fallback, loom))]
mod fallback;
#[cfg(any(not(target_os = "linux"), hos_force_fallback, loom))]
pub use fallback::*;

use crate::time::nanos;
use std::time::Duration;

/// The [`now`] value `d` from now, saturating: never earlier than asked.
#[inline]
pub fn deadline_after(d: Duration) -> u64 {
    now().saturating_add(nanos(d))
}

/// CPU time of a thread or process, as the OS accounts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time spent running user code.
    pub user: Duration,
    /// Time spent in the kernel on the thread's behalf.
    pub kernel: Duration,
    /// Voluntary context switches (the thread blocked); 0 where the OS does not say.
    pub voluntary_switches: u64,
}

impl CpuTime {
    /// User plus kernel time.
    pub fn total(&self) -> Duration {
        self.user + self.kernel
    }

    /// The difference `self - earlier`, saturating at zero field by field.
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            kernel: self.kernel.saturating_sub(earlier.kernel),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn now_is_monotonic() {
        let mut last = now();
        for _ in 0..10_000 {
            let t = now();
            assert!(t >= last, "clock went back: {t} < {last}");
            last = t;
        }
    }

    #[test]
    fn deadlines_saturate_and_never_come_early() {
        assert_eq!(deadline_after(Duration::MAX), u64::MAX);
        let before = now();
        assert!(deadline_after(Duration::from_millis(1)) >= before + 1_000_000);
    }

    #[test]
    fn sleep_until_is_never_early() {
        for ask in [0u64, 1_000, 20_000, 200_000] {
            let deadline = now() + ask;
            sleep_until(deadline);
            let t = now();
            assert!(t >= deadline, "woke {} ns early", deadline - t);
        }
    }

    #[test]
    fn futex_times_out_and_wakes() {
        let word = AtomicU32::new(0);
        let deadline = now() + 2_000_000;
        while word.load(Ordering::Relaxed) == 0 && now() < deadline {
            futex_wait(&word, 0, Some(deadline));
        }
        assert!(now() >= deadline);
        // A changed word returns at once.
        futex_wait(&word, 1, None);

        let word = std::sync::Arc::new(AtomicU32::new(0));
        let w2 = word.clone();
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                futex_wait(&w2, 0, None);
            }
        });
        std::thread::sleep(Duration::from_millis(5));
        word.store(1, Ordering::Release);
        futex_wake(&word);
        t.join().unwrap();
    }

    #[test]
    fn cpu_time_grows_with_work() {
        if KIND == "fallback" {
            assert_eq!(thread_cpu(), CpuTime::default(), "std cannot read CPU time");
            return;
        }
        let before = thread_cpu();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
            std::hint::black_box(x);
        }
        let used = thread_cpu().since(&before).total();
        assert!(
            used >= Duration::from_millis(5),
            "only {used:?} of CPU counted"
        );
        let clock = ThreadClock::current();
        assert!(clock.read().total() >= used);
        assert!(process_cpu().total() >= used);
    }

    #[test]
    fn thread_clock_reads_another_thread() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(30) {
                x = x.wrapping_add(1);
                std::hint::black_box(x);
            }
            tx.send(ThreadClock::current()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
        });
        let clock = rx.recv().unwrap();
        if KIND != "fallback" {
            assert!(clock.read().total() >= Duration::from_millis(5));
        }
        t.join().unwrap();
    }

    #[test]
    fn processors_are_counted() {
        if let Some(n) = logical_processors() {
            assert!(n >= 1);
        }
        if set_timer_slack_ns(1) {
            assert_eq!(timer_slack_ns(), Some(1));
        }
        yield_now();
    }
}
