//! Linux: futex, `clock_nanosleep(TIMER_ABSTIME)`, `PR_SET_TIMERSLACK`, `getrusage(RUSAGE_THREAD)`,
//! and the TSC as the trace's event clock.
//!
//! Invariant: every clock here is `CLOCK_MONOTONIC`, so a `now()` value is a valid absolute
//! deadline for the futex and for `clock_nanosleep` without conversion. The one other
//! counter, the TSC behind `ticks()`, is read only where the kernel keeps `CLOCK_MONOTONIC`
//! on it (so the kernel checked that it runs at one rate and agrees across processors) and
//! the CPU says it is invariant; its ticks become `now()` values through a [`TickScale`].
//!
//! One of the two files of hos where `unsafe` is allowed (with the `hos` crate's
//! `svc/arbiter/lent.rs`): every block answers its obligations in a
//! `// SAFETY:` comment.

#![allow(unsafe_code)]

use super::{CpuTime, TickScale};
use crate::sync::atomic::AtomicU32;
use std::sync::LazyLock;
use std::time::Duration;

/// Which implementation this is, for logs and stats.
pub const KIND: &str = "linux";

const NANOS: u64 = 1_000_000_000;

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / NANOS).min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: (ns % NANOS) as libc::c_long,
    }
}

fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * NANOS + ts.tv_nsec as u64)
}

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`, served by the vDSO).
#[inline]
pub fn now() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always available on Linux")
}

/// The event clock: whether it reads the TSC, and its base pair (ticks, `now()`).
#[derive(Debug)]
struct EventClock {
    tsc: bool,
    base: (u64, u64),
}

/// Made at the first `ticks()` or `tick_scale()` of the process.
static EVENT_CLOCK: LazyLock<EventClock> = LazyLock::new(|| {
    let tsc = tsc::usable();
    EventClock {
        tsc,
        base: if tsc { tsc::pair() } else { (0, 0) },
    }
});

/// The event clock's reading: the TSC where usable (a few nanoseconds, no ordering with the
/// memory accesses around it), else `now()`.
#[inline]
pub fn ticks() -> u64 {
    if EVENT_CLOCK.tsc {
        tsc::read()
    } else {
        now()
    }
}

/// The map from `ticks()` to `now()` values: the line from the event clock's base pair to a
/// pair read now (at least 1 ms later: the first call within 1 ms of the base waits for it).
pub fn tick_scale() -> TickScale {
    let c = &*EVENT_CLOCK;
    if !c.tsc {
        return TickScale::IDENTITY;
    }
    sleep_until(c.base.1.saturating_add(1_000_000));
    TickScale::between(c.base, tsc::pair())
}

#[cfg(target_arch = "x86_64")]
mod tsc {
    use std::arch::x86_64::{__cpuid, _rdtsc};

    /// Whether the TSC may be the event clock: the CPU says it is invariant (CPUID
    /// 0x8000_0007, EDX bit 8: one rate in every power state), the kernel keeps its clock on
    /// it (it checked the processors agree), and this process may read it (`PR_GET_TSC`).
    pub(super) fn usable() -> bool {
        let mut allowed: libc::c_int = 0;
        // SAFETY: PR_GET_TSC writes one int through the pointer, which is valid for the call.
        let rc = unsafe { libc::prctl(libc::PR_GET_TSC, &mut allowed as *mut libc::c_int) };
        if rc != 0 || allowed != libc::PR_TSC_ENABLE {
            return false;
        }
        // SAFETY: CPUID exists on every x86_64 processor and only writes registers.
        #[allow(unused_unsafe)]
        let max = unsafe { __cpuid(0x8000_0000) }.eax;
        // SAFETY: as above; the leaf is within the maximum just read.
        #[allow(unused_unsafe)]
        let invariant = max >= 0x8000_0007 && unsafe { __cpuid(0x8000_0007) }.edx & (1 << 8) != 0;
        let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
        invariant && std::fs::read_to_string(path).is_ok_and(|s| s.trim() == "tsc")
    }

    /// The TSC.
    #[inline]
    pub(super) fn read() -> u64 {
        // SAFETY: RDTSC exists on every x86_64 processor and only writes registers; `usable`
        // checked that this process may execute it.
        unsafe { _rdtsc() }
    }

    /// A (ticks, `now()`) pair read together: of five tries, the one whose two TSC reads
    /// around the clock read are closest, with their midpoint.
    pub(super) fn pair() -> (u64, u64) {
        (0..5)
            .map(|_| {
                let a = read();
                let ns = super::now();
                let b = read();
                (b.wrapping_sub(a), a + b.wrapping_sub(a) / 2, ns)
            })
            .min_by_key(|&(gap, ..)| gap)
            .map_or((0, 0), |(_, t, ns)| (t, ns))
    }
}

/// Without a TSC: never used (`usable` says no), so `ticks()` is `now()`.
#[cfg(not(target_arch = "x86_64"))]
mod tsc {
    pub(super) fn usable() -> bool {
        false
    }

    pub(super) fn read() -> u64 {
        super::now()
    }

    pub(super) fn pair() -> (u64, u64) {
        (0, 0)
    }
}

/// The reactor's precise wait is served by the same timer as a slack-1 [`sleep_until`]: the
/// futex's absolute timeout is an hrtimer at the thread's slack, so one lateness estimate
/// serves both.
pub const PRECISE_WAIT_SHARES_TIMER: bool = true;

/// Sleeps while `*word == expected`, until woken, until `deadline` as precisely as a
/// [`sleep_until`] at this thread's slack, or spuriously: on Linux the futex's own timeout is
/// that timer, so this is [`futex_wait`].
#[inline]
pub fn wait_precise(word: &AtomicU32, expected: u32, deadline: Option<u64>) {
    futex_wait(word, expected, deadline);
}

/// Sleeps while `*word == expected`, until woken, until the absolute `deadline`, or spuriously.
pub fn futex_wait(word: &AtomicU32, expected: u32, deadline: Option<u64>) {
    let ts = deadline.map(timespec);
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32 for the call; FUTEX_WAIT_BITSET with
    // FUTEX_CLOCK_REALTIME unset takes an absolute CLOCK_MONOTONIC timeout or null.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
            std::ptr::null::<u32>(),
            u32::MAX,
        );
    }
}

/// Wakes every thread waiting on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE reads no other argument.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

/// One `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to `deadline`, repeated on EINTR.
pub fn sleep_until(deadline: u64) {
    let ts = timespec(deadline);
    loop {
        // SAFETY: `ts` is a valid timespec; with TIMER_ABSTIME the remainder pointer is unused.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// `PR_GET_TIMERSLACK`: the calling thread's timer slack.
pub fn timer_slack_ns() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the slack.
    let r = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    (r >= 0).then_some(r as u64)
}

/// `PR_SET_TIMERSLACK` for the calling thread.
pub fn set_timer_slack_ns(ns: u64) -> bool {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0) == 0 }
}

/// `sched_getattr` of thread `tid`, the version-0 struct (48 bytes: no utilisation clamps).
fn sched_attr(tid: u64) -> Option<libc::sched_attr> {
    // SAFETY: an all-zero sched_attr is a valid value of the plain C struct.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    // SAFETY: `attr` is valid and writable for `size` bytes; flags must be 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as libc::pid_t,
            &mut attr,
            size,
            0,
        )
    };
    (r == 0).then_some(attr)
}

/// Whether `policy` is SCHED_OTHER or SCHED_BATCH, the policies whose slice the kernel lets a
/// thread choose (SCHED_IDLE threads keep the default; real-time, deadline and sched_ext
/// threads are scheduled otherwise).
fn is_fair(policy: u32) -> bool {
    [libc::SCHED_OTHER, libc::SCHED_BATCH]
        .iter()
        .any(|&p| p as u32 == policy)
}

/// Asks for a slice of `ns` for thread `tid` of this process (0: the OS default), keeping its
/// policy and nice value: a `sched_getattr`, then a `sched_setattr` with `sched_runtime`
/// changed and, with a slice, reset-on-fork set (which also starts its children at nice 0 or
/// worse and in the fair class; it stays set after a reset to the default). Linux 6.12 and
/// later give a SCHED_OTHER or SCHED_BATCH thread that slice (clamped to 100 us..=100 ms);
/// earlier kernels accept the call and ignore the field, which the read-back tells. A thread
/// of any other policy is left alone (`false`).
pub fn set_wake_slice(tid: u64, ns: u64) -> bool {
    let Some(mut attr) = sched_attr(tid) else {
        return false;
    };
    if !is_fair(attr.sched_policy) {
        return false;
    }
    attr.size = std::mem::size_of::<libc::sched_attr>() as u32;
    attr.sched_runtime = ns;
    // Keep reset-on-fork only (the other flags are requests of a call, not the thread's
    // state), and set it with a slice: a thread the thread starts then begins with the OS
    // default slice rather than inheriting this one.
    let reset_on_fork = libc::SCHED_FLAG_RESET_ON_FORK as u64;
    attr.sched_flags &= reset_on_fork;
    if ns != 0 {
        attr.sched_flags |= reset_on_fork;
    }
    // SAFETY: `attr` is a valid, initialised sched_attr of the size it says; flags must be 0.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid as libc::pid_t, &attr, 0) };
    r == 0 && (ns == 0 || wake_slice_ns(tid) == Some(ns))
}

/// Thread `tid`'s slice as the OS reports it: `Some` on Linux 6.12 and later for a SCHED_OTHER
/// or SCHED_BATCH thread (its custom slice, else the default one), `None` where the OS
/// reports none.
pub fn wake_slice_ns(tid: u64) -> Option<u64> {
    sched_attr(tid)
        .filter(|a| is_fair(a.sched_policy) && a.sched_runtime != 0)
        .map(|a| a.sched_runtime)
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable for the call.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return CpuTime::default();
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    CpuTime {
        user: tv(ru.ru_utime),
        kernel: tv(ru.ru_stime),
        voluntary_switches: ru.ru_nvcsw as u64,
    }
}

/// This thread's CPU time: one `getrusage(RUSAGE_THREAD)`.
pub fn thread_cpu() -> CpuTime {
    rusage(libc::RUSAGE_THREAD)
}

/// The process's CPU time: one `getrusage(RUSAGE_SELF)`.
pub fn process_cpu() -> CpuTime {
    rusage(libc::RUSAGE_SELF)
}

/// Reads one thread's CPU time from any thread.
///
/// The total comes from the thread's own CPU clock (nanoseconds, one `clock_gettime`); the
/// user/kernel split and voluntary switches from `/proc/self/task/<tid>/stat` and `status`
/// (the split is in clock ticks, so it is coarse). Reading a thread that has ended gives the
/// zero time.
#[derive(Clone, Copy, Debug)]
pub struct ThreadClock {
    tid: libc::pid_t,
}

impl ThreadClock {
    /// The calling thread's clock; make it once per thread and keep it.
    pub fn current() -> Self {
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        ThreadClock { tid }
    }

    /// The OS thread id.
    pub fn tid(&self) -> u64 {
        self.tid as u64
    }

    /// The thread's CPU time.
    pub fn read(&self) -> CpuTime {
        // MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED): the kernel's encoding of a thread's clock.
        let clock = ((!self.tid) << 3) | 6;
        let Some(total) = clock_ns(clock as libc::clockid_t) else {
            return CpuTime::default();
        };
        let total = Duration::from_nanos(total);
        let path = format!("/proc/self/task/{}/stat", self.tid);
        let kernel = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| {
                // Fields after the parenthesised name: state is field 3, stime is field 15.
                let rest = &s[s.rfind(')')? + 2..];
                let stime: u64 = rest.split(' ').nth(12)?.parse().ok()?;
                // SAFETY: sysconf takes a constant and touches no memory.
                let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
                Some(Duration::from_nanos(stime.saturating_mul(NANOS / hz)))
            })
            .unwrap_or_default()
            .min(total);
        let status = format!("/proc/self/task/{}/status", self.tid);
        let voluntary_switches = std::fs::read_to_string(status)
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0);
        CpuTime {
            user: total.saturating_sub(kernel),
            kernel,
            voluntary_switches,
        }
    }
}

fn affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid and writable, and its size is passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    (rc == 0).then_some(set)
}

/// The processors in this process's affinity mask.
pub fn logical_processors() -> Option<usize> {
    // SAFETY: CPU_COUNT reads the set it is given.
    affinity().map(|set| unsafe { libc::CPU_COUNT(&set) } as usize)
}

/// Restricts every thread of the process to the first `n` processors of those it was allowed
/// at its first call: a later call may widen the mask again, up to that first one.
pub fn set_affinity_first(n: usize) -> std::io::Result<()> {
    static ALLOWED: std::sync::OnceLock<libc::cpu_set_t> = std::sync::OnceLock::new();
    let set = match ALLOWED.get() {
        Some(set) => *set,
        None => {
            let now = affinity().ok_or_else(std::io::Error::last_os_error)?;
            *ALLOWED.get_or_init(|| now)
        }
    };
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut keep: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let mut kept = 0;
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: `cpu` is below CPU_SETSIZE, the bound of both sets.
        if kept < n && unsafe { libc::CPU_ISSET(cpu, &set) } {
            // SAFETY: as above.
            unsafe { libc::CPU_SET(cpu, &mut keep) };
            kept += 1;
        }
    }
    if kept < n {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("asked for {n} processors, the process may use {kept}"),
        ));
    }
    let tasks = std::fs::read_dir("/proc/self/task")?;
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        // SAFETY: `keep` is a valid set and its size is passed.
        if unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&keep), &keep) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Asks the processor to fetch the cache line at `addr` for writing (x86-64's `prefetchw`);
/// nothing elsewhere. Any address will do: a prefetch never faults.
#[inline]
pub fn prefetch_write(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(addr as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// `sched_yield`.
#[inline]
pub fn yield_now() {
    // SAFETY: sched_yield has no arguments.
    unsafe {
        libc::sched_yield();
    }
}

#[cfg(test)]
mod tests {
    use super::{is_fair, sched_attr, set_wake_slice, wake_slice_ns, ThreadClock};

    #[test]
    fn reset_on_fork_comes_with_a_slice_only() {
        let flags = |tid| sched_attr(tid).map(|a| a.sched_flags);
        let reset = Some(libc::SCHED_FLAG_RESET_ON_FORK as u64);
        std::thread::spawn(move || {
            let tid = ThreadClock::current().tid();
            assert_eq!(flags(tid), Some(0));
            // Asking for the default on a thread never given a slice sets no flag.
            set_wake_slice(tid, 0);
            assert_eq!(flags(tid), Some(0));
            if set_wake_slice(tid, 300_000) {
                assert_eq!(flags(tid), reset);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_idle_policy_thread_is_left_alone() {
        std::thread::spawn(|| {
            let tid = ThreadClock::current().tid();
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: `param` is valid for the call; 0 names the calling thread, and moving
            // oneself to SCHED_IDLE needs no privilege.
            let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
            assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
            assert_eq!(wake_slice_ns(tid), None);
            assert!(!set_wake_slice(tid, 300_000));
            assert_eq!(sched_attr(tid).map(|a| a.sched_flags), Some(0));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn only_the_fair_class_chooses_a_slice() {
        // Linux's numbers, which libc does not all name: SCHED_DEADLINE 6, SCHED_EXT 7.
        let (deadline, ext) = (6, 7);
        for p in [libc::SCHED_OTHER, libc::SCHED_BATCH] {
            assert!(is_fair(p as u32), "{p}");
        }
        for p in [
            libc::SCHED_FIFO,
            libc::SCHED_RR,
            libc::SCHED_IDLE,
            deadline,
            ext,
        ] {
            assert!(!is_fair(p as u32), "{p}");
        }
    }
}
