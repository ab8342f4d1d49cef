//! A condition-variable waiter's mutex word, lent to the arbiter for the length of its wait:
//! a signal takes the mutex for the waiter, from the signalling thread, as the kernel does
//! (the waiters bit it sets and the owner it queues the waiter against are decided at the
//! signal, in priority order, not when the waiter next runs).
//!
//! The other file of hos where `unsafe` is allowed (with `sys/linux.rs` in hos-runtime): safe
//! Rust cannot lend a reference held by a blocked thread to whichever thread signals it.
//!
//! # Invariant
//! A [`GuestWord`] is made only by [`Arbiter::wait_condvar`] (below),
//! whose caller borrows the word for the whole call and blocks in it until its wait has left
//! the table (on every path: completion, deadline, shutdown, and unwinding through the wait
//! future's drop); the table drops the `GuestWord` no later than the wait's entry.
#![allow(unsafe_code)]

use super::{Arbiter, Caller, Limit};
use crate::result::ResultCode;
use crate::sync::atomic::AtomicU32;
use std::ops::Deref;
use std::ptr::NonNull;

impl Arbiter {
    /// svcWaitProcessWideKeyAtomic: releases `mutex`, waits on `key`, and returns owning
    /// `mutex` (success) or not (any error). `poll`: a zero timeout.
    ///
    /// # Blocking
    /// As [`Arbiter::block`].
    pub(crate) fn wait_condvar(
        &self,
        me: &Caller,
        mutex: &AtomicU32,
        key: &AtomicU32,
        tag: u32,
        poll: bool,
        limit: impl Limit,
    ) -> Result<(), ResultCode> {
        self.block(
            "WaitProcessWideKeyAtomic",
            key as *const AtomicU32 as usize,
            limit,
            |t, fx| {
                // SAFETY: the table holds the lent word only while the wait registered here is in
                // it, and `block` takes that wait out before it returns, on every path (the wait's
                // drop does on unwinding), while `mutex` is borrowed for this whole call.
                let mutex = unsafe { GuestWord::lend(mutex) };
                t.wait_condvar(me, mutex, key, tag, poll, fx).map(Some)
            },
        )
    }
}

/// The mutex word of a condition-variable waiter, lent to the table for the length of the
/// wait: a signal takes the mutex for the waiter, from another thread, as the kernel does.
#[derive(Debug)]
pub(crate) struct GuestWord(NonNull<AtomicU32>);

// SAFETY: it only hands out `&AtomicU32`, which is `Sync`; `lend`'s contract keeps it valid.
unsafe impl Send for GuestWord {}

impl GuestWord {
    /// Lends `word` to the table.
    ///
    /// # Safety
    /// The result (and the table entry holding it) must be dropped before `word`'s borrow
    /// ends.
    pub(super) unsafe fn lend(word: &AtomicU32) -> Self {
        GuestWord(NonNull::from(word))
    }
}

impl Deref for GuestWord {
    type Target = AtomicU32;

    fn deref(&self) -> &AtomicU32 {
        // SAFETY: `lend`'s contract: the word outlives this value.
        unsafe { self.0.as_ref() }
    }
}
