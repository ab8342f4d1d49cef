//! [`Runtime`], the host's handle on one running runtime: the vocabulary every part of hos that
//! needs its runtime shares (guest threads, the builder, shutdown, the svcs that pause guests).
//!
//! Invariant: a `Runtime` is a clone of one internal runtime and one registry of guest
//! threads, so every clone names the same runtime. The methods that need what sits above this
//! file are written beside what they use: [`Runtime::builder`] in `builder.rs`,
//! [`Runtime::thread`] in `thread.rs`, [`Runtime::pause_guests`] and
//! [`Runtime::resume_guests`] in `svc/activity.rs`, [`Runtime::shutdown`] in `shutdown.rs`.

use crate::guests::{GuestState, Guests};
use hos_runtime::det::feed::PostError;
use hos_runtime::det::post::Post;
use hos_runtime::det::softlock::Softlock;
use hos_runtime::det::verifier::Divergence;
use hos_runtime::{
    Breakdown, BuildError, Config, DetStats, DetVerified, Stats, VerifyError, WaitTree,
};
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
    guests: Arc<Guests>,
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

    /// The deterministic mode's figures (HOS_DET, docs/determinism.md): decisions taken, the
    /// rolling hash of their witnesses (the same seed and program give the same hash) and the
    /// virtual time; `None` when the mode is off.
    pub fn det_stats(&self) -> Option<DetStats> {
        self.inner.det_stats()
    }

    /// The deterministic mode's last softlock (docs/determinism.md section 7): a deadlock
    /// found at virtual quiescence (no guest thread can run, no timer and no post pending),
    /// or a token held past HOS_DET_WATCHDOG_MS of wall time without a checkpoint; with the
    /// wait-for graph (each thread, what it waits on, who holds that), the decision index,
    /// the virtual time, the selector and each thread's last turns. `Display` prints it as
    /// the log does. `None` if none was reported or the mode is off.
    pub fn det_softlock(&self) -> Option<Softlock> {
        self.inner.det_softlock()
    }

    /// Posts a host event from `source`, applied at the next decision of the deterministic
    /// mode (docs/determinism.md section 5); a guest thread takes it with
    /// [`Runtime::next_post`]. Its sequence number among `source`'s posts.
    ///
    /// # Errors
    /// The mode is off or stopped, or a recording is replayed (it supplies every post).
    pub fn post(&self, source: u32, payload: impl Into<Vec<u8>>) -> Result<u64, PostError> {
        self.inner.post(source, payload)
    }

    /// Posts a host event from `source` due at virtual time `vt_ns` (a vsync, an audio
    /// period, a GPU fence at submit plus a modelled latency).
    ///
    /// # Errors
    /// As [`Runtime::post`].
    pub fn post_at(
        &self,
        source: u32,
        vt_ns: u64,
        payload: impl Into<Vec<u8>>,
    ) -> Result<u64, PostError> {
        self.inner.post_at(source, vt_ns, payload)
    }

    /// The calling guest thread takes the oldest post applied, waiting at most `timeout` of
    /// virtual time (`None`: no limit). A host's event pump is a guest thread that loops on it.
    ///
    /// # Errors
    /// The mode is off or stopped, the caller is no guest thread of this runtime, or the
    /// timeout passed.
    ///
    /// # Blocking
    /// Until a decision applies a post; other guest threads run meanwhile.
    pub fn next_post(&self, timeout: Option<Duration>) -> Result<Post, PostError> {
        self.inner.next_post(timeout)
    }

    /// The first divergence of the deterministic run from the recording it replays
    /// (HOS_DET=replay:PATH) or the run it is verified against: the decision, its virtual
    /// time and both witnesses. A replay is reported, never stopped.
    pub fn det_divergence(&self) -> Option<Divergence> {
        self.inner.det_divergence()
    }

    /// `verify`: runs `program` twice, each time in a fresh runtime from `build` (in the
    /// deterministic mode), shutting it down after, and compares the runs witness by witness.
    /// `program` starts the guest threads and returns when they are done.
    ///
    /// # Errors
    /// A runtime did not build, or is not in the mode.
    ///
    /// # Blocking
    /// For the two runs.
    pub fn det_verify(
        build: impl Fn() -> Result<Runtime, BuildError>,
        program: impl Fn(&Runtime),
    ) -> Result<DetVerified, VerifyError> {
        hos_runtime::internal::det_verify(build, program, |rt| &rt.inner, Runtime::shutdown)
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
    pub(crate) fn guests(&self) -> &Guests {
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
