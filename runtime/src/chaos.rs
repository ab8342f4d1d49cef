//! Chaos: seeded yields and short delays at the runtime's decision points (each phase of a
//! wait, each wake, each virtual-core decision, the reactor's fires, shutdown), so that a
//! test or a soak meets many more schedules than the machine would give it.
//!
//! Invariant: chaos only delays the calling thread (a yield, a spin or a sleep of at most
//! [`MAX_DELAY_NS`]); it never changes what the runtime decides, so any failure it shakes out
//! is a failure the runtime can have without it. Off (the default), a point costs one relaxed
//! load. It is process-wide: every runtime in the process is shaken while it is on.
//!
//! Each thread draws from its own generator, seeded from the chaos seed and the order in which
//! threads first reach a point; a seed gives the same draws to the same threads. The OS still
//! schedules them, so a seed replays a failure's disturbances, not its exact interleaving:
//! a failing seed is re-run to reproduce it, usually within a few runs.

// Std's atomics even under loom: chaos is off in the models, and these are no synchronization
// points a model checks.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The longest delay one point injects.
pub const MAX_DELAY_NS: u64 = 50_000;

static ON: AtomicBool = AtomicBool::new(false);
static SEED: AtomicU64 = AtomicU64::new(0);
/// Bumped by each [`enable`], so that threads re-seed.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Threads seeded under the current generation.
static THREADS: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// (generation seeded under, generator state).
    static RNG: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((u64::MAX, 0)) };
}

/// Turns chaos on with `seed`, for every thread of the process.
pub fn enable(seed: u64) {
    // Relaxed: a thread that reads the new generation late only draws from the old seed a
    // little longer; nothing is ordered by it.
    SEED.store(seed, Ordering::Relaxed);
    THREADS.store(0, Ordering::Relaxed);
    GENERATION.fetch_add(1, Ordering::Relaxed);
    ON.store(true, Ordering::Relaxed);
}

/// Turns chaos off.
pub fn disable() {
    ON.store(false, Ordering::Relaxed);
}

/// The seed in force, if chaos is on.
pub fn seed() -> Option<u64> {
    ON.load(Ordering::Relaxed)
        .then(|| SEED.load(Ordering::Relaxed))
}

/// A decision point: with chaos on, maybe yields, spins or sleeps a little.
#[inline]
pub fn point() {
    // Relaxed: a switch; a point that misses a change by a moment does no harm.
    if cfg!(not(loom)) && ON.load(Ordering::Relaxed) {
        disturb();
    }
}

#[cold]
fn disturb() {
    let r = draw();
    let delay = (r >> 8) % MAX_DELAY_NS;
    match r % 16 {
        0..=3 => crate::sys::yield_now(),
        4 => crate::sys::sleep_until(crate::sys::now().saturating_add(delay)),
        5 | 6 => {
            let end = crate::sys::now().saturating_add(delay / 16);
            while crate::sys::now() < end {
                std::hint::spin_loop();
            }
        }
        _ => {}
    }
}

/// The calling thread's next draw, from its generator: seeded at its first draw after an
/// [`enable`], from the seed and the thread's [`ORDINAL_STRIDE`]-spread ordinal.
pub(crate) fn draw() -> u64 {
    RNG.with(|c| {
        let (gen, mut state) = c.get();
        let now = GENERATION.load(Ordering::Relaxed);
        if gen != now {
            let ordinal = THREADS.fetch_add(1, Ordering::Relaxed);
            state = SEED.load(Ordering::Relaxed) ^ ordinal.wrapping_mul(ORDINAL_STRIDE);
        }
        let r = crate::det::rng::splitmix64(&mut state);
        c.set((now, state));
        r
    })
}

/// Spreads threads' ordinals over the seed's bits, so that neighbours' generators differ.
pub(crate) const ORDINAL_STRIDE: u64 = 0xA24B_AED4_963E_E407;
