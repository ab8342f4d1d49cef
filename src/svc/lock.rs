//! svcArbitrateLock/Unlock (0x1A/0x1B) and svcWaitProcessWideKeyAtomic/SignalProcessWideKey
//! (0x1C/0x1D): the kernel half of the SDK's mutexes and condition variables, on guest words.
//!
//! A mutex word holds 0 (free), the owner's tag (locked), or the owner's tag with
//! [`WAITERS`] set (locked, with waiters maybe in the kernel). Guest code takes and releases
//! a free or waiter-less lock with its own atomics and calls these only to wait or to hand
//! the lock over. A condition-variable key word is the kernel's hint: 1 while waiters may
//! be there, 0 once a signal found none left.
//!
//! Invariant: a lock is handed over by the arbiter only (the unlocker writes the next
//! owner's tag before the next owner runs), and a waiter returns with success only owning
//! the mutex; a lock waiter is registered against the owner the word named, which inherits
//! its priority until it unlocks.
//!
//! Before it queues its caller, ArbitrateLock gives the processor away up to
//! [`YIELDS_BEFORE_WAIT`] times, re-reading the word after each, and returns at once (success)
//! if the word no longer names the owner with waiters: the answer the kernel gives a call
//! that comes that much later, so every outcome is one the console can show (the owner
//! inherits the caller's priority from the queueing on, as from that later call). Why: an
//! unlock hands the lock to its first queued waiter, and a queued waiter is parked, so once
//! waiters queue behind a busy lock every lock operation becomes a hand-off to a thread that
//! must be woken, and the unlocker's next lock queues behind it (a convoy: 8 threads x 100k
//! operations took 1.5-4.4 s instead of 14-90 ms on 2 processors, in about half the runs).
//! A caller that yields lets a preempted owner run and unlock, and stays out of the queue, so
//! the queue forms more rarely (not never: a holder preempted for longer than the yields still
//! leaves one). Yields, not the wait policy's spin: with more threads than processors the
//! spinners take the processors from the owner (a spin of 20 us there made the same run
//! 5-44 s).
//!
//! Once a queue formed, a caller that would join it at no better priority than its best
//! waiter waits outside it instead, until the word is left free with no lock waiter (or
//! [`OUTSIDE`] passed: then it queues), and returns success, the kernel's answer to a call
//! that came at that moment (the arbiter's `table/drain.rs` says why nobody can tell). So the
//! queue drains, and a convoy ends within a few hand-offs instead of lasting as long as the
//! threads loop: on 2 processors, 8 threads x 100k operations, no run of 50 parked more than
//! 213 times (the build without: convoys of 5,800-38,900 parks in 6 of 50 runs).

use super::arbiter::{caller_id, locking_caller, resolve, Arbiter, Limit};
use super::arbitration::WAITERS;
use super::handle::Handle;
use crate::entry::entry;
use crate::os::{Limits, Timeout};
use crate::result::ResultCode;
use crate::sync::atomic::{AtomicU32, Ordering};
use hos_runtime::internal::sys;
use std::cell::Cell;
use std::task::Waker;
use std::time::Duration;

/// How many times ArbitrateLock yields the processor, re-reading the word, before it queues
/// its caller (module doc). Measured on 2 processors, 8 threads x 100k lock operations, 10
/// runs each: 1 yield 15-70 ms, 4 yields 39-79 ms (none: 14 ms, or 1.5-4.4 s in a convoy).
const YIELDS_BEFORE_WAIT: u32 = 4;

/// How long ArbitrateLock waits outside a queue that drains before it joins it (module doc):
/// far longer than a queue of a few hand-offs takes to drain, short against a frame.
const OUTSIDE: Duration = Duration::from_millis(1);

/// svcArbitrateLock (0x1A): waits for the mutex word `addr`, which guest code found held by
/// `owner` and marked with [`WAITERS`], until an unlock hands it over with this thread's
/// `tag` written in it. Returns at once, with success, if the word is no longer
/// `owner | WAITERS` (the owner unlocked meanwhile): the caller reloads the word and retries,
/// as the SDK does. While it waits, `owner` runs at this thread's priority if that is better.
///
/// # Errors
/// InvalidHandle if the word matched but `owner` names no guest thread (a pseudo-handle
/// neither); Cancelled once the runtime shuts down. No timeout: the wait is for the owner.
///
/// # Blocking
/// First yields the processor a few times (the module doc says why), keeping its virtual
/// core; then through the runtime's `block_on`, where a guest thread holds no virtual core
/// while it waits: outside the queue while it drains, for at most 1 ms, else in it.
///
/// ```
/// use hos::svc::{self, Handle};
/// use std::sync::atomic::AtomicU32;
/// let word = AtomicU32::new(0x1234); // held by 0x1234, no waiters bit: nothing to wait for
/// assert_eq!(svc::arbitrate_lock(Handle(0x1234), &word, 0x5678), Ok(()));
/// ```
pub fn arbitrate_lock(owner: Handle, addr: &AtomicU32, tag: u32) -> Result<(), ResultCode> {
    let me = locking_caller()?;
    if unlocked_while_yielding(owner, addr) {
        return Ok(());
    }
    let at = addr as *const AtomicU32 as usize;
    let arbiter = Arbiter::global();
    // Outside the queue while it drains, for at most OUTSIDE (the table's drain.rs), then in
    // it; a wait in the queue itself has no limit but shutdown.
    let outside = Cell::new(false);
    let limit = Outside {
        outside: &outside,
        drain: Limits::for_timeout(Timeout::After(OUTSIDE)),
        queue: Limits::for_timeout(Timeout::Never),
    };
    let r = arbiter.block("ArbitrateLock", at, limit, |t, fx| {
        let r = t.lock_or_wait_outside(&me, owner.0, addr, tag, resolve, fx);
        // A wait that waits for no owner is outside.
        outside.set(matches!(&r, Ok(Some(k)) if t.lock_owner(k).is_none()));
        r
    });
    if r != Err(ResultCode::TIMED_OUT) {
        return r;
    }
    arbiter.block(
        "ArbitrateLock",
        at,
        Limits::for_timeout(Timeout::Never),
        |t, fx| t.lock(&me, owner.0, addr, tag, resolve, fx),
    )
}

/// Yields the processor up to [`YIELDS_BEFORE_WAIT`] times; `true` as soon as the word at
/// `addr` no longer holds `owner | WAITERS` (the owner unlocked meanwhile: ArbitrateLock's
/// early success), `false` if it still does after the last yield.
fn unlocked_while_yielding(owner: Handle, addr: &AtomicU32) -> bool {
    // Acquire: the kernel's read of the word; what the unlocker published before its store
    // is seen by the caller, which reloads the word and retries.
    let unlocked = || addr.load(Ordering::Acquire) != owner.0 | WAITERS;
    unlocked()
        || (0..YIELDS_BEFORE_WAIT).any(|_| {
            sys::yield_now();
            unlocked()
        })
}

/// The limit of ArbitrateLock's first wait: OUTSIDE if it waits outside the queue, else
/// none but shutdown's.
struct Outside<'a> {
    outside: &'a Cell<bool>,
    drain: Limits,
    queue: Limits,
}

impl Limit for Outside<'_> {
    fn check(&mut self, waker: &Waker) -> Option<ResultCode> {
        if self.outside.get() {
            self.drain.check(waker)
        } else {
            self.queue.check(waker)
        }
    }
}

/// svcArbitrateUnlock (0x1B): hands the mutex word `addr` to the best thread waiting for it
/// from this thread (priority, then arrival), writing its tag (with [`WAITERS`] if others
/// still wait), or writes 0 if none waits. Like the kernel, it does not check that the
/// caller held the word.
///
/// # Errors
/// None on hos (the console answers a word it cannot write with InvalidCurrentMemory).
pub fn arbitrate_unlock(addr: &AtomicU32) -> Result<(), ResultCode> {
    entry();
    let me = caller_id();
    Arbiter::global().run(|t, fx| t.unlock(me, addr, fx));
    Ok(())
}

/// svcWaitProcessWideKeyAtomic (0x1C): releases the mutex word `mutex` as
/// [`arbitrate_unlock`] does, marks the condition-variable word `key` with 1, and waits on
/// `key` until a [`signal_process_wide_key`] gives this thread the mutex back (its `tag`
/// written in the word). `timeout_ns`: negative waits without limit, 0 only releases.
///
/// # Errors
/// TimedOut at the timeout (a zero timeout at once): the mutex is **not** held again, as on
/// the console (libnx and the SDK lock it again themselves); InvalidState if a signal found
/// the mutex word naming a thread that does not exist (not held); Cancelled once the
/// runtime shuts down (not held).
///
/// # Blocking
/// As [`arbitrate_lock`]: for the signal, then for the mutex if it was held then.
pub fn wait_process_wide_key_atomic(
    mutex: &AtomicU32,
    key: &AtomicU32,
    tag: u32,
    timeout_ns: i64,
) -> Result<(), ResultCode> {
    let me = locking_caller()?;
    let timeout = Timeout::from_ns(timeout_ns);
    let limit = Limits::for_timeout(timeout);
    let poll = timeout == Timeout::Poll;
    Arbiter::global().wait_condvar(&me, mutex, key, tag, poll, limit)
}

/// svcSignalProcessWideKey (0x1D): wakes up to `count` threads waiting on the
/// condition-variable word `key` (`count <= 0`: all), best priority first. Each takes its
/// mutex if the mutex word is free, or else sets [`WAITERS`] in it and waits for its owner's
/// unlock. Writes 0 to `key` once nobody waits on it.
pub fn signal_process_wide_key(key: &AtomicU32, count: i32) {
    entry();
    Arbiter::global().signal_key(key, count, resolve);
}
