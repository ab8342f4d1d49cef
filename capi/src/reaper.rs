//! The OS threads of the guest threads spawned through C, from their spawn until they are
//! reaped: joined once they have ended, or let go by their runtime's shutdown.
//!
//! Invariant: each spawned thread's [`JoinHandle`] sits here, tagged with its runtime, until
//! one of three things takes it out: `hos_thread_join` seeing the thread end (its OS thread
//! is joined at once), a spawn, join or close finding it ended (joined too), or its runtime's
//! shutdown (which joined or detached every OS thread of the runtime already). A `JoinHandle`
//! holds the thread's record, which `hos_stats_threads` and the wait tree list while it
//! lives: so a thread that ended is not listed once it is reaped and its handle closed.
//! Joins happen outside the lock; each joins a thread that has returned (only its exit is
//! left to wait for).

use hos_rs::internal::lock;
use hos_rs::thread::JoinHandle;
use std::sync::Mutex;

/// A runtime's identity here: the address of its `hos_runtime`, which lives (and so is
/// unique) from its boot until its free, and its shutdown comes before its free.
pub(crate) type RuntimeTag = usize;

/// The spawned threads not yet reaped, with their runtime.
static SPAWNED: Mutex<Vec<(RuntimeTag, JoinHandle<()>)>> = Mutex::new(Vec::new());

fn take(pick: impl Fn(RuntimeTag, &JoinHandle<()>) -> bool) -> Vec<JoinHandle<()>> {
    let mut spawned = lock(&SPAWNED);
    let (taken, kept) = std::mem::take(&mut *spawned)
        .into_iter()
        .partition(|(rt, j)| pick(*rt, j));
    *spawned = kept;
    taken.into_iter().map(|(_, j)| j).collect()
}

fn join_all(ended: Vec<JoinHandle<()>>) {
    for j in ended {
        // It has returned: this join waits for its OS thread's exit only.
        let _ = j.join();
    }
}

/// Keeps a new guest thread of the runtime `rt`, reaping those that have ended meanwhile.
pub(crate) fn keep(rt: RuntimeTag, thread: JoinHandle<()>) {
    reap_ended();
    lock(&SPAWNED).push((rt, thread));
}

/// Joins every kept thread that has ended (the one `hos_thread_join` saw end among them).
pub(crate) fn reap_ended() {
    join_all(take(|_, j| j.thread().is_finished()));
}

/// Lets go of the threads of the runtime `rt`, which its shutdown joined or detached.
pub(crate) fn forget(rt: RuntimeTag) {
    // Dropped, not joined: their OS threads were taken by the shutdown (a straggler's runs on
    // detached).
    drop(take(|of, _| of == rt));
}
