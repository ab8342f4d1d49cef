//! Semaphore: a count that acquires take one from and releases give back (nn::os
//! `SemaphoreType`).
//!
//! Invariant: `0 <= count <= max`, changed only under the state lock; a release of `n`
//! notifies up to `n` waiters, and each takes one count or passes its notice on.
//!
//! A handle is a cheap `Clone`: the count and its waiter list live behind one `Arc`, shared by
//! every clone.

use super::wait_any::{sealed, Waitable};
use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout, Waiting};
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

/// The state behind the lock.
#[derive(Debug)]
pub struct Count {
    count: u32,
    max: u32,
    waiters: Waiters,
}

/// A counting semaphore; a handle whose clones share one count.
///
/// ```
/// let s = hos::os::Semaphore::new(1, 2);
/// let s2 = s.clone(); // the same semaphore
/// assert!(s2.try_acquire());
/// assert!(!s.try_acquire());
/// s.release(2)?;
/// assert_eq!(s.count(), 2);
/// assert_eq!(s.release(1), Err(hos::ResultCode::OUT_OF_RANGE));
/// # Ok::<(), hos::ResultCode>(())
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    obj: Arc<Object<Count>>,
}

impl Semaphore {
    /// A semaphore holding `initial` of at most `max` counts.
    ///
    /// # Caveats
    /// An `initial` above `max` is taken as `max`, and a `max` of 0 as 1 (Horizon asserts
    /// `0 <= initial <= max`, `max > 0`).
    pub fn new(initial: u32, max: u32) -> Self {
        let max = max.max(1);
        Semaphore {
            obj: Arc::new(Object::new(Count {
                count: initial.min(max),
                max,
                waiters: Waiters::new(),
            })),
        }
    }

    /// The count now (a snapshot).
    pub fn count(&self) -> u32 {
        self.obj.with(|s, _| s.count)
    }

    /// Takes one count, waiting for one.
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down.
    ///
    /// # Blocking
    /// Blocks through the runtime's wait policy while the count is 0.
    pub fn acquire(&self) -> Result<(), ResultCode> {
        self.obj.run(Acquire, Timeout::Never)
    }

    /// Takes one count if there is one.
    pub fn try_acquire(&self) -> bool {
        self.obj.run(Acquire, Timeout::Poll).is_ok()
    }

    /// Takes one count, waiting at most `d`.
    ///
    /// # Errors
    /// TimedOut when `d` passes (nothing taken); Cancelled once the runtime shuts down.
    ///
    /// # Blocking
    /// As [`Semaphore::acquire`], at most `d`.
    pub fn acquire_timeout(&self, d: Duration) -> Result<(), ResultCode> {
        self.obj.run(Acquire, Timeout::from(Some(d)))
    }

    /// The acquire as a future, for async host tasks.
    pub fn acquire_async(&self) -> Waiting<'_, Acquire> {
        Waiting::new(&self.obj, Acquire)
    }

    /// Gives `n` counts back and lets up to `n` waiters through.
    ///
    /// # Errors
    /// OutOfRange if the count would pass the maximum (nothing is released).
    pub fn release(&self, n: u32) -> Result<(), ResultCode> {
        entry();
        self.obj.with(|s, batch| {
            let count = s
                .count
                .checked_add(n)
                .filter(|c| *c <= s.max)
                .ok_or(ResultCode::OUT_OF_RANGE)?;
            s.count = count;
            s.waiters.notify(n as usize, batch);
            Ok(())
        })
    }
}

impl sealed::Sealed for Semaphore {}

impl Waitable for Semaphore {
    fn poll_wait(&self, slot: &mut WaitSlot, waker: Option<&Waker>) -> Poll<()> {
        self.obj.poll_op(&mut Acquire, slot, waker).map(|_| ())
    }

    fn leave_wait(&self, slot: &mut WaitSlot) {
        self.obj.leave(&Acquire, slot);
    }
}

/// The wait of a [`Semaphore`]: takes one count.
#[derive(Debug)]
pub struct Acquire;

impl Op for Acquire {
    type State = Count;
    type Output = Result<(), ResultCode>;
    const ON: &'static str = "semaphore";

    fn complete(&mut self, s: &mut Count, _: &WaitSlot, _: &mut WakeBatch) -> Option<Self::Output> {
        s.count = s.count.checked_sub(1)?;
        Some(Ok(()))
    }

    fn waiters<'s>(&self, s: &'s mut Count) -> &'s mut Waiters {
        &mut s.waiters
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(code)
    }
}
