//! A Horizon handle, the name svc-level code passes around: the vocabulary the handle table,
//! the svcs and the guest threads share (a leaf: it knows nothing of what a handle names).

/// A Horizon handle: a process-wide name for a waitable object or a guest thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle(pub u32);

impl Handle {
    /// No handle (0): what names nothing.
    pub const INVALID: Handle = Handle(0);
    /// The pseudo-handle of the calling thread (CUR_THREAD_HANDLE).
    pub const CURRENT_THREAD: Handle = Handle(0xFFFF_8000);
}
