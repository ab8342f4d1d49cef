//! ConditionVariable: waits for a signal with a [`Mutex`] released, and takes it back
//! (nn::os `ConditionVariableType`).
//!
//! Invariant: a waiter registers in the condition variable's list *before* it releases the
//! mutex, so a signal made under the mutex after the waiter's predicate check always finds it.
//! A waiter completes on its own notice only; one that times out or is cancelled passes a
//! notice it held to the next waiter. Whatever the outcome, the waiter holds the mutex again
//! (every level it held) when the wait returns.
//!
//! A handle is a cheap `Clone`: the waiter list lives behind one `Arc`, shared by every clone.

use super::mutex::{Lock, Mutex, MutexGuard};
use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout, Waiting};
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::Arc;
use hos_runtime::internal::{block_on, mark_wait, Wait};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A condition variable, used with a [`Mutex`]; a handle whose clones share one condition
/// variable.
///
/// ```
/// use hos::os::{ConditionVariable, Mutex};
/// let (m, cv) = (Mutex::new(false), ConditionVariable::new());
/// let g = m.lock().map_err(|e| e.code())?;
/// cv.signal(); // nobody waits: nothing happens
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build().unwrap();
/// let (g, waited) = cv.wait_timeout(g, std::time::Duration::from_micros(50));
/// assert_eq!(waited, Err(hos::ResultCode::TIMED_OUT));
/// assert!(m.is_locked_by_current_thread(), "the mutex is held again");
/// drop(g);
/// # rt.shutdown();
/// # Ok::<(), hos::ResultCode>(())
/// ```
#[derive(Clone, Debug)]
pub struct ConditionVariable {
    obj: Arc<Object<Waiters>>,
}

impl Default for ConditionVariable {
    fn default() -> Self {
        Self::new()
    }
}

impl ConditionVariable {
    /// A condition variable nobody waits on.
    pub fn new() -> Self {
        ConditionVariable {
            obj: Arc::new(Object::new(Waiters::new())),
        }
    }

    /// Wakes the longest waiter.
    pub fn signal(&self) {
        entry();
        self.obj.with(|list, batch| list.notify(1, batch));
    }

    /// Wakes every waiter.
    pub fn broadcast(&self) {
        entry();
        self.obj.with(super::waiters::Waiters::notify_all);
    }

    /// Releases `guard`'s mutex, waits for a signal, takes the mutex back.
    ///
    /// Returns the guard and `Ok`, or `Err(Cancelled)` once the runtime shuts down (the
    /// mutex is held again either way). Wakes may be spurious: check the predicate in a loop.
    ///
    /// # Blocking
    /// Through the runtime's wait policy, twice: for the signal and for the mutex.
    ///
    /// # Abandonment
    /// If the mutex's owner ended (panicked) holding it while this thread waited, this thread
    /// is the next locker and is told: the returned guard's
    /// [`is_abandoned`](MutexGuard::is_abandoned) is true, and the mark is consumed (as a
    /// POSIX condition wait on a robust mutex returns EOWNERDEAD). Horizon's own mutexes know
    /// no abandonment (their waiters would wait for ever), so hos follows the POSIX rule.
    /// Waiters still waiting for a signal are not woken by it: the condition variable does not
    /// know its mutex between waits; they end at a signal, their timeout, or shutdown.
    pub fn wait<'g>(&self, guard: MutexGuard<'g>) -> (MutexGuard<'g>, Result<(), ResultCode>) {
        self.run(guard, Timeout::Never)
    }

    /// As [`ConditionVariable::wait`], at most `d`: `Err(TimedOut)` when it passes.
    ///
    /// # Blocking
    /// As [`ConditionVariable::wait`]; the mutex is taken back after the timeout too.
    pub fn wait_timeout<'g>(
        &self,
        guard: MutexGuard<'g>,
        d: Duration,
    ) -> (MutexGuard<'g>, Result<(), ResultCode>) {
        self.run(guard, Timeout::from(Some(d)))
    }

    fn run<'g>(
        &self,
        guard: MutexGuard<'g>,
        timeout: Timeout,
    ) -> (MutexGuard<'g>, Result<(), ResultCode>) {
        entry();
        let fut = self.wait_async(guard).limit(timeout);
        block_on(fut, Wait::object(Notified::ON, &self.obj.gate))
    }

    /// The wait as a future, for async host tasks. Dropping it before it completes drops the
    /// guard (the mutex is released), so nothing is left half-done.
    pub fn wait_async<'g>(&self, guard: MutexGuard<'g>) -> CondvarWait<'_, 'g> {
        CondvarWait {
            cv: self,
            mutex: guard.mutex(),
            timeout: Timeout::Never,
            phase: Phase::Start(Some(guard)),
        }
    }
}

/// The future of [`ConditionVariable::wait_async`]: gives the guard back with the result.
#[derive(Debug)]
#[must_use = "a wait does nothing unless polled"]
pub struct CondvarWait<'c, 'g> {
    cv: &'c ConditionVariable,
    mutex: &'g Mutex,
    timeout: Timeout,
    phase: Phase<'c, 'g>,
}

#[derive(Debug)]
enum Phase<'c, 'g> {
    /// Holding the mutex, not yet registered.
    Start(Option<MutexGuard<'g>>),
    /// Registered, mutex released: (owner token, levels) to restore.
    Signal(Waiting<'c, Notified>, (u64, u32)),
    /// Taking the mutex back.
    Relock(Waiting<'g, Lock<'g>>, Result<(), ResultCode>),
    /// Returned.
    Done,
}

impl CondvarWait<'_, '_> {
    fn limit(mut self, timeout: Timeout) -> Self {
        self.timeout = timeout;
        self
    }

    /// Ends the wait with TimedOut once `d` has passed from now (the mutex is still taken
    /// back). Call it before the first poll.
    pub fn timeout(self, d: Duration) -> Self {
        self.limit(Timeout::from(Some(d)))
    }
}

impl<'g> Future for CondvarWait<'_, 'g> {
    type Output = (MutexGuard<'g>, Result<(), ResultCode>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.phase {
                Phase::Start(guard) => {
                    let Some(guard) = guard.take() else {
                        return Poll::Pending;
                    };
                    let mut signal = Waiting::new(&this.cv.obj, Notified).limit(this.timeout);
                    if let Poll::Ready(r) = Pin::new(&mut signal).poll(cx) {
                        this.phase = Phase::Done;
                        return Poll::Ready((guard, r));
                    }
                    // Registered: only now let the mutex go.
                    let saved = this.mutex.suspend(guard);
                    this.phase = Phase::Signal(signal, saved);
                }
                Phase::Signal(signal, saved) => {
                    let Poll::Ready(r) = Pin::new(signal).poll(cx) else {
                        return Poll::Pending;
                    };
                    // From here on a blocked waiter waits on the mutex (what a shutdown's
                    // report names: this wait ignores shutdown).
                    mark_wait(Some(Lock::ON));
                    this.phase = Phase::Relock(this.mutex.relock(*saved), r);
                }
                Phase::Relock(lock, r) => {
                    let Poll::Ready(out) = Pin::new(lock).poll(cx) else {
                        return Poll::Pending;
                    };
                    mark_wait(None);
                    let r = *r;
                    this.phase = Phase::Done;
                    return Poll::Ready((this.mutex.relocked(out), r));
                }
                // Polled after it returned: nothing more will come.
                Phase::Done => return Poll::Pending,
            }
        }
    }
}

/// The signal wait of a condition variable: its own notice.
#[derive(Debug)]
pub(super) struct Notified;

impl Op for Notified {
    type State = Waiters;
    type Output = Result<(), ResultCode>;
    const ON: &'static str = "condition variable";

    fn complete(
        &mut self,
        s: &mut Waiters,
        slot: &WaitSlot,
        _: &mut WakeBatch,
    ) -> Option<Self::Output> {
        s.is_notified(slot).then_some(Ok(()))
    }

    fn waiters<'s>(&self, s: &'s mut Waiters) -> &'s mut Waiters {
        s
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(code)
    }
}
