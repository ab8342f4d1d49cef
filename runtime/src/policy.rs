//! Every runtime choice in one place: short-sleep path, poller cap, spin length, spin gate.
//!
//! Invariant: decisions are made once, at build, from a validated `Config` and the processor
//! count; the hot path only reads them. A poller slot is an RAII guard, so the count of taken
//! slots always comes back to zero, unwinding included.

use crate::config::{Config, ShortSleep};
use crate::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Who waits: the frame's critical chain, another guest thread, or a host thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A serial guest thread (named by HOS_SERIAL parts).
    Serial,
    /// Any other guest thread.
    Other,
    /// A host thread: frame limiter, audio, timer events. Always precise, never capped.
    Host,
}

/// How one short sleep (under 1 ms) is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShortPath {
    /// Yield in a loop until the deadline (subject to the poller cap).
    Yield,
    /// The sleeper's own OS timer, no spin.
    Timer,
    /// The precise class: calibrated own timer or reactor wake, then a short spin
    /// (subject to the poller cap for non-serial guest threads).
    Precise,
}

/// The decisions of one runtime.
#[derive(Debug)]
pub struct Policy {
    processors: Option<usize>,
    guest: ShortPath,
    host: ShortPath,
    cap: usize,
    pollers: AtomicUsize,
    spin_serial_ns: u64,
    spin_other_ns: u64,
}

/// Nanoseconds in a microsecond, for spin lengths.
const US: u64 = 1_000;

impl Policy {
    /// Decides everything from `config` and the process's logical processor count.
    pub fn new(config: &Config, processors: Option<usize>) -> Self {
        let few = processors.is_none_or(|n| n <= 6);
        let (guest, host) = match (config.short_sleep_timer, config.short_sleep) {
            (Some(true), _) | (None, ShortSleep::Timer) => (ShortPath::Timer, ShortPath::Precise),
            (Some(false), _) | (None, ShortSleep::Yield) => (ShortPath::Yield, ShortPath::Yield),
            (None, ShortSleep::Reactor) => (ShortPath::Precise, ShortPath::Precise),
            (None, ShortSleep::Auto) => match processors {
                Some(n) if n <= 6 => (ShortPath::Timer, ShortPath::Yield),
                _ => (ShortPath::Yield, ShortPath::Yield),
            },
        };
        let cap = if config.short_sleep_timer.is_some() {
            0
        } else {
            config
                .short_sleep_pollers
                .unwrap_or_else(|| processors.map_or(0, |n| n / 4))
        };
        let spin_serial_ns = config.spin_us.saturating_mul(US);
        let spin_other_ns = match config.spin_other_us {
            Some(us) => us.min(config.spin_us).saturating_mul(US),
            None if few => spin_serial_ns,
            None => 5u64.min(config.spin_us).saturating_mul(US),
        };
        Policy {
            processors,
            guest,
            host,
            cap,
            pollers: AtomicUsize::new(0),
            spin_serial_ns,
            spin_other_ns,
        }
    }

    /// The processor count the decisions were made with.
    pub fn processors(&self) -> Option<usize> {
        self.processors
    }

    /// The path of a short sleep by `role`, before the poller cap.
    pub fn short_path(&self, role: Role) -> ShortPath {
        match role {
            Role::Serial | Role::Other => self.guest,
            Role::Host => self.host,
        }
    }

    /// The poller cap (0: none).
    pub fn poller_cap(&self) -> usize {
        self.cap
    }

    /// A slot to yield-poll or to take the precise path; `None` when `role` is capped out.
    /// Serial threads and host sleeps are never capped.
    pub fn poller_slot(&self, role: Role) -> Option<PollerSlot<'_>> {
        if role != Role::Other || self.cap == 0 {
            return Some(PollerSlot { policy: None });
        }
        // Relaxed: the count is a budget, not a lock; it orders no other memory.
        let mut n = self.pollers.load(Ordering::Relaxed);
        loop {
            if n >= self.cap {
                return None;
            }
            match self
                .pollers
                .compare_exchange_weak(n, n + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(PollerSlot { policy: Some(self) }),
                Err(now) => n = now,
            }
        }
    }

    /// Slots taken now (for stats and tests).
    pub fn pollers(&self) -> usize {
        self.pollers.load(Ordering::Relaxed)
    }

    /// The spin before a wait parks, in nanoseconds, for `role`.
    pub fn spin_ns(&self, role: Role) -> u64 {
        match role {
            Role::Other => self.spin_other_ns,
            Role::Serial | Role::Host => self.spin_serial_ns,
        }
    }

    /// Whether a spin of `ns` is full length (only those count as misses).
    pub fn is_full_spin(&self, ns: u64) -> bool {
        ns >= self.spin_serial_ns
    }
}

/// A taken poller slot; dropping it gives the slot back.
#[derive(Debug)]
pub struct PollerSlot<'a> {
    policy: Option<&'a Policy>,
}

impl Drop for PollerSlot<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.policy {
            p.pollers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A sync object's spin miss counter: after 4 full-length spins in a row that missed, the
/// spin is skipped 31 times in 32.
#[derive(Debug, Default)]
pub struct SpinGate {
    /// Low byte: misses in a row (saturating at 255). High bits: waits since the gate closed.
    word: AtomicU32,
}

const MISSES_TO_CLOSE: u32 = 4;
const OPEN_ONE_IN: u32 = 32;

impl SpinGate {
    /// A gate that lets spins through.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        SpinGate {
            word: AtomicU32::new(0),
        }
    }

    /// A gate that lets spins through (not `const` under loom: loom's atomics are not).
    #[cfg(loom)]
    pub fn new() -> Self {
        SpinGate {
            word: AtomicU32::new(0),
        }
    }

    /// Whether the next wait should spin.
    pub fn should_spin(&self) -> bool {
        // Relaxed: a heuristic; a stale read only moves one spin.
        let w = self.word.load(Ordering::Relaxed);
        if w & 0xff < MISSES_TO_CLOSE {
            return true;
        }
        let n = self.word.fetch_add(1 << 8, Ordering::Relaxed) >> 8;
        n % OPEN_ONE_IN == OPEN_ONE_IN - 1
    }

    /// Records a spin's outcome. A catch reopens the gate; a miss counts only if `full`.
    pub fn record(&self, caught: bool, full: bool) {
        if caught {
            if self.word.load(Ordering::Relaxed) != 0 {
                self.word.store(0, Ordering::Relaxed);
            }
        } else if full {
            let w = self.word.load(Ordering::Relaxed);
            if w & 0xff < 0xff {
                self.word.store(w + 1, Ordering::Relaxed);
            }
        }
    }
}
