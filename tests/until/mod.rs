//! Waiting, in a test, for what other threads do: a condition polled until it holds, and the
//! test failed, naming what never came, after a minute.

use std::time::{Duration, Instant};

/// How long a test waits for a condition before it fails.
const LIMIT: Duration = Duration::from_secs(60);

/// Waits (polling every 100 us) until `cond` holds; fails naming `what` after [`LIMIT`].
pub(crate) fn until(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + LIMIT;
    while !cond() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}
