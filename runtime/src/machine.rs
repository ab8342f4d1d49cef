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

/// Upper bound of a calibration's timer and wake figures: past it the timer is not "high
/// resolution" any more. Measured figures and the estimates tracked from them are capped
/// here; a pinned calibration past it is refused at build.
pub(crate) const MAX_ESTIMATE_NS: u64 = 2_000_000;

/// The measured (or pinned) figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calibration {
    /// How late a slack-1 OS timer fires (its 90th percentile: the reactor, whose spin costs
    /// the sleepers nothing, wakes this early before a precise deadline; where the OS layer
    /// serves the reactor's wait by another timer, its own estimate starts here). From 1.5 ms
    /// the timer is coarse and timer-mode sleeps ride its ticks.
    pub timer_lateness_ns: u64,
    /// How early a sleeper arms its own slack-1 timer before its deadline: the 75th percentile
    /// of the same lateness, tracked apart (most of a sleeper's spin is the gap between the
    /// margin and the lateness it meets, so a lower quantile than the reactor's halves it
    /// where the tail is wide; the median sleep is still on time). 0 in a pinned calibration
    /// means `timer_lateness_ns`.
    pub timer_margin_ns: u64,
    /// How early an unseen poller's precise sleep (a job worker's, from its eighth quiet sleep in a
    /// row on: `policy::UNSEEN_POLLER_SLEEPS`) arms its own timer: the median of the same lateness,
    /// tracked apart (half of its sleeps wake before the deadline and spin the rest, half wake
    /// after it, late by what the timer was late beyond its median). 0 in a pinned calibration
    /// means `timer_margin_ns`.
    pub poller_margin_ns: u64,
    /// How long a parked thread takes to run after its unpark (a high quantile).
    pub wake_latency_ns: u64,
    /// The precise path of serial threads' and host threads' sleeps longer than the own
    /// timer's margin, the one that cost the process less at boot (a job worker's short sleep
    /// takes its own timer whenever that can arm, so the reactor never spins for pollers; a
    /// sleep too short to arm always goes through the reactor).
    pub precise: PrecisePath,
    /// Sleeper CPU a precise sleep on its own timer, as measured (0 when pinned).
    pub own_cpu_ns: u64,
    /// Sleeper CPU a precise sleep through the reactor, as measured (0 when pinned).
    pub reactor_cpu_ns: u64,
    /// The reactor's CPU a precise sleep through it (its timer wake, its spin to the wake,
    /// the unpark), as measured (0 when pinned).
    pub waker_cpu_ns: u64,
}
