//! Semaphores (nn::os `SemaphoreType`): `hos_semaphore_*`.

use crate::boundary::{self, entry, Error, Out};
use crate::object::{self, hos_handle, Object};
use crate::result::{hos_result, HOS_RESULT_OUT_OF_RANGE};
use hos_rs::os::Semaphore;

fn semaphore(o: &Object) -> Option<&Semaphore> {
    match o {
        Object::Semaphore(s) => Some(s),
        _ => None,
    }
}

/// Creates a semaphore holding `initial` of at most `max` counts.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfRange for a `max` of 0 or an
/// `initial` above `max`; OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_semaphore_create(
    initial: u32,
    max: u32,
    out: *mut hos_handle,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        if max == 0 || initial > max {
            return Err(Error::new(
                HOS_RESULT_OUT_OF_RANGE,
                format!("initial {initial}, max {max}: expected 0 <= initial <= max, max > 0"),
            ));
        }
        object::create(Object::Semaphore(Semaphore::new(initial, max)), out)
    })
}

/// Takes one count, waiting while there is none. `timeout_ns`: negative waits without limit,
/// 0 tries once. A guest thread gives its virtual core back while it waits; a host thread
/// has none.
///
/// Errors: InvalidHandle; TimedOut (nothing taken); Cancelled once the runtime shuts down;
/// InvalidState for a positive timeout with no runtime alive to time it.
#[no_mangle]
pub extern "C" fn hos_semaphore_acquire(semaphore: hos_handle, timeout_ns: i64) -> hos_result {
    entry(|| {
        object::with(semaphore, "semaphore", self::semaphore, |s| {
            let acquire = s.acquire_async();
            let out = match boundary::timeout(timeout_ns) {
                None => acquire.block(),
                Some(d) => acquire.timeout(d).block(),
            };
            Ok(out?)
        })
    })
}

/// Gives `count` counts back, letting up to `count` waiters through.
///
/// Errors: InvalidHandle; OutOfRange if the count would pass the maximum (nothing released).
#[no_mangle]
pub extern "C" fn hos_semaphore_release(semaphore: hos_handle, count: u32) -> hos_result {
    entry(|| {
        object::with(semaphore, "semaphore", self::semaphore, |s| {
            Ok(s.release(count)?)
        })
    })
}
