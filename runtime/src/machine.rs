//! What the machine's timers and wake-ups cost: the figures the calibration measures at build
//! (or the host pins), as a plain value.
//!
//! Invariant: a value, nothing more: the runtime steers by it (where a precise sleeper wakes
//! before its deadline, which precise path it takes) but never depends on it for correctness;
//! measuring and tracking it is the calibration's business.

/// Which precise path a precise sleeper takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PrecisePath {
    /// Its own slack-1 OS timer to the deadline minus the timer's lateness, then a spin.
    #[default]
    OwnTimer,
    /// The reactor spins for it and wakes it early by the wake latency; it spins the rest.
    Reactor,
}

/// The measured (or pinned) figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calibration {
    /// How late a slack-1 OS timer fires (a high quantile, so most wakes come early).
    pub timer_lateness_ns: u64,
    /// How long a parked thread takes to run after its unpark (a high quantile).
    pub wake_latency_ns: u64,
    /// The precise path that costs the process less, for sleeps longer than the timer's
    /// lateness (a shorter one always goes through the reactor: on its own timer it would be
    /// all spin).
    pub precise: PrecisePath,
    /// Sleeper CPU a precise sleep on its own timer, as measured (0 when pinned).
    pub own_cpu_ns: u64,
    /// Sleeper CPU a precise sleep through the reactor, as measured (0 when pinned).
    pub reactor_cpu_ns: u64,
    /// The reactor's CPU a precise sleep through it (its timer wake, its spin to the wake,
    /// the unpark), as measured (0 when pinned).
    pub waker_cpu_ns: u64,
}
