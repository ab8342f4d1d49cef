//! hos: a guest thread executor for hosts that run Horizon OS (Switch) game code natively.
//!
//! Guest threads are OS threads; every wait they make is a future blocked on through one
//! policy-driven `block_on`; one reactor thread owns every deadline; six virtual cores rank
//! guest threads by Horizon priority. See the README for the whole picture.

#![warn(missing_docs, unreachable_pub)]
// Denied, not forbidden: svc/arbiter/lent.rs lends a blocked waiter's mutex word to the
// arbiter (the module says why safe Rust cannot, and what keeps it sound).
#![deny(unsafe_code)]

mod guests;
pub mod machine;
pub mod os;
mod result;
mod shutdown;
pub mod svc;
mod sync;
pub mod thread;

pub use guests::{Doing, GuestState};
pub use hos_runtime::{
    BuildError, Calibration, Config, ConfigError, CpuTime, Lateness, PrecisePath, ShortSleep,
    SleepPath, Stats, ThreadStats, LATE_BUCKETS,
};
pub use result::ResultCode;
pub use shutdown::ShutdownReport;

use std::sync::Arc;
use std::time::Duration;

/// Builds a [`Runtime`]: every switch has a method; `.env()` reads the HOS_* switches.
pub type RuntimeBuilder = hos_runtime::Builder<Runtime>;

/// A running hos runtime: a cheap `Clone` handle.
#[derive(Clone, Debug)]
pub struct Runtime {
    inner: hos_runtime::internal::Runtime,
    /// Its guest threads: the live ones, and the OS threads not yet joined.
    guests: Arc<guests::Guests>,
}

/// What the builder makes a `Runtime` from (an internal runtime handle).
#[doc(hidden)]
impl From<hos_runtime::internal::Runtime> for Runtime {
    fn from(inner: hos_runtime::internal::Runtime) -> Self {
        Runtime {
            inner,
            guests: Default::default(),
        }
    }
}

impl Runtime {
    /// A builder with every switch at its default.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }

    /// A guest thread builder bound to this runtime.
    pub fn thread(&self) -> thread::Builder {
        thread::Builder::new(self.clone())
    }

    /// Sleeps the calling host thread, always precisely.
    pub fn host_sleep(&self, d: Duration) {
        hos_runtime::internal::host_sleep(&self.inner, d);
    }

    /// The configuration it was built with (the environment applied, every value checked).
    pub fn config(&self) -> &Config {
        self.inner.config()
    }

    /// Counters, calibration, and per-thread CPU.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// The runtime-level handle behind this one.
    pub(crate) fn inner(&self) -> &hos_runtime::internal::Runtime {
        &self.inner
    }

    /// The registry of its guest threads.
    pub(crate) fn guests(&self) -> &guests::Guests {
        &self.guests
    }

    /// What every live guest thread is doing now (running guest code, or waiting on what and
    /// for how long): what a watchdog names when a run stalls.
    pub fn guest_states(&self) -> Vec<GuestState> {
        self.guests.states()
    }

    /// Whether it has shut down.
    pub fn is_shut_down(&self) -> bool {
        self.inner.is_shut_down()
    }
}
