//! A runtime's random entropy: the four 64-bit words svcGetInfo(RandomEntropy) answers.
//! Horizon draws them once, when it creates a process; the SDK and libnx seed their random
//! generators from them, so they are the guest's one source of randomness the runtime owns.
//!
//! Invariant: a runtime's words never change after its build. In the deterministic mode they
//! are the first four draws of the run's entropy stream (`det::rng`, [`Stream::Entropy`],
//! apart from the schedule's) from the seed its recording's header holds, so a replay's guest
//! draws the same; otherwise they come from the OS's random source (the keys of std's
//! `RandomState`) mixed with the clock, new in every runtime.

use crate::det::rng::{Rng, Stream};
use crate::sys;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// The words of the deterministic mode's entropy seed `seed`.
pub(crate) fn seeded(seed: u64) -> [u64; 4] {
    let mut rng = Rng::new(seed, Stream::Entropy);
    std::array::from_fn(|_| rng.next_u64())
}

/// Words from the OS's random source: a runtime with the mode off.
pub(crate) fn from_os() -> [u64; 4] {
    let keys = RandomState::new();
    let now = sys::now();
    std::array::from_fn(|i| keys.hash_one((i, now)))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_its_words_and_the_os_new_ones() {
        assert_eq!(seeded(7), seeded(7));
        assert_ne!(seeded(7), seeded(8));
        let w = seeded(0);
        assert!(w.windows(2).all(|p| p[0] != p[1]), "{w:x?}");
        assert_ne!(from_os(), from_os(), "two runtimes draw two sets");
    }
}
