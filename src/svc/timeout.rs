//! A svc's timeout, as Horizon reads its nanoseconds: the one conversion every wait that takes
//! one makes (the svcs, the nn::os objects' svc-shaped waits, the C ABI).
//!
//! Invariant: a negative count waits without limit (`None`), 0 is one attempt
//! (`Some(Duration::ZERO)`: the wait polls and never registers), and any other count is that
//! many nanoseconds; no value is refused.

use std::time::Duration;

/// A svc's timeout in nanoseconds as a limit: negative waits without limit (`None`), 0 polls
/// (`Some(Duration::ZERO)`), anything else is that long.
///
/// ```
/// use hos::svc::timeout_from_ns;
/// use std::time::Duration;
/// assert_eq!(timeout_from_ns(-1), None);
/// assert_eq!(timeout_from_ns(i64::MIN), None);
/// assert_eq!(timeout_from_ns(0), Some(Duration::ZERO));
/// assert_eq!(timeout_from_ns(1_500), Some(Duration::from_nanos(1_500)));
/// ```
pub fn timeout_from_ns(ns: i64) -> Option<Duration> {
    u64::try_from(ns).ok().map(Duration::from_nanos)
}
