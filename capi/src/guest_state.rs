//! `hos_guest_state`: what each live guest thread is doing now (running guest code, or
//! waiting on what and for how long), as `hos::Runtime::guest_states` says it: what a host's
//! watchdog names when a run stalls, and what a shutdown reports of the threads that did not
//! leave.
//!
//! Invariant: one element per live guest thread (spawned or attached, its code not returned
//! or it is still giving back what it held), read at one instant under the registry's lock;
//! the fields are the Rust `GuestState`'s, converted field by field.

use crate::boundary::{self, entry, Out, Versioned};
use crate::result::hos_result;
use crate::runtime::hos_runtime;
use hos_rs::internal::nanos;
use hos_rs::{Doing, GuestState};
use std::mem::size_of;

/// `hos_guest_state.doing`: running guest code, or blocked outside the runtime (an OS call, a
/// lock of the host's, a join): nothing the runtime can end.
pub const HOS_DOING_GUEST_CODE: u32 = 0;
/// `hos_guest_state.doing`: blocked in a wait of the runtime (`on` says on what).
pub const HOS_DOING_WAITING: u32 = 1;
/// `hos_guest_state.doing`: its entry returned; it is giving back what it held.
pub const HOS_DOING_LEAVING: u32 = 2;

/// What one live guest thread is doing. Set `size` of the first element of the array to
/// `sizeof(hos_guest_state)` before `hos_guest_states`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hos_guest_state {
    /// Set by the caller in the first element: `sizeof(hos_guest_state)`.
    pub size: u32,
    /// `HOS_DOING_GUEST_CODE`, `HOS_DOING_WAITING` or `HOS_DOING_LEAVING`.
    pub doing: u32,
    /// Its id: what `hos_svc_get_thread_id` gives for its handle.
    pub id: u64,
    /// While waiting: how long it has waited so far; else 0.
    pub waited_ns: u64,
    /// While waiting: what on ("sleep", "mutex", "virtual core", ...), NUL-terminated; else "".
    pub on: [u8; 32],
    /// Its name, NUL-terminated, cut at 63 bytes (on a character boundary).
    pub name: [u8; 64],
}

// SAFETY: repr(C), a u32 size first, integers and bytes only (zero is valid).
unsafe impl Versioned for hos_guest_state {
    const FIRST_SIZE: usize = size_of::<hos_guest_state>();
}

/// `s` as C sees it.
pub(crate) fn guest_state(s: &GuestState) -> hos_guest_state {
    let (doing, on, waited_ns) = match s.doing {
        Doing::GuestCode => (HOS_DOING_GUEST_CODE, "", 0),
        Doing::Waiting { on, waited } => (HOS_DOING_WAITING, on, nanos(waited)),
        Doing::Leaving => (HOS_DOING_LEAVING, "", 0),
    };
    hos_guest_state {
        size: size_of::<hos_guest_state>() as u32,
        doing,
        id: s.id,
        waited_ns,
        on: boundary::c_field(on),
        name: boundary::c_field(&s.name),
    }
}

/// Reads what each live guest thread of `rt` is doing into `out[0..capacity]`, and their
/// number into `*count` (which may exceed `capacity`: call again with a larger array). Set
/// `out[0].size` to `sizeof(hos_guest_state)` first: the elements lie that many bytes apart.
/// `out` may be NULL when `capacity` is 0. What a thread waits on is known without the flight
/// recorder.
///
/// Errors: InvalidPointer for a NULL `rt` or `count`, or an `out` that is NULL (with a
/// capacity) or misaligned; InvalidSize for an `out[0].size` below the first version's.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to `capacity`
/// elements of `out[0].size` writable bytes; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hos_guest_states(
    rt: *const hos_runtime,
    out: *mut hos_guest_state,
    capacity: u32,
    count: *mut u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, count) = unsafe { (boundary::arg(rt, "rt")?, Out::new(count, "count")?) };
        let states: Vec<_> = rt.rt.guest_states().iter().map(guest_state).collect();
        // SAFETY: forwarded from the caller.
        count.write(unsafe { boundary::write_array(out, capacity, &states, "out") }?);
        Ok(())
    })
}
