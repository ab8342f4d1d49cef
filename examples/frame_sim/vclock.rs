//! The load's clock: the host's, or with `--det` the runtime's virtual one, so that the
//! load's own timing (bursts, the workers' linger, the frame limiter) keeps the deterministic
//! mode's host contract (docs/determinism.md section 8: guest clock reads on the virtual
//! clock, no guest state moved by wall time).
//!
//! Invariant: while the virtual clock is on, a guest thread of the load reads no host clock
//! that changes what it does: a burst of `us` is `us` checkpoints (1 us of virtual time
//! each), an idle time is measured on the virtual tick, and the frame limiter sleeps on
//! the virtual clock (`svc::sleep_thread`). frame_sim runs one runtime at a time, so one
//! process-wide switch, set before a run's threads start, says which clock its load uses.
//! Tested through a run in the mode (`det.rs`): its virtual time holds every frame period.

use hos::svc::{get_system_tick, TICKS_PER_SECOND};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Whether the load runs on the virtual clock.
static VIRTUAL: AtomicBool = AtomicBool::new(false);

/// The host clock's origin for [`now_ns`].
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Puts the next run's load on the virtual clock (`true`) or the host's; called before its
/// threads start.
pub(crate) fn set_virtual(on: bool) {
    // Relaxed: set before the run's threads are spawned, whose spawn publishes it.
    VIRTUAL.store(on, Ordering::Relaxed);
}

/// Whether the load runs on the virtual clock.
pub(crate) fn is_virtual() -> bool {
    // Relaxed: see `set_virtual`.
    VIRTUAL.load(Ordering::Relaxed)
}

/// The load's time now, in ns: the virtual clock's (its tick read, a checkpoint of the
/// clock) or the host's since the first call.
pub(crate) fn now_ns() -> u64 {
    if is_virtual() {
        let tick = u128::from(get_system_tick());
        return (tick * 1_000_000_000 / u128::from(TICKS_PER_SECOND)) as u64;
    }
    let epoch = *EPOCH.get_or_init(Instant::now);
    hos::internal::nanos(epoch.elapsed())
}

/// Sleeps `ns` of the load's time: on the virtual clock a guest sleep, on the host's the
/// runtime's precise host sleep.
pub(crate) fn sleep_ns(rt: &hos::Runtime, ns: u64) {
    if is_virtual() {
        hos::svc::sleep_thread(i64::try_from(ns).unwrap_or(i64::MAX));
    } else {
        rt.host_sleep(Duration::from_nanos(ns));
    }
}
