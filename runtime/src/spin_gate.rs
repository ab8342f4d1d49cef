//! A sync object's spin gate: whether a wait on the object spins before it parks, learnt from
//! how the object's recent spins ended (docs/design.md section 6).
//!
//! Invariant: the gate is one word that only decides whether a spin happens, never what a wait
//! returns, so every access is Relaxed and a stale read costs at most one spin more or less.
//! Only a full-length spin that missed counts toward closing the gate, so the short spins of
//! job workers never switch off the serial threads' spin on an object they share.

use crate::sync::atomic::{AtomicU32, Ordering};

/// A sync object's spin miss counter: after [`SpinGate::MISSES_TO_CLOSE`] full-length spins in
/// a row that missed, the spin is skipped 31 times in 32 ([`SpinGate::OPEN_ONE_IN`]); a catch
/// (of any length) reopens it. Spins shorter than HOS_SPIN_US neither count as misses nor
/// break a run of them, so short spins of job workers cannot switch off the serial threads'
/// spin on a shared object.
#[derive(Debug, Default)]
pub struct SpinGate {
    /// Low byte: full-length misses in a row (saturating at 255). High bits: waits since the
    /// gate closed (wrapping; 2^24 is a multiple of 32, so the 1-in-32 rhythm survives it).
    word: AtomicU32,
}

/// The low byte of [`SpinGate::word`].
const MISSES: u32 = 0xff;
/// One wait in the high bits of [`SpinGate::word`].
const WAIT: u32 = 1 << 8;

impl SpinGate {
    /// Full-length misses in a row that close the gate.
    pub const MISSES_TO_CLOSE: u32 = 4;
    /// A closed gate lets one spin in this many through.
    pub const OPEN_ONE_IN: u32 = 32;

    /// A gate that lets spins through (not `const`: loom's atomics are not).
    pub fn new() -> Self {
        SpinGate {
            word: AtomicU32::new(0),
        }
    }

    /// Whether the next wait should spin.
    pub fn should_spin(&self) -> bool {
        // Relaxed: a heuristic on one word; a stale read only moves one spin.
        let w = self.word.load(Ordering::Relaxed);
        if w & MISSES < Self::MISSES_TO_CLOSE {
            return true;
        }
        // Relaxed: as above.
        let n = self.word.fetch_add(WAIT, Ordering::Relaxed) / WAIT;
        n % Self::OPEN_ONE_IN == Self::OPEN_ONE_IN - 1
    }

    /// Records a spin's outcome. A catch reopens the gate; a miss counts only if `full`.
    pub fn record(&self, caught: bool, full: bool) {
        if caught {
            // Relaxed (both): a heuristic; the load spares the common open case a store.
            if self.word.load(Ordering::Relaxed) != 0 {
                self.word.store(0, Ordering::Relaxed);
            }
        } else if full {
            // Relaxed (both): a heuristic. An update, not a store, so a concurrent
            // `should_spin` never loses its count of waits.
            let _ = self
                .word
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                    (w & MISSES < MISSES).then_some(w + 1)
                });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_gate_closes_after_four_full_misses_and_a_catch_reopens_it() {
        let gate = SpinGate::new();
        for _ in 0..SpinGate::MISSES_TO_CLOSE {
            assert!(gate.should_spin());
            gate.record(false, true);
        }
        let spins = (0..64).filter(|_| gate.should_spin()).count();
        assert_eq!(spins, 2);
        gate.record(true, false);
        assert!(gate.should_spin());
    }

    #[test]
    fn misses_saturate_without_reaching_the_wait_count() {
        let gate = SpinGate::new();
        for _ in 0..300 {
            gate.record(false, true);
        }
        // Relaxed: a single-threaded test.
        assert_eq!(gate.word.load(Ordering::Relaxed), MISSES);
    }
}
