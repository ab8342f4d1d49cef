//! Chaos (`chaos.rs`): on between `enable` and `disable`, where each point draws from the
//! calling thread's generator, seeded from the seed and the order threads first draw in; off,
//! a point draws nothing. Chaos is process-wide, so the test runs alone in a child process.

use super::common::alone;
use crate::chaos::{self, draw, ORDINAL_STRIDE};
use crate::det::rng::splitmix64;

/// The first `n` draws of a generator seeded with `seed`.
fn draws(seed: u64, n: usize) -> Vec<u64> {
    let mut state = seed;
    (0..n).map(|_| splitmix64(&mut state)).collect()
}

#[test]
fn a_seed_gives_each_thread_its_draws_and_only_points_under_chaos_draw() {
    if !alone("tests::chaos::a_seed_gives_each_thread_its_draws_and_only_points_under_chaos_draw") {
        return;
    }
    // Bits shared with the stride, so that a seed or-ed with an ordinal is another seed.
    let seed = u64::MAX - 5;
    assert_eq!(chaos::seed(), None, "off by default");
    chaos::enable(seed);
    assert_eq!(chaos::seed(), Some(seed));
    let first = draws(seed, 3);
    // This thread draws first: ordinal 0. A point under chaos draws once.
    chaos::point();
    assert_eq!(draw(), first[1], "the point drew the first");
    chaos::disable();
    assert_eq!(chaos::seed(), None);
    chaos::point();
    assert_eq!(draw(), first[2], "a point without chaos draws nothing");
    // A second thread is the second to draw: ordinal 1.
    let other = std::thread::spawn(draw).join().expect("the other thread");
    assert_eq!(other, draws(seed ^ ORDINAL_STRIDE, 1)[0]);
    // A new enable re-seeds every thread; ordinals count again from 0.
    chaos::enable(seed);
    assert_eq!(draw(), first[0], "re-seeded, the first again");
    chaos::disable();
}
