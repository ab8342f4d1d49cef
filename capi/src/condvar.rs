//! Condition variables (nn::os `ConditionVariableType`): `hos_condvar_*`, used with a mutex
//! locked through `hos_mutex_lock`.

use crate::boundary::{self, entry, Error, Out};
use crate::mutex::mutex;
use crate::object::{self, hos_handle, Object};
use crate::result::{hos_result, HOS_RESULT_ABANDONED};
use hos_rs::os::ConditionVariable;

fn condvar(o: &Object) -> Option<&ConditionVariable> {
    match o {
        Object::Condvar(c) => Some(c),
        _ => None,
    }
}

/// Creates a condition variable nobody waits on.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_condvar_create(out: *mut hos_handle) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        object::create(Object::Condvar(ConditionVariable::new()), out)
    })
}

/// Releases `mutex` (which the calling thread holds: every level of it), waits for a signal,
/// and takes the mutex back (every level) before it returns, whatever the result.
/// `timeout_ns`: negative waits without limit. Wakes may be spurious: check the predicate in
/// a loop. A guest thread gives its virtual core back while it waits; a host thread has none.
///
/// Errors: InvalidHandle (either handle); InvalidState if the calling thread does not hold
/// `mutex`; TimedOut; Cancelled once the runtime shuts down; Abandoned when the wait ended
/// (signalled or not) and the mutex it took back had been left locked by an owner that ended
/// meanwhile: what it guards may be half-changed (the caller holds it, as after any wait).
#[no_mangle]
pub extern "C" fn hos_condvar_wait(
    condvar: hos_handle,
    mutex: hos_handle,
    timeout_ns: i64,
) -> hos_result {
    entry(|| {
        object::with(condvar, "condition variable", self::condvar, |cv| {
            object::with(mutex, "mutex", self::mutex, |m| {
                let guard = m.reclaim()?;
                let (guard, out) = match boundary::timeout(timeout_ns) {
                    None => cv.wait(guard),
                    Some(d) => cv.wait_timeout(guard, d),
                };
                let abandoned = guard.is_abandoned();
                guard.leak();
                out?;
                match abandoned {
                    true => Err(Error::new(
                        HOS_RESULT_ABANDONED,
                        "taken back, but its last owner ended holding it",
                    )),
                    false => Ok(()),
                }
            })
        })
    })
}

/// Wakes the longest waiter.
///
/// Errors: InvalidHandle.
#[no_mangle]
pub extern "C" fn hos_condvar_signal(condvar: hos_handle) -> hos_result {
    entry(|| {
        object::with(condvar, "condition variable", self::condvar, |cv| {
            cv.signal();
            Ok(())
        })
    })
}

/// Wakes every waiter.
///
/// Errors: InvalidHandle.
#[no_mangle]
pub extern "C" fn hos_condvar_broadcast(condvar: hos_handle) -> hos_result {
    entry(|| {
        object::with(condvar, "condition variable", self::condvar, |cv| {
            cv.broadcast();
            Ok(())
        })
    })
}
