//! svcSetThreadActivity (0x32): pausing and resuming a guest thread (nn::os SuspendThread,
//! ResumeThread), and every guest thread of a runtime at once (a debugger's stop, a save
//! state: [`crate::Runtime::pause_guests`]).
//!
//! Invariant: a pause returns once its thread has stopped: parked at a pause point, or in a
//! runtime wait that it leaves only through one (the runtime's `pause.rs` says why none is
//! missed), or ended; from then on none of its guest code runs until it is resumed. A paused
//! thread holds no virtual core and shows as waiting on `"pause"` in
//! [`crate::Runtime::guest_states`]. A shutdown releases every paused thread (its waits then
//! end Cancelled) and ends a pause's wait for the stop with Cancelled. In the deterministic
//! mode (HOS_DET) a paused thread is no candidate for the run's token until resumed; a
//! holder gives the token up at its next checkpoint or yield (docs/determinism.md section 0).

use super::handle::Handle;
use super::handles::thread_of;
use crate::entry::entry;
use crate::result::ResultCode;
use crate::runtime::Runtime;
use hos_runtime::internal::{deadline_after, with_guest, Activity, ThreadRecord};
use std::sync::Arc;
use std::time::Duration;

/// svcSetThreadActivity's activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ThreadActivity {
    /// Resume a paused thread.
    Runnable = 0,
    /// Pause a thread at its next pause point.
    Paused = 1,
}

impl TryFrom<u32> for ThreadActivity {
    type Error = ResultCode;

    /// The activity a raw svc argument names; InvalidEnumValue for any other value.
    ///
    /// ```
    /// use hos::svc::ThreadActivity;
    /// assert_eq!(ThreadActivity::try_from(1), Ok(ThreadActivity::Paused));
    /// assert_eq!(ThreadActivity::try_from(2), Err(hos::ResultCode::INVALID_ENUM_VALUE));
    /// ```
    fn try_from(v: u32) -> Result<Self, ResultCode> {
        match v {
            0 => Ok(ThreadActivity::Runnable),
            1 => Ok(ThreadActivity::Paused),
            _ => Err(ResultCode::INVALID_ENUM_VALUE),
        }
    }
}

/// svcSetThreadActivity (0x32): pauses the guest thread `h` names at its next pause point (a
/// checkpoint, the end of a wait or sleep, a virtual core taken) and returns once it has
/// stopped there or is in a wait (module invariant); or resumes a paused one. A thread that
/// runs guest code without checkpoints keeps this waiting, as the console's svc waits while
/// its thread runs.
///
/// # Errors
/// InvalidHandle for a handle that names no thread; Busy for the calling thread itself;
/// InvalidState for a thread that has ended, a pause of a paused thread, or a resume of one
/// that is not paused; Cancelled if the runtime shuts down before the thread stopped (it is
/// released then).
///
/// # Blocking
/// A pause, until the thread has stopped; a guest caller holds no virtual core meanwhile.
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// use hos::svc::{self, ThreadActivity};
/// use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
/// use std::sync::Arc;
/// let (count, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
/// let (c, s) = (count.clone(), stop.clone());
/// let t = rt.thread().spawn(move || {
///     while !s.load(Ordering::Relaxed) {
///         c.fetch_add(1, Ordering::Relaxed);
///         svc::checkpoint(); // a loop head of guest code
///     }
/// })?;
/// let h = t.thread().handle();
/// svc::set_thread_activity(h, ThreadActivity::Paused)?;
/// let at = count.load(Ordering::Relaxed);
/// std::thread::sleep(std::time::Duration::from_millis(5));
/// assert_eq!(count.load(Ordering::Relaxed), at, "no guest code runs while it is paused");
/// svc::set_thread_activity(h, ThreadActivity::Runnable)?;
/// stop.store(true, Ordering::Relaxed);
/// t.join().ok();
/// # rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_thread_activity(h: Handle, activity: ThreadActivity) -> Result<(), ResultCode> {
    entry();
    let t = thread_of(h)?;
    if crate::thread::with_current(|me| me.id() == t.id()) == Some(true) {
        return Err(ResultCode::BUSY);
    }
    let (rec, rt) = t.record();
    if rec.activity() == Activity::Ended {
        return Err(ResultCode::INVALID_STATE);
    }
    match activity {
        // A shut-down runtime pauses nothing (its shutdown lifted every pause).
        ThreadActivity::Paused if rt.is_shut_down() => Err(ResultCode::CANCELLED),
        ThreadActivity::Paused if rt.inner().ask_pause(rec) => {
            wait_stopped(rt, std::slice::from_ref(rec), None)
        }
        ThreadActivity::Runnable if rt.inner().lift_pause(rec) => Ok(()),
        _ => Err(ResultCode::INVALID_STATE),
    }
}

/// Waits until every thread of `recs` has stopped for its pause (module invariant), until
/// `deadline`. A guest caller gives its core back meanwhile: the threads may need one to
/// reach their pause points.
fn wait_stopped(
    rt: &Runtime,
    recs: &[Arc<ThreadRecord>],
    deadline: Option<u64>,
) -> Result<(), ResultCode> {
    let held = with_guest(|own, me| own.release_core(me)) == Some(true);
    let stopped = recs.iter().all(|r| rt.inner().wait_paused(r, deadline));
    if held {
        with_guest(|own, me| own.acquire_core(me));
    }
    match (rt.is_shut_down(), stopped) {
        (true, _) => Err(ResultCode::CANCELLED),
        (false, true) => Ok(()),
        (false, false) => Err(ResultCode::TIMED_OUT),
    }
}

impl Runtime {
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
        entry();
        if self.is_shut_down() {
            return Err(ResultCode::CANCELLED);
        }
        let me = with_guest(|_, t| t.id());
        let paused: Vec<_> = self
            .inner()
            .threads()
            .into_iter()
            .filter(|r| Some(r.id()) != me && r.activity() != Activity::Ended)
            .filter(|r| self.inner().ask_pause(r) || self.inner().is_pause_asked(r))
            .collect();
        wait_stopped(self, &paused, timeout.map(deadline_after))?;
        Ok(paused.len())
    }

    /// Resumes every paused guest thread of the runtime (by [`Runtime::pause_guests`] or
    /// `svc::set_thread_activity`); returns how many it resumed.
    pub fn resume_guests(&self) -> usize {
        entry();
        let threads = self.inner().threads();
        threads
            .iter()
            .filter(|r| self.inner().lift_pause(r))
            .count()
    }
}
