//! The one place sync primitives are imported from, so that loom can swap them, and the one
//! way a lock is taken.
//!
//! Invariant: runtime code takes atomics, `Arc`, `Mutex` and `thread_local!` from here, never
//! from `std` directly; under `--cfg loom` they are loom's (`Arc` excepted, below) and every
//! model sees them. Every lock, loom's or std's (process bookkeeping outside the models), is
//! taken through [`lock`], [`read`] or [`write()`], and every std condition variable waited on
//! through [`wait`], which take a poisoned lock over: no code in hos panics while it holds a
//! lock with its state half-changed, so poison tells nothing.

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Mutex};
#[cfg(loom)]
pub(crate) use loom::thread_local;
/// std's `Arc` under loom too: loom's has no `Weak`, no `Arc<str>` and no `Wake`, and the
/// models check what the state machines are made of, the atomics and locks.
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Mutex};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

use std::sync::{Condvar, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// A mutex [`lock`] can take: std's, and under loom loom's too.
pub trait Lockable {
    /// What holding the lock gives.
    type Guard<'a>
    where
        Self: 'a;

    /// Locks, taking a poisoned lock over (module invariant).
    fn lock_taking_poison(&self) -> Self::Guard<'_>;
}

impl<T: ?Sized> Lockable for std::sync::Mutex<T> {
    type Guard<'a>
        = std::sync::MutexGuard<'a, T>
    where
        T: 'a;

    fn lock_taking_poison(&self) -> Self::Guard<'_> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(loom)]
impl<T> Lockable for loom::sync::Mutex<T> {
    type Guard<'a>
        = loom::sync::MutexGuard<'a, T>
    where
        T: 'a;

    fn lock_taking_poison(&self) -> Self::Guard<'_> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Through an `Arc`, so that a shared lock is taken as `lock(&shared)` too.
impl<M: Lockable + ?Sized> Lockable for Arc<M> {
    type Guard<'a>
        = M::Guard<'a>
    where
        M: 'a;

    fn lock_taking_poison(&self) -> Self::Guard<'_> {
        (**self).lock_taking_poison()
    }
}

/// Locks `m`, taking a poisoned lock over (module invariant).
#[inline]
pub fn lock<M: Lockable + ?Sized>(m: &M) -> M::Guard<'_> {
    m.lock_taking_poison()
}

/// Read-locks `l`, taking a poisoned lock over (module invariant).
#[inline]
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `l`, taking a poisoned lock over (module invariant).
#[inline]
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` with `guard`'s lock for a notify, at most `limit` (`None`: no limit), taking
/// a poisoned lock over (module invariant). It may return early or at the limit: the caller
/// checks its condition again.
#[inline]
pub fn wait<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    limit: Option<Duration>,
) -> MutexGuard<'a, T> {
    match limit {
        None => cv.wait(guard).unwrap_or_else(PoisonError::into_inner),
        Some(d) => {
            cv.wait_timeout(guard, d)
                .unwrap_or_else(PoisonError::into_inner)
                .0
        }
    }
}

/// One step of a busy wait: a CPU pause hint, or under loom a yield so the model can progress.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
