//! svcGetSystemTick from C: `hos_svc_get_system_tick`.
//!
//! Invariant: hos's `svc::get_system_tick`, which cannot fail.

use crate::boundary;

/// The console's tick rate: 19.2 MHz.
pub const HOS_TICKS_PER_SECOND: u64 = 19_200_000;

// A literal for the header; hos's own constant is the one rate.
const _: () = assert!(HOS_TICKS_PER_SECOND == hos_rs::svc::TICKS_PER_SECOND);

/// svcGetSystemTick: the system tick now, 19.2 MHz ticks of hos's monotonic clock (from the
/// host's boot on Linux), one counter for every thread. A recompiled game reads the counter
/// with `mrs cntpct_el0`: map that read here too.
#[no_mangle]
pub extern "C" fn hos_svc_get_system_tick() -> u64 {
    boundary::entry_or(0, hos_rs::svc::get_system_tick)
}
