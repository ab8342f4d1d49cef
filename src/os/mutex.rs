//! Mutex: a lock owned by one thread at a time, optionally recursive (nn::os `MutexType`).
//!
//! Invariant: `owner == 0` exactly when `count == 0`; both change only under the state lock.
//! An owner is a token: the calling thread's for a blocking lock (so a recursive mutex lets
//! the same thread in again), a fresh one for each async lock (a task is no thread). A level
//! released while its thread panics marks the mutex abandoned; the next locker is told once,
//! a condition variable's waiter taking the mutex back included (its guard says so).
//! Levels a thread gave up its guard for ([`MutexGuard::leak`]) are listed per thread and
//! released as abandoned when the thread ends, guest thread or not.

use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout, Waiting};
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::{thread_local, Arc};
use std::cell::RefCell;
use std::fmt;
use std::time::Duration;

/// The state behind the lock.
#[derive(Debug)]
pub struct Owner {
    /// The owner's token; 0: free.
    owner: u64,
    /// Levels held by the owner (recursion).
    count: u32,
    /// Released by a panicking owner, not yet told to a locker.
    abandoned: bool,
    waiters: Waiters,
}

// Std's atomic, not the loom shim's: a token is an identity, never a synchronisation point.
// Async tokens count from the top bit down the line: a thread's token is its trace id (a
// small number), so that the wait tree names a blocking owner by its thread.
static NEXT_TOKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 63);

fn next_token() -> u64 {
    // Relaxed: uniqueness only.
    NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Levels this thread holds without a guard; released as abandoned when the thread ends.
#[derive(Default)]
struct Held(Vec<Arc<Object<Owner>>>);

impl Drop for Held {
    fn drop(&mut self) {
        for obj in self.0.drain(..) {
            release(&obj, true);
        }
    }
}

thread_local! {
    static TOKEN: u64 = thread_token_new();
    static HELD: RefCell<Held> = RefCell::new(Held::default());
}

/// A new thread's token: its trace id (a thread that ends has none, and under loom every
/// model thread is one OS thread: those take a fresh token).
fn thread_token_new() -> u64 {
    match hos_runtime::internal::trace::thread_id() {
        0 => next_token(),
        _ if cfg!(loom) => next_token(),
        tid => tid,
    }
}

/// The calling thread's owner token (a reader-writer lock's writer is one too).
pub(crate) fn thread_token() -> u64 {
    TOKEN.with(|t| *t)
}

/// Releases every level the calling thread holds without a guard, as abandoned (a guest
/// thread's end; other threads do it in their thread-local destructor).
pub(crate) fn abandon_held() {
    // At the thread's exit the list may be torn down already: its own destructor released it.
    let held = HELD.try_with(|h| std::mem::take(&mut *h.borrow_mut()));
    drop(held);
}

/// Releases one level of `obj`; `abandon` marks it abandoned.
fn release(obj: &Object<Owner>, abandon: bool) {
    obj.with(|s, batch| {
        debug_assert!(s.count > 0, "released a free mutex (owner {})", s.owner);
        s.abandoned |= abandon;
        s.count = s.count.saturating_sub(1);
        if s.count == 0 {
            s.owner = 0;
            s.waiters.notify(1, batch);
        }
    });
}

/// A mutex, recursive or not.
///
/// ```
/// let m = hos::os::Mutex::new(true);
/// let a = m.lock().map_err(|e| e.code())?;
/// let b = m.lock().map_err(|e| e.code())?; // recursive: the same thread again
/// assert!(m.is_locked_by_current_thread());
/// drop((a, b));
/// assert!(!m.is_locked_by_current_thread());
/// # Ok::<(), hos::ResultCode>(())
/// ```
#[derive(Clone)]
pub struct Mutex {
    obj: Arc<Object<Owner>>,
    recursive: bool,
}

impl fmt::Debug for Mutex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("recursive", &self.recursive)
            .finish_non_exhaustive()
    }
}

/// What a lock gives: a guard, or why not.
pub type LockResult<'a> = Result<MutexGuard<'a>, LockError<'a>>;

/// A lock that did not simply succeed.
///
/// An error (`Display`, `std::error::Error`) that borrows its mutex (an abandoned lock holds
/// the guard), as std's `PoisonError` does: to pass it up past the mutex's scope, take its
/// [`code`](LockError::code) (a `ResultCode` is a `'static` error) or its message.
///
/// ```
/// use hos::{os::Mutex, ResultCode};
/// fn locked_twice(m: &Mutex) -> Result<(), Box<dyn std::error::Error>> {
///     let _a = m.lock().map_err(|e| e.code())?;
///     let _b = m.lock().map_err(|e| e.code())?; // not recursive: InvalidState
///     Ok(())
/// }
/// let m = Mutex::new(false);
/// let err = locked_twice(&m).unwrap_err();
/// assert_eq!(err.downcast_ref(), Some(&ResultCode::INVALID_STATE));
///
/// let g = m.lock().map_err(|e| e.code())?; // free again: `_a` was released
/// let e = m.lock().unwrap_err();
/// assert_eq!(e.to_string(), "mutex not locked: InvalidState(0xFA01)");
/// let boxed: Box<dyn std::error::Error + '_> = Box::new(e); // within the mutex's scope
/// drop((boxed, g));
/// # Ok::<(), ResultCode>(())
/// ```
#[derive(Debug)]
pub enum LockError<'a> {
    /// The lock is held, but its previous owner panicked (or ended) holding it: what it
    /// guards may be half-changed. The guard is yours.
    Abandoned(MutexGuard<'a>),
    /// Not locked: TimedOut (a try on a held mutex, or a timeout), Cancelled, InvalidState (a
    /// non-recursive mutex locked again by its owner), OutOfRange (recursion past u32::MAX).
    Failed(ResultCode),
}

impl<'a> LockError<'a> {
    /// Takes over an abandoned lock; the other errors stay errors.
    pub fn recover(self) -> Result<MutexGuard<'a>, ResultCode> {
        match self {
            LockError::Abandoned(g) => Ok(g),
            LockError::Failed(code) => Err(code),
        }
    }

    /// The result code (InvalidState for an abandoned lock, whose guard is dropped).
    pub fn code(&self) -> ResultCode {
        match self {
            LockError::Abandoned(_) => ResultCode::INVALID_STATE,
            LockError::Failed(code) => *code,
        }
    }
}

impl fmt::Display for LockError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Abandoned(_) => f.write_str(
                "mutex locked, but abandoned: its previous owner ended holding it (the guard is \
                 in the error)",
            ),
            LockError::Failed(code) => write!(f, "mutex not locked: {code}"),
        }
    }
}

impl std::error::Error for LockError<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Abandoned(_) => None,
            LockError::Failed(code) => Some(code),
        }
    }
}

impl Mutex {
    /// An unlocked mutex; `recursive` lets its owner thread lock it again.
    pub fn new(recursive: bool) -> Self {
        Mutex {
            obj: Arc::new(Object::new(Owner {
                owner: 0,
                count: 0,
                abandoned: false,
                waiters: Waiters::new(),
            })),
            recursive,
        }
    }

    /// Whether its owner may lock it again.
    pub fn is_recursive(&self) -> bool {
        self.recursive
    }

    pub(crate) fn op(&self, token: u64, levels: u32) -> Lock<'_> {
        Lock {
            mutex: self,
            token,
            levels,
        }
    }

    /// Locks it, waiting while another owner holds it.
    ///
    /// # Errors
    /// See [`LockError`]: Abandoned (with the guard), Cancelled, InvalidState.
    ///
    /// # Blocking
    /// Blocks through the runtime's wait policy while another owner holds it.
    pub fn lock(&self) -> LockResult<'_> {
        self.obj.run(self.op(thread_token(), 1), Timeout::Never)
    }

    /// Locks it if that needs no wait; else `Failed(TimedOut)`.
    pub fn try_lock(&self) -> LockResult<'_> {
        self.obj.run(self.op(thread_token(), 1), Timeout::Poll)
    }

    /// Locks it, waiting at most `d`.
    ///
    /// # Errors
    /// As [`Mutex::lock`], and `Failed(TimedOut)`.
    ///
    /// # Blocking
    /// As [`Mutex::lock`], at most `d`.
    pub fn lock_timeout(&self, d: Duration) -> LockResult<'_> {
        self.obj
            .run(self.op(thread_token(), 1), Timeout::from(Some(d)))
    }

    /// The lock as a future, for async host tasks. The task is the owner (not the thread it
    /// runs on), so an async lock never recurses.
    pub fn lock_async(&self) -> Waiting<'_, Lock<'_>> {
        Waiting::new(&self.obj, self.op(next_token(), 1))
    }

    /// Whether the calling thread owns it (nn::os IsMutexLockedByCurrentThread).
    pub fn is_locked_by_current_thread(&self) -> bool {
        let me = thread_token();
        self.obj.with(|s, _| s.owner == me)
    }

    /// Releases one level the calling thread gave its guard up for ([`MutexGuard::leak`]):
    /// nn::os UnlockMutex for hosts that lock and unlock in separate calls.
    ///
    /// # Errors
    /// InvalidState if the calling thread holds no such level.
    pub fn unlock(&self) -> Result<(), ResultCode> {
        entry();
        let obj = self.unlist_held()?;
        release(&obj, false);
        Ok(())
    }

    /// Takes back, as a guard, one level the calling thread gave its guard up for
    /// ([`MutexGuard::leak`]): for hosts that lock and unlock in separate calls and then wait
    /// on a [`crate::os::ConditionVariable`], which takes a guard.
    ///
    /// # Errors
    /// InvalidState if the calling thread holds no such level.
    ///
    /// ```
    /// let m = hos::os::Mutex::new(false);
    /// m.lock().map_err(|e| e.code())?.leak();
    /// let guard = m.reclaim()?;
    /// drop(guard);
    /// assert_eq!(m.reclaim().err(), Some(hos::ResultCode::INVALID_STATE));
    /// # Ok::<(), hos::ResultCode>(())
    /// ```
    pub fn reclaim(&self) -> Result<MutexGuard<'_>, ResultCode> {
        self.unlist_held()?;
        Ok(MutexGuard {
            mutex: self,
            abandoned: false,
        })
    }

    /// Removes one of the calling thread's guardless levels of this mutex from its list.
    fn unlist_held(&self) -> Result<Arc<Object<Owner>>, ResultCode> {
        let found = HELD.with(|h| {
            let mut h = h.borrow_mut();
            let i = h.0.iter().rposition(|o| Arc::ptr_eq(o, &self.obj))?;
            Some(h.0.swap_remove(i))
        });
        found.ok_or(ResultCode::INVALID_STATE)
    }

    /// Takes the mutex out of its owner's hands for a condition-variable wait: every level
    /// is released at once. Returns (owner token, levels) for [`Mutex::relock`].
    pub(crate) fn suspend(&self, guard: MutexGuard<'_>) -> (u64, u32) {
        std::mem::forget(guard);
        self.obj.with(|s, batch| {
            let saved = (s.owner, s.count);
            s.owner = 0;
            s.count = 0;
            s.waiters.notify(1, batch);
            saved
        })
    }

    /// The wait that gives a suspended owner its levels back (immune to shutdown: the guard
    /// it returns must be real).
    pub(crate) fn relock(&self, (token, levels): (u64, u32)) -> Waiting<'_, Lock<'_>> {
        Waiting::new(&self.obj, self.op(token, levels)).uncancellable()
    }

    /// The guard of a finished [`Mutex::relock`]. An abandonment it ran into is told to this
    /// waiter, the next locker, through the guard ([`MutexGuard::is_abandoned`]).
    pub(crate) fn relocked<'a>(&'a self, out: LockResult<'a>) -> MutexGuard<'a> {
        match out {
            Ok(g) | Err(LockError::Abandoned(g)) => g,
            Err(LockError::Failed(code)) => {
                // Cannot happen: the relock has no deadline, ignores shutdown, and its token
                // owns nothing. Should it, the caller's guard stays well-formed.
                debug_assert!(false, "a condition variable's relock failed with {code}");
                MutexGuard {
                    mutex: self,
                    abandoned: false,
                }
            }
        }
    }
}

/// One level of a locked [`Mutex`]; dropping it releases the level (as abandoned if the
/// thread is panicking).
#[must_use = "the level is released when the guard drops"]
pub struct MutexGuard<'a> {
    mutex: &'a Mutex,
    /// Taken over from an owner that ended holding the mutex.
    abandoned: bool,
}

impl fmt::Debug for MutexGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MutexGuard")
    }
}

impl<'a> MutexGuard<'a> {
    /// The mutex it holds.
    pub fn mutex(&self) -> &'a Mutex {
        self.mutex
    }

    /// Whether this lock took the mutex over from an owner that ended (panicked) holding it,
    /// so that what it guards may be half-changed: the guard of a [`LockError::Abandoned`],
    /// or of a condition variable's wait that took the mutex back after that happened. Told
    /// once: the next lock after this one is not abandoned.
    pub fn is_abandoned(&self) -> bool {
        self.abandoned
    }

    /// Keeps the level locked without a guard, owned by the calling thread, until it calls
    /// [`Mutex::unlock`]; if the thread ends first, the level is released as abandoned.
    pub fn leak(self) {
        let mutex = self.mutex;
        std::mem::forget(self);
        let me = thread_token();
        mutex.obj.with(|s, _| s.owner = me);
        HELD.with(|h| h.borrow_mut().0.push(mutex.obj.clone()));
    }
}

impl Drop for MutexGuard<'_> {
    fn drop(&mut self) {
        release(&self.mutex.obj, std::thread::panicking());
    }
}

/// The wait of a lock: the mutex free, or owned by this token (recursive).
#[derive(Debug)]
pub struct Lock<'a> {
    mutex: &'a Mutex,
    token: u64,
    levels: u32,
}

impl<'a> Op for Lock<'a> {
    type State = Owner;
    type Output = LockResult<'a>;
    const ON: &'static str = "mutex";

    fn complete(&mut self, s: &mut Owner, _: &WaitSlot, _: &mut WakeBatch) -> Option<Self::Output> {
        let guard = |abandoned| MutexGuard {
            mutex: self.mutex,
            abandoned,
        };
        if s.owner == 0 {
            s.owner = self.token;
            s.count = self.levels;
            return Some(match std::mem::take(&mut s.abandoned) {
                true => Err(LockError::Abandoned(guard(true))),
                false => Ok(guard(false)),
            });
        }
        if s.owner != self.token {
            return None;
        }
        if !self.mutex.recursive {
            return Some(Err(LockError::Failed(ResultCode::INVALID_STATE)));
        }
        Some(match s.count.checked_add(self.levels) {
            Some(c) => {
                s.count = c;
                Ok(guard(false))
            }
            None => Err(LockError::Failed(ResultCode::OUT_OF_RANGE)),
        })
    }

    fn waiters<'s>(&self, s: &'s mut Owner) -> &'s mut Waiters {
        &mut s.waiters
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(LockError::Failed(code))
    }

    fn holder(&self, s: &Owner) -> u64 {
        s.owner
    }
}
