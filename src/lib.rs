//! hos: a guest thread executor for hosts that run Horizon OS (Switch) game code natively.
//!
//! Guest threads are OS threads; every wait they make is a future blocked on through one
//! policy-driven `block_on`; one reactor thread owns every deadline; six virtual cores rank
//! guest threads by Horizon priority. See the README for the whole picture.
//!
//! A host builds a [`Runtime`] ([`RuntimeBuilder`]), spawns guest threads on it
//! ([`Runtime::thread`]), shares nn::os objects ([`os`]) between them and its own threads (each
//! object is a handle: a clone names the same object), serves svcs ([`svc`]), and shuts down:
//!
//! ```
//! use hos::os::{ClearMode, Event};
//! use std::time::Duration;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Calibration::default() pins the calibration: no boot measurement.
//!     let rt = hos::Runtime::builder()
//!         .calibration(hos::Calibration::default())
//!         .build()?;
//!     let go = Event::new(ClearMode::Auto);
//!     let worker = rt.thread().name("Worker0").priority(44).spawn({
//!         let go = go.clone(); // the same event, for the guest thread
//!         move || go.wait_timeout(Duration::from_secs(10)) // TimedOut or Cancelled, else Ok
//!     })?;
//!     go.signal(); // from the host thread
//!     assert_eq!(worker.join().expect("the guest thread did not panic"), Ok(()));
//!     rt.shutdown(); // ends every wait left, joins the guest threads
//!     Ok(())
//! }
//! ```

// Denied, not forbidden: svc/arbiter/lent.rs lends a blocked waiter's mutex word to the
// arbiter (the module says why safe Rust cannot, and what keeps it sound).
#![deny(unsafe_code)]

mod builder;
mod guests;
pub mod machine;
pub mod os;
mod result;
mod shutdown;
pub mod svc;
mod sync;
pub mod thread;

pub use builder::RuntimeBuilder;
pub use guests::{Doing, GuestState};
/// hos's warnings and errors, routed as the runtime routes its own: for the C API, not hosts.
#[doc(hidden)]
pub use hos_runtime::{error, internal::report, warn};
/// hos's C API's and its examples' share of the runtime's helpers, not for hosts: the one
/// poison-free way to take a std lock or wait on a std condition variable (hos-runtime's sync
/// module says why poison tells nothing), and the one `Duration` to nanoseconds conversion.
#[doc(hidden)]
pub mod internal {
    pub use hos_runtime::internal::{lock, nanos, read, wait, write};
}
pub use hos_runtime::{
    Breakdown, BuildError, Calibration, Config, ConfigError, CpuTime, Lateness, Node, PrecisePath,
    ShortSleep, SleepPath, State, Stats, ThreadStats, WaitTree, LATE_BUCKETS,
};
/// The README's Rust examples, compiled (and the runnable ones run) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

pub use result::ResultCode;
pub use shutdown::ShutdownReport;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A running hos runtime: a cheap `Clone` handle.
///
/// Every running guest thread holds a handle too. When the last handle is dropped without
/// [`Runtime::shutdown`], the reactor thread stops and is joined; call `shutdown` to end the
/// waits of host threads and join the guest threads first.
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

    /// Counters, calibration, and per-thread CPU; `Display` prints a summary that fits a
    /// screen. After a shutdown, the threads and the reactor's CPU as it began (see [`Stats`]).
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// Writes the trace to `path` as Chrome trace-event JSON (drag it onto ui.perfetto.dev):
    /// the full trace so far if the runtime collects one (HOS_TRACE, `.trace(path)`), else
    /// the flight recorder's last events of each thread.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn write_trace(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        self.inner.write_trace(path.as_ref())
    }

    /// Marks a host frame: call it at each present. The trace shows the marks, and each pair
    /// of them is a frame for [`Runtime::critical_path`].
    pub fn frame_mark(&self) {
        self.inner.frame_mark();
    }

    /// Every guest thread now: what it does or waits on and since when, under the thread
    /// that holds what it waits for; `Display` prints the tree and names any deadlock.
    ///
    /// ```
    /// let rt = hos::Runtime::builder()
    ///     .calibration(hos::Calibration::default())
    ///     .flight(true) // the recorder: what each thread waits on
    ///     .build()?;
    /// // A 10 s sleep, which the shutdown below ends.
    /// let t = rt.thread().name("Sleeper").spawn(|| hos::svc::sleep_thread(10_000_000_000))?;
    /// let asleep = |tree: &hos::WaitTree| {
    ///     let node = tree.node(t.thread().id());
    ///     node.is_some_and(|n| matches!(n.state, hos::State::Sleeping { .. }))
    /// };
    /// let start = std::time::Instant::now();
    /// let mut tree = rt.wait_tree();
    /// while !asleep(&tree) && start.elapsed() < std::time::Duration::from_secs(10) {
    ///     std::thread::sleep(std::time::Duration::from_millis(1));
    ///     tree = rt.wait_tree();
    /// }
    /// assert!(tree.to_string().contains("Sleeper (priority 44, mask 0x3f) sleeps 10000000 us"));
    /// rt.shutdown();
    /// t.join().ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_tree(&self) -> WaitTree {
        self.inner.wait_tree()
    }

    /// Dumps the flight recorder now (with `reason` and the wait tree in the file) into
    /// HOS_FLIGHT_DIR; returns the file's path, or `None` when the recorder is off, past the
    /// runtime's 8 dumps, or on a write error.
    pub fn dump_flight(&self, reason: &str) -> Option<PathBuf> {
        self.inner.dump_flight(reason)
    }

    /// Each frame's critical path (between two frame marks): where the frame's time went,
    /// walking back over the wake edges. Empty unless the runtime collects a full trace.
    pub fn critical_path(&self) -> Vec<Breakdown> {
        self.inner.critical_path()
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

    /// Pauses every guest thread of the runtime but the calling one (svcSetThreadActivity on
    /// each: `svc::set_thread_activity`), for a debugger's stop or a save state, and waits
    /// until all have stopped, at most `timeout` (`None`: no limit). Returns how many are
    /// paused (those paused already included). Once it returns `Ok`, no guest code runs until
    /// [`Runtime::resume_guests`]. Threads spawned later are not paused.
    ///
    /// # Errors
    /// TimedOut if some thread did not stop in time: it stays asked, stops at its next
    /// checkpoint, and `resume_guests` releases it; Cancelled once the runtime shuts down
    /// (which releases every paused thread).
    ///
    /// # Blocking
    /// Until every thread has stopped; a guest caller holds no virtual core meanwhile.
    pub fn pause_guests(&self, timeout: Option<Duration>) -> Result<usize, ResultCode> {
        svc::pause_guests(self, timeout)
    }

    /// Resumes every paused guest thread of the runtime (by [`Runtime::pause_guests`] or
    /// `svc::set_thread_activity`); returns how many it resumed.
    pub fn resume_guests(&self) -> usize {
        svc::resume_guests(self)
    }

    /// Whether it has shut down.
    pub fn is_shut_down(&self) -> bool {
        self.inner.is_shut_down()
    }
}
