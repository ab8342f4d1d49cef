//! hos: a guest thread executor for hosts that run Horizon OS (Switch) game code natively.
//!
//! Guest threads are OS threads; every wait they make is a future blocked on through one
//! policy-driven `block_on`; one reactor thread owns every deadline; six virtual cores rank
//! guest threads by Horizon priority. See the README for the whole picture.

#![warn(missing_docs, unreachable_pub)]
// Denied, not forbidden: svc/arbiter/lent.rs lends a blocked waiter's mutex word to the
// arbiter (the module says why safe Rust cannot, and what keeps it sound).
#![deny(unsafe_code)]

pub mod machine;
pub mod os;
mod result;
pub mod svc;
mod sync;
pub mod thread;

pub use hos_runtime::{
    Calibration, Config, ConfigError, CpuTime, Lateness, PrecisePath, ShortSleep, SleepPath, Stats,
    ThreadStats, LATE_BUCKETS,
};
pub use result::ResultCode;

use crate::sync::lock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Builds a [`Runtime`]: every switch has a method; `.env()` reads the HOS_* switches.
pub type RuntimeBuilder = hos_runtime::Builder<Runtime>;

/// A running hos runtime: a cheap `Clone` handle.
#[derive(Clone, Debug)]
pub struct Runtime {
    inner: hos_runtime::internal::Runtime,
    /// The OS threads of guest threads not yet joined. # Invariant: each slot is shared with
    /// one `JoinHandle`; whoever takes the handle out of it joins, so nobody joins twice.
    joins: Arc<Mutex<Vec<Arc<thread::JoinSlot>>>>,
}

/// What the builder makes a `Runtime` from (an internal runtime handle).
#[doc(hidden)]
impl From<hos_runtime::internal::Runtime> for Runtime {
    fn from(inner: hos_runtime::internal::Runtime) -> Self {
        Runtime {
            inner,
            joins: Default::default(),
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

    /// Keeps a guest thread's join slot for [`Runtime::shutdown`], forgetting joined ones.
    pub(crate) fn track(&self, slot: Arc<thread::JoinSlot>) {
        let mut joins = lock(&*self.joins);
        joins.retain(|s| lock(&**s).is_some());
        joins.push(slot);
    }

    /// Shuts down: every waiter returns Cancelled, the reactor stops, guest threads are
    /// joined (those their handles have not joined; never the calling thread itself).
    ///
    /// # Blocking
    /// Until every guest thread has returned: a thread that never reaches a wait or a
    /// checkpoint is waited for.
    pub fn shutdown(&self) {
        self.inner.shutdown();
        let slots = std::mem::take(&mut *lock(&*self.joins));
        let me = std::thread::current().id();
        for slot in slots {
            let os = lock(&*slot).take();
            match os {
                Some(os) if os.thread().id() == me => {}
                Some(os) => {
                    let _ = os.join();
                }
                None => {}
            }
        }
    }
}
