//! svcExitThread (0x0A): the calling guest thread ends now.
//!
//! Invariant: an exit unwinds the calling thread's guest body with a [`ThreadExit`] payload,
//! and only a body that [`run_body`] runs is unwound: a spawned guest thread's, whose spawner
//! catches the unwind and ends the thread as if the body had returned (everything it held is
//! given back as at any end: `thread.rs`), its join seeing `Err` with the payload. Any other
//! thread (a host thread, an attached one: its frames are the host's) gets InvalidState and
//! goes on.

use crate::entry::entry;
use crate::result::ResultCode;
use std::any::Any;
use std::cell::Cell;
use std::convert::Infallible;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

std::thread_local! {
    /// Whether the calling thread runs a guest body that an exit may unwind.
    static IN_BODY: Cell<bool> = const { Cell::new(false) };
}

/// What a guest thread's body unwinds with at [`exit_thread`]: the `Err` payload its
/// `JoinHandle::join` returns (`err.is::<ThreadExit>()`). Not a panic: no panic hook runs and
/// nothing is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadExit;

/// Runs a spawned guest thread's body `f`, catching its panic or its exit.
pub(crate) fn run_body<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    IN_BODY.with(|b| b.set(true));
    let out = catch_unwind(AssertUnwindSafe(f));
    IN_BODY.with(|b| b.set(false));
    out
}

/// Whether a caught unwind is an exit (not a panic).
pub(crate) fn is_exit(payload: &(dyn Any + Send)) -> bool {
    payload.is::<ThreadExit>()
}

/// svcExitThread (0x0A): ends the calling guest thread now. Its body unwinds (destructors run;
/// mutex levels it holds are released as abandoned, as at any end of a guest thread), the
/// thread ends, and waits on its handle and its join complete; the join returns `Err` with a
/// [`ThreadExit`] payload.
///
/// # Errors
/// Returns only on a thread that is no spawned guest thread (a host thread, or one attached
/// as a guest: unwinding would leave through the host's frames): InvalidState.
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// use hos::svc;
/// let t = rt.thread().spawn(|| {
///     let _ = svc::exit_thread();
///     unreachable!("svcExitThread does not return on a guest thread");
/// })?;
/// assert!(t.join().is_err_and(|e| e.is::<svc::ThreadExit>()));
/// assert_eq!(svc::exit_thread().err(), Some(hos::ResultCode::INVALID_STATE));
/// # rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn exit_thread() -> Result<Infallible, ResultCode> {
    entry();
    if !IN_BODY.with(Cell::get) {
        return Err(ResultCode::INVALID_STATE);
    }
    resume_unwind(Box::new(ThreadExit))
}
