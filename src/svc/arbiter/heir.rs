//! The heir: the lock waiter that the next unlock of a mutex word will hand it to, woken
//! ahead of its hand-off so that it is running, spinning for it, when the hand-off comes.
//!
//! Invariant: the heir's wake changes nothing in the table (the wait stays where it is, its
//! result comes only with its hand-off, by Horizon's rule: best priority, then arrival); it
//! is a hint that the mailbox carries (`mailbox.rs`). So the semantics are the kernel's
//! whatever the spin catches or misses; only who is running at the hand-off changes.
//!
//! Why: Horizon's unlock hands the mutex to its first waiter, who owns it from that moment.
//! A parked waiter owns it while its OS wake runs (microseconds), and everyone who comes
//! meanwhile queues behind it; each of their unlocks is again a hand-off to a parked thread,
//! so once a queue formed every operation costs an OS wake (a convoy). A waiter woken when it
//! becomes the heir (an unlock handed the mutex to the waiter before it; a signal moved a
//! condition-variable waiter onto a held mutex) spends that wake while the mutex is still
//! someone else's, then spins: the hand-off finds it running, owning the mutex no longer than
//! the owner's own work, and those who come meanwhile find it unlocked soon enough
//! (ArbitrateLock's yields) to stay out of the queue, which drains.
//!
//! Which waiter is the heir is decided when the unlock or the signal happens; a better waiter
//! that comes later takes the hand-off as the kernel says, and the heir's spin then misses
//! and it parks again. Only a waiter whose runtime's policy asks for it is woken so
//! (`Party::early`: 3 logical processors or more, and a role that spins; `runtime/src/policy.rs`
//! says what it measured): on 2 processors the heir's wake and spin take the processor its
//! owner needs, and the hand-off comes later than it would to a parked heir.

use super::mailbox::Mailbox;
use crate::result::ResultCode;
#[cfg(not(loom))]
use hos_runtime::internal::{det_now, sys, with_current, Stripe, WaitPolicy};

/// Spin without yielding for this long first: a hand-off by a running owner comes within it.
#[cfg(not(loom))]
const SPIN_ONLY_NS: u64 = 1_000;

/// How one heir's wake ended, as its runtime's stats count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Its spin saw the hand-off come (`heir_caught`).
    Caught,
    /// Its spin gave up first; it parks again (`heir_missed`).
    Missed,
    /// The hand-off came before it ran: it found it at its first look (`heir_late`).
    Late,
}

/// The heir's spin: if the wait of `mail` is marked its mutex's heir, re-reads the mailbox
/// until its result comes or the calling thread's wait-policy spin (HOS_SPIN_US; none in the
/// deterministic mode, where nobody else runs while a thread spins) has passed
/// ([`spin_for`]), takes the result if it came, and counts which came first. Returns the
/// result, if it came.
#[cfg(not(loom))]
pub(crate) fn spin(mail: &Mailbox) -> Option<Result<(), ResultCode>> {
    if !mail.is_heir() {
        return None;
    }
    let ns = with_current(|c| if det_now().is_some() { 0 } else { c.spin().ns });
    if !spin_for(mail, ns) {
        count(Outcome::Missed);
        return None;
    }
    count(Outcome::Caught);
    mail.take().map(|t| t.result)
}

/// Counts one heir's wake in the calling thread's runtime's stats. The heir's own thread
/// counts: the spin its catch or miss, the wait key's take a hand-off that came before it
/// looked (`table::WaitKey::ended`). A wait cancelled while marked counts in none.
#[cfg(not(loom))]
pub(crate) fn count(outcome: Outcome) {
    with_current(|c| {
        if let Some(rt) = c.runtime() {
            let counters = rt.counters();
            Stripe::bump(match outcome {
                Outcome::Caught => &counters.heir_caught,
                Outcome::Missed => &counters.heir_missed,
                Outcome::Late => &counters.heir_late,
            });
        }
    });
}

/// Re-reads the mailbox until its result comes or `ns` have passed; after the first
/// microsecond it yields between reads, so that on an oversubscribed machine the owner it
/// waits for gets the processor. Takes the heir's mark off when it gives up: the next wake
/// is for something else. Returns whether the result is there (it may come between the last
/// read and the mark's removal, which then fails).
#[cfg(not(loom))]
fn spin_for(mail: &Mailbox, ns: u64) -> bool {
    let start = sys::now();
    let end = start.saturating_add(ns);
    loop {
        if mail.has_result() {
            return true;
        }
        let now = sys::now();
        if now >= end {
            break;
        }
        if now - start < SPIN_ONLY_NS {
            std::hint::spin_loop();
        } else {
            sys::yield_now();
        }
    }
    !mail.unmark_heir()
}

/// Under loom, no spin (the models check the table's semantics, which the spin does not
/// touch): the mark is taken off and the heir parks again, unless its result came.
#[cfg(loom)]
pub(crate) fn spin(mail: &Mailbox) -> Option<Result<(), ResultCode>> {
    if mail.is_heir() && !mail.unmark_heir() {
        return mail.take().map(|t| t.result);
    }
    None
}

/// Under loom, no stats.
#[cfg(loom)]
pub(crate) fn count(_outcome: Outcome) {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::mailbox::Taken;
    use super::*;
    use std::sync::Arc;

    /// A hand-off that comes while the heir spins is seen by the spin itself, no wake: the
    /// putter never wakes anyone here, and the spin's length is far past it. The take then
    /// says the hand-off found its heir marked.
    #[test]
    fn a_heir_sees_its_hand_off_while_it_spins() {
        let mail = Arc::new(Mailbox::default());
        mail.mark_heir();
        let putter = {
            let mail = mail.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(2));
                mail.put(Ok(()));
            })
        };
        assert!(spin_for(&mail, 10 * 1_000_000_000));
        putter.join().unwrap();
        let caught = Taken {
            result: Ok(()),
            heir: true,
        };
        assert_eq!(mail.take(), Some(caught));
        assert_eq!(mail.take(), None, "taken once");
    }

    /// A spin that gives up takes the heir's mark off, so the next wake does not spin again,
    /// and a result that comes after it is no heir's.
    #[test]
    fn a_spin_that_gives_up_takes_the_mark_off() {
        let mail = Mailbox::default();
        mail.mark_heir();
        assert!(!spin_for(&mail, 0));
        assert!(!mail.is_heir());
        assert_eq!(spin(&mail), None);
        mail.put(Ok(()));
        let handed = Taken {
            result: Ok(()),
            heir: false,
        };
        assert_eq!(mail.take(), Some(handed));
    }

    /// A spin that gives up while its result comes, too late for its last read: the mark
    /// stays beside the result, and the spin says it is there.
    #[test]
    fn a_result_that_beats_the_marks_removal_is_seen() {
        let mail = Mailbox::default();
        mail.mark_heir();
        mail.put(Ok(()));
        assert!(!mail.unmark_heir(), "the result is there");
        assert!(spin_for(&mail, 0));
        assert_eq!(mail.take().map(|t| t.heir), Some(true));
    }

    /// The future's take, which finds the mark and no result, keeps the mark (the spin comes
    /// after it in the same poll); a result put after it is taken next, beside the mark.
    #[test]
    fn a_take_keeps_the_heirs_mark() {
        let mail = Mailbox::default();
        mail.mark_heir();
        assert_eq!(mail.take(), None);
        assert!(mail.is_heir() && !mail.has_result());
        mail.put(Ok(()));
        assert!(mail.has_result() && !mail.is_heir());
        assert_eq!(mail.take().map(|t| t.heir), Some(true));
        assert!(!mail.has_result() && !mail.is_heir());
    }

    /// A wake of a wait that is no heir (a stale token, a deadline) costs no spin.
    #[test]
    fn a_wait_that_is_no_heir_does_not_spin() {
        let mail = Mailbox::default();
        assert_eq!(spin(&mail), None);
        mail.put(Err(ResultCode::CANCELLED));
        assert_eq!(spin(&mail), None, "a result is the future's own take");
        let cancelled = Taken {
            result: Err(ResultCode::CANCELLED),
            heir: false,
        };
        assert_eq!(mail.take(), Some(cancelled));
    }
}
