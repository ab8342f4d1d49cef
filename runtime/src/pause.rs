//! Pausing a guest thread (svcSetThreadActivity; a debugger's stop, a save state): a pause is
//! asked of the thread, and the thread takes it at its next pause point.
//!
//! # Invariant (no guest code runs once a pause has stopped its thread)
//! A pause is *asked* under [`Pause`]'s lock, which sets the pause bit of the thread's kick
//! word, so that generated code's inline test sends it to its checkpoint. The thread *takes*
//! it at a pause point: every checkpoint, the end of every runtime wait and sleep, and every
//! virtual core it takes (the runtime calls them; `Runtime::pause_point`). There it gives
//! its core back, notes `PAUSED` as its activity and parks until the pause is lifted or the
//! runtime shuts down. The asker waits until the thread is *stopped*: its activity is a wait
//! (parked at the pause point, or in a runtime wait, from which it meets a pause point before
//! guest code), or it ended.
//!
//! Why a stopped thread runs no guest code until resumed: the thread writes its activity
//! (`activity.rs`), fences, and then reads the pause bit at the end of every wait; the asker
//! sets the bit, fences, and then reads the activity. Of two such fenced pairs one sees the
//! other's write. If the asker's read sees a wait, either the thread has not ended it yet,
//! and the read of the bit after its end's fence sees the bit, so its pause point stops it;
//! or the asker read the wait before the end's write, and then the thread's read of the bit
//! comes after the asker's fence, which comes after the bit was set. Why no stop is missed:
//! a wait's begin is not fenced (a wait pays for its bookkeeping only at its end), so a
//! thread may begin a wait without seeing the bit, and the asker may read it running; the
//! asker looks again every millisecond (`Runtime::wait_paused`), and a thread that sees the
//! bit as its activity changes tells it at once. The asker's waits check and sleep under this
//! lock, and a notify takes it, so no notify falls between.
//!
//! In the deterministic mode the token keeps the rule instead (`Token::set_paused`): a paused
//! thread is no candidate for the token, so only the holder can run guest code, and it gives
//! the token up at its next checkpoint or yield (`Runtime::checkpoint_kicked`), noting
//! `PAUSED`; any other thread has stopped at once. A holder that gives the token up tells no
//! asker: its next look finds it.

use crate::sync::{lock, wait};
use crate::vcore::Seat;
use std::sync::{Condvar, Mutex};

/// What a paused thread's activity says it waits on.
pub const PAUSED: &str = "pause";

/// One guest thread's pause: whether one is asked, and the askers waiting for it to stop.
/// Std's lock and condition variable even under loom: bookkeeping, as the thread's activity.
#[derive(Debug, Default)]
pub(crate) struct Pause {
    /// Whether a pause is asked. # Invariant: equal to the kick word's pause bit outside this
    /// lock; both change only under it.
    asked: Mutex<bool>,
    /// Notified when the thread may have stopped, or the pause was lifted (a shutdown lifts
    /// every pause).
    changed: Condvar,
}

impl Pause {
    /// Asks a pause of the thread whose seat is `seat`; `false` if one is asked already.
    pub(crate) fn ask(&self, seat: &Seat) -> bool {
        let mut asked = lock(&self.asked);
        if *asked {
            return false;
        }
        *asked = true;
        seat.ask_pause(true);
        true
    }

    /// Lifts the pause asked of the thread whose seat is `seat`; `false` if none was. The
    /// caller then unparks the thread.
    pub(crate) fn lift(&self, seat: &Seat) -> bool {
        let mut asked = lock(&self.asked);
        if !*asked {
            return false;
        }
        *asked = false;
        seat.ask_pause(false);
        self.changed.notify_all();
        true
    }

    /// Whether a pause is asked (under the lock: the truth, not the kick word's hint).
    pub(crate) fn is_asked(&self) -> bool {
        *lock(&self.asked)
    }

    /// Tells the askers waiting for a stop to look again (the thread's activity changed).
    pub(crate) fn notify(&self) {
        let _asked = lock(&self.asked);
        self.changed.notify_all();
    }

    /// Waits while a pause is asked and `stopped` says no, until `deadline` (a `sys::now()`
    /// value; `None`: no limit). `true` once `stopped` says yes or the pause was lifted;
    /// `false` at the deadline.
    pub(crate) fn wait_stopped(&self, stopped: impl Fn() -> bool, deadline: Option<u64>) -> bool {
        let mut asked = lock(&self.asked);
        loop {
            if !*asked || stopped() {
                return true;
            }
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_sub(crate::sys::now()) {
                    Some(ns) if ns > 0 => Some(std::time::Duration::from_nanos(ns)),
                    _ => return false,
                },
            };
            asked = wait(&self.changed, asked, left);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sys;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// 20 ms.
    const SOON: u64 = 20_000_000;

    /// An asker whose thread never stops waits until its deadline, not less; one whose
    /// pause is not asked, or whose thread has stopped, returns at once.
    #[test]
    fn a_wait_for_a_stop_lasts_until_its_deadline() {
        let (pause, seat) = (Pause::default(), Seat::default());
        assert!(pause.wait_stopped(|| false, Some(0)), "no pause asked");
        assert!(pause.ask(&seat));
        assert!(!pause.ask(&seat), "asked already");
        assert!(pause.is_asked());
        assert!(pause.wait_stopped(|| true, Some(0)), "stopped");
        let start = sys::now();
        assert!(!pause.wait_stopped(|| false, Some(start + SOON)));
        assert!(
            sys::now() >= start + SOON,
            "it gave up {} ns early",
            start + SOON - sys::now()
        );
        assert!(pause.lift(&seat));
        assert!(!pause.lift(&seat), "lifted already");
        assert!(!pause.is_asked());
    }

    /// A notify (the thread's activity changed) and a lift each end an asker's wait before
    /// its deadline: the one with `true` once the thread stopped, the lift with `true`.
    #[test]
    fn a_notify_or_a_lift_ends_an_askers_wait() {
        let (pause, seat) = (Arc::new(Pause::default()), Seat::default());
        assert!(pause.ask(&seat));
        let stopped = Arc::new(AtomicBool::new(false));
        for lift in [false, true] {
            let asker = {
                let (pause, stopped) = (pause.clone(), stopped.clone());
                // SeqCst: a test's flag.
                let stopped = move || stopped.load(Ordering::SeqCst);
                std::thread::spawn(move || {
                    pause.wait_stopped(stopped, Some(sys::now() + 500 * SOON))
                })
            };
            std::thread::sleep(std::time::Duration::from_millis(5));
            if lift {
                assert!(pause.lift(&seat));
            } else {
                // SeqCst: a test's flag.
                stopped.store(true, Ordering::SeqCst);
                pause.notify();
            }
            let start = sys::now();
            assert!(asker.join().unwrap(), "lift {lift}: ended by its deadline");
            assert!(
                sys::now() - start < 250 * SOON,
                "lift {lift}: ended only by its deadline"
            );
            // SeqCst: a test's flag.
            stopped.store(false, Ordering::SeqCst);
        }
    }
}
