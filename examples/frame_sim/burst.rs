//! A burst: CPU work of a given length on the calling thread's own clock.
//!
//! Invariant: a burst of `us` ends once the thread has spent `us` of its own CPU time on it
//! (within a chunk), whatever preemption or neighbours do, so a frame is the same work on any
//! machine; between chunks it passes `hos::svc::checkpoint` (a kicked guest thread gives its
//! virtual core up there; nothing happens on a host thread). In the deterministic mode
//! (`--det`, `vclock.rs`) a burst of `us` is `us` checkpoints instead, each 1 us of virtual
//! time, so it reads no clock and is the same run after run.

use std::hint::black_box;

/// This thread's CPU time in nanoseconds (one system call: CLOCK_THREAD_CPUTIME_ID is not
/// in the vDSO).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A chunk of work between two readings of the CPU clock (and two checkpoints): long enough
/// that the clock's system call costs about 1 %, short enough that a kicked thread answers
/// within 20 us, as game code that enters the kernel now and then would.
const CHUNK_NS: u64 = 20_000;

thread_local! {
    /// This thread's estimate of one work step's CPU time, in ns (adapted chunk by chunk).
    static STEP_NS: std::cell::Cell<f64> = const { std::cell::Cell::new(1.0) };
}

/// Spends `us` microseconds of this thread's CPU time on work, calling
/// `hos::svc::checkpoint` between chunks. Preemption does not lengthen the work: the clock
/// is the thread's own, so the burst is the same CPU on a loaded machine, only later.
pub(crate) fn burst(us: u64) {
    if us == 0 {
        return;
    }
    if crate::vclock::is_virtual() {
        // On the virtual clock a checkpoint is 1 us: the burst is `us` of them, each after a
        // few steps of work (`vclock.rs`).
        let mut x = us | 1;
        for _ in 0..us {
            for _ in 0..8 {
                x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
            hos::svc::checkpoint();
        }
        return;
    }
    let start = thread_cpu_ns();
    let end = start + us * 1000;
    let mut now = start;
    let mut x = start | 1;
    let mut step = STEP_NS.get();
    while now < end {
        let chunk = (end - now).min(CHUNK_NS);
        let steps = ((chunk as f64 / step) as u64).max(8);
        for _ in 0..steps {
            // A dependent multiply-add chain: no vectorizing, no closed form.
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        let t = thread_cpu_ns();
        let measured = (t - now) as f64 / steps as f64;
        step = (0.5 * step + 0.5 * measured).clamp(0.05, 1000.0);
        now = t;
        hos::svc::checkpoint();
    }
    STEP_NS.set(step);
    black_box(x);
}
