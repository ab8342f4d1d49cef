//! Host events into a deterministic run from C (docs/determinism.md section 5), as a Rust host
//! has them through `Runtime::post`, `post_at` and `next_post`: host threads post, a guest
//! thread of the host (its event pump) takes each post applied.
//!
//! Invariant: a payload crosses the boundary by copy, both ways: `hos_det_post` copies the
//! caller's bytes before it returns, and `hos_det_next_post` copies the post into the caller's
//! buffer (cut to its size, snprintf-style: `len` says the whole length), so no pointer of the
//! host's is kept.

use crate::boundary::{self, entry, Error, Out, Versioned};
use crate::result::{
    hos_result, HOS_RESULT_CANCELLED, HOS_RESULT_INVALID_POINTER, HOS_RESULT_INVALID_STATE,
    HOS_RESULT_TIMED_OUT,
};
use crate::runtime::hos_runtime;
use hos_rs::det::feed::PostError;
use std::mem::size_of;

/// What `hos_det_next_post` took. Set `size` to `sizeof(hos_det_posted)` before the call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_det_posted {
    /// Set by the caller: `sizeof(hos_det_posted)`.
    pub size: u32,
    /// Who posted it (the host's number for a device or service).
    pub source: u32,
    /// When it was due, in virtual nanoseconds.
    pub vt_ns: u64,
    /// Its place among its source's posts in the order applied, from 0.
    pub seq: u64,
    /// The payload's whole length in bytes (more than the buffer's size: the copy was cut).
    pub len: u64,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_det_posted {
    const FIRST_SIZE: usize = size_of::<hos_det_posted>();
}

/// A refused post or take as a result code: Cancelled once the mode stopped (a shutdown),
/// TimedOut for a take's timeout, InvalidState otherwise (the mode off, a replay's live
/// post, a take by a host thread); the message names which.
fn code(e: &PostError) -> Error {
    let code = match e {
        PostError::Stopped => HOS_RESULT_CANCELLED,
        PostError::TimedOut => HOS_RESULT_TIMED_OUT,
        _ => HOS_RESULT_INVALID_STATE,
    };
    Error::new(code, e.to_string())
}

/// The caller's `len` bytes at `data` (NULL allowed when `len` is 0), copied.
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes.
unsafe fn payload(data: *const u8, len: usize) -> boundary::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if data.is_null() {
        return Err(Error::new(
            HOS_RESULT_INVALID_POINTER,
            format!("data is NULL with len {len}"),
        ));
    }
    // SAFETY: `len` readable bytes at `data` (the caller's promise), not NULL.
    Ok(unsafe { std::slice::from_raw_parts(data, len) }.to_vec())
}

/// Posts `len` bytes at `data` from `source`, applied at the next decision of the
/// deterministic mode; `*seq` (if not NULL) gets its number among `source`'s posts. Host
/// threads call it while guests run.
///
/// Errors: InvalidPointer for a NULL `rt`, a NULL `data` with a `len`, or a misaligned `seq`;
/// InvalidState with the mode off or while a recording is replayed (it supplies every post);
/// Cancelled once the mode stopped.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `data` is NULL or points to `len`
/// readable bytes; `seq` is NULL or points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_det_post(
    rt: *const hos_runtime,
    source: u32,
    data: *const u8,
    len: usize,
    seq: *mut u64,
) -> hos_result {
    // SAFETY: forwarded from the caller.
    unsafe { post(rt, source, None, data, len, seq) }
}

/// Posts `len` bytes at `data` from `source`, due at virtual time `vt_ns` (a vsync, an audio
/// period, a GPU fence at submit plus a modelled latency): applied at the first decision at or
/// after it; when nothing else can run the clock jumps to it.
///
/// Errors: as `hos_det_post`.
///
/// # Safety
/// As `hos_det_post`.
#[no_mangle]
pub unsafe extern "C" fn hos_det_post_at(
    rt: *const hos_runtime,
    source: u32,
    vt_ns: u64,
    data: *const u8,
    len: usize,
    seq: *mut u64,
) -> hos_result {
    // SAFETY: forwarded from the caller.
    unsafe { post(rt, source, Some(vt_ns), data, len, seq) }
}

/// `hos_det_post` and `hos_det_post_at`.
///
/// # Safety
/// As `hos_det_post`.
unsafe fn post(
    rt: *const hos_runtime,
    source: u32,
    at: Option<u64>,
    data: *const u8,
    len: usize,
    seq: *mut u64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, bytes) = unsafe { (boundary::arg(rt, "rt")?, payload(data, len)?) };
        boundary::opt_aligned(seq, "seq")?;
        let n = match at {
            Some(vt) => rt.rt.post_at(source, vt, bytes),
            None => rt.rt.post(source, bytes),
        }
        .map_err(|e| code(&e))?;
        if !seq.is_null() {
            // SAFETY: not NULL, aligned (checked), writable (the caller's promise).
            unsafe { Out::new(seq, "seq") }?.write(n);
        }
        Ok(())
    })
}

/// The calling guest thread takes the oldest post applied, waiting at most `timeout_ns` of
/// virtual time (negative: no limit; 0: only a look): its figures into `*out`, its payload
/// into `buf[0..size]` (cut to `size`; `out->len` is the whole length). A host's event pump
/// is a guest thread that loops on it and acts on each post (signals the fence's event,
/// writes the input sample) as guest code.
///
/// Errors: InvalidPointer for a NULL `rt` or `out`, a misaligned `out`, or a NULL `buf` with
/// a `size`; InvalidSize for an `out->size` below the first version's; InvalidState with the
/// mode off or on a thread that is no guest thread of `rt`; TimedOut after `timeout_ns`;
/// Cancelled once the mode stopped (a shutdown ends the wait).
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `out->size`
/// writable bytes; `buf` is NULL or points to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hos_det_next_post(
    rt: *const hos_runtime,
    timeout_ns: i64,
    out: *mut hos_det_posted,
    buf: *mut u8,
    size: usize,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let rt = unsafe { boundary::arg(rt, "rt") }?;
        // SAFETY: forwarded from the caller (checks the pointer and its size).
        unsafe { boundary::read_sized(out, "out") }?;
        if size > 0 && buf.is_null() {
            return Err(Error::new(
                HOS_RESULT_INVALID_POINTER,
                format!("buf is NULL with size {size}"),
            ));
        }
        let post = rt
            .rt
            .next_post(boundary::timeout(timeout_ns))
            .map_err(|e| code(&e))?;
        let n = post.payload.len().min(size);
        if n > 0 {
            // SAFETY: `size` writable bytes at `buf` (not NULL: size > 0), n <= size.
            unsafe { std::ptr::copy_nonoverlapping(post.payload.as_ptr(), buf, n) };
        }
        let s = hos_det_posted {
            size: size_of::<hos_det_posted>() as u32,
            source: post.source,
            vt_ns: post.vt,
            seq: post.seq,
            len: post.payload.len() as u64,
        };
        // SAFETY: forwarded from the caller.
        unsafe { boundary::write_sized(out, &s, "out") }
    })
}
