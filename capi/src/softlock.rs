//! The deterministic mode's softlock report from C (`hos::Runtime::det_softlock`,
//! docs/determinism.md section 7): its figures as a size-prefixed plain struct
//! (`hos_det_softlock_get`), and the whole report, the wait-for graph with each thread's
//! last turns, as text (`hos_det_softlock_text`).
//!
//! Invariant: each call reads the last report once; the figures and the text of one report
//! agree, and a report never changes once made (a later one replaces it whole).

use crate::boundary::{self, entry, Versioned};
use crate::result::hos_result;
use crate::runtime::{hos_runtime, text_call};
use hos_rs::det::softlock::{Cause, Softlock};
use std::ffi::c_char;
use std::mem::size_of;

/// `hos_det_softlock.cause`: no softlock was reported (or the mode is off).
pub const HOS_DET_SOFTLOCK_NONE: u32 = 0;
/// `hos_det_softlock.cause`: a deadlock at virtual quiescence (no thread can run, no timer
/// and no post pending).
pub const HOS_DET_SOFTLOCK_DEADLOCK: u32 = 1;
/// `hos_det_softlock.cause`: thread `holder` held the token `held_ms` of wall time without a
/// checkpoint (HOS_DET_WATCHDOG_MS).
pub const HOS_DET_SOFTLOCK_HELD: u32 = 2;

/// What `hos_det_softlock_get` reads. Set `size` to `sizeof(hos_det_softlock)` before the
/// call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_det_softlock {
    /// Set by the caller: `sizeof(hos_det_softlock)`.
    pub size: u32,
    /// One of `HOS_DET_SOFTLOCK_*`.
    pub cause: u32,
    /// Decisions taken when it was found.
    pub decision: u64,
    /// The virtual time then, in nanoseconds.
    pub vt_ns: u64,
    /// `HOS_DET_SOFTLOCK_HELD`: the holder's id (`hos_svc_get_thread_id`); else 0.
    pub holder: u64,
    /// `HOS_DET_SOFTLOCK_HELD`: how long it held the token, in ms of wall time; else 0.
    pub held_ms: u64,
    /// The enrolled threads in the report.
    pub threads: u32,
    /// The cycles of lock holders among them (a lock-order deadlock).
    pub cycles: u32,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_det_softlock {
    const FIRST_SIZE: usize = size_of::<hos_det_softlock>();
}

/// `s` as C reads it.
fn figures(s: &Softlock) -> hos_det_softlock {
    let (cause, holder, held_ms) = match s.cause {
        Cause::Deadlock => (HOS_DET_SOFTLOCK_DEADLOCK, 0, 0),
        Cause::Held { thread, held_ms } => (HOS_DET_SOFTLOCK_HELD, thread, held_ms),
    };
    hos_det_softlock {
        size: size_of::<hos_det_softlock>() as u32,
        cause,
        decision: s.decision,
        vt_ns: s.vt,
        holder,
        held_ms,
        threads: u32::try_from(s.threads.len()).unwrap_or(u32::MAX),
        cycles: u32::try_from(s.cycles.len()).unwrap_or(u32::MAX),
    }
}

/// Reads the figures of the deterministic mode's last softlock into `*out`: `cause`
/// `HOS_DET_SOFTLOCK_NONE` (every field 0) if none was reported or the mode is off. A
/// deadlock is reported once a quiescence; the run then rests, and a host thread's wake
/// (outside the contract) could still end it. Set `out->size` to `sizeof(hos_det_softlock)`
/// first.
///
/// Errors: InvalidPointer for a NULL `rt` or `out`, or a misaligned `out`; InvalidSize for an
/// `out->size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `out->size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hos_det_softlock_get(
    rt: *const hos_runtime,
    out: *mut hos_det_softlock,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let rt = unsafe { boundary::arg(rt, "rt") }?;
        let s = rt.rt.det_softlock().map_or_else(
            || hos_det_softlock {
                size: size_of::<hos_det_softlock>() as u32,
                ..hos_det_softlock::default()
            },
            |s| figures(&s),
        );
        // SAFETY: forwarded from the caller.
        unsafe { boundary::write_sized(out, &s, "out") }
    })
}

/// Prints the deterministic mode's last softlock report into `buf[0..size]` as snprintf does
/// (as much as fits, NUL-terminated, cut on a character boundary), and its whole length in
/// bytes, without the NUL, into `*len`: "" if none was reported. The report is what the log
/// said: the cause, the decision index, the virtual time and the selector, then each
/// enrolled thread ("A (id 2, priority 44, core 0) waits on mutex::Lock 0x..., held by B")
/// with its last turns, then each cycle ("deadlock: cycle A -> B -> A"). `buf` may be NULL
/// when `size` is 0 (a length query).
///
/// Errors: InvalidPointer for a NULL `rt` or `len`, or a NULL `buf` with a size.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `buf` is NULL or points to `size`
/// writable bytes; `len` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_det_softlock_text(
    rt: *const hos_runtime,
    buf: *mut c_char,
    size: usize,
    len: *mut usize,
) -> hos_result {
    // SAFETY: forwarded from the caller.
    unsafe {
        text_call(rt, buf, size, len, |rt| {
            Ok(rt
                .rt
                .det_softlock()
                .map(|s| s.to_string())
                .unwrap_or_default())
        })
    }
}
