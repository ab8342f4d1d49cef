//! `hos_det_stats`: the deterministic mode's figures (HOS_DET, docs/determinism.md) as a
//! size-prefixed plain struct, so a C host compares two runs' decision hashes as a Rust host
//! does with `Runtime::det_stats`.
//!
//! Invariant: a read is one snapshot taken under the mode's lock (decisions, hash and virtual
//! time agree); with the mode off every field is 0, `on` included.

use crate::boundary::{self, entry, Versioned};
use crate::result::hos_result;
use crate::runtime::hos_runtime;
use std::mem::size_of;

/// What `hos_det_stats_get` reads. Set `size` to `sizeof(hos_det_stats)` before the call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_det_stats {
    /// Set by the caller: `sizeof(hos_det_stats)`.
    pub size: u32,
    /// 1 while the runtime runs in the deterministic mode (HOS_DET), else 0.
    pub on: u32,
    /// Decisions taken so far.
    pub decisions: u64,
    /// The rolling FNV-1a 64 hash of their witnesses: the same seed and program give the same.
    pub hash: u64,
    /// The virtual time, in nanoseconds.
    pub vt_ns: u64,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_det_stats {
    const FIRST_SIZE: usize = size_of::<hos_det_stats>();
}

/// Reads the deterministic mode's figures into `*out` (all 0 when the mode is off). Set
/// `out->size` to `sizeof(hos_det_stats)` first.
///
/// Errors: InvalidPointer for a NULL `rt` or `out`, or a misaligned `out`; InvalidSize for an
/// `out->size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `out->size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hos_det_stats_get(
    rt: *const hos_runtime,
    out: *mut hos_det_stats,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let rt = unsafe { boundary::arg(rt, "rt") }?;
        let s = rt
            .rt
            .det_stats()
            .map_or_else(hos_det_stats::default, |d| hos_det_stats {
                size: size_of::<hos_det_stats>() as u32,
                on: 1,
                decisions: d.decisions,
                hash: d.hash,
                vt_ns: d.vt,
            });
        let s = hos_det_stats {
            size: size_of::<hos_det_stats>() as u32,
            ..s
        };
        // SAFETY: forwarded from the caller.
        unsafe { boundary::write_sized(out, &s, "out") }
    })
}
