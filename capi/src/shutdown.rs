//! What the last shutdown of a runtime did, from C (`hos::ShutdownReport`): how long it took,
//! how many guest threads it joined, and the ones that did not leave (detached), as counts,
//! as `hos_guest_state`s and as the text the shutdown logged.
//!
//! Invariant: the report is the one `hos_runtime_shutdown` (or `hos_runtime_free`'s own
//! shutdown) kept when it returned; it does not change until the next shutdown, so a length
//! query and the read that follows it see the same text.

use crate::boundary::{self, entry, Error, Out, Versioned};
use crate::guest_state::{guest_state, hos_guest_state};
use crate::result::{hos_result, HOS_RESULT_INVALID_STATE};
use crate::runtime::{hos_runtime, text_call};
use hos_rs::internal::nanos;
use hos_rs::ShutdownReport;
use std::ffi::c_char;
use std::mem::size_of;

/// What the last shutdown of a runtime did. Set `size` to `sizeof(hos_shutdown_report)`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hos_shutdown_report {
    /// Set by the caller: `sizeof(hos_shutdown_report)`.
    pub size: u32,
    /// Guest threads whose OS thread it joined.
    pub joined: u32,
    /// Guest threads that had not left when it returned (its timeout passed): detached, each
    /// named by `hos_runtime_shutdown_stragglers`. 0 for a clean shutdown.
    pub stragglers: u32,
    /// Padding, 0.
    pub reserved: u32,
    /// From its call to its return.
    pub elapsed_ns: u64,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_shutdown_report {
    const FIRST_SIZE: usize = size_of::<hos_shutdown_report>();
}

/// The last shutdown's report of `rt`, or InvalidState before the first.
fn last(rt: &hos_runtime) -> boundary::Result<ShutdownReport> {
    rt.report().ok_or_else(|| {
        Error::new(
            HOS_RESULT_INVALID_STATE,
            "the runtime has not shut down yet (hos_runtime_shutdown)",
        )
    })
}

/// Reads what the last shutdown of `rt` did into `*out`. Call it after `hos_runtime_shutdown`
/// (before `hos_runtime_free`).
///
/// Errors: InvalidPointer for a NULL `rt` or `out`, or a misaligned `out`; InvalidSize for an
/// `out->size` below the first version's; InvalidState before the runtime shut down.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `out->size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hos_runtime_shutdown_report(
    rt: *const hos_runtime,
    out: *mut hos_shutdown_report,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let report = last(unsafe { boundary::arg(rt, "rt") }?)?;
        let r = hos_shutdown_report {
            size: size_of::<hos_shutdown_report>() as u32,
            joined: u32::try_from(report.joined).unwrap_or(u32::MAX),
            stragglers: u32::try_from(report.stragglers.len()).unwrap_or(u32::MAX),
            reserved: 0,
            elapsed_ns: nanos(report.elapsed),
        };
        // SAFETY: forwarded from the caller.
        unsafe { boundary::write_sized(out, &r, "out") }
    })
}

/// Reads the guest threads that did not leave in the last shutdown of `rt` (what each was
/// doing when it returned) into `out[0..capacity]`, and their number into `*count` (which may
/// exceed `capacity`). Set `out[0].size` to `sizeof(hos_guest_state)` first. `out` may be NULL
/// when `capacity` is 0.
///
/// Errors: InvalidPointer for a NULL `rt` or `count`, or an `out` that is NULL (with a
/// capacity) or misaligned; InvalidSize for an `out[0].size` below the first version's;
/// InvalidState before the runtime shut down.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `capacity`
/// elements of `out[0].size` writable bytes; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hos_runtime_shutdown_stragglers(
    rt: *const hos_runtime,
    out: *mut hos_guest_state,
    capacity: u32,
    count: *mut u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, count) = unsafe { (boundary::arg(rt, "rt")?, Out::new(count, "count")?) };
        let states: Vec<_> = last(rt)?.stragglers.iter().map(guest_state).collect();
        // SAFETY: forwarded from the caller.
        count.write(unsafe { boundary::write_array(out, capacity, &states, "out") }?);
        Ok(())
    })
}

/// Prints the last shutdown's report of `rt` into `buf[0..size]` as snprintf does, and its
/// whole length into `*len` (whole when `*len < size`): "shutdown in 1.2ms: 6 guest threads
/// joined, none left behind", or the threads that did not leave, a line each with what it
/// was doing. `buf` may be NULL when `size` is 0.
///
/// Errors: InvalidPointer for a NULL `rt` or `len`, or a NULL `buf` with a size;
/// InvalidState before the runtime shut down.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `buf` is NULL or points to `size`
/// writable bytes; `len` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_runtime_shutdown_report_text(
    rt: *const hos_runtime,
    buf: *mut c_char,
    size: usize,
    len: *mut usize,
) -> hos_result {
    // SAFETY: forwarded from the caller.
    unsafe { text_call(rt, buf, size, len, |rt| Ok(last(rt)?.to_string())) }
}
