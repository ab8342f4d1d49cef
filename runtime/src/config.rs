//! The typed configuration and the builder that makes a runtime from it.
//!
//! Invariant: a `Config` that `Builder::build` accepted is valid; nothing downstream re-checks
//! or clamps it, except the one documented clamp (`spin_other_us <= spin_us`), applied in policy.

use crate::calibration::Calibration;
use crate::runtime::Runtime;
use std::fmt;
use std::marker::PhantomData;

/// How guest sleeps under 1 ms are served (SPEC.md section 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShortSleep {
    /// The sleeper yields in a loop until its deadline.
    Yield,
    /// The sleeper sleeps on its own OS timer.
    Timer,
    /// Precise deadlines through the calibrated reactor, relaxed past the poller cap.
    Reactor,
    /// The reference host's count rule: timer with 6 processors or fewer, else yield.
    Auto,
}

/// Every switch of the runtime, typed. `Default` is the documented default of each.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// HOS_SHORT_SLEEP.
    pub short_sleep: ShortSleep,
    /// HOS_SHORT_SLEEP_TIMER: `None` follows `short_sleep`; `Some(true)` every short sleep on
    /// the timer; `Some(false)` every short sleep yields.
    pub short_sleep_timer: Option<bool>,
    /// HOS_SHORT_SLEEP_POLLERS: `None` is a quarter of the logical processors; `Some(0)` no cap.
    pub short_sleep_pollers: Option<usize>,
    /// HOS_SPIN_US: the spin of serial threads (and of everyone with 6 processors or fewer).
    pub spin_us: u64,
    /// HOS_SPIN_OTHER_US: the spin of other threads; `None` is the default (5 us).
    pub spin_other_us: Option<u64>,
    /// HOS_SERIAL: name parts that make a thread serial (case-sensitive substrings).
    pub serial: Vec<String>,
    /// HOS_CORES: virtual cores the game sees, 1..=8.
    pub cores: usize,
    /// HOS_VCORES: `false` turns the virtual-core semaphore off.
    pub vcores: bool,
    /// HOS_VCORE_SLICE_US: time slice before an equal waiter may take a turn.
    pub vcore_slice_us: u64,
    /// HOS_VCORE_ESCAPE_MS: a waiter past this takes a core anyway.
    pub vcore_escape_ms: u64,
    /// HOS_VCORE_FIRST: name parts of threads that rank first.
    pub vcore_first: Vec<String>,
    /// HOS_SLEEP_LOG: trace every guest sleep.
    pub sleep_log: bool,
    /// HOS_TLS_TRACE: trace each thread's name, priority, ideal core and mask when it starts.
    pub tls_trace: bool,
    /// Pinned calibration for reproducible runs; `None` measures at build.
    pub calibration: Option<Calibration>,
    /// Pinned logical processor count (`Some(None)`: unknown); `None` reads the affinity mask.
    pub logical_processors: Option<Option<usize>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            short_sleep: ShortSleep::Reactor,
            short_sleep_timer: None,
            short_sleep_pollers: None,
            spin_us: 20,
            spin_other_us: None,
            serial: vec!["MainThread".into(), "Presentation".into()],
            cores: 6,
            vcores: true,
            vcore_slice_us: 2000,
            vcore_escape_ms: 2000,
            vcore_first: Vec::new(),
            sleep_log: false,
            tls_trace: false,
            calibration: None,
            logical_processors: None,
        }
    }
}

/// A switch or builder value that is not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The switch (`HOS_SPIN_US`) or builder method (`spin_us`) that holds the value.
    pub switch: &'static str,
    /// The value as given.
    pub value: String,
    /// What is accepted.
    pub accepted: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not accepted: expected {}",
            self.switch, self.value, self.accepted
        )
    }
}

impl std::error::Error for ConfigError {}

/// Builds a runtime. `R` is what `build` returns: the runtime itself, or a host-facing
/// wrapper made from it (the `hos` crate's `Runtime`).
pub struct Builder<R = Runtime> {
    config: Config,
    out: PhantomData<fn() -> R>,
}

impl<R: From<Runtime>> Default for Builder<R> {
    fn default() -> Self {
        Builder {
            config: Config::default(),
            out: PhantomData,
        }
    }
}

impl<R: From<Runtime>> Builder<R> {
    /// A builder with every switch at its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the whole configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Short-sleep mode.
    pub fn short_sleep(mut self, mode: ShortSleep) -> Self {
        self.config.short_sleep = mode;
        self
    }

    /// Pins the calibration instead of measuring it at build.
    pub fn calibration(mut self, calibration: Calibration) -> Self {
        self.config.calibration = Some(calibration);
        self
    }

    /// Number of virtual cores.
    pub fn vcores(mut self, n: usize) -> Self {
        self.config.cores = n;
        self
    }

    /// Validates the configuration and starts the runtime (its reactor thread).
    pub fn build(self) -> Result<R, ConfigError> {
        Ok(R::from(Runtime::start(self.config)))
    }
}
