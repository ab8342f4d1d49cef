//! `hos_stats` and `hos_thread_stats`: the runtime's counters, calibration and CPU, and each
//! live guest thread's figures, as size-prefixed plain structs a host overlay polls.
//!
//! Invariant: a read is a snapshot of independent counters (not a consistent cut, as the Rust
//! API's), converted field by field; every duration is in nanoseconds, saturating.

use crate::boundary::{self, entry, Out, Versioned};
use crate::result::hos_result;
use crate::runtime::hos_runtime;
use hos_rs::internal::nanos;
use hos_rs::{Bound, CpuTime, PrecisePath, SleepPath};
use std::mem::size_of;

/// The sleeps one path served and how late they ended.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_sleep_stats {
    /// Sleeps served.
    pub count: u64,
    /// Their lateness, summed.
    pub late_sum_ns: u64,
    /// An upper bound of the median lateness (a power of two).
    pub late_p50_ns: u64,
    /// An upper bound of the 99th percentile of lateness (a power of two).
    pub late_p99_ns: u64,
}

/// What `hos_stats_get` reads. Set `size` to `sizeof(hos_stats)` before the call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_stats {
    /// Set by the caller: `sizeof(hos_stats)`.
    pub size: u32,
    /// Live guest threads.
    pub threads: u32,
    /// Guest sleeps on a yield loop.
    pub sleep_yield: hos_sleep_stats,
    /// Guest sleeps on the sleeper's own OS timer.
    pub sleep_timer: hos_sleep_stats,
    /// Precise sleeps: own slack-1 timer, then a spin.
    pub sleep_precise_own: hos_sleep_stats,
    /// Precise sleeps: woken early by the reactor, then a spin.
    pub sleep_precise_reactor: hos_sleep_stats,
    /// Relaxed sleeps: the OS timer alone.
    pub sleep_relaxed: hos_sleep_stats,
    /// Sleeps of a negative, non-yield length (bad input; they returned at once).
    pub bad_sleeps: u64,
    /// Yields (sleeps of 0, -1, -2).
    pub yields: u64,
    /// Waits woken while they spun.
    pub spins_caught: u64,
    /// Spins that ran their whole length and parked.
    pub spins_missed: u64,
    /// Waits whose spin the object's miss counter skipped.
    pub spins_skipped: u64,
    /// Waits that parked.
    pub parks: u64,
    /// Virtual-core acquisitions that had to wait.
    pub vcore_waits: u64,
    /// Holders kicked by a better waiter.
    pub vcore_kicks_priority: u64,
    /// Holders asked for a turn at the end of their time slice.
    pub vcore_kicks_slice: u64,
    /// Holders kicked by a HOS_VCORE_FIRST waiter.
    pub vcore_kicks_first: u64,
    /// Waiters that took a core by escape (a healthy run has 0).
    pub vcore_escapes: u64,
    /// Deadlines the reactor fired.
    pub reactor_fired: u64,
    /// Times the reactor thread woke.
    pub reactor_wakeups: u64,
    /// Calibration: how late the per-thread slack-1 OS timer ends.
    pub timer_lateness_ns: u64,
    /// Calibration: how long a parked thread takes to run after its wake.
    pub wake_latency_ns: u64,
    /// The process's user CPU time.
    pub process_user_ns: u64,
    /// The process's kernel CPU time.
    pub process_kernel_ns: u64,
    /// The reactor thread's user CPU time.
    pub reactor_user_ns: u64,
    /// The reactor thread's kernel CPU time.
    pub reactor_kernel_ns: u64,
    /// Idle polls: the OS timer alone, promoted when the polled object became ready.
    pub sleep_idle_poll: hos_sleep_stats,
    /// Guest sleeps found to be idle polls (a poll of hos objects that found nothing came just
    /// before, or HOS_IDLE_POLL_BLIND quiet sleeps in a row).
    pub idle_polls: u64,
    /// Idle polls that woke at their wake time, nothing promoted them.
    pub idle_relaxed: u64,
    /// Idle polls promoted by work: an object they polled became ready while they slept.
    pub idle_promoted: u64,
    /// Idle polls that woke on a tick another idle poller had woken on.
    pub idle_coalesced: u64,
    /// Virtual cores taken from a kicked holder that had not given its core up within the
    /// kick's grace (HOS_VCORE_GRACE_US; 0 while it is off).
    pub vcore_revokes: u64,
    /// Guest threads' wake slices (HOS_WAKE_SLICE_US) the OS took, at each thread's start and
    /// at each priority or role change that changed its slice.
    pub wake_slices: u64,
    /// Wake slices the OS did not take (a kernel before Linux 6.12, another OS, a real-time
    /// thread): those threads kept the OS default.
    pub wake_slices_ignored: u64,
    /// Calibration, tracked: how early a job worker's precise sleep arms its own slack-1 timer
    /// before its deadline (the 75th percentile of the timer's lateness).
    pub timer_margin_ns: u64,
    /// 1 if serial threads' short precise sleeps go through the reactor (the boot calibration
    /// found it cheaper than their own timer), 0 if they take their own timer.
    pub precise_reactor: u32,
    /// The bound the virtual cores keep: 0 none (virtual cores off), 1 strict (never more guest
    /// threads in guest code than cores), 2 relaxed after the kick's grace (how often:
    /// `vcore_revokes`).
    pub vcore_bound: u32,
    /// The kick's grace in nanoseconds while `vcore_bound` is 2, else 0.
    pub vcore_grace_ns: u64,
    /// Calibration, tracked: how early an unseen poller's precise sleep arms its own slack-1
    /// timer before its deadline (the median of the timer's lateness).
    pub poller_margin_ns: u64,
    /// Precise short sleeps served as unseen pollers': a job worker's, after 8 or more short
    /// sleeps in a row with no other svc or nn::os call between them, armed by
    /// `poller_margin_ns` rather than `timer_margin_ns`.
    pub unseen_polls: u64,
    /// Lock heirs (a lock waiter the next unlock will hand its mutex to, woken ahead of the
    /// hand-off to spin for it) whose spin saw the hand-off come.
    pub heir_caught: u64,
    /// Lock heirs whose spin ran out before the hand-off: they parked again.
    pub heir_missed: u64,
    /// Promoted idle polls whose promotion was deferred (HOS_IDLE_POLL_DEFER): the guest
    /// thread that readied what they polled ranked better and promoted them when it next gave
    /// its core up. Counted in `idle_promoted` too.
    pub idle_deferred: u64,
    /// Lock heirs whose hand-off came before the OS ran them: their OS wake still lay on the
    /// mutex's path. Each heir woken and run counts once, as caught, missed or late.
    pub heir_late: u64,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_stats {
    // The first version ended with `wake_slices_ignored`.
    const FIRST_SIZE: usize = std::mem::offset_of!(hos_stats, timer_margin_ns);
}

/// One live guest thread's figures. Set `size` of the first element of the array to
/// `sizeof(hos_thread_stats)` before `hos_stats_threads`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hos_thread_stats {
    /// Set by the caller in the first element: `sizeof(hos_thread_stats)`.
    pub size: u32,
    /// Horizon priority, 0 (best) ..= 63.
    pub priority: u32,
    /// 1 if the thread is serial (on the frame's critical chain), else 0.
    pub serial: u32,
    /// Padding, 0.
    pub reserved: u32,
    /// User CPU time since it started.
    pub cpu_user_ns: u64,
    /// Kernel CPU time since it started.
    pub cpu_kernel_ns: u64,
    /// Voluntary context switches (0 where the OS does not say).
    pub voluntary_switches: u64,
    /// Guest sleeps it made.
    pub sleeps: u64,
    /// Time it spent waiting for a virtual core.
    pub vcore_wait_ns: u64,
    /// Its name, NUL-terminated, cut at 63 bytes (on a character boundary).
    pub name: [u8; 64],
}

// SAFETY: repr(C), a u32 size first, integers and bytes only (zero is valid).
unsafe impl Versioned for hos_thread_stats {
    const FIRST_SIZE: usize = size_of::<hos_thread_stats>();
}

fn sleep_stats(s: &hos_rs::Stats, path: SleepPath) -> hos_sleep_stats {
    let l = s.path(path);
    hos_sleep_stats {
        count: l.count,
        late_sum_ns: l.sum_ns,
        late_p50_ns: nanos(l.quantile_upper(0.5)),
        late_p99_ns: nanos(l.quantile_upper(0.99)),
    }
}

fn cpu(c: CpuTime) -> (u64, u64) {
    (nanos(c.user), nanos(c.kernel))
}

fn runtime_stats(s: &hos_rs::Stats) -> hos_stats {
    let (process_user_ns, process_kernel_ns) = cpu(s.process_cpu);
    let (reactor_user_ns, reactor_kernel_ns) = cpu(s.reactor_cpu);
    hos_stats {
        size: size_of::<hos_stats>() as u32,
        threads: u32::try_from(s.threads.len()).unwrap_or(u32::MAX),
        sleep_yield: sleep_stats(s, SleepPath::Yield),
        sleep_timer: sleep_stats(s, SleepPath::Timer),
        sleep_precise_own: sleep_stats(s, SleepPath::PreciseOwn),
        sleep_precise_reactor: sleep_stats(s, SleepPath::PreciseReactor),
        sleep_relaxed: sleep_stats(s, SleepPath::Relaxed),
        bad_sleeps: s.bad_sleeps,
        yields: s.yields,
        spins_caught: s.spins_caught,
        spins_missed: s.spins_missed,
        spins_skipped: s.spins_skipped,
        parks: s.parks,
        vcore_waits: s.vcore_waits,
        vcore_kicks_priority: s.vcore_kicks_priority,
        vcore_kicks_slice: s.vcore_kicks_slice,
        vcore_kicks_first: s.vcore_kicks_first,
        vcore_escapes: s.vcore_escapes,
        reactor_fired: s.reactor_fired,
        reactor_wakeups: s.reactor_wakeups,
        timer_lateness_ns: s.calibration.timer_lateness_ns,
        wake_latency_ns: s.calibration.wake_latency_ns,
        process_user_ns,
        process_kernel_ns,
        reactor_user_ns,
        reactor_kernel_ns,
        sleep_idle_poll: sleep_stats(s, SleepPath::IdlePoll),
        idle_polls: s.idle_polls,
        idle_relaxed: s.idle_relaxed,
        idle_promoted: s.idle_promoted,
        idle_coalesced: s.idle_coalesced,
        vcore_revokes: s.vcore_revokes,
        wake_slices: s.wake_slices,
        wake_slices_ignored: s.wake_slices_ignored,
        timer_margin_ns: s.calibration.timer_margin_ns,
        precise_reactor: u32::from(s.calibration.precise == PrecisePath::Reactor),
        vcore_bound: match s.vcore_bound {
            Bound::Off => 0,
            Bound::Strict => 1,
            Bound::Relaxed { .. } => 2,
        },
        vcore_grace_ns: match s.vcore_bound {
            Bound::Relaxed { grace } => nanos(grace),
            Bound::Off | Bound::Strict => 0,
        },
        poller_margin_ns: s.calibration.poller_margin_ns,
        unseen_polls: s.unseen_polls,
        heir_caught: s.heir_caught,
        heir_missed: s.heir_missed,
        idle_deferred: s.idle_deferred,
        heir_late: s.heir_late,
    }
}

fn thread_stats(t: &hos_rs::ThreadStats) -> hos_thread_stats {
    let (cpu_user_ns, cpu_kernel_ns) = cpu(t.cpu);
    hos_thread_stats {
        size: size_of::<hos_thread_stats>() as u32,
        priority: u32::from(t.priority),
        serial: u32::from(t.serial),
        reserved: 0,
        cpu_user_ns,
        cpu_kernel_ns,
        voluntary_switches: t.cpu.voluntary_switches,
        sleeps: t.sleeps,
        vcore_wait_ns: nanos(t.vcore_wait),
        name: boundary::c_field(&t.name),
    }
}

/// Reads the runtime's counters, calibration and CPU times into `*out`. Set `out->size` to
/// `sizeof(hos_stats)` first: a caller built against an older header gets the fields it
/// knows; one built against a newer one reads 0 in the fields this library lacks.
///
/// Errors: InvalidPointer for a NULL `rt` or `out`, or a misaligned `out`; InvalidSize for an
/// `out->size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `out->size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hos_stats_get(rt: *const hos_runtime, out: *mut hos_stats) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let rt = unsafe { boundary::arg(rt, "rt") }?;
        let s = runtime_stats(&rt.rt.stats());
        // SAFETY: forwarded from the caller.
        unsafe { boundary::write_sized(out, &s, "out") }
    })
}

/// Reads each live guest thread's figures into `out[0..capacity]`, and their number into
/// `*count` (which may exceed `capacity`: call again with a larger array to get them all).
/// Set `out[0].size` to `sizeof(hos_thread_stats)` first: the elements lie that many bytes
/// apart. `out` may be NULL when `capacity` is 0.
///
/// A thread is listed from its spawn (or attach) until it has ended (or detached) and its
/// handle is closed (`hos_svc_close_handle`); a thread whose handle was closed while it ran
/// leaves the list once it has ended and the next spawn, join or close reaps it.
///
/// Errors: InvalidPointer for a NULL `rt` or `count`, or an `out` that is NULL (with a
/// capacity) or misaligned; InvalidSize for an `out[0].size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `capacity`
/// elements of `out[0].size` writable bytes; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hos_stats_threads(
    rt: *const hos_runtime,
    out: *mut hos_thread_stats,
    capacity: u32,
    count: *mut u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, count) = unsafe { (boundary::arg(rt, "rt")?, Out::new(count, "count")?) };
        let threads: Vec<_> = rt.rt.stats().threads.iter().map(thread_stats).collect();
        // SAFETY: forwarded from the caller.
        count.write(unsafe { boundary::write_array(out, capacity, &threads, "out") }?);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each counter reaches the C struct's field of its name: every one set to a value of
    /// its own over a runtime's snapshot, and each read back where the header says.
    #[test]
    fn each_counter_reaches_its_field() {
        let rt = hos_rs::Runtime::builder()
            .calibration(hos_rs::Calibration::default())
            .build()
            .expect("runtime");
        let snapshot = rt.stats();
        rt.shutdown();
        let s = hos_rs::Stats {
            bad_sleeps: 1,
            yields: 2,
            spins_caught: 3,
            spins_missed: 4,
            spins_skipped: 5,
            parks: 6,
            vcore_waits: 7,
            vcore_kicks_priority: 8,
            vcore_kicks_slice: 9,
            vcore_kicks_first: 10,
            vcore_escapes: 11,
            reactor_fired: 12,
            reactor_wakeups: 13,
            idle_polls: 14,
            idle_relaxed: 15,
            idle_promoted: 16,
            idle_coalesced: 17,
            vcore_revokes: 18,
            wake_slices: 19,
            wake_slices_ignored: 20,
            unseen_polls: 21,
            heir_caught: 22,
            heir_missed: 23,
            idle_deferred: 24,
            heir_late: 25,
            ..snapshot
        };
        let c = runtime_stats(&s);
        let read = [
            c.bad_sleeps,
            c.yields,
            c.spins_caught,
            c.spins_missed,
            c.spins_skipped,
            c.parks,
            c.vcore_waits,
            c.vcore_kicks_priority,
            c.vcore_kicks_slice,
            c.vcore_kicks_first,
            c.vcore_escapes,
            c.reactor_fired,
            c.reactor_wakeups,
            c.idle_polls,
            c.idle_relaxed,
            c.idle_promoted,
            c.idle_coalesced,
            c.vcore_revokes,
            c.wake_slices,
            c.wake_slices_ignored,
            c.unseen_polls,
            c.heir_caught,
            c.heir_missed,
            c.idle_deferred,
            c.heir_late,
        ];
        assert_eq!(read.to_vec(), (1..=25).collect::<Vec<u64>>());
    }
}
