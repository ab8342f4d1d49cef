//! The OS layer: everything the runtime asks of the operating system, behind one contract.
//!
//! Invariant: nothing outside `sys/` calls an OS API directly. Each item below exists in
//! `linux.rs` (the platform we run and measure) and in `fallback.rs` (std only, compiles on
//! any platform). `--cfg hos_force_fallback` selects the fallback on Linux too, so CI tests it;
//! `--cfg loom` selects it as well, so loom models see only loom-aware primitives.
//! `--cfg hos_winsim` (Linux only) selects `winsim.rs`, which models Windows' timers, yield
//! and CPU clock on top of the Linux primitives (docs/windows.md), so hos's policies can be
//! run against Windows' timing here.
//!
//! # The contract
//!
//! | item | meaning |
//! | --- | --- |
//! | `now() -> u64` | a monotonic clock in nanoseconds; never goes back; cheap (vDSO on Linux) |
//! | `ticks() -> u64` | the event clock (the trace's events, the virtual cores' grant stamps): the cheapest counter that never goes back and agrees across threads (the TSC where the kernel itself keeps time on it and the CPU says it is invariant; else `now()`), in its own unit |
//! | `tick_scale() -> TickScale` | the map from `ticks()` values to `now()` values as of the call (see [`TickScale`]) |
//! | `futex_wait(word, expected, deadline)` | sleep while `word == expected`, until woken, until `deadline` (a `now()` value, absolute) or spuriously; callers recheck |
//! | `wait_precise(word, expected, deadline)` | as `futex_wait`, but the deadline is served by the thread's timer at its slack (as precisely as `sleep_until`), never by a coarser wait timeout; a wake ends it at once (the reactor's wait: Linux's futex timeout is that timer; Windows needs a high-resolution waitable timer and an event) |
//! | `PRECISE_WAIT_SHARES_TIMER` | whether `wait_precise`'s lateness is a slack-1 `sleep_until`'s (one estimate serves both) or its own |
//! | `futex_wake(word)` | wake every thread in `futex_wait` on `word` |
//! | `sleep_until(deadline)` | one OS timer sleep to an absolute `now()` value, no spin; may return late, never early |
//! | `set_timer_slack_ns(ns)` | ask the OS to fire this thread's timers within `ns`; `false` where it cannot |
//! | `timer_slack_ns()` | this thread's timer slack; `None` where unknown |
//! | `set_wake_slice(tid, ns) -> bool` | ask the OS to schedule thread `tid` of this process with a slice of `ns` (0: its default), keeping its policy and nice value; `true` only where the OS took it (read back), `false` where it has no such setting or the thread is real-time |
//! | `wake_slice_ns(tid)` | thread `tid`'s slice as the OS reports it; `None` where it reports none |
//! | `thread_cpu() -> CpuTime` | this thread's user and kernel time and voluntary switches, in one system call |
//! | `process_cpu() -> CpuTime` | the same for the whole process |
//! | `ThreadClock` | a handle, made once on a thread, that reads that thread's CPU time from any thread |
//! | `logical_processors()` | the processors in this process's affinity mask; `None` where unknown |
//! | `set_affinity_first(n)` | restrict the process to the first `n` processors it was allowed at the first call (a later call may widen it again) |
//! | `yield_now()` | give the processor to another ready thread |
//! | `prefetch_write(addr)` | ask the processor to bring the cache line at `addr` close, for writing: a hint that reads nothing the program sees and never faults, whatever `addr` is; nothing where the processor has no such instruction (and in the fallback) |
//! | `KIND` | which implementation is compiled in, for logs and stats |
//!
//! Shared by both: [`deadline_after`], the `now()` value a `Duration` from now, and
//! [`TickScale`], the arithmetic of the event clock's map.

#[cfg(all(target_os = "linux", not(hos_force_fallback), not(loom)))]
// Under winsim the Linux layer is the simulation's real blocking: winsim re-exports part of
// it and leaves the rest (its slices, its slack, its KIND), which Windows has no match for.
#[cfg_attr(hos_winsim, allow(dead_code, unreachable_pub))]
mod linux;
#[cfg(all(
    target_os = "linux",
    not(hos_force_fallback),
    not(loom),
    not(hos_winsim)
))]
pub use linux::*;

#[cfg(all(target_os = "linux", not(hos_force_fallback), not(loom), hos_winsim))]
mod winsim;
#[cfg(all(target_os = "linux", not(hos_force_fallback), not(loom), hos_winsim))]
pub use winsim::*;

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

/// The map from [`ticks`] values to [`now`] values: a line through a base pair read when the
/// event clock was first used and the rate measured between it and the map's making.
///
/// Invariant: `ns(base_ticks) == base_ns`, and a later tick maps no earlier; the identity map
/// (where the ticks are `now()` itself) is `base_ticks == base_ns == 0` at rate 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickScale {
    base_ticks: u64,
    base_ns: u64,
    /// Nanoseconds a tick, as a 32.32 fixed-point number.
    rate: u64,
}

impl TickScale {
    /// The map where ticks are nanoseconds already.
    pub const IDENTITY: TickScale = TickScale {
        base_ticks: 0,
        base_ns: 0,
        rate: 1 << 32,
    };

    /// The line through `(ticks, ns)` pairs `base` and `later`; the identity's rate where
    /// `later` is not after `base` in both clocks.
    pub fn between(base: (u64, u64), later: (u64, u64)) -> TickScale {
        let (dt, dn) = (later.0.wrapping_sub(base.0), later.1.wrapping_sub(base.1));
        let rate = if later.0 > base.0 && later.1 > base.1 {
            u64::try_from((u128::from(dn) << 32) / u128::from(dt)).unwrap_or(u64::MAX)
        } else {
            1 << 32
        };
        TickScale {
            base_ticks: base.0,
            base_ns: base.1,
            rate,
        }
    }

    /// The `now()` value of the `ticks()` value `t` (a tick before the base maps to the
    /// base: none is read before it).
    #[inline]
    pub fn ns(&self, t: u64) -> u64 {
        self.base_ns
            .saturating_add(self.span_ns(t.saturating_sub(self.base_ticks)))
    }

    /// The nanoseconds in a span of `ticks` ticks (a difference of two readings), rounded
    /// down, saturating.
    #[inline]
    pub fn span_ns(&self, ticks: u64) -> u64 {
        let ns = (u128::from(ticks) * u128::from(self.rate)) >> 32;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// The ticks in a span of `ns` nanoseconds, rounded up (a span measured in ticks against
    /// it is never shorter than `ns`), saturating.
    pub fn ticks_in(&self, ns: u64) -> u64 {
        let rate = u128::from(self.rate.max(1));
        let ticks = (u128::from(ns) << 32).div_ceil(rate);
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }
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
    fn ticks_map_onto_the_monotonic_clock() {
        let before = now();
        let t0 = ticks();
        sleep_until(before + 3_000_000);
        let t1 = ticks();
        let after = now();
        let scale = tick_scale();
        assert!(t1 > t0, "ticks went back: {t1} <= {t0}");
        let (n0, n1) = (scale.ns(t0), scale.ns(t1));
        // The map's error is a clock read's, never milliseconds.
        let slack = 200_000;
        assert!(
            n0 + slack >= before && n0 <= before + 3_000_000,
            "{n0} vs {before}"
        );
        assert!(
            n1 + slack >= before + 3_000_000 && n1 <= after + slack,
            "{n1} vs {after}"
        );
        assert!(n1 - n0 >= 2_500_000, "3 ms of ticks map to {} ns", n1 - n0);
    }

    #[test]
    fn tick_scales_are_lines_and_never_fail() {
        let s = TickScale::between((1_000, 5_000), (3_000, 6_000));
        assert_eq!((s.ns(1_000), s.ns(3_000), s.ns(0)), (5_000, 6_000, 5_000));
        assert_eq!(TickScale::IDENTITY.ns(123_456_789), 123_456_789);
        // A later pair that is not later is the identity rate, not a division by zero.
        let flat = TickScale::between((7, 7), (7, 7));
        assert_eq!(flat.ns(10), 10);
        assert_eq!(
            TickScale::between((0, 0), (1, u64::MAX)).ns(u64::MAX),
            u64::MAX
        );
    }

    #[test]
    fn spans_round_so_that_a_span_in_ticks_is_never_short() {
        // 2.5 ns a tick, 1/3 ns a tick, and the identity.
        let scales = [
            TickScale::between((0, 0), (2, 5)),
            TickScale::between((0, 0), (3, 1)),
            TickScale::IDENTITY,
        ];
        for scale in scales {
            for ns in (0..2_000).chain([2_000_000, u64::MAX / 4]) {
                let ticks = scale.ticks_in(ns);
                assert!(
                    scale.span_ns(ticks) >= ns,
                    "{ns} ns -> {ticks} ticks: {scale:?}"
                );
                assert!(
                    ticks == 0 || scale.span_ns(ticks - 1) < ns,
                    "{ns} ns -> {ticks} ticks, one fewer would do: {scale:?}"
                );
            }
        }
        assert_eq!(TickScale::IDENTITY.ticks_in(u64::MAX), u64::MAX);
        assert_eq!(
            TickScale::between((0, 0), (2, 5)).span_ns(u64::MAX),
            u64::MAX
        );
    }

    #[test]
    fn a_prefetch_of_any_address_never_faults() {
        let mine = 0u64;
        for addr in [
            0,
            1,
            &mine as *const u64 as usize,
            usize::MAX - 63,
            usize::MAX,
        ] {
            prefetch_write(addr);
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
    fn futex_and_precise_waits_time_out_and_wake() {
        type WaitFn = fn(&AtomicU32, u32, Option<u64>);
        let waits: [(&str, WaitFn); 2] =
            [("futex_wait", futex_wait), ("wait_precise", wait_precise)];
        for (name, wait) in waits {
            let word = AtomicU32::new(0);
            let deadline = now() + 2_000_000;
            while word.load(Ordering::Relaxed) == 0 && now() < deadline {
                wait(&word, 0, Some(deadline));
            }
            assert!(now() >= deadline, "{name}");
            // A changed word returns at once.
            wait(&word, 1, None);

            let word = std::sync::Arc::new(AtomicU32::new(0));
            let w2 = word.clone();
            let t = std::thread::spawn(move || {
                while w2.load(Ordering::Acquire) == 0 {
                    wait(&w2, 0, Some(now() + 60_000_000_000));
                }
            });
            std::thread::sleep(Duration::from_millis(5));
            word.store(1, Ordering::Release);
            futex_wake(&word);
            t.join().unwrap();
        }
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
