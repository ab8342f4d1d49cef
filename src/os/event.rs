//! Event: a flag that threads wait for, cleared by a successful wait (auto) or by `clear`
//! (manual). nn::os `EventType` and `LightEventType`.
//!
//! Invariant: the flag lives in one atomic word with a WAITERS bit. WAITERS is set only under
//! the state lock, by a wait about to register; while it is set, `signal` takes the lock, so a
//! signal never misses a registered waiter. It is cleared, also under the lock, by a signal
//! that finds the list empty. Without waiters, `signal` and `try_wait` are one atomic
//! operation each.

use super::wait_any::{sealed, Waitable};
use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout, Waiting};
use crate::sync::atomic::{AtomicU8, Ordering};
use crate::ResultCode;
use std::task::{Poll, Waker};
use std::time::Duration;

/// Whether a successful wait clears the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClearMode {
    /// A successful wait clears it: one signal lets one waiter through.
    Auto,
    /// It stays signalled until [`Event::clear`]: one signal lets every waiter through.
    Manual,
}

const SIGNALLED: u8 = 1;
const WAITERS: u8 = 2;

/// An event (nn::os `EventType`), auto- or manual-clear.
///
/// Every wait is also a future ([`Event::wait_async`]), so an async host task can await a
/// guest event without blocking its executor.
///
/// ```
/// use hos::os::{ClearMode, Event};
/// let ev = Event::new(ClearMode::Auto);
/// ev.signal();
/// assert!(ev.try_wait());
/// assert!(!ev.try_wait(), "an auto-clear event lets one waiter through");
/// ```
#[derive(Debug)]
pub struct Event {
    /// SIGNALLED | WAITERS bits (see the module's invariant).
    word: AtomicU8,
    clear: ClearMode,
    obj: Object<Waiters>,
}

impl Event {
    /// A cleared event.
    pub fn new(clear: ClearMode) -> Self {
        Event {
            word: AtomicU8::new(0),
            clear,
            obj: Object::new(Waiters::new()),
        }
    }

    /// Its clear mode.
    pub fn clear_mode(&self) -> ClearMode {
        self.clear
    }

    /// Signals it: an auto-clear event lets one waiter through, a manual-clear one every
    /// waiter until it is cleared.
    pub fn signal(&self) {
        crate::svc::entry();
        // Relaxed: the CAS below decides; a stale value only costs a retry.
        let mut w = self.word.load(Ordering::Relaxed);
        while w & WAITERS == 0 {
            // Release: what the signaller wrote is seen by the waiter's Acquire consume.
            match self.word.compare_exchange_weak(
                w,
                w | SIGNALLED,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => w = now,
            }
        }
        self.obj.with(|list, batch| {
            // Release: as above. Under the lock: no wait registers between this and notify.
            self.word.fetch_or(SIGNALLED, Ordering::Release);
            match self.clear {
                ClearMode::Auto => list.notify(1, batch),
                ClearMode::Manual => list.notify_all(batch),
            }
            if list.is_empty() {
                // Relaxed: only waits under this lock set WAITERS, and none is registered.
                self.word.fetch_and(!WAITERS, Ordering::Relaxed);
            }
        });
    }

    /// Clears it.
    pub fn clear(&self) {
        crate::svc::entry();
        // Relaxed: a clear publishes nothing.
        self.word.fetch_and(!SIGNALLED, Ordering::Relaxed);
    }

    /// Clears it; `true` if it was signalled (svcResetSignal).
    pub(crate) fn reset(&self) -> bool {
        crate::svc::entry();
        // Acquire: a reset that finds the signal takes it, as a wait does.
        self.word.fetch_and(!SIGNALLED, Ordering::Acquire) & SIGNALLED != 0
    }

    /// Whether it is signalled now (a snapshot).
    pub fn is_signalled(&self) -> bool {
        self.word.load(Ordering::Acquire) & SIGNALLED != 0
    }

    fn take(&self) -> Take<'_> {
        Take {
            word: &self.word,
            auto: self.clear == ClearMode::Auto,
        }
    }

    /// Waits until it is signalled (and clears it, if auto-clear).
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down.
    ///
    /// # Blocking
    /// Blocks the calling thread through the runtime's wait policy (spin, then park); a
    /// guest thread holds no virtual core while it waits.
    pub fn wait(&self) -> Result<(), ResultCode> {
        self.obj.run(self.take(), Timeout::Never)
    }

    /// Takes the signal if it is there, without waiting.
    pub fn try_wait(&self) -> bool {
        self.obj.run(self.take(), Timeout::Poll).is_ok()
    }

    /// Waits at most `d`; `true` if it was signalled. A timeout (or a cancel) consumes nothing.
    /// For the result code, use `wait_async().timeout(d).block()`.
    ///
    /// # Blocking
    /// As [`Event::wait`], at most `d` (the deadline is on the runtime's reactor).
    ///
    /// ```
    /// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
    /// let ev = hos::os::Event::new(hos::os::ClearMode::Manual);
    /// assert!(!ev.wait_timeout(std::time::Duration::from_micros(50)));
    /// # rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_timeout(&self, d: Duration) -> bool {
        self.obj.run(self.take(), Timeout::from(Some(d))).is_ok()
    }

    /// The wait as a future, for async host tasks (or [`Waiting::block`]).
    pub fn wait_async(&self) -> Waiting<'_, Take<'_>> {
        Waiting::new(&self.obj, self.take())
    }
}

impl sealed::Sealed for Event {}

impl Waitable for Event {
    fn poll_wait(&self, slot: &mut WaitSlot, waker: Option<&Waker>) -> Poll<()> {
        self.obj.poll_op(&mut self.take(), slot, waker).map(|_| ())
    }

    fn leave_wait(&self, slot: &mut WaitSlot) {
        self.obj.leave(&self.take(), slot);
    }
}

/// The wait of an [`Event`]: takes the signal (clears it if auto-clear).
#[derive(Debug)]
pub struct Take<'a> {
    word: &'a AtomicU8,
    auto: bool,
}

impl Take<'_> {
    /// Consumes the signal if it is there (a manual-clear wait only sees it); `None`, with
    /// WAITERS set if `mark`, if it is not.
    fn attempt(&self, mark: bool) -> Option<Result<(), ResultCode>> {
        // Acquire: pairs with the signal's Release (a manual-clear wait ends on this load).
        let mut w = self.word.load(Ordering::Acquire);
        loop {
            let next = match (w & SIGNALLED != 0, self.auto) {
                (true, false) => return Some(Ok(())),
                (true, true) => w & !SIGNALLED,
                (false, _) if mark && w & WAITERS == 0 => w | WAITERS,
                (false, _) => return None,
            };
            // AcqRel: Acquire pairs with the signal's Release when it consumes; Release keeps
            // the WAITERS mark before the registration that follows it under the lock.
            match self
                .word
                .compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire)
            {
                // Consumed the signal, or marked WAITERS (then the caller registers).
                Ok(_) => return (w & SIGNALLED != 0).then_some(Ok(())),
                Err(now) => w = now,
            }
        }
    }
}

impl Op for Take<'_> {
    type State = Waiters;
    type Output = Result<(), ResultCode>;
    const ON: &'static str = "event";

    fn fast(&mut self) -> Option<Self::Output> {
        self.attempt(false)
    }

    fn complete(
        &mut self,
        _: &mut Waiters,
        _: &WaitSlot,
        _: &mut WakeBatch,
    ) -> Option<Self::Output> {
        self.attempt(true)
    }

    fn waiters<'s>(&self, s: &'s mut Waiters) -> &'s mut Waiters {
        s
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(code)
    }
}
