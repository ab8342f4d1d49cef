//! The runtime's one time unit: nanoseconds, as [`crate::sys`]'s monotonic clock counts them.
//!
//! Invariant: every `Duration` a host or guest gives becomes nanoseconds here and nowhere
//! else, saturating (a `Duration::MAX` is "never", not a wrapped deadline in the past), so no
//! deadline can come out earlier than asked. A pure conversion: no clock is read here
//! (`sys::deadline_after` adds one to the clock).

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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn conversions_saturate() {
        assert_eq!(nanos(Duration::from_micros(20)), 20 * US);
        assert_eq!(nanos(Duration::from_millis(3)), 3 * MS);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
    }
}
