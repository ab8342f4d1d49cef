//! Shutdown, bounded or not: every wait ends Cancelled, every sleep ends, the reactor stops,
//! and the guest threads are waited for: all of them, or those that leave before a timeout.
//!
//! Invariant: when a shutdown returns, every guest thread other than the caller has left (its
//! code returned and it gave back what it held) or is named in the report with what it was
//! doing, and detached: nothing of it is joinable through the runtime any more. A detached
//! thread keeps its own handle on the runtime's state, so dropping every `Runtime` the host
//! holds is safe; every wait it starts returns Cancelled at once, every sleep returns at once
//! and it can spawn no guest thread (InvalidState). Concurrent shutdowns each wait on their
//! own; the calling thread is never waited for (a guest thread may shut its runtime down).
//! The report and every [`Runtime::stats`] after it carry the threads and the reactor's CPU as
//! the first shutdown began, just before anything was torn down.

use crate::guests::GuestState;
use crate::runtime::Runtime;
use crate::sync::lock;
use hos_runtime::internal::with_guest;
use hos_runtime::Stats;
use std::fmt;
use std::time::{Duration, Instant};

/// What a shutdown did: how long it took, how many guest threads it joined, the ones that
/// had not left by its timeout, and the runtime's final figures.
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default());
/// # let rt = rt.flight(false).build()?; // no dump from the straggler made here
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// let stop = Arc::new(AtomicBool::new(false));
/// let s = stop.clone();
/// // Guest code that never waits: a shutdown cannot end it.
/// rt.thread().name("Spinner").spawn(move || while !s.load(Ordering::Relaxed) {})?;
/// let ev = hos::os::Event::new(hos::os::ClearMode::Auto);
/// let waiter = rt.thread().name("Waiter").spawn(move || ev.wait())?;
/// let report = rt.shutdown_timeout(std::time::Duration::from_millis(20));
/// assert_eq!(report.stragglers.len(), 1);
/// assert_eq!(report.stragglers[0].name, "Spinner");
/// assert_eq!(report.stragglers[0].doing, hos::Doing::GuestCode);
/// assert_eq!(report.stats.threads.len(), 2, "both ran when the shutdown began");
/// assert_eq!(waiter.join().ok(), Some(Err(hos::ResultCode::CANCELLED)));
/// stop.store(true, Ordering::Relaxed); // the detached Spinner ends by itself
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// From the call to its return.
    pub elapsed: Duration,
    /// Guest threads whose OS thread this shutdown joined.
    pub joined: usize,
    /// Guest threads that had not left when it returned, with what each was doing. They are
    /// detached (see [`Runtime::shutdown_timeout`]).
    pub stragglers: Vec<GuestState>,
    /// The final snapshot, read when the shutdown returned: the counters then, and the guest
    /// threads and the reactor's CPU as the first shutdown began, before it tore them down
    /// (what [`Runtime::stats`] returns from then on). The report's alternate `Display`
    /// (`{:#}`) adds its [`Stats::summary`].
    pub stats: Stats,
}

impl ShutdownReport {
    /// Whether every guest thread left in time.
    pub fn is_clean(&self) -> bool {
        self.stragglers.is_empty()
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shutdown in {:.1?}: {} guest threads joined",
            self.elapsed, self.joined
        )?;
        if self.stragglers.is_empty() {
            f.write_str(", none left behind")?;
        } else {
            write!(
                f,
                ", {} did not leave and are detached:",
                self.stragglers.len()
            )?;
            for s in &self.stragglers {
                write!(f, "\n  {s}")?;
            }
        }
        if f.alternate() {
            write!(f, "\n{}", self.stats.summary().trim_end())?;
        }
        Ok(())
    }
}

impl Runtime {
    /// Shuts down: every wait returns Cancelled, every sleep ends, the reactor stops, and
    /// every guest thread is waited for (its OS thread joined), except the calling thread.
    /// Idempotent; a second call waits as the first does.
    ///
    /// # Blocking
    /// Until every guest thread has returned: a thread that never reaches a wait or a
    /// checkpoint is waited for. [`Runtime::shutdown_timeout`] bounds it.
    pub fn shutdown(&self) {
        let _ = self.stop(None);
    }

    /// Shuts down as [`Runtime::shutdown`], waiting for guest threads at most `timeout`; those
    /// still running then are detached and named in the report with what each was doing, and
    /// the flight recorder is dumped (HOS_FLIGHT_DIR) with the report as its reason.
    /// A detached thread runs on until its code returns, but every wait it starts returns
    /// Cancelled at once, its sleeps return at once and it can start no guest thread; the
    /// runtime is safe to drop.
    ///
    /// # Blocking
    /// At most `timeout` for the guest threads, then the joins of those that left (each has
    /// returned already: the OS only ends it).
    pub fn shutdown_timeout(&self, timeout: Duration) -> ShutdownReport {
        // A timeout past what `Instant` holds is no limit.
        self.stop(Instant::now().checked_add(timeout))
    }

    /// Cancels every wait, stops the reactor, then waits for the guest threads until
    /// `deadline` (`None`: all of them); joins those that left, detaches the rest.
    fn stop(&self, deadline: Option<Instant>) -> ShutdownReport {
        let start = Instant::now();
        self.inner().shutdown();
        let me = with_guest(|rt, t| rt.same(self.inner()).then(|| t.id())).flatten();
        let out = self.guests().wait_empty(me, deadline);
        let mut joined = 0;
        for (id, slot) in out.joins {
            let Some(os) = lock(&*slot).take() else {
                continue;
            };
            if out.stragglers.iter().any(|s| s.id == id) {
                drop(os); // detached
            } else {
                let _ = os.join();
                joined += 1;
            }
        }
        let report = ShutdownReport {
            elapsed: start.elapsed(),
            joined,
            stragglers: out.stragglers,
            stats: self.inner().stats(),
        };
        if !report.is_clean() {
            hos_runtime::warn!("{report}");
            self.inner()
                .dump_flight(&format!("shutdown timed out: {report}"));
        }
        self.inner().end_trace();
        report
    }
}
