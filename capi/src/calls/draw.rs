//! The fuzzer's choices: a byte string read front to back, from libFuzzer or from the stable
//! fuzzer's seeded generator.
//!
//! Invariant: reading never fails; past the end every read is 0 and [`Draw::is_empty`] says
//! so, so any byte string is a valid case (the shortest one is a case that does nothing).

/// Choices, read from a byte string.
#[derive(Debug)]
pub struct Draw {
    bytes: Vec<u8>,
    at: usize,
}

impl Draw {
    /// Choices read from `bytes`.
    pub fn new(bytes: &[u8]) -> Draw {
        Draw {
            bytes: bytes.to_vec(),
            at: 0,
        }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// The next byte, 0 past the end.
    pub fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// One of `0..n` (`n` at most 256).
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!((1..=256).contains(&n), "below({n})");
        usize::from(self.byte()) % n
    }

    /// The next 8 bytes as a `u64`, little-endian.
    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, i| v | u64::from(self.byte()) << (8 * i))
    }

    /// The next bytes cut into `n` parts of equal length (the last one takes the rest).
    pub fn split(mut self, n: usize) -> Vec<Draw> {
        let rest = self.bytes.split_off(self.at.min(self.bytes.len()));
        let each = rest.len() / n.max(1);
        (0..n)
            .map(|i| {
                let end = if i + 1 == n {
                    rest.len()
                } else {
                    (i + 1) * each
                };
                Draw::new(&rest[i * each..end])
            })
            .collect()
    }
}

/// The stable fuzzer's generator: splitmix64, a seed per case.
#[derive(Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_zero_and_splits_share_the_rest() {
        let mut d = Draw::new(&[1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(d.byte(), 1);
        let parts = d.split(2);
        assert_eq!(parts[0].bytes, [2, 3, 4]);
        assert_eq!(parts[1].bytes, [5, 6, 7]);
        let mut empty = Draw::new(&[9]);
        assert_eq!(empty.u64(), 9);
        assert!(empty.is_empty());
        assert_eq!(empty.below(7), 0);
    }
}
