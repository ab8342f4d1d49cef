//! The one place sync primitives are imported from, so that loom can swap them, and the one
//! way a lock is taken.
//!
//! Invariant: runtime code takes atomics, `Arc`, `Mutex`, `Condvar` and `thread_local!` from
//! here, never from `std` directly; under `--cfg loom` they are loom's (`Arc` excepted, below)
//! and every model sees them. Every lock, loom's or std's (process bookkeeping outside the
//! models), is taken through [`lock`], [`read`] or [`write()`], and every condition variable,
//! loom's or std's, waited on through [`wait`], which take a poisoned lock over: no code in hos
//! panics while it holds a lock with its state half-changed, so poison tells nothing.
//!
//! Under loom a wait's limit is not kept: loom's `Condvar::wait_timeout` waits for a notify
//! as `wait` does, so a model covers only schedules whose waits end by a notify.

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread_local;
/// std's `Arc` under loom too: loom's has no `Weak`, no `Arc<str>` and no `Wake`, and the
/// models check what the state machines are made of, the atomics and locks.
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
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

/// A condition variable [`wait`] can wait on: std's, and under loom loom's too.
pub trait Waitable {
    /// The guard of the lock it waits with.
    type Guard<'a, T: 'a>;

    /// Waits for a notify, at most `limit`, taking a poisoned lock over (module invariant).
    fn wait_taking_poison<'a, T>(
        &self,
        guard: Self::Guard<'a, T>,
        limit: Option<Duration>,
    ) -> Self::Guard<'a, T>;
}

/// Implements [`Waitable`] for a condition variable whose lock's guard is `$guard` (std's
/// and loom's have the same methods).
macro_rules! waitable {
    ($cv:ty, $($guard:ident)::+) => {
        impl Waitable for $cv {
            type Guard<'a, T: 'a> = $($guard)::+<'a, T>;

            fn wait_taking_poison<'a, T>(
                &self,
                guard: Self::Guard<'a, T>,
                limit: Option<Duration>,
            ) -> Self::Guard<'a, T> {
                match limit {
                    None => self.wait(guard).unwrap_or_else(PoisonError::into_inner),
                    // Under loom this waits for a notify all the same (module doc).
                    Some(d) => {
                        self.wait_timeout(guard, d)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0
                    }
                }
            }
        }
    };
}

waitable!(std::sync::Condvar, std::sync::MutexGuard);
#[cfg(loom)]
waitable!(loom::sync::Condvar, loom::sync::MutexGuard);

/// Waits on `cv` with `guard`'s lock for a notify, at most `limit` (`None`: no limit), taking
/// a poisoned lock over (module invariant). It may return early or at the limit: the caller
/// checks its condition again.
#[inline]
pub fn wait<'a, C: Waitable, T>(
    cv: &C,
    guard: C::Guard<'a, T>,
    limit: Option<Duration>,
) -> C::Guard<'a, T> {
    cv.wait_taking_poison(guard, limit)
}

/// One step of a busy wait: a CPU pause hint, or under loom a yield so the model can progress.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
