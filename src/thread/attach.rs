//! Attaching: the calling OS thread (a JIT's, a recompiler's thread factory's) becomes a guest
//! thread of a runtime until it detaches, with a name, a priority, a core mask, the virtual
//! cores and the wait policy of its role, as a spawned guest thread has.
//!
//! Invariant: while its [`Attached`] guard lives, an attached thread is a guest thread like a
//! spawned one (the module's invariant in `thread.rs`): it is in its runtime's live set (a
//! shutdown waits for it, or names it), it took a virtual core when it attached, and its
//! waits give it back and take one again. Dropping the guard ends it as a spawned thread ends:
//! its core given back, its guardless mutex levels released as abandoned, its exit event
//! signalled, its context and the live set left, and last its handle closed unless a
//! [`HandleShare`] keeps it open. The OS thread stays the host's: nobody joins it.

use super::{Builder, Entered, HandleShare, Thread};
use crate::result::ResultCode;
use std::marker::PhantomData;

impl Builder {
    /// Makes the calling OS thread a guest thread of the builder's runtime, with its name,
    /// priority and cores, until the returned guard drops: it takes a virtual core now, and
    /// its waits, sleeps and checkpoints are a guest thread's.
    ///
    /// # Errors
    /// As [`Builder::spawn`] for the priority and cores; InvalidState if the calling thread is
    /// a guest thread already or the runtime has shut down.
    ///
    /// # Blocking
    /// Until it has a virtual core, as any guest thread that starts.
    ///
    /// ```
    /// let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
    /// std::thread::spawn(move || {
    ///     let me = rt.thread().name("JitThread0").priority(40).attach()?;
    ///     assert_eq!(hos::thread::current().map(|t| t.priority()), Some(40));
    ///     assert_eq!(me.thread().kick_flag().load(std::sync::atomic::Ordering::Relaxed), 0);
    ///     drop(me);
    ///     assert!(hos::thread::current().is_none());
    ///     rt.shutdown();
    ///     Ok::<(), hos::ResultCode>(())
    /// })
    /// .join()
    /// .unwrap()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn attach(self) -> Result<Attached, ResultCode> {
        if super::current().is_some() {
            return Err(ResultCode::INVALID_STATE);
        }
        let (thread, share, trace) = self.make()?;
        let rt = thread.0.rt.clone();
        rt.guests()
            .admit_here(rt.inner(), &thread.0.record)
            .inspect_err(|_| rt.inner().end_thread(&thread.0.record))?;
        rt.inner().start_thread(&thread.0.record);
        let entered = thread.enter_here(trace);
        // Given back by `Attached::drop`.
        rt.inner().acquire_core(&thread.0.record);
        Ok(Attached {
            thread,
            entered: Some(entered),
            share,
            _on_this_thread: PhantomData,
        })
    }
}

/// An attached guest thread: the calling OS thread, until this guard drops (on that thread:
/// it is neither `Send` nor `Sync`).
#[derive(Debug)]
#[must_use = "the thread detaches when the guard drops"]
pub struct Attached {
    thread: Thread,
    /// `None` once dropped.
    entered: Option<Entered>,
    /// Its share in the thread's handle: a field, dropped after `drop` ran.
    share: HandleShare,
    _on_this_thread: PhantomData<*const ()>,
}

impl Attached {
    /// The guest thread it is.
    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    /// A share in the thread's real handle, to keep it open after the thread detached.
    pub fn handle_share(&self) -> HandleShare {
        self.share.clone()
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let t = &self.thread.0;
        t.rt.inner().release_core(&t.record);
        crate::os::mutex::abandon_held();
        t.record.mark_ended();
        t.exit.signal();
        drop(self.entered.take());
        t.rt.guests().leave(&t.record);
        // The deterministic mode's token goes on.
        t.rt.inner().end_thread(&t.record);
    }
}
