//! The deterministic mode's random numbers: a seeded xoshiro256** generator, seeded through
//! SplitMix64, with one independent stream per purpose.
//!
//! Invariant: a (seed, [`Stream`]) pair gives the same sequence on every platform, build and
//! Rust version: the generators are written out here in wrapping 64-bit arithmetic (no
//! dependency, no platform word size, no float), and their known answers are pinned by the
//! tests. Streams never share state, so drawing more from one (say, a chaos decision) never
//! shifts another (the schedule), as Hermit keeps its streams apart.

/// One step of SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): advances `state` and returns a well-mixed value. It seeds
/// [`Rng`], and the runtime's chaos points draw from it directly.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a stream's draws decide; each is forked from the run's seed on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Who runs next: the `Random` and `Pct` selectors.
    Schedule,
    /// The `Chaos` selector's priorities, starvation intervals and quanta.
    Chaos,
    /// Randomness the guest sees (its csrng, `spl` random), apart from the schedule.
    Entropy,
}

impl Stream {
    /// The constant a stream's seed is mixed with: distinct odd values, so no two streams of
    /// one seed start from the same SplitMix64 state.
    fn salt(self) -> u64 {
        match self {
            Stream::Schedule => 0x5CED_0000_0000_0001,
            Stream::Chaos => 0xC4A0_5000_0000_0003,
            Stream::Entropy => 0xE472_0B10_0000_0005,
        }
    }
}

/// xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number generators",
/// 2018): 256 bits of state, period 2^256 - 1, fast and well distributed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    /// Never all zero: seeded from four consecutive SplitMix64 outputs, which are distinct.
    s: [u64; 4],
}

impl Rng {
    /// The generator of `seed`'s `stream`.
    pub fn new(seed: u64, stream: Stream) -> Rng {
        let mut x = seed ^ stream.salt();
        Rng {
            s: [
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
            ],
        }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// A uniform value in `0..n`, without modulo bias (Lemire's multiply and reject); 0 when
    /// `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // 2^64 mod n: products whose low half falls under it would over-weight some results.
        let reject = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= reject {
                return (m >> 64) as u64;
            }
        }
    }

    /// True with probability `num / den` (never when `den` is 0).
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        den != 0 && self.below(den) < num
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Rng;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_chance_of_none_never_comes_and_a_chance_of_all_always_does() {
        let mut r = Rng::new(3, Stream::Chaos);
        for _ in 0..1_000 {
            assert!(!r.chance(0, 2), "0 in 2");
            assert!(r.chance(2, 2), "2 in 2");
            assert!(!r.chance(1, 0), "a den of 0");
        }
    }

    #[test]
    fn splitmix64_gives_its_published_answers() {
        // The reference sequence from seed 0 (Vigna's splitmix64.c).
        let mut x = 0;
        assert_eq!(splitmix64(&mut x), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut x), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(splitmix64(&mut x), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn xoshiro256_starstar_gives_its_published_answer() {
        // From state {1, 2, 3, 4}: rotl(2 * 5, 7) * 9 = 11520, then 0 (Vigna's xoshiro256starstar.c).
        let mut r = Rng { s: [1, 2, 3, 4] };
        assert_eq!(r.next_u64(), 11520);
        assert_eq!(r.next_u64(), 0);
    }

    #[test]
    fn a_seed_and_stream_draw_a_pinned_sequence() {
        // Pinned: a change here changes every recorded seed's meaning.
        let mut r = Rng::new(42, Stream::Schedule);
        let got: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(got, PINNED);
    }

    const PINNED: [u64; 3] = [
        811_461_969_318_418_207,
        15_492_617_828_591_529_922,
        5_682_683_148_507_311_478,
    ];

    #[test]
    fn streams_of_one_seed_differ() {
        let draw = |s| {
            let mut r = Rng::new(7, s);
            (0..4).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_ne!(draw(Stream::Schedule), draw(Stream::Chaos));
        assert_ne!(draw(Stream::Schedule), draw(Stream::Entropy));
        assert_ne!(draw(Stream::Chaos), draw(Stream::Entropy));
        assert_eq!(draw(Stream::Chaos), draw(Stream::Chaos));
    }

    #[test]
    fn below_covers_its_range_evenly() {
        let mut r = Rng::new(1, Stream::Schedule);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[r.below(6) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
        assert_eq!(r.below(0), 0);
        assert!(!r.chance(1, 0));
        assert!(r.chance(1, 1));
    }

    proptest! {
        #[test]
        fn below_stays_below(seed in any::<u64>(), n in 1u64..) {
            let mut r = Rng::new(seed, Stream::Entropy);
            for _ in 0..16 {
                prop_assert!(r.below(n) < n);
            }
        }
    }
}
