//! A deterministic run checked against a reference from C, as a Rust host checks it with
//! `Runtime::det_divergence` and `Runtime::det_verify`: the first divergence of a replay
//! (HOS_DET=replay:PATH) as figures and as text, and `verify`, a program run twice and
//! compared witness by witness.
//!
//! Invariant: a read is one snapshot of the run's first divergence, which never changes once
//! found (`det::journal`); with none (or the mode off) every figure is 0 and the text empty.

use crate::boundary::{self, entry, Error, TextOut, Versioned};
use crate::config::hos_config;
use crate::result::{hos_result, HOS_RESULT_INVALID_POINTER, HOS_RESULT_INVALID_STATE};
use crate::runtime::{hos_runtime, text_call};
use hos_rs::det::verifier::Divergence;
use hos_rs::{Runtime, VerifyError};
use std::ffi::{c_char, c_void};
use std::mem::size_of;

/// What `hos_det_divergence_get` reads. Set `size` to `sizeof(hos_det_divergence)` first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_det_divergence {
    /// Set by the caller: `sizeof(hos_det_divergence)`.
    pub size: u32,
    /// 1 if the run left its reference, else 0 (and every field below is 0).
    pub diverged: u32,
    /// The decision at which it was seen.
    pub decision: u64,
    /// Its virtual time, in nanoseconds.
    pub vt_ns: u64,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_det_divergence {
    const FIRST_SIZE: usize = size_of::<hos_det_divergence>();
}

impl hos_det_divergence {
    fn of(d: Option<&Divergence>) -> hos_det_divergence {
        hos_det_divergence {
            size: size_of::<hos_det_divergence>() as u32,
            diverged: u32::from(d.is_some()),
            decision: d.map_or(0, |d| d.decision),
            vt_ns: d.map_or(0, |d| d.vt),
        }
    }
}

/// Reads where the deterministic run left the recording it replays (HOS_DET=replay:PATH) into
/// `*out`: all 0 while it follows it (or without a reference). A replay is reported, never
/// stopped: the host decides what to do. Its end (fewer decisions, or a final hash that
/// differs) is checked at the shutdown: read after `hos_runtime_shutdown`.
///
/// Errors: InvalidPointer for a NULL `rt` or `out`, or a misaligned `out`; InvalidSize for an
/// `out->size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `out->size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hos_det_divergence_get(
    rt: *const hos_runtime,
    out: *mut hos_det_divergence,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let rt = unsafe { boundary::arg(rt, "rt") }?;
        let s = hos_det_divergence::of(rt.rt.det_divergence().as_ref());
        // SAFETY: forwarded from the caller.
        unsafe { boundary::write_sized(out, &s, "out") }
    })
}

/// Prints the run's first divergence into `buf[0..size]` as snprintf does, and its whole
/// length into `*len`: the decision, its virtual time, what the recording expected (the
/// witness, the pick, the check hash or the end) and the actual witness. Empty with none.
///
/// Errors: InvalidPointer for a NULL `rt` or `len`, or a NULL `buf` with a size.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `buf` is NULL or points to `size`
/// writable bytes; `len` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_det_divergence_text(
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
                .det_divergence()
                .map_or_else(String::new, |d| d.to_string()))
        })
    }
}

/// What `hos_det_verify` found. Set `size` to `sizeof(hos_det_verify_report)` first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_det_verify_report {
    /// Set by the caller: `sizeof(hos_det_verify_report)`.
    pub size: u32,
    /// 0: the two runs agree witness by witness.
    pub diverged: u32,
    /// Each run's decisions, first then second.
    pub decisions: [u64; 2],
    /// Each run's rolling witness hash.
    pub hash: [u64; 2],
    /// Where they first differ (when `diverged`): the decision and its virtual time.
    pub divergence: hos_det_divergence,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_det_verify_report {
    const FIRST_SIZE: usize = size_of::<hos_det_verify_report>();
}

/// A verify's program: starts the guest threads on `rt` and returns when they are done.
/// `rt` is the run's runtime: do not shut it down or free it (verify does).
pub type hos_det_program =
    Option<unsafe extern "C-unwind" fn(rt: *mut hos_runtime, arg: *mut c_void)>;

/// `verify`: runs `program(rt, arg)` twice, each time in a fresh runtime built from `cfg`
/// (which must set HOS_DET), shuts each down after it, and compares the two runs witness by
/// witness: the figures into `*out`, and the first difference as text into `buf[0..size]`
/// (snprintf-style, `*len` its whole length; empty when they agree). A host that breaks the
/// contract (a host thread that signals a guest on wall time) is named at the first decision
/// it changed.
///
/// Errors: InvalidPointer for a NULL `cfg`, `program`, `out` or `len`, a misaligned `out`, or
/// a NULL `buf` with a size; InvalidSize for an `out->size` below the first version's;
/// InvalidValue or InvalidState for a runtime that does not build (as `hos_runtime_new`), or
/// InvalidState for one not in the deterministic mode.
///
/// # Safety
/// `cfg` is NULL or from `hos_config_new`, not freed; `program` is NULL or a function as
/// described; `out` is NULL or points to `out->size` writable bytes; `buf` is NULL or points
/// to `size` writable bytes; `len` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_det_verify(
    cfg: *const hos_config,
    program: hos_det_program,
    arg: *mut c_void,
    out: *mut hos_det_verify_report,
    buf: *mut c_char,
    size: usize,
    len: *mut usize,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (cfg, text) = unsafe {
            boundary::read_sized(out, "out")?;
            (
                boundary::arg(cfg, "cfg")?,
                TextOut::new(buf, size, len, "buf")?,
            )
        };
        let program = program
            .ok_or_else(|| Error::new(HOS_RESULT_INVALID_POINTER, "program is NULL".to_string()))?;
        let verified = Runtime::det_verify(
            || cfg.builder().build(),
            |rt| {
                let run = Box::into_raw(Box::new(hos_runtime::from(rt.clone())));
                // SAFETY: the host's function, given a live runtime it must not free; `arg`
                // is the caller's.
                unsafe { program(run, arg) };
                // SAFETY: made by Box::into_raw above, not freed by the program (contract).
                let run = unsafe { Box::from_raw(run) };
                run.shutdown(None);
            },
        )
        .map_err(|e| match e {
            VerifyError::Build(e) => crate::runtime::build_error(e),
            e => Error::new(HOS_RESULT_INVALID_STATE, e.to_string()),
        })?;
        let d = verified.divergence.as_ref();
        let s = hos_det_verify_report {
            size: size_of::<hos_det_verify_report>() as u32,
            diverged: u32::from(d.is_some()),
            decisions: verified.runs.map(|r| r.decisions),
            hash: verified.runs.map(|r| r.hash),
            divergence: hos_det_divergence::of(d),
        };
        text.write(&d.map_or_else(String::new, ToString::to_string));
        // SAFETY: forwarded from the caller.
        unsafe { boundary::write_sized(out, &s, "out") }
    })
}
