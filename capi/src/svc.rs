//! The svc calls a guest thread makes, by handle: sleeps and yields, priorities and cores,
//! waits on handles and their cancel, closing handles, checkpoints, and what a thread asks
//! about threads (its own handle, ids, its core, CPU ticks) (`hos_svc_*`, `hos_checkpoint`).
//! The svcs on guest words are in `arbiter`, kernel events in `kernel_event`.
//!
//! Invariant: each call is hos's `svc` call of the same name, after the boundary's checks;
//! like them, each is a checkpoint of the virtual cores first.

use crate::boundary::{self, entry, Error, Out};
use crate::object::{self, hos_handle};
use crate::result::{hos_result, HOS_RESULT_OUT_OF_RANGE};
use hos_rs::os::MAX_WAIT_OBJECTS;
use hos_rs::svc::{self, Handle};

/// The most handles one `hos_svc_wait_synchronization` takes (Horizon's limit).
pub const HOS_MAX_WAIT_HANDLES: i32 = 64;

/// `hos_svc_get_info`'s ThreadTickCount info type (25): a thread's CPU time in 19.2 MHz
/// ticks.
pub const HOS_INFO_TYPE_THREAD_TICK_COUNT: u32 = 25;

/// `hos_svc_get_info`'s RandomEntropy info type (11): one of the runtime's four random words
/// (Horizon's process entropy), drawn from the recorded seed in the deterministic mode.
pub const HOS_INFO_TYPE_RANDOM_ENTROPY: u32 = 11;

/// svcSleepThread: sleeps the calling thread `ns` nanoseconds as a guest sleep. 0, -1 and -2
/// are yields (to the same priority; with migration; to any thread); any other negative value
/// returns at once and is counted (`hos_stats.bad_sleeps`). A guest thread holds no virtual
/// core while it sleeps.
///
/// On a host thread: a host sleep (precise) of the newest runtime not shut down (an OS sleep
/// without one, nothing once it shut down); a yield is the OS's.
#[no_mangle]
pub extern "C" fn hos_svc_sleep_thread(ns: i64) {
    boundary::entry_or((), || svc::sleep_thread(ns));
}

/// Where a kicked guest thread gives its virtual core up, if a better thread waits for it or
/// its time slice is over and an equal one waits; nothing on a host thread. Every hos call
/// is one too; call this at loop heads of code that makes none, or test the word of
/// `hos_thread_kick_flag` inline and call it only when the word is non-zero.
#[no_mangle]
pub extern "C" fn hos_checkpoint() {
    // The hot path of generated code: the panic catch alone, no result to keep.
    if let Err(panic) = std::panic::catch_unwind(svc::checkpoint) {
        boundary::panicked(panic);
    }
}

/// svcGetThreadPriority: the priority of `thread` (`HOS_CURRENT_THREAD`: the calling guest
/// thread) into `*out`: the one it runs at, a priority lent by a lock waiter included.
///
/// On a host thread: as on a guest thread for a thread's handle; `HOS_CURRENT_THREAD` is
/// InvalidHandle (a host thread has no priority).
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; InvalidHandle for a handle that
/// names no thread.
///
/// # Safety
/// `out` is NULL or points to a writable `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_get_thread_priority(
    thread: hos_handle,
    out: *mut i32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        out.write(i32::from(svc::get_thread_priority(Handle(thread))?));
        Ok(())
    })
}

/// svcSetThreadPriority: the waiting or running thread is re-ranked on the virtual cores at
/// once.
///
/// On a host thread: as on a guest thread for a thread's handle; `HOS_CURRENT_THREAD` is
/// InvalidHandle (a host thread's waits always rank at 0).
///
/// Errors: InvalidHandle for a handle that names no thread; InvalidPriority outside 0..=63.
#[no_mangle]
pub extern "C" fn hos_svc_set_thread_priority(thread: hos_handle, priority: i32) -> hos_result {
    entry(|| Ok(svc::set_thread_priority(Handle(thread), priority)?))
}

/// svcGetThreadCoreMask: the ideal core and core mask of `thread` into `*ideal_core` and
/// `*core_mask`.
///
/// On a host thread: as on a guest thread for a thread's handle; `HOS_CURRENT_THREAD` is
/// InvalidHandle (a host thread has no virtual cores).
///
/// Errors: InvalidPointer for a NULL or misaligned out-pointer; InvalidHandle.
///
/// # Safety
/// `ideal_core` and `core_mask` are NULL or point to a writable `int32_t` and `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_get_thread_core_mask(
    thread: hos_handle,
    ideal_core: *mut i32,
    core_mask: *mut u64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (ideal_out, mask_out) = unsafe {
            (
                Out::new(ideal_core, "ideal_core")?,
                Out::new(core_mask, "core_mask")?,
            )
        };
        let (ideal, mask) = svc::get_thread_core_mask(Handle(thread))?;
        ideal_out.write(ideal);
        mask_out.write(mask);
        Ok(())
    })
}

/// svcSetThreadCoreMask: `ideal_core` -3 keeps the current ideal core, -2 takes the process's
/// default, -1 keeps it if the mask allows it.
///
/// On a host thread: as on a guest thread for a thread's handle; `HOS_CURRENT_THREAD` is
/// InvalidHandle.
///
/// Errors: InvalidHandle; InvalidCoreId for a mask of 0, a core past the runtime's cores or
/// an ideal core that is no core; InvalidCombination for an ideal core outside the mask.
#[no_mangle]
pub extern "C" fn hos_svc_set_thread_core_mask(
    thread: hos_handle,
    ideal_core: i32,
    core_mask: u64,
) -> hos_result {
    entry(|| {
        Ok(svc::set_thread_core_mask(
            Handle(thread),
            ideal_core,
            core_mask,
        )?)
    })
}

/// svcWaitSynchronization, its arguments in the kernel's order (libnx's
/// `svcWaitSynchronization(s32 *index, const Handle *handles, s32 count, s64 timeout)`): waits
/// until one of `handles[0..count]` is ready and writes its index to `*index` (the lowest, if
/// several are). `timeout_ns`: negative waits without limit,
/// 0 polls; `count` 0 waits for the timeout or a cancel. Ready means: an event signalled
/// (an auto-clear one is cleared), a semaphore count taken, a queue holding a message (none
/// taken), a thread ended. Mutexes and condition variables cannot be waited for.
///
/// Kernel events are waited on by their readable handle (a wait consumes nothing).
///
/// On a host thread: the wait holds no virtual core; `hos_svc_cancel_synchronization` cannot
/// reach it (a host thread has no handle); it ends with Cancelled when the runtime shuts down;
/// a poll (`timeout_ns` 0) that finds nothing does not make the thread's next sleep an idle
/// poll (host sleeps stay precise).
///
/// Errors: InvalidPointer for a NULL `index`, or a NULL `handles` with a count; OutOfRange for
/// a count below 0 or above `HOS_MAX_WAIT_HANDLES`; InvalidHandle for a handle not open or not
/// waitable (a kernel event's writable side, `HOS_CURRENT_THREAD`); TimedOut; Cancelled once
/// the runtime shuts down, or when `hos_svc_cancel_synchronization` cancels the calling guest
/// thread (a poll, `timeout_ns` 0, is never cancelled); InvalidState for a positive timeout
/// with no runtime alive to time it.
///
/// # Safety
/// `handles` is NULL or points to `count` readable handles; `index` is NULL or points to a
/// writable `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_wait_synchronization(
    index: *mut i32,
    handles: *const hos_handle,
    count: i32,
    timeout_ns: i64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let index = unsafe { Out::new(index, "index") }?;
        let n = usize::try_from(count)
            .ok()
            .filter(|n| *n <= MAX_WAIT_OBJECTS)
            .ok_or_else(|| {
                Error::new(
                    HOS_RESULT_OUT_OF_RANGE,
                    format!("count is {count}: expected 0..={HOS_MAX_WAIT_HANDLES}"),
                )
            })?;
        let list: Vec<Handle> = match n {
            0 => Vec::new(),
            _ => {
                // SAFETY: forwarded from the caller (count readable handles).
                let first = unsafe { boundary::arg(handles, "handles") }?;
                // SAFETY: as above.
                let all = unsafe { std::slice::from_raw_parts(first, n) };
                all.iter().map(|h| Handle(*h)).collect()
            }
        };
        let i = svc::wait_synchronization(&list, timeout_ns)?;
        debug_assert!(i < n, "wait_synchronization gave index {i} of {n}");
        // At most 63: no truncation.
        index.write(i as i32);
        Ok(())
    })
}

/// svcCloseHandle, from any thread: the handle is invalid afterwards (and stays so when its slot is reused);
/// the object lives on while a call in progress uses it. Closing a thread's handle does not
/// stop the thread; once it is closed and the thread has ended (or detached), hos forgets the
/// thread: lock waits still registered against it end with InvalidState.
///
/// Errors: InvalidHandle for a handle that is not open.
#[no_mangle]
pub extern "C" fn hos_svc_close_handle(h: hos_handle) -> hos_result {
    entry(|| object::close(h))
}

/// svcCancelSynchronization: ends the `hos_svc_wait_synchronization` that the guest thread
/// `thread` is in with Cancelled; if it is in none, its next one that would block ends so
/// instead (only that one). Waits of other kinds (sleeps, the svcs on words, nn::os objects)
/// do not take the cancel.
///
/// On a host thread: as on a guest thread (any thread may cancel a guest thread's wait); a
/// host thread's own waits cannot be cancelled so, having no handle.
///
/// Errors: InvalidHandle for a handle that names no thread.
#[no_mangle]
pub extern "C" fn hos_svc_cancel_synchronization(thread: hos_handle) -> hos_result {
    entry(|| Ok(svc::cancel_synchronization(Handle(thread))?))
}

/// The calling guest thread's real handle: the tag the SDK keeps in its thread-local storage
/// and writes into the mutex words it locks (what `hos_thread_spawn` and `hos_thread_attach`
/// gave for it). 0 on a thread that is no guest thread. Never fails.
#[no_mangle]
pub extern "C" fn hos_svc_get_current_thread_handle() -> hos_handle {
    boundary::entry_or(0, || svc::current_thread_handle().0)
}

/// svcGetThreadId: the id of the thread `thread` names (`HOS_CURRENT_THREAD` included) into
/// `*out`; unique within the runtime, and what the diagnostics (`hos_wait_tree`,
/// `hos_guest_states`) name the thread by. On a host thread `HOS_CURRENT_THREAD` is
/// InvalidHandle.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; InvalidHandle for a handle that
/// names no thread.
///
/// # Safety
/// `out` is NULL or points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_get_thread_id(thread: hos_handle, out: *mut u64) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        out.write(svc::get_thread_id(Handle(thread))?);
        Ok(())
    })
}

/// svcGetCurrentProcessorNumber: the virtual core the calling guest thread holds; its ideal
/// core while it holds none (running past the virtual cores by escape); 0 on a thread that is
/// no guest thread. Never fails.
#[no_mangle]
pub extern "C" fn hos_svc_get_current_processor_number() -> i32 {
    boundary::entry_or(0, svc::get_current_processor_number)
}

/// svcGetInfo into `*out`. For `HOS_INFO_TYPE_THREAD_TICK_COUNT`: the CPU time of the thread
/// `thread` names (`HOS_CURRENT_THREAD` included) in 19.2 MHz ticks: all of it for `subtype`
/// `UINT64_MAX`; for a core id 0..=63, all of it if `thread` is the caller and that is the
/// core it holds now (hos does not split a thread's time by core), else 0. For
/// `HOS_INFO_TYPE_RANDOM_ENTROPY`: word `subtype` (0..=3) of the calling thread's runtime's
/// random entropy (the default runtime's on a host thread), `thread` being 0; in the
/// deterministic mode drawn from the run's entropy seed (its selector's, recorded), so a
/// replay's guest reads the same words.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; InvalidEnumValue for any other info
/// type; InvalidCombination for a subtype that is neither `UINT64_MAX` nor 0..=63 (tick
/// count) or over 3 (entropy); InvalidHandle for a handle that names no thread
/// (`HOS_CURRENT_THREAD` on a host thread) or, for entropy, is not 0; InvalidState for
/// entropy with no runtime.
///
/// # Safety
/// `out` is NULL or points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_get_info(
    info_type: u32,
    thread: hos_handle,
    subtype: u64,
    out: *mut u64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        out.write(svc::get_info(info_type, Handle(thread), subtype)?);
        Ok(())
    })
}
