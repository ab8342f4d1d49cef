//! The trace from C: writing it to a file, the host's frame marks, a flight dump on request,
//! and each frame's critical path (as `hos_frame_breakdown`s or as text), as
//! `hos::Runtime::{write_trace, frame_mark, dump_flight, critical_path}` give them.
//!
//! Invariant: each call reads the runtime's trace once, at the call, and its outputs are
//! written only once nothing can fail any more; a flight dump is made only after its
//! out-pointers were checked, so a call refused for a bad pointer has written no file.

use crate::boundary::{self, entry, Error, Out, TextOut, Versioned};
use crate::result::{hos_result, HOS_RESULT_INVALID_STATE, HOS_RESULT_IO_ERROR};
use crate::runtime::{hos_runtime, text_call};
use hos_rs::Breakdown;
use std::ffi::c_char;
use std::fmt::Write;
use std::mem::size_of;

/// Writes the trace of `rt` to the file `path` (created or replaced) as Chrome trace-event
/// JSON (open it in ui.perfetto.dev): the full trace since the runtime started if it collects
/// one (HOS_TRACE), else the flight recorder's last events of each thread (HOS_FLIGHT, on by
/// default); a runtime with both off writes a trace of no events.
///
/// Errors: InvalidPointer for a NULL `rt` or `path`; InvalidUtf8 for a path that is not
/// UTF-8; IoError if the file could not be written (`hos_last_error_message` names the path
/// and the OS's error).
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn hos_write_trace(
    rt: *const hos_runtime,
    path: *const c_char,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, path) = unsafe { (boundary::arg(rt, "rt")?, boundary::req_str(path, "path")?) };
        rt.rt.write_trace(path).map_err(|e| {
            Error::new(
                HOS_RESULT_IO_ERROR,
                format!("the trace was not written to {path:?}: {e}"),
            )
        })
    })
}

/// Marks a host frame: call it at each present (from any thread). The trace shows each mark,
/// and each pair of marks is a frame for `hos_critical_path`.
///
/// Errors: InvalidPointer for a NULL `rt`.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed.
#[no_mangle]
pub unsafe extern "C" fn hos_frame_mark(rt: *const hos_runtime) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        unsafe { boundary::arg(rt, "rt") }?.rt.frame_mark();
        Ok(())
    })
}

/// Dumps the flight recorder of `rt` now, with `reason` (NULL: "requested by the host") and
/// the wait tree in the file, into HOS_FLIGHT_DIR, and writes the file's path into
/// `path[0..size]` as snprintf does, its whole length into `*len` (the path is whole when
/// `*len < size`: pass a buffer of PATH_MAX; a second call makes a second dump). `path` may be
/// NULL when `size` is 0.
///
/// Errors: InvalidPointer for a NULL `rt` or `len`, or a NULL `path` with a size (no dump is
/// made then); InvalidUtf8 for a reason that is not UTF-8; InvalidState when no dump was
/// written: the recorder is off (HOS_FLIGHT=0), the runtime wrote its 8 dumps already, or the
/// file could not be written.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `reason` is NULL or NUL-terminated;
/// `path` is NULL or points to `size` writable bytes; `len` is NULL or points to a writable
/// `size_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_dump_flight(
    rt: *const hos_runtime,
    reason: *const c_char,
    path: *mut c_char,
    size: usize,
    len: *mut usize,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, out) = unsafe {
            (
                boundary::arg(rt, "rt")?,
                TextOut::new(path, size, len, "path")?,
            )
        };
        // SAFETY: forwarded from the caller.
        let reason = unsafe { boundary::opt_str(reason, "reason") }?;
        let dumped = rt
            .rt
            .dump_flight(reason.unwrap_or("requested by the host"))
            .ok_or_else(|| {
                Error::new(
                    HOS_RESULT_INVALID_STATE,
                    "no flight dump was written: the recorder is off (HOS_FLIGHT=0), the \
                     runtime wrote its 8 dumps already, or the file could not be written",
                )
            })?;
        out.write(&dumped.to_string_lossy());
        Ok(())
    })
}

/// Where one frame's time went on its critical path (from a frame mark back to the one
/// before it, over the wake edges), in nanoseconds; the parts add up to `frame_ns`. Set
/// `size` of the first element of the array to `sizeof(hos_frame_breakdown)` before
/// `hos_critical_path`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hos_frame_breakdown {
    /// Set by the caller in the first element: `sizeof(hos_frame_breakdown)`.
    pub size: u32,
    /// Padding, 0.
    pub reserved: u32,
    /// The frame's time, mark to mark.
    pub frame_ns: u64,
    /// Guest code on a virtual core (or escaped beside them).
    pub guest_ns: u64,
    /// Waiting for a virtual core.
    pub vcore_wait_ns: u64,
    /// Waiting on objects: from the wake to the waiter's return, or a whole wait nobody woke.
    pub object_wait_ns: u64,
    /// Sleeps, the time asked (a frame limiter's pacing, a guest's sleep).
    pub sleep_ns: u64,
    /// Sleeps, the time past their deadline.
    pub sleep_late_ns: u64,
    /// Host time: a host thread's own code, and the runtime between two states.
    pub host_ns: u64,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_frame_breakdown {
    const FIRST_SIZE: usize = size_of::<hos_frame_breakdown>();
}

fn frame_breakdown(b: &Breakdown) -> hos_frame_breakdown {
    hos_frame_breakdown {
        size: size_of::<hos_frame_breakdown>() as u32,
        reserved: 0,
        frame_ns: b.frame,
        guest_ns: b.guest,
        vcore_wait_ns: b.vcore_wait,
        object_wait_ns: b.object_wait,
        sleep_ns: b.sleep,
        sleep_late_ns: b.sleep_late,
        host_ns: b.host,
    }
}

/// The frames as text: their mean first, then one line each, every part in milliseconds.
fn text(frames: &[Breakdown]) -> String {
    let ms = |ns: u64| ns as f64 / 1e6;
    let line = |b: &Breakdown| {
        let parts: Vec<String> = b
            .parts()
            .iter()
            .map(|(name, ns)| format!("{name} {:.3}", ms(*ns)))
            .collect();
        format!("{:.3} ms: {}", ms(b.frame), parts.join(", "))
    };
    if frames.is_empty() {
        return "critical path: no frames (it needs a full trace, HOS_TRACE, and two frame \
                marks or more)\n"
            .into();
    }
    let mut out = format!(
        "critical path of {} frames, mean {}\n",
        frames.len(),
        line(&Breakdown::mean(frames))
    );
    for (i, b) in frames.iter().enumerate() {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "  frame {}: {}", i + 1, line(b));
    }
    out
}

/// Reads each frame's critical path of `rt` (one per pair of consecutive frame marks, in
/// order) into `out[0..capacity]`, and their number into `*count` (which may exceed
/// `capacity`: call again with a larger array). Set `out[0].size` to
/// `sizeof(hos_frame_breakdown)` first: the elements lie that many bytes apart. `out` may be
/// NULL when `capacity` is 0. None unless the runtime collects a full trace (HOS_TRACE) and
/// the host marked two frames or more (`hos_frame_mark`).
///
/// Errors: InvalidPointer for a NULL `rt` or `count`, or an `out` that is NULL (with a
/// capacity) or misaligned; InvalidSize for an `out[0].size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `capacity`
/// elements of `out[0].size` writable bytes; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hos_critical_path(
    rt: *const hos_runtime,
    out: *mut hos_frame_breakdown,
    capacity: u32,
    count: *mut u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, count) = unsafe { (boundary::arg(rt, "rt")?, Out::new(count, "count")?) };
        let frames: Vec<_> = rt.rt.critical_path().iter().map(frame_breakdown).collect();
        // SAFETY: forwarded from the caller.
        count.write(unsafe { boundary::write_array(out, capacity, &frames, "out") }?);
        Ok(())
    })
}

/// Prints each frame's critical path of `rt` into `buf[0..size]` as snprintf does, and the
/// text's whole length into `*len` (whole when `*len < size`): the frames' mean, then a line
/// per frame ("frame 3: 16.712 ms: guest 9.120, vcore_wait 0.410, object_wait 2.002, sleep
/// 5.000, sleep_late 0.080, host 0.100"), in milliseconds; a line saying why when there are
/// none. `buf` may be NULL when `size` is 0.
///
/// Errors: InvalidPointer for a NULL `rt` or `len`, or a NULL `buf` with a size.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `buf` is NULL or points to `size`
/// writable bytes; `len` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_critical_path_text(
    rt: *const hos_runtime,
    buf: *mut c_char,
    size: usize,
    len: *mut usize,
) -> hos_result {
    // SAFETY: forwarded from the caller.
    unsafe { text_call(rt, buf, size, len, |rt| Ok(text(&rt.rt.critical_path()))) }
}
