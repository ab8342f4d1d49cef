//! svcSetThreadActivity from C, and the runtime's pause of every guest thread:
//! `hos_svc_set_thread_activity`, `hos_pause_guests`, `hos_resume_guests`.
//!
//! Invariant: each call is hos's call of the same name, after the boundary's checks.

use crate::boundary::{self, entry, Out};
use crate::object::hos_handle;
use crate::result::hos_result;
use crate::runtime::hos_runtime;
use hos_rs::svc::{self, Handle, ThreadActivity};

/// `hos_svc_set_thread_activity`'s activity: resume a paused thread.
pub const HOS_THREAD_ACTIVITY_RUNNABLE: u32 = 0;
/// `hos_svc_set_thread_activity`'s activity: pause a thread at its next pause point.
pub const HOS_THREAD_ACTIVITY_PAUSED: u32 = 1;

/// svcSetThreadActivity: pauses the guest thread `thread` at its next pause point (a
/// checkpoint, the end of a wait or sleep) and returns once it has stopped there or is in a
/// wait, from which it goes on only when resumed; or resumes a paused one. A paused thread
/// holds no virtual core. A thread that runs without checkpoints keeps a pause waiting.
///
/// Errors: InvalidEnumValue for an activity that is neither `HOS_THREAD_ACTIVITY_*`;
/// InvalidHandle; Busy for the calling thread itself; InvalidState for an ended thread, a
/// pause of a paused one or a resume of one not paused; Cancelled if the runtime shuts down
/// before the thread stopped (every paused thread is released then).
#[no_mangle]
pub extern "C" fn hos_svc_set_thread_activity(thread: hos_handle, activity: u32) -> hos_result {
    entry(|| {
        let activity = ThreadActivity::try_from(activity)?;
        Ok(svc::set_thread_activity(Handle(thread), activity)?)
    })
}

/// Pauses every guest thread of `rt` but the calling one (a debugger's stop, a save state)
/// and waits until all have stopped, at most `timeout_ns` (negative: no limit); writes how
/// many are paused to `*paused`. Once it succeeds no guest code runs
/// until `hos_resume_guests`.
///
/// Errors: InvalidPointer for a NULL `rt`, or a NULL or misaligned `paused`; TimedOut if some thread
/// did not stop in time (it stops at its next checkpoint; `hos_resume_guests` releases it);
/// Cancelled once the runtime shuts down.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `paused` is NULL or points to a
/// writable `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_pause_guests(
    rt: *const hos_runtime,
    timeout_ns: i64,
    paused: *mut u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, out) = unsafe { (boundary::arg(rt, "rt")?, Out::new(paused, "paused")?) };
        let n = rt.rt.pause_guests(boundary::timeout(timeout_ns))?;
        out.write(u32::try_from(n).unwrap_or(u32::MAX));
        Ok(())
    })
}

/// Resumes every paused guest thread of `rt`; writes how many to `*resumed`.
///
/// Errors: InvalidPointer for a NULL `rt`, or a NULL or misaligned `resumed`.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `resumed` is NULL or points to a
/// writable `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_resume_guests(
    rt: *const hos_runtime,
    resumed: *mut u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, out) = unsafe { (boundary::arg(rt, "rt")?, Out::new(resumed, "resumed")?) };
        let n = rt.rt.resume_guests();
        out.write(u32::try_from(n).unwrap_or(u32::MAX));
        Ok(())
    })
}
