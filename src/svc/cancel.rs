//! svcCancelSynchronization (0x19): ends a guest thread's svcWaitSynchronization with
//! Cancelled, or, if it is not in one, makes its next one end so (the sticky cancel that
//! nn::os MultiWait and libnx's user-mode events wake their waiters with).
//!
//! Invariant: a thread's cancel state changes under its own lock only. A cancel either finds
//! the thread registered in a wait (the wait ends with Cancelled, consuming nothing) or sets
//! the sticky flag; a wait registers only after it checked the flag under that lock. A wait
//! that completes some other way while a cancel reached it turns the cancel back into the
//! sticky flag, so a cancel is never lost. Only svcWaitSynchronization sees it: arbiter
//! waits and sleeps neither end nor consume it, as on the console.

use super::handle::Handle;
use super::handles::thread_of;
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::{lock, Mutex};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// One guest thread's cancel state.
#[derive(Debug, Default)]
pub(crate) struct CancelState(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    /// A cancel came while the thread was in no wait: its next wait ends at once.
    sticky: bool,
    /// The waker of the wait the thread is in (registered), if any.
    waiting: Option<Waker>,
    /// A cancel reached the registered wait.
    fired: bool,
}

impl CancelState {
    /// Cancels the thread's wait, or its next one.
    fn cancel(&self) {
        let waker = {
            let mut s = lock(&self.0);
            match s.waiting.take() {
                Some(w) => {
                    s.fired = true;
                    Some(w)
                }
                None => {
                    s.sticky = true;
                    None
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// `true` if the wait must end with Cancelled (consuming the cancel); else registers it
    /// with `waker` (its first time, after taking a sticky cancel if there is one).
    fn poll(&self, registered: &mut bool, waker: &Waker) -> bool {
        let mut s = lock(&self.0);
        if s.fired {
            s.fired = false;
            *registered = false;
            return true;
        }
        if !*registered {
            if std::mem::take(&mut s.sticky) {
                return true;
            }
            *registered = true;
        }
        if !s.waiting.as_ref().is_some_and(|w| w.will_wake(waker)) {
            s.waiting = Some(waker.clone());
        }
        false
    }

    /// Ends the registration of a wait that ended some other way; a cancel that reached it
    /// meanwhile stays for the next wait.
    fn leave(&self, registered: &mut bool) {
        if !std::mem::take(registered) {
            return;
        }
        let mut s = lock(&self.0);
        s.waiting = None;
        if std::mem::take(&mut s.fired) {
            s.sticky = true;
        }
    }
}

/// svcCancelSynchronization (0x19): ends the svcWaitSynchronization thread `h` is in with
/// Cancelled; if it is in none, its next one that would block ends so instead.
///
/// # Errors
/// InvalidHandle for a handle that names no thread.
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// use hos::svc::{self, Handle};
/// let t = rt.thread().spawn(|| {
///     svc::cancel_synchronization(Handle::CURRENT_THREAD)?;
///     assert_eq!(svc::wait_synchronization(&[], 0), Err(hos::ResultCode::TIMED_OUT), "a poll keeps it");
///     svc::wait_synchronization(&[], -1)
/// })?;
/// assert_eq!(t.join().ok(), Some(Err(hos::ResultCode::CANCELLED)));
/// # rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn cancel_synchronization(h: Handle) -> Result<(), ResultCode> {
    entry();
    thread_of(h)?.cancel_state().cancel();
    Ok(())
}

/// A wait that a cancel of its thread ends: `inner` first (a ready object, the timeout, the
/// shutdown), then the cancel.
pub(crate) struct Cancellable<'a, F> {
    inner: F,
    state: &'a CancelState,
    registered: bool,
}

impl<'a, F> Cancellable<'a, F> {
    pub(crate) fn new(inner: F, state: &'a CancelState) -> Self {
        Cancellable {
            inner,
            state,
            registered: false,
        }
    }
}

impl<F, T> Future for Cancellable<'_, F>
where
    F: Future<Output = Result<T, ResultCode>> + Unpin,
{
    type Output = Result<T, ResultCode>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(r) = Pin::new(&mut this.inner).poll(cx) {
            this.state.leave(&mut this.registered);
            return Poll::Ready(r);
        }
        if this.state.poll(&mut this.registered, cx.waker()) {
            return Poll::Ready(Err(ResultCode::CANCELLED));
        }
        Poll::Pending
    }
}

impl<F> Drop for Cancellable<'_, F> {
    fn drop(&mut self) {
        self.state.leave(&mut self.registered);
    }
}
