//! The Windows timing model: the profiles, their parameters, and the pure functions that draw
//! when a modelled Windows wait wakes (docs/windows.md, "How the simulator is fitted").
//!
//! Invariant: everything here is pure. Given the same model, the same instants and a [`Rng`]
//! in the same state, a function returns the same instant; nothing reads a clock or blocks.
//! A modelled timer sleep ([`Model::sleep_wake`]) never wakes before its deadline, as the
//! Windows backend's re-checking loop never returns early; a modelled timed `WaitOnAddress`
//! ([`Model::wait_wake`]) may, as Windows' may (the contract lets a futex wait return early).
//!
//! # The tick rule
//!
//! Windows wakes timed waits on a periodic clock interrupt: ticks on a grid of period `P`
//! with a phase drawn from the seed. A plain relative wait of `r` armed at `t` fires at the
//! first tick at or after *the last tick at or before `t`, plus `r`*, which can be up to one
//! `P` early (the kernel counts the relative time from the last tick). A high-resolution
//! waitable timer fires at the first tick of its own 0.5 ms grid at or after `t + r`, never
//! early. The woken thread runs a dispatch delay after the tick; under load it may also wait
//! for the processor behind busy threads' quanta.

use std::time::Duration;

/// The default clock tick: 64 Hz.
pub(crate) const TICK_NS: u64 = 15_625_000;
/// `timeBeginPeriod(1)`: 1024 Hz (976.5625 us, rounded to the nanosecond).
pub(crate) const TICK_1024_HZ_NS: u64 = 976_563;
/// `NtSetTimerResolution(5000)`, and the high-resolution timer's own grid.
pub(crate) const TICK_05_MS_NS: u64 = 500_000;
/// A thread quantum under load, and the step of `GetThreadTimes`' accounting.
pub(crate) const QUANTUM_NS: u64 = TICK_NS;
/// The mean dispatch delay from a tick to the woken thread running (an exponential draw).
const DISPATCH_MEAN_NS: u64 = 30_000;
/// The longest dispatch delay drawn (the exponential's tail is cut here).
const DISPATCH_MAX_NS: u64 = 300_000;
/// `SetWaitableTimer`'s unit: due times are whole 100 ns, rounded up.
const DUE_UNIT_NS: u64 = 100;
/// `WaitOnAddress`' unit: timeouts are whole milliseconds, rounded up (as Rust's std does).
const WAIT_UNIT_NS: u64 = 1_000_000;
/// How long the minimized profile keeps a window occluded or visible before it draws again.
pub(crate) const OCCLUSION_EPOCH_NS: u64 = 1_000_000_000;
/// Under load: the weights (per mille) of waiting behind 1, 2 or 3 busy quanta.
const LOAD_QUANTA_PER_MILLE: [u64; 3] = [650, 280, 70];
/// Under load: the chance (per mille) that a `SwitchToThread` gives the processor away.
const YIELD_LOSS_PER_MILLE: u64 = 500;

/// One simulated Windows setting (HOS_WINSIM_PROFILE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The default 15.625 ms tick: a process that asked for no resolution (Windows 10 2004
    /// and later), pre-1803 Windows, Wine; every timed wait is tick-bound.
    Tick,
    /// `timeBeginPeriod(1)`: a 976.5625 us tick.
    Ms1,
    /// `NtSetTimerResolution(5000)`: a 0.5 ms tick, no high-resolution timer.
    Ms05,
    /// The high-resolution waitable timer (0.5 ms grid, never early) for precise sleeps, at
    /// 0.5 ms resolution for the rest; an idle machine.
    Hires,
    /// [`Profile::Hires`] with 16 busy threads: woken threads wait behind quanta, and a
    /// `SwitchToThread` gives the processor away.
    HiresLoaded,
    /// [`Profile::Ms1`] in a Windows 11 window that is minimized or occluded half the time:
    /// each second, drawn from the seed, the tick is 15.625 ms or 976.5625 us.
    Minimized,
}

impl Profile {
    /// Every profile, in the order docs/windows.md lists them.
    pub const ALL: [Profile; 6] = [
        Profile::Tick,
        Profile::Ms1,
        Profile::Ms05,
        Profile::Hires,
        Profile::HiresLoaded,
        Profile::Minimized,
    ];

    /// The profile's switch value.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Tick => "tick",
            Profile::Ms1 => "1ms",
            Profile::Ms05 => "0.5ms",
            Profile::Hires => "hires",
            Profile::HiresLoaded => "hires-loaded",
            Profile::Minimized => "minimized",
        }
    }

    /// The profile named `raw` (trimmed, any case).
    pub fn parse(raw: &str) -> Option<Profile> {
        let v = raw.trim();
        Profile::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(v))
    }

    /// The plain tick (of `Sleep`, `WaitOnAddress` and plain timers) while visible.
    fn tick_ns(self) -> u64 {
        match self {
            Profile::Tick => TICK_NS,
            Profile::Ms1 | Profile::Minimized => TICK_1024_HZ_NS,
            Profile::Ms05 | Profile::Hires | Profile::HiresLoaded => TICK_05_MS_NS,
        }
    }

    /// Whether precise sleeps get a high-resolution waitable timer.
    fn high_res(self) -> bool {
        matches!(self, Profile::Hires | Profile::HiresLoaded)
    }

    /// Whether woken threads wait behind busy threads' quanta.
    fn loaded(self) -> bool {
        self == Profile::HiresLoaded
    }
}

/// How thread and process CPU time is read (HOS_WINSIM_CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClock {
    /// `QueryThreadCycleTime` for the total (exact), `GetThreadTimes` for the split: the
    /// kernel part in whole quanta, the user part the rest.
    Cycles,
    /// `GetThreadTimes` alone: user and kernel each in whole 15.625 ms quanta.
    Times,
}

impl CpuClock {
    /// The switch value.
    pub fn name(self) -> &'static str {
        match self {
            CpuClock::Cycles => "cycles",
            CpuClock::Times => "times",
        }
    }

    /// The clock named `raw` (trimmed, any case).
    pub fn parse(raw: &str) -> Option<CpuClock> {
        let v = raw.trim();
        [CpuClock::Cycles, CpuClock::Times]
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(v))
    }
}

/// A small seeded generator (SplitMix64): the same seed draws the same numbers.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for stream `stream` of seed `seed` (each thread draws its own stream).
    pub fn new(seed: u64, stream: u64) -> Rng {
        Rng(mix(seed ^ mix(stream.wrapping_add(0x5851_f42d_4c95_7f2d))))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// A number in `0.0..1.0`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Whether a `per_mille` chance came up.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.next_u64() % 1000 < per_mille
    }
}

/// SplitMix64's finaliser: a bijection that spreads every input bit.
fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A profile with its seed: the tick grid's phase and the occluded seconds follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    /// The setting simulated.
    pub profile: Profile,
    /// How CPU time is read.
    pub cpu: CpuClock,
    /// The seed of every draw.
    pub seed: u64,
    /// Where the tick grids lie: ticks of period `P` fall on `phase % P + k * P`.
    phase: u64,
}

impl Model {
    /// The model of `profile` under `seed`.
    pub fn new(profile: Profile, cpu: CpuClock, seed: u64) -> Model {
        Model {
            profile,
            cpu,
            seed,
            phase: mix(seed ^ 0x7469_636b),
        }
    }

    /// The plain tick at instant `t`: the minimized profile's is the default tick in its
    /// occluded seconds.
    pub fn tick_at(&self, t: u64) -> u64 {
        if self.profile == Profile::Minimized && self.occluded(t) {
            TICK_NS
        } else {
            self.profile.tick_ns()
        }
    }

    /// Whether the minimized profile's window is occluded at `t` (half the seconds, drawn
    /// from the seed).
    pub fn occluded(&self, t: u64) -> bool {
        mix(self.seed ^ mix(t / OCCLUSION_EPOCH_NS)) & 1 == 1
    }

    /// The last tick of period `p` at or before `t`.
    fn last_tick(&self, t: u64, p: u64) -> u64 {
        let off = (t % p + p - self.phase % p) % p;
        t - off.min(t)
    }

    /// The first tick of period `p` at or after `t`.
    fn next_tick(&self, t: u64, p: u64) -> u64 {
        let off = (t % p + p - self.phase % p) % p;
        if off == 0 {
            t
        } else {
            t.saturating_add(p - off)
        }
    }

    /// When a plain relative wait of `r` armed at `t` fires (the tick rule: up to a tick
    /// early).
    pub fn plain_fire(&self, t: u64, r: u64) -> u64 {
        let p = self.tick_at(t);
        self.next_tick(self.last_tick(t, p).saturating_add(r), p)
    }

    /// When a high-resolution timer of `r` armed at `t` fires: never before `t + r`.
    pub fn high_res_fire(&self, t: u64, r: u64) -> u64 {
        self.next_tick(t.saturating_add(r), TICK_05_MS_NS)
    }

    /// How long a thread the OS made ready runs after it: the dispatch delay, and under load
    /// the wait behind busy quanta.
    pub fn ready_delay(&self, rng: &mut Rng) -> u64 {
        let exp = -(DISPATCH_MEAN_NS as f64) * (1.0 - rng.unit()).ln();
        let dispatch = (exp as u64).min(DISPATCH_MAX_NS);
        dispatch
            + if self.profile.loaded() {
                behind_quanta(rng)
            } else {
                0
            }
    }

    /// When `sleep_until(deadline)` called at `now` returns: a timer armed relative (whole
    /// 100 ns, rounded up) and re-armed while the clock is short of the deadline. A thread
    /// whose timer slack is `high_res` (1 us or less) gets the high-resolution timer where
    /// the profile has one.
    pub fn sleep_wake(&self, now: u64, deadline: u64, high_res: bool, rng: &mut Rng) -> u64 {
        let high_res = high_res && self.profile.high_res();
        let mut t = now;
        while t < deadline {
            let r = (deadline - t).div_ceil(DUE_UNIT_NS) * DUE_UNIT_NS;
            let fire = if high_res {
                self.high_res_fire(t, r)
            } else {
                self.plain_fire(t, r)
            };
            // A relative wait of r > 0 fires after the last tick plus r, so after `t`.
            debug_assert!(fire > t, "fire {fire} <= armed {t}");
            t = fire.saturating_add(self.ready_delay(rng));
        }
        t
    }

    /// When a `WaitOnAddress` with a timeout to `deadline`, called at `now` and not woken,
    /// returns: one wait of whole milliseconds, rounded up, on the plain tick (so up to a tick
    /// early); at once where the deadline has passed.
    pub fn wait_wake(&self, now: u64, deadline: u64, rng: &mut Rng) -> u64 {
        if deadline <= now {
            return now;
        }
        let ms = (deadline - now).div_ceil(WAIT_UNIT_NS) * WAIT_UNIT_NS;
        self.plain_fire(now, ms)
            .saturating_add(self.ready_delay(rng))
    }

    /// How long a `SwitchToThread` keeps the caller off the processor: nothing idle; under
    /// load, half the time, the rest of a busy thread's quanta.
    pub fn yield_delay(&self, rng: &mut Rng) -> u64 {
        if self.profile.loaded() && rng.chance(YIELD_LOSS_PER_MILLE) {
            behind_quanta(rng)
        } else {
            0
        }
    }

    /// CPU time as Windows reports it, from the exact `user` and `kernel` times.
    pub fn cpu_time(&self, user: Duration, kernel: Duration) -> (Duration, Duration) {
        let quanta = |d: Duration| {
            let ns = crate::time::nanos(d);
            Duration::from_nanos(ns - ns % QUANTUM_NS)
        };
        match self.cpu {
            CpuClock::Cycles => {
                let k = quanta(kernel);
                ((user + kernel).saturating_sub(k), k)
            }
            CpuClock::Times => (quanta(user), quanta(kernel)),
        }
    }
}

/// The wait behind busy threads: 1, 2 or 3 quanta (by [`LOAD_QUANTA_PER_MILLE`]), less a
/// uniform share of the first (the running thread is part-way through its own).
fn behind_quanta(rng: &mut Rng) -> u64 {
    let roll = rng.next_u64() % 1000;
    let mut acc = 0;
    let mut k = LOAD_QUANTA_PER_MILLE.len() as u64;
    for (i, w) in LOAD_QUANTA_PER_MILLE.iter().enumerate() {
        acc += w;
        if roll < acc {
            k = i as u64 + 1;
            break;
        }
    }
    let used = (rng.unit() * QUANTUM_NS as f64) as u64;
    k * QUANTUM_NS - used
}
