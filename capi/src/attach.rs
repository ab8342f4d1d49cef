//! Attached threads from C: `hos_thread_attach`, `hos_thread_detach`, and the kick flag.
//!
//! Invariant: a thread attached through the C ABI keeps its `Attached` guard in a
//! thread-local of its own until `hos_thread_detach`, or until the OS thread exits (the
//! thread-local's destructor detaches it then, with its panics caught, so a thread that
//! forgot to detach never aborts the process and never keeps a virtual core).

use crate::boundary::{self, entry, Error, Out};
use crate::object::{self, hos_handle};
use crate::result::{hos_result, HOS_RESULT_INVALID_STATE};
use crate::runtime::hos_runtime;
use crate::thread::{builder, hos_thread_params};
use hos_rs::thread::Attached;
use std::cell::RefCell;
use std::sync::atomic::AtomicU32;

/// What `hos_thread_kick_flag` points to: a `uint32_t` that generated code reads with a plain
/// (volatile) load. cbindgen writes it as `volatile uint32_t` (capi/cbindgen.toml).
pub type hos_kick_word = u32;

/// The word of a thread that is no guest thread: always 0.
static NEVER: AtomicU32 = AtomicU32::new(0);

/// The calling thread's guard, while it is attached through the C ABI.
struct Slot(RefCell<Option<Attached>>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(attached) = self.0.get_mut().take() {
            if let Err(panic) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(attached)))
            {
                boundary::panicked(panic);
            }
        }
    }
}

std::thread_local! {
    static ATTACHED: Slot = const { Slot(RefCell::new(None)) };
}

/// Makes the calling OS thread a guest thread of `rt`, as `hos_thread_spawn` would make one
/// with `p` (NULL: the defaults), and writes its handle to `*out`: its real one, as a spawned
/// thread's, open until `hos_svc_close_handle` (after the detach too). It takes a virtual core
/// first (waiting for one by its priority); from then on its waits, sleeps and checkpoints are
/// a guest thread's, with its role's wait policy. `hos_thread_detach` ends it (a thread that
/// exits attached is detached then).
///
/// Errors: InvalidPointer for a NULL `rt` or `out`, or a misaligned `p` or `out`; as
/// `hos_thread_spawn` for `p`; InvalidState if the thread is a guest thread already or the
/// runtime has shut down; OutOfHandles (then the thread is not attached).
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `p` is NULL or points to a
/// `hos_thread_params`; `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_thread_attach(
    rt: *mut hos_runtime,
    p: *const hos_thread_params,
    out: *mut hos_handle,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, out) = unsafe { (boundary::arg(rt, "rt")?, Out::new(out, "out")?) };
        // SAFETY: forwarded from the caller.
        let attached = unsafe { builder(rt, p) }?.attach()?;
        let h = object::keep_thread(attached.handle_share());
        ATTACHED.with(|slot| *slot.0.borrow_mut() = Some(attached));
        out.write(h);
        Ok(())
    })
}

/// Ends the calling thread's attachment: it gives its virtual core back, the mutex levels it
/// still holds are released as abandoned, and a wait on its handle (or a shutdown) sees it
/// leave. Its handle stays open until `hos_svc_close_handle`.
///
/// Errors: InvalidState if the calling thread is not attached through `hos_thread_attach`.
#[no_mangle]
pub extern "C" fn hos_thread_detach() -> hos_result {
    entry(|| {
        let attached = ATTACHED.with(|slot| slot.0.borrow_mut().take());
        match attached {
            Some(a) => {
                drop(a);
                Ok(())
            }
            None => Err(Error::new(
                HOS_RESULT_INVALID_STATE,
                "the calling thread is not attached",
            )),
        }
    })
}

/// The calling guest thread's kick word: non-zero while its virtual core is asked for (a
/// better thread waits for it, or its time slice is over and an equal one waits), it runs
/// by escape, or its core was taken after a kick's grace (HOS_VCORE_GRACE_US), that is while
/// `hos_checkpoint` has something to do. Generated code tests it with a plain load at loop
/// heads and calls `hos_checkpoint` only when it is set. The address is stable for the
/// thread's life and stays readable after it; on a thread that is no guest thread it points
/// to a word that is always 0. Never NULL.
#[no_mangle]
pub extern "C" fn hos_thread_kick_flag() -> *const hos_kick_word {
    boundary::entry_or(NEVER.as_ptr(), || {
        hos_rs::thread::current().map_or(NEVER.as_ptr(), |t| t.kick_flag().as_ptr())
    })
    .cast_const()
}
