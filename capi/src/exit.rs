//! svcExitThread from C: `hos_svc_exit_thread`.
//!
//! Invariant: on a guest thread spawned by `hos_thread_spawn` the call does not return: hos's
//! `svc::exit_thread` unwinds from here through the host's frames up to hos's spawner, which
//! ends the thread (its entry's type is `C-unwind` for this). Anywhere else it returns
//! InvalidState through the boundary.

use crate::boundary::{entry, Error};
use crate::result::hos_result;

/// svcExitThread: ends the calling guest thread now, as if its entry had returned: waits on
/// its handle and `hos_thread_join` complete. The unwind passes through the C frames between
/// the entry and this call: they need unwind tables (GCC and Clang make them by default on
/// x86-64 and AArch64 Linux: `-fasynchronous-unwind-tables`); C++ destructors in them run.
///
/// Errors (it returns only then): InvalidState on a thread that is no guest thread of
/// `hos_thread_spawn` (a host thread, or one attached with `hos_thread_attach`: its frames
/// are the host's).
#[no_mangle]
pub extern "C-unwind" fn hos_svc_exit_thread() -> hos_result {
    // Outside the boundary's panic catch, which would stop the unwind.
    let Err(code) = hos_rs::svc::exit_thread();
    entry(|| {
        Err(Error::new(
            code.0,
            "not a guest thread of hos_thread_spawn: only those can exit",
        ))
    })
}
