//! The SDK's own synchronization clients, ported from C to Rust line for line: the same
//! atomics on the same words, the svc at the same points, so that tests and benches run what
//! a recompiled game runs on hos's svcs. An LDX..STX pair is one compare-and-swap from the
//! loaded value; an `svcBreak` (the SDK's "cannot happen") is a panic.
//!
//! | file | clients |
//! | --- | --- |
//! | `libnx.rs` | libnx's Mutex, CondVar, RwLock, Barrier, Semaphore (`nx/source/kernel/*.c`) |
//! | `stratosphere.rs` | stratosphère's InternalCriticalSection, InternalConditionVariable, InternalLightEvent (`libstratosphere/source/os/impl/*.os.horizon.*`) |
//!
//! `workload.rs` holds the contended workloads the tests check and `benches/sdk_lock.rs`
//! times on these clients and on std's, as the peer.

#![allow(dead_code)] // each test binary uses a part

pub mod libnx;
pub mod stratosphere;
pub mod workload;

use std::cell::Cell;

/// The calling guest thread's handle, as the SDK reads it from its thread-local storage.
pub fn me() -> u32 {
    thread_local! {
        static ME: Cell<u32> = const { Cell::new(0) };
    }
    ME.with(|me| {
        if me.get() == 0 {
            me.set(hos::svc::current_thread_handle().0);
        }
        me.get()
    })
}

/// Guest priorities the stresses mix: a game's high, usual and low threads.
pub const PRIORITIES: [i32; 4] = [28, 44, 50, 59];

/// Joins every thread, failing (naming the count left) if they have not all ended within
/// `limit`: a lost wakeup shows as a hang, which this turns into a failure.
pub fn join_within<T>(
    handles: Vec<hos::thread::JoinHandle<T>>,
    limit: std::time::Duration,
) -> Vec<T> {
    let end = std::time::Instant::now() + limit;
    while handles.iter().any(|h| !h.thread().is_finished()) {
        let left = handles.iter().filter(|h| !h.thread().is_finished()).count();
        assert!(
            std::time::Instant::now() < end,
            "{left} guest threads still blocked: a lost wakeup"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    handles
        .into_iter()
        .map(|h| h.join().expect("the guest thread did not panic"))
        .collect()
}
