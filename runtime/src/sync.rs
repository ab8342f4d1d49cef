//! The one place sync primitives are imported from, so that loom can swap them.
//!
//! Invariant: runtime code takes atomics, `Arc`, `Mutex` and `thread_local!` from here, never
//! from `std` directly; under `--cfg loom` they are loom's (`Arc` excepted, below) and every
//! model sees them.

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Mutex};
#[cfg(loom)]
pub(crate) use loom::thread_local;
/// std's `Arc` under loom too: loom's has no `Weak`, no `Arc<str>` and no `Wake`, and the
/// models check what the state machines are made of, the atomics and locks.
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Mutex};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// One step of a busy wait: a CPU pause hint, or under loom a yield so the model can progress.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
