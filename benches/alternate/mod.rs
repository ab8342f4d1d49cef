//! Arms measured side by side, the way BENCHMARKS.md's ratios are: rounds that run every arm
//! once, each round starting one arm later, and for each arm the median over the rounds of its
//! mean over the first arm's in the same round. On a machine shared with other work the load
//! moves between criterion's measurement of one arm and the next, less between arms a round
//! apart. Shared by the benches of the root crate and of `capi/` (`#[path]`).

use std::time::Instant;

/// `names.len()` arms alternated over `rounds` rounds: `mean_ns(i)` runs arm `i` once and
/// answers its mean in nanoseconds. Prints each arm's median mean and, for every arm after
/// the first, the median of its ratios to the first.
pub(crate) fn alternate<const N: usize>(
    case: &str,
    names: [&str; N],
    rounds: usize,
    mut mean_ns: impl FnMut(usize) -> f64,
) {
    let mut means: Vec<[f64; N]> = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut round = [0.0; N];
        for i in (0..N).map(|k| (k + r) % N) {
            round[i] = mean_ns(i);
        }
        means.push(round);
    }
    let arm = |i: usize| median(means.iter().map(|m| m[i]).collect());
    let ratio = |i: usize| median(means.iter().map(|m| m[i] / m[0]).collect());
    let each: Vec<String> = (0..N)
        .map(|i| format!("{} {:.2} us", names[i], arm(i) / 1e3))
        .collect();
    let ratios: Vec<String> = (1..N)
        .map(|i| format!("{} {:.3}x", names[i], ratio(i)))
        .collect();
    eprintln!(
        "{case}: {}; median of {rounds} rounds' ratios to {}: {}",
        each.join(", "),
        names[0],
        ratios.join(", ")
    );
}

/// The mean of `trips` calls of `trip` in nanoseconds, after 500 to warm up.
pub(crate) fn mean_trip_ns(trips: u32, mut trip: impl FnMut()) -> f64 {
    (0..500).for_each(|_| trip());
    let start = Instant::now();
    (0..trips).for_each(|_| trip());
    start.elapsed().as_nanos() as f64 / f64::from(trips)
}

/// The median of `v` (the upper one of an even count).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Whether the command line's filters (criterion's: the arguments that are no option)
/// select `id`: no filter, or one that `id` contains.
pub(crate) fn filtered_in(id: &str) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str()))
}

/// A runtime's wait counters as the alternated ping-pongs print them: spins caught, missed
/// and skipped, parks, virtual-core waits.
pub(crate) type Waits = [u64; 5];

/// The [`Waits`] of a stats snapshot: `hos::Stats`, or the C ABI's `hos_stats` (a macro:
/// the benches name the crate differently, and the C struct is another type with the same
/// fields).
macro_rules! waits_of {
    ($stats:expr) => {{
        let s = $stats;
        [
            s.spins_caught,
            s.spins_missed,
            s.spins_skipped,
            s.parks,
            s.vcore_waits,
        ]
    }};
}
pub(crate) use waits_of;

/// Prints what each round trip of `arm` in `case` cost in waits, between two readings.
pub(crate) fn print_waits(case: &str, arm: &str, before: Waits, after: Waits, trips: u64) {
    let per = |i: usize| (after[i] - before[i]) as f64 / trips as f64;
    eprintln!(
        "{case} {arm}: a round trip {:.3} spins caught, {:.3} missed, {:.3} skipped, {:.3} \
         parks, {:.3} virtual-core waits",
        per(0),
        per(1),
        per(2),
        per(3),
        per(4)
    );
}
