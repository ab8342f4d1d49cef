//! svcGetSystemTick (0x1E): the console's 19.2 MHz counter (CNTPCT_EL0), and the one
//! conversion from nanoseconds to its ticks.
//!
//! Invariant: the counter never goes back. It counts the runtime's monotonic clock
//! (`sys::now()`: CLOCK_MONOTONIC on Linux, so from the host's boot, as the console's counts
//! from its own; on the std fallback, from the process's first clock read), the same for
//! every thread and every runtime of the process.

use crate::entry::entry;
use hos_runtime::internal::{det_tick, sys};

/// The console's tick rate (CNTFRQ_EL0): 19.2 MHz.
pub const TICKS_PER_SECOND: u64 = 19_200_000;

/// The ticks in `ns` nanoseconds, rounded down (`ns * 192 / 10_000`), saturating.
pub(crate) fn ticks_in(ns: u128) -> u64 {
    let ticks = ns * u128::from(TICKS_PER_SECOND) / 1_000_000_000;
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// svcGetSystemTick (0x1E): the system tick now, 19.2 MHz ticks of the runtime's monotonic clock
/// (module invariant); a guest thread of a runtime in the deterministic mode reads the virtual
/// clock's tick instead (docs/determinism.md section 4). A recompiled game reads the counter with
/// `mrs cntpct_el0` rather than the svc (the SDK does): a host maps that read here too.
///
/// ```
/// let a = hos::svc::get_system_tick();
/// std::thread::sleep(std::time::Duration::from_millis(1));
/// let b = hos::svc::get_system_tick();
/// assert!(b - a >= hos::svc::TICKS_PER_SECOND / 1000, "1 ms is 19200 ticks");
/// ```
pub fn get_system_tick() -> u64 {
    entry();
    // A guest thread in the deterministic mode reads the virtual clock.
    if let Some(tick) = det_tick() {
        return tick;
    }
    ticks_in(u128::from(sys::now()))
}

#[cfg(test)]
mod tests {
    use super::ticks_in;

    #[test]
    fn ticks_are_192_per_10_us() {
        assert_eq!(ticks_in(0), 0);
        assert_eq!(ticks_in(10_000), 192);
        assert_eq!(ticks_in(1_000_000_000), 19_200_000);
        assert_eq!(ticks_in(52), 0, "rounded down: a tick is 52.08 ns");
        assert_eq!(ticks_in(53), 1);
        assert_eq!(ticks_in(u128::from(u64::MAX) * 1000), u64::MAX);
    }
}
