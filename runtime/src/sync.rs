//! The one place sync primitives are imported from, so that loom can swap them.
//!
//! Invariant: runtime code takes atomics and `Mutex` from here, never from `std::sync`
//! directly; under `--cfg loom` they are loom's and every model sees them. `Arc` stays std's
//! everywhere: wakers need `std::sync::Arc`, and no model is about reference counts.

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Mutex};
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Mutex};

/// One step of a busy wait: a CPU pause hint, or under loom a yield so the model can progress.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
