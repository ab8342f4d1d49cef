//! Event: a flag that threads wait for, cleared by a successful wait (auto) or by `clear`
//! (manual). nn::os `EventType` and `LightEventType`.
//!
//! Invariant: the flag lives in one atomic word with a WAITERS bit. WAITERS is set only under
//! the state lock, by a wait about to register; while it is set, `signal` takes the lock, so a
//! signal never misses a registered waiter. It is cleared, also under the lock, by a signal
//! that finds the list empty. Without waiters, `signal` and `try_wait` are one atomic
//! operation each.
//!
//! A handle is a cheap `Clone`: the flag and its waiter list live behind one `Arc`, so every
//! clone signals and waits on the same event.

use super::wait_any::{sealed, Waitable};
use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout, Waiting};
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::atomic::{AtomicU8, Ordering};
use crate::sync::Arc;
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
/// A handle: clones share one event (as [`Mutex`](super::Mutex)'s do), so a clone moves into
/// the thread that signals or waits. Every wait is also a future ([`Event::wait_async`]), so
/// an async host task can await a guest event without blocking its executor.
///
/// ```
/// use hos::os::{ClearMode, Event};
/// let ev = Event::new(ClearMode::Auto);
/// let ev2 = ev.clone(); // the same event
/// ev2.signal();
/// assert!(ev.try_wait());
/// assert!(!ev.try_wait(), "an auto-clear event lets one waiter through");
/// ```
#[derive(Clone, Debug)]
pub struct Event {
    clear: ClearMode,
    flag: Arc<Flag>,
}

/// What the clones of an [`Event`] share: one cache line holds the flag, the lock and the
/// waiter list's head (the spin gate spills to the next, written only by spinning waits), and
/// the handles' reference counts sit on a line of their own. A parked hand-off's signaller and
/// waiter each write the flag, the lock and the list, so each side moves that one line (the
/// signaller the list's entries too: `waiters.rs`), where the unaligned layout, 88 bytes at the allocator's 16-byte
/// alignment, spread them over two or three lines shared with the counts.
#[derive(Debug)]
#[repr(C, align(64))]
struct Flag {
    /// SIGNALLED | WAITERS bits (see the module's invariant).
    word: AtomicU8,
    obj: Object<Waiters>,
}

impl Event {
    /// A cleared event.
    pub fn new(clear: ClearMode) -> Self {
        Event {
            clear,
            flag: Arc::new(Flag {
                word: AtomicU8::new(0),
                obj: Object::new(Waiters::new()),
            }),
        }
    }

    /// Its clear mode.
    pub fn clear_mode(&self) -> ClearMode {
        self.clear
    }

    /// Signals it: an auto-clear event lets one waiter through, a manual-clear one every
    /// waiter until it is cleared.
    pub fn signal(&self) {
        entry();
        // Relaxed: the CAS below decides; a stale value only costs a retry.
        let mut w = self.flag.word.load(Ordering::Relaxed);
        while w & WAITERS == 0 {
            // Release: what the signaller wrote is seen by the waiter's Acquire consume.
            match self.flag.word.compare_exchange_weak(
                w,
                w | SIGNALLED,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => w = now,
            }
        }
        self.flag.obj.with(|list, batch| {
            // Release: as above. Under the lock: no wait registers between this and notify.
            self.flag.word.fetch_or(SIGNALLED, Ordering::Release);
            match self.clear {
                ClearMode::Auto => list.notify(1, batch),
                ClearMode::Manual => list.notify_all(batch),
            }
            if list.is_empty() {
                // Relaxed: only waits under this lock set WAITERS, and none is registered.
                self.flag.word.fetch_and(!WAITERS, Ordering::Relaxed);
            }
        });
    }

    /// Clears it.
    pub fn clear(&self) {
        entry();
        // Relaxed: a clear publishes nothing.
        self.flag.word.fetch_and(!SIGNALLED, Ordering::Relaxed);
    }

    /// Clears it; `true` if it was signalled (svcResetSignal).
    pub(crate) fn reset(&self) -> bool {
        entry();
        // Acquire: a reset that finds the signal takes it, as a wait does.
        self.flag.word.fetch_and(!SIGNALLED, Ordering::Acquire) & SIGNALLED != 0
    }

    /// Whether it is signalled now (a snapshot).
    pub fn is_signalled(&self) -> bool {
        self.flag.word.load(Ordering::Acquire) & SIGNALLED != 0
    }

    fn take(&self) -> Take<'_> {
        Take {
            word: &self.flag.word,
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
        self.flag.obj.run(self.take(), Timeout::Never)
    }

    /// Takes the signal if it is there, without waiting.
    pub fn try_wait(&self) -> bool {
        self.flag.obj.run(self.take(), Timeout::Poll).is_ok()
    }

    /// Waits at most `d` (and clears it, if auto-clear). A timeout or a cancel consumes
    /// nothing.
    ///
    /// # Errors
    /// TimedOut when `d` passes; Cancelled once the runtime shuts down.
    ///
    /// # Blocking
    /// As [`Event::wait`], at most `d` (the deadline is on the runtime's reactor).
    ///
    /// ```
    /// use hos::ResultCode;
    /// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
    /// let ev = hos::os::Event::new(hos::os::ClearMode::Manual);
    /// match ev.wait_timeout(std::time::Duration::from_micros(50)) {
    ///     Ok(()) => unreachable!("nobody signalled it"),
    ///     Err(ResultCode::TIMED_OUT) => {} // the deadline passed
    ///     Err(code) => assert_eq!(code, ResultCode::CANCELLED), // the runtime shut down
    /// }
    /// # rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_timeout(&self, d: Duration) -> Result<(), ResultCode> {
        self.flag.obj.run(self.take(), Timeout::from(Some(d)))
    }

    /// The wait as a future, for async host tasks (or [`Waiting::block`]).
    pub fn wait_async(&self) -> Waiting<'_, Take<'_>> {
        Waiting::new(&self.flag.obj, self.take())
    }
}

impl sealed::Sealed for Event {}

impl Waitable for Event {
    fn poll_wait(&self, slot: &mut WaitSlot, waker: Option<&Waker>) -> Poll<()> {
        self.flag
            .obj
            .poll_op(&mut self.take(), slot, waker)
            .map(|_| ())
    }

    fn leave_wait(&self, slot: &mut WaitSlot) {
        self.flag.obj.leave(&self.take(), slot);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn the_flag_the_lock_and_the_list_share_one_line() {
        assert_eq!(align_of::<Flag>(), 64, "the counts on a line of their own");
        assert_eq!(offset_of!(Flag, word), 0);
        // The object's lock and list come first in it, its gate after them.
        let lock = size_of::<std::sync::Mutex<Waiters>>();
        assert!(offset_of!(Object<Waiters>, gate) >= lock);
        assert!(
            offset_of!(Flag, obj) + lock <= 64,
            "lock and list past the line"
        );
    }
}
