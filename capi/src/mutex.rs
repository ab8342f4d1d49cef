//! Mutexes (nn::os `MutexType`): `hos_mutex_*`, locked and unlocked in separate calls.
//!
//! Invariant: a level locked here is held by the calling OS thread without a guard (hos's
//! `MutexGuard::leak`), until `hos_mutex_unlock` on that thread, a condition-variable wait
//! that hands it over and takes it back, or the thread's end (released as abandoned).

use crate::boundary::{self, entry, Error, Out};
use crate::object::{self, hos_handle, Object};
use crate::result::{hos_result, HOS_RESULT_ABANDONED};
use hos_rs::os::{LockError, Mutex};

pub(crate) fn mutex(o: &Object) -> Option<&Mutex> {
    match o {
        Object::Mutex(m) => Some(m),
        _ => None,
    }
}

/// Creates an unlocked mutex; `recursive` non-zero lets its owner thread lock it again.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_mutex_create(recursive: i32, out: *mut hos_handle) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        object::create(Object::Mutex(Mutex::new(recursive != 0)), out)
    })
}

/// Locks the mutex for the calling thread, waiting while another thread holds it.
/// `timeout_ns`: negative waits without limit, 0 tries once. A guest thread gives its virtual
/// core back while it waits; a host thread (which has none) may lock it too.
///
/// Errors: InvalidHandle; TimedOut; Cancelled once the runtime shuts down; InvalidState for a
/// non-recursive mutex the thread holds already; OutOfRange past 2^32-1 levels. Abandoned
/// when the lock was taken but its last owner ended holding it: the caller holds it then.
#[no_mangle]
pub extern "C" fn hos_mutex_lock(mutex: hos_handle, timeout_ns: i64) -> hos_result {
    entry(|| {
        object::with(mutex, "mutex", self::mutex, |m| {
            let out = match boundary::timeout(timeout_ns) {
                None => m.lock(),
                Some(d) if d.is_zero() => m.try_lock(),
                Some(d) => m.lock_timeout(d),
            };
            match out {
                Ok(guard) => {
                    guard.leak();
                    Ok(())
                }
                Err(LockError::Abandoned(guard)) => {
                    guard.leak();
                    Err(Error::new(
                        HOS_RESULT_ABANDONED,
                        "locked, but its last owner ended holding it",
                    ))
                }
                Err(LockError::Failed(code)) => Err(code.into()),
            }
        })
    })
}

/// Unlocks one level the calling thread locked.
///
/// Errors: InvalidHandle; InvalidState if the calling thread holds no level of it.
#[no_mangle]
pub extern "C" fn hos_mutex_unlock(mutex: hos_handle) -> hos_result {
    entry(|| object::with(mutex, "mutex", self::mutex, |m| Ok(m.unlock()?)))
}
