//! The one place the nn::os objects import their shared-state primitives from, so that loom
//! can swap them.
//!
//! Invariant: the objects' own state (atomics, the state mutex, per-thread tokens) comes from
//! here, never from `std::sync` directly; under `--cfg loom` they are loom's and every model
//! sees them. `Arc` stays std's (wakers are made from std's `Arc`, as in hos-runtime). Every
//! lock is taken through hos-runtime's one poison-free `lock` (its sync module says why).

pub(crate) use hos_runtime::internal::{lock, wait};
#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Mutex};
#[cfg(loom)]
pub(crate) use loom::thread_local;
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Mutex};
#[cfg(not(loom))]
pub(crate) use std::thread_local;
