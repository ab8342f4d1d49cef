//! wait_any: one wait over up to 64 objects (nn::os WaitAny, svcWaitSynchronization).
//!
//! Invariant: the wait is registered in the list of every object it has polled, and leaves
//! every list (passing on any notice) when it ends or is dropped; it completes the wait of at
//! most one object, the first ready in slice order, so it consumes at most one signal.

use super::waiters::WaitSlot;
use super::waiting::{Limits, Timeout};
use crate::entry::entry;
use crate::result::ResultCode;
use hos_runtime::internal::{block_on, poll_found, Wait};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// The most objects one wait may name (Horizon's limit).
pub const MAX_WAIT_OBJECTS: usize = 64;

pub(crate) mod sealed {
    /// Only hos's objects are waitable: a wait among others relies on their waiter lists.
    pub trait Sealed {}
}

/// An object that [`wait_any`] (and `svc::wait_synchronization`) can wait for among others.
///
/// Waiting for it among others has the effect of its own wait: an auto-clear event is
/// cleared, a semaphore gives one count. A message queue is ready while it holds a message
/// (the wait takes none); a guest thread once it has ended.
pub trait Waitable: Sync + sealed::Sealed {
    /// One poll: completes the object's wait, or (with a waker) registers under `slot`.
    #[doc(hidden)]
    fn poll_wait(&self, slot: &mut WaitSlot, waker: Option<&Waker>) -> Poll<()>;

    /// Leaves the object's list (nothing if `slot` is empty), passing on a notice.
    #[doc(hidden)]
    fn leave_wait(&self, slot: &mut WaitSlot);
}

/// Waits until one of `objects` is ready, at most `timeout` (`None`: no limit); returns its
/// index (the lowest, if several are ready). With no objects it waits for the timeout or a
/// cancel.
///
/// # Errors
/// OutOfRange for more than 64 objects; TimedOut when the timeout passes (nothing consumed);
/// Cancelled once the runtime shuts down.
///
/// # Blocking
/// Through the runtime's `block_on`; a guest thread holds no virtual core while it waits.
///
/// ```
/// use hos::os::{wait_any, ClearMode, Event, Waitable};
/// let (a, b) = (Event::new(ClearMode::Auto), Event::new(ClearMode::Auto));
/// b.signal();
/// let objects: [&dyn Waitable; 2] = [&a, &b];
/// assert_eq!(wait_any(&objects, None), Ok(1));
/// assert!(!b.try_wait(), "the wait took b's signal");
/// ```
pub fn wait_any(objects: &[&dyn Waitable], timeout: Option<Duration>) -> Result<usize, ResultCode> {
    entry();
    let timeout = Timeout::from(timeout);
    if objects.len() > MAX_WAIT_OBJECTS {
        return Err(ResultCode::OUT_OF_RANGE);
    }
    if timeout == Timeout::Poll {
        let mut slot = WaitSlot::new();
        let found = objects
            .iter()
            .position(|o| o.poll_wait(&mut slot, None).is_ready());
        if found.is_some() {
            poll_found();
        }
        return found.ok_or(ResultCode::TIMED_OUT);
    }
    block_on(wait_any_async(objects).limit(timeout), Wait::objects())
}

/// [`wait_any`] as a future, for async host tasks.
pub fn wait_any_async<'a>(objects: &'a [&'a dyn Waitable]) -> WaitAny<'a> {
    WaitAny {
        objects,
        slots: std::array::from_fn(|_| WaitSlot::new()),
        limits: Limits::new(None),
    }
}

/// The future of [`wait_any_async`]: the index of the first ready object, or a result code.
#[derive(Debug)]
#[must_use = "a wait does nothing unless polled"]
pub struct WaitAny<'a> {
    objects: &'a [&'a dyn Waitable],
    slots: [WaitSlot; MAX_WAIT_OBJECTS],
    limits: Limits,
}

impl std::fmt::Debug for dyn Waitable + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Waitable")
    }
}

impl WaitAny<'_> {
    fn limit(mut self, timeout: Timeout) -> Self {
        self.limits.set_timeout(timeout);
        self
    }

    /// Ends the wait with TimedOut once `d` has passed from now. Call it before the first poll.
    pub fn timeout(self, d: Duration) -> Self {
        self.limit(Timeout::from(Some(d)))
    }

    fn leave_all(&mut self) {
        for (o, slot) in self.objects.iter().zip(self.slots.iter_mut()) {
            o.leave_wait(slot);
        }
    }
}

impl Future for WaitAny<'_> {
    type Output = Result<usize, ResultCode>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.objects.len() > MAX_WAIT_OBJECTS {
            return Poll::Ready(Err(ResultCode::OUT_OF_RANGE));
        }
        for (i, o) in this.objects.iter().enumerate() {
            if o.poll_wait(&mut this.slots[i], Some(cx.waker())).is_ready() {
                this.leave_all();
                return Poll::Ready(Ok(i));
            }
        }
        match this.limits.check(cx.waker()) {
            Some(code) => {
                this.leave_all();
                Poll::Ready(Err(code))
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for WaitAny<'_> {
    fn drop(&mut self) {
        if self.objects.len() <= MAX_WAIT_OBJECTS {
            self.leave_all();
        }
    }
}
