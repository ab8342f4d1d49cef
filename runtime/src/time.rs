//! The runtime's one time unit: nanoseconds of [`crate::sys::now`]'s monotonic clock.
//!
//! Invariant: every `Duration` a host or guest gives becomes nanoseconds here and nowhere
//! else, saturating (a `Duration::MAX` is "never", not a wrapped deadline in the past), so no
//! deadline can come out earlier than asked.

use crate::sys;
use std::time::Duration;

/// Nanoseconds in a microsecond.
pub(crate) const US: u64 = 1_000;
/// Nanoseconds in a millisecond.
pub(crate) const MS: u64 = 1_000_000;

/// `d` in nanoseconds, saturating at `u64::MAX` (585 years).
#[inline]
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The `sys::now()` value `d` from now, saturating.
#[inline]
pub fn deadline_after(d: Duration) -> u64 {
    sys::now().saturating_add(nanos(d))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn conversions_saturate_and_never_come_early() {
        assert_eq!(nanos(Duration::from_micros(20)), 20 * US);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
        assert_eq!(deadline_after(Duration::MAX), u64::MAX);
        let before = sys::now();
        assert!(deadline_after(Duration::from_millis(1)) >= before + MS);
    }
}
