//! A guest thread's activity: what it does as the runtime last saw it (running, waiting on
//! what since when, ended), which the thread writes at the begin and end of every wait and
//! sleep, and diagnostics (the watchdog, the stuck report, a shutdown's leftovers) and a
//! pause's asker read.
//!
//! Invariant: only the thread itself writes its [`ActivityCell`], so a write is a sequence
//! lock's: the sequence number odd while the fields change, even after, and no
//! read-modify-write, so that a wait pays no locked instruction for its bookkeeping. A reader
//! takes the fields only between two reads of one even number, so it reads one whole
//! activity the thread wrote. Neither orders anything else: a writer that must read after
//! its write is seen (the pause point, `pause.rs`) fences itself. A wait's begin is stamped
//! with the event clock (`sys::ticks()`, a few nanoseconds where `sys::now()` costs tens) and
//! read back as a `sys::now()` value.

use crate::sys;
use crate::trace::event::{label_id, label_text};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// What a guest thread is doing, as the runtime last saw it: what a shutdown reports of a
/// thread that did not leave, and what a watchdog names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Running guest code, or blocked outside the runtime (an OS call, a lock of its own).
    Running,
    /// Blocked in a wait of the runtime: on what (`"sleep"`, `"virtual core"`, an object's
    /// kind) and since when (a `sys::now()` value, mapped from the event clock at each read,
    /// so two reads may differ by its rounding). The wait's text is the trace's label of it:
    /// past the trace's 256 labels in a process, `"?"`.
    Waiting {
        /// What it waits on.
        on: &'static str,
        /// Since when.
        since: u64,
    },
    /// Its code returned or unwound.
    Ended,
}

/// [`ActivityCell::what`] of a running thread.
const RUNNING: u64 = 0;
/// [`ActivityCell::what`] of an ended thread.
const ENDED: u64 = 1;
/// [`ActivityCell::what`] of a waiting thread, less its wait's trace label number.
const WAITING: u64 = 2;

/// One thread's activity, written by that thread alone (module invariant). Std atomics even
/// under loom: bookkeeping, no synchronization point the models check.
#[derive(Debug, Default)]
pub(crate) struct ActivityCell {
    /// Even while no write is under way; each write adds 2.
    seq: AtomicU64,
    /// [`RUNNING`], [`ENDED`], or [`WAITING`] plus the wait's label number.
    what: AtomicU64,
    /// A wait's begin, a `sys::ticks()` value.
    since: AtomicU64,
}

/// An activity as read, with the number of the write that set it: two reads of one wait
/// carry one number, and a later wait a larger one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The activity.
    pub(crate) activity: Activity,
    /// The number of its write.
    pub(crate) write: u64,
}

impl ActivityCell {
    /// Notes a wait on `on` beginning now. Only the cell's thread calls it (module invariant).
    pub(crate) fn wait(&self, on: &'static str) {
        self.write(WAITING + label_id(on), sys::ticks());
    }

    /// Notes the thread running (a wait's end). Only the cell's thread calls it.
    pub(crate) fn run(&self) {
        self.write(RUNNING, 0);
    }

    /// Notes the thread's code returned or unwound. Only the cell's thread calls it.
    pub(crate) fn end(&self) {
        self.write(ENDED, 0);
    }

    fn write(&self, what: u64, since: u64) {
        // Relaxed: only this thread writes `seq`, so it reads its own last write.
        let seq = self.seq.load(Ordering::Relaxed);
        // Relaxed: the fence below orders it before the fields' writes.
        self.seq.store(seq + 1, Ordering::Relaxed);
        // Release: a reader that sees a field's new value sees the odd number after it.
        fence(Ordering::Release);
        // Relaxed: published by the sequence numbers around them.
        self.what.store(what, Ordering::Relaxed);
        self.since.store(since, Ordering::Relaxed);
        // Release: a reader that sees the even number sees the fields written before it.
        self.seq.store(seq + 2, Ordering::Release);
    }

    /// The activity last written whole, and its write's number.
    pub(crate) fn get(&self) -> Reading {
        loop {
            // Acquire: pairs with the writer's closing Release, so the fields are its.
            let before = self.seq.load(Ordering::Acquire);
            // Relaxed: checked by the sequence numbers around them.
            let (what, since) = (
                self.what.load(Ordering::Relaxed),
                self.since.load(Ordering::Relaxed),
            );
            // Acquire: the fields' reads come before the second read of the number, so a
            // write that changed them shows there (pairs with the writer's first fence).
            fence(Ordering::Acquire);
            // Relaxed: ordered by the fence above.
            if before % 2 == 0 && self.seq.load(Ordering::Relaxed) == before {
                let activity = match what {
                    RUNNING => Activity::Running,
                    ENDED => Activity::Ended,
                    label => Activity::Waiting {
                        on: label_text(label - WAITING),
                        since: sys::tick_scale().ns(since),
                    },
                };
                return Reading {
                    activity,
                    write: before / 2,
                };
            }
            std::hint::spin_loop();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Activity, ActivityCell};
    use crate::sys;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn each_activity_reads_back_as_written_with_its_writes_number() {
        let cell = ActivityCell::default();
        assert_eq!(cell.get().activity, Activity::Running);
        assert_eq!(cell.get().write, 0);
        let before = sys::now();
        cell.wait("activity test wait");
        let after = sys::now();
        let seen = cell.get();
        let Activity::Waiting { on, since } = seen.activity else {
            panic!("a wait read as {seen:?}");
        };
        assert_eq!((on, seen.write), ("activity test wait", 1));
        // The event clock read back on `now()`'s scale, within a microsecond of the call.
        assert!(
            (before.saturating_sub(1_000)..=after + 1_000).contains(&since),
            "since {since} outside {before}..={after}"
        );
        assert_eq!(
            cell.get().write,
            seen.write,
            "a second read of one wait numbered apart"
        );
        cell.run();
        assert_eq!(cell.get().activity, Activity::Running);
        cell.end();
        assert_eq!(cell.get().activity, Activity::Ended);
        assert_eq!(cell.get().write, 3);
    }

    /// A reader beside the writer reads only whole activities: never one write's number with
    /// another's wait.
    #[test]
    fn a_reader_beside_the_writer_never_reads_half_a_write() {
        // The writer's n-th round (from 0) is a wait on WAITS[n % 2], write 2n + 1, then a run.
        const WAITS: [&str; 2] = ["activity test even", "activity test odd"];
        let cell = Arc::new(ActivityCell::default());
        let (done, read) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let reader = {
            let (cell, done, read) = (cell.clone(), done.clone(), read.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let seen = cell.get();
                    if let Activity::Waiting { on, .. } = seen.activity {
                        let round = (seen.write - 1) / 2;
                        assert_eq!(on, WAITS[(round % 2) as usize], "a torn read: {seen:?}");
                        read.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        // Until the reader has read 10,000 waits, or 10 s on a machine that keeps it off.
        let end = Instant::now() + Duration::from_secs(10);
        let mut round = 0usize;
        while read.load(Ordering::Relaxed) < 10_000 && Instant::now() < end {
            for _ in 0..1_000 {
                cell.wait(WAITS[round % 2]);
                cell.run();
                round += 1;
            }
        }
        done.store(true, Ordering::Relaxed);
        reader.join().unwrap();
    }
}
