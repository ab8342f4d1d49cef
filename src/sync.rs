//! The one place the nn::os objects import their shared-state primitives from, so that loom
//! can swap them.
//!
//! Invariant: the objects' own state (atomics, the state mutex, per-thread tokens) comes from
//! here, never from `std::sync` directly; under `--cfg loom` they are loom's and every model
//! sees them. `Arc` stays std's (wakers are made from std's `Arc`, as in hos-runtime).

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread_local;
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// Locks `m`, taking over a poisoned lock: the objects' state stays consistent across a panic
/// (no method panics while it holds the lock), so poison carries no information here.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
