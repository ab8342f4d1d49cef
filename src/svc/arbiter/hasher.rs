//! The arbiter's hash for its maps: keys are guest addresses and thread handles, which an
//! attacker does not choose against hos (the guest is the host's own game), so SipHash's
//! resistance to chosen keys buys nothing and costs a few tens of nanoseconds a lookup on
//! the hand-off path. One multiply-rotate round a word, as rustc's FxHash.
//!
//! Invariant: equal keys hash equal (the hash only reads the key's words, in order).

use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hasher builder for small integer keys.
pub(crate) type WordHash = BuildHasherDefault<WordHasher>;

/// Folds each written word into the state with a rotate, an xor and a multiply.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WordHasher(u64);

/// FxHash's odd multiplier: spreads the low bits of the word into the high ones.
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn write_isize(&mut self, n: isize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash(v: impl Hash) -> u64 {
        WordHash::default().hash_one(v)
    }

    #[test]
    fn equal_keys_hash_equal_and_neighbours_spread() {
        assert_eq!(hash((1u8, 0x1000usize)), hash((1u8, 0x1000usize)));
        let mut seen: Vec<u64> = (0..1024usize)
            .map(|i| hash(0x7000_0000 + 4 * i) >> 58)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert!(
            seen.len() > 32,
            "adjacent words fill few top-bit buckets: {}",
            seen.len()
        );
    }
}
