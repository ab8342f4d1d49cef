//! Barriers (nn::os `BarrierType`): `hos_barrier_*`.
//!
//! Invariant: each call is hos's `Barrier` method of the same name, after the boundary's
//! checks.

use crate::boundary::{self, entry, Error, Out};
use crate::object::{self, hos_handle, Object};
use crate::result::{hos_result, HOS_RESULT_OUT_OF_RANGE};
use hos_rs::os::Barrier;

fn barrier(o: &Object) -> Option<&Barrier> {
    match o {
        Object::Barrier(b) => Some(b),
        _ => None,
    }
}

/// Creates a barrier for `count` threads.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfRange for a `count` of 0;
/// OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_barrier_create(count: u32, out: *mut hos_handle) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        if count == 0 {
            return Err(Error::new(
                HOS_RESULT_OUT_OF_RANGE,
                "count 0: a barrier is for 1 thread or more",
            ));
        }
        object::create(Object::Barrier(Barrier::new(count)), out)
    })
}

/// Arrives and waits until `count` threads have arrived in this round; the last one does not
/// wait, and the barrier is ready for the next round at once. `timeout_ns`: negative waits
/// without limit; 0 only ends a round that this arrival completes.
///
/// Errors: InvalidHandle; TimedOut and Cancelled (once the runtime shuts down), each with the
/// arrival taken back.
#[no_mangle]
pub extern "C" fn hos_barrier_wait(barrier: hos_handle, timeout_ns: i64) -> hos_result {
    entry(|| {
        object::with(barrier, "barrier", self::barrier, |b| {
            let out = match boundary::timeout(timeout_ns) {
                None => b.wait(),
                Some(d) => b.wait_timeout(d),
            };
            Ok(out?)
        })
    })
}
