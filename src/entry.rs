//! The entry of every svc and nn::os call: what a call does before its own work, and the
//! checkpoint a kicked guest thread gives its virtual core up at.
//!
//! Invariant: a call is counted for the idle-poll rules here and nowhere else, always with a
//! checkpoint after it; a bare checkpoint (a loop head's) is no call. A leaf: the objects
//! (`os/`) and the svcs (`svc/`) both use it, so neither reaches the other for it.

/// A point where a kicked guest thread gives its virtual core up (svc entry, nn::os calls,
/// polled loop headers). Nothing on other threads.
pub fn checkpoint() {
    hos_runtime::internal::checkpoint();
}

/// The entry of an svc or an nn::os call: counted as a call for the idle-poll rules (a loop
/// head's checkpoint is none: docs/design.md section 4), then a checkpoint.
#[inline]
pub(crate) fn entry() {
    hos_runtime::internal::svc_entered();
    checkpoint();
}
