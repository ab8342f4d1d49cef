//! Idle pollers: each guest thread's mark of the objects it polled empty, the link from an
//! object to the pollers that sleep on it, and the wait of an idle-poll sleep
//! (docs/design.md section 4, "Idle pollers").
//!
//! Invariant: an idle-poll sleep never returns before its deadline (unless the runtime shuts
//! down), and a readiness of an object it polled is never lost: the sleep is promoted (finished
//! on the precise path, or ended at once past its deadline) whether the object became ready
//! before the sleeper linked itself or after.
//!
//! # Ground rules
//!
//! - A [`PollSite`] belongs to one waiter list of one object; the `hos` crate keeps it beside
//!   the list, under the object's lock, and knows when the list's condition may have come true
//!   (a notify). This crate knows no object: a site is a generation and a list of sleepers.
//! - A thread's marks (the sites it polled empty since its last wait, each with the generation
//!   it saw) live in a thread-local that only the thread itself touches.
//! - Readiness against linking is a Dekker pair: the sleeper counts itself in `linked` (under
//!   the site's lock) and then reads `gen`; the object's side bumps `gen` and then reads
//!   `linked`. A SeqCst fence sits between the write and the read on both sides, so at least
//!   one side sees the other: either the object's side promotes the sleeper, or the sleeper
//!   sees the generation move and promotes itself. (Fences, not SeqCst accesses: the C11 model
//!   orders store-then-load through fences, and loom checks it only that way.)
//! - A sleeper is a fresh [`Sleeper`] each sleep, so a promotion that arrives late (after the
//!   sleep ended) can only leave a token in the thread's parker, which every wait tolerates.
//! - No sleeper is woken under a lock: [`PollSite::promote`] takes them out under the site's
//!   lock and unparks them after.

use crate::parker::Parker;
use crate::policy::{idle_step, IdleStep, Polled};
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{lock, thread_local, Arc, Mutex};
use crate::sys;
use std::cell::RefCell;
use std::collections::VecDeque;

/// The most objects one sleep can be linked to: wait_any's limit. A thread that polled more
/// since its last wait sleeps as if it had polled nothing.
pub(crate) const MAX_MARKS: usize = 64;

/// The pollers of one waiter list of one object (module ground rules).
#[derive(Debug, Default)]
pub struct PollSite {
    /// Times the list's object became ready for a poller.
    gen: AtomicU64,
    /// Sleepers in `sleepers`. # Invariant: equals `sleepers.len()` whenever the lock is free.
    linked: AtomicUsize,
    sleepers: Mutex<VecDeque<Arc<Sleeper>>>,
}

impl PollSite {
    /// A site nobody polled.
    pub fn new() -> Self {
        PollSite {
            gen: AtomicU64::new(0),
            linked: AtomicUsize::new(0),
            sleepers: Mutex::new(VecDeque::new()),
        }
    }

    /// The object became ready for `n` pollers (call it under the object's lock, where the
    /// change happened). `true` when sleepers are linked: the caller then calls
    /// [`PollSite::promote`] with `n` after it has dropped the object's lock.
    pub fn ready(&self, n: usize) -> bool {
        if n == 0 {
            return false;
        }
        // Relaxed (both), with the SeqCst fence between them: the object's half of the Dekker
        // pair (module ground rules); the lock it runs under orders `gen` for the pollers.
        self.gen.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.linked.load(Ordering::Relaxed) > 0
    }

    /// Promotes up to `n` linked sleepers, oldest first; returns how many it took out. Call it
    /// with no lock held.
    pub fn promote(&self, n: usize) -> usize {
        let taken: Vec<Arc<Sleeper>> = {
            let mut list = lock(&self.sleepers);
            let k = n.min(list.len());
            let taken: Vec<_> = list.drain(..k).collect();
            // Relaxed: changed under the lock; `ready` reads it through the fences.
            self.linked.fetch_sub(k, Ordering::Relaxed);
            taken
        };
        for s in &taken {
            s.promote();
        }
        taken.len()
    }

    /// The generation now: what a poll that found nothing saw.
    pub(crate) fn gen(&self) -> u64 {
        // Relaxed: read under the object's lock at a poll, or after the sleeper's fence.
        self.gen.load(Ordering::Relaxed)
    }

    fn link(&self, s: &Arc<Sleeper>) {
        let mut list = lock(&self.sleepers);
        list.push_back(s.clone());
        // Relaxed: the sleeper's half of the Dekker pair, ordered by its fence in `wait`.
        self.linked.fetch_add(1, Ordering::Relaxed);
    }

    fn unlink(&self, s: &Arc<Sleeper>) {
        let mut list = lock(&self.sleepers);
        if let Some(i) = list.iter().position(|x| Arc::ptr_eq(x, s)) {
            list.remove(i);
            // Relaxed: as in `promote`.
            self.linked.fetch_sub(1, Ordering::Relaxed);
        }
    }

    #[cfg(test)]
    /// Sleepers linked now (for tests and models).
    pub(crate) fn linked(&self) -> usize {
        // Relaxed: a reading for tests.
        self.linked.load(Ordering::Relaxed)
    }
}

/// One idle-poll sleep: the sleeping thread's parker and whether work promoted it.
#[derive(Debug)]
struct Sleeper {
    parker: Arc<Parker>,
    promoted: AtomicBool,
}

impl Sleeper {
    /// Marks it promoted and wakes it, once.
    fn promote(&self) {
        // AcqRel: the sleeper's Acquire load of the flag sees it with the unpark's token.
        if !self.promoted.swap(true, Ordering::AcqRel) {
            self.parker.unpark();
        }
    }

    fn is_promoted(&self) -> bool {
        // Acquire: pairs with `promote`'s swap.
        self.promoted.load(Ordering::Acquire)
    }
}

/// What a thread did since its last wait, as far as idle polling goes.
#[derive(Debug, Default)]
struct Marks {
    /// Sites it polled empty, with the generation each showed (the latest poll's).
    sites: Vec<(Arc<PollSite>, u64)>,
    /// It polled more than [`MAX_MARKS`] sites: none can be trusted to cover its work.
    overflow: bool,
    /// Svc and nn::os calls made (checkpoints), for the blind-poller rule.
    calls: u64,
    /// `calls` when its last guest sleep ended.
    calls_at_sleep: u64,
    /// Short sleeps in a row with no other call between them.
    quiet_sleeps: u32,
}

thread_local! {
    static MARKS: RefCell<Marks> = RefCell::new(Marks::default());
}

/// The calling thread polled `site` (one waiter list of an hos object) and found nothing: its
/// next short sleep, unless it waits first, is an idle poll of that object. Call it under the
/// object's lock. (A host thread's marks are never used: its sleeps are never idle polls.)
pub fn missed(site: &Arc<PollSite>) {
    let gen = site.gen();
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        if let Some(mark) = m.sites.iter_mut().find(|(s, _)| Arc::ptr_eq(s, site)) {
            mark.1 = gen;
        } else if m.sites.len() < MAX_MARKS {
            m.sites.push((site.clone(), gen));
        } else {
            m.overflow = true;
        }
    });
}

/// The calling thread waited, or a poll of an hos object found something: it is no idle
/// poller now.
pub fn clear() {
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        m.sites.clear();
        m.overflow = false;
    });
}

/// The calling thread made an svc or nn::os call (a checkpoint).
#[inline]
pub(crate) fn note_call() {
    MARKS.with(|m| m.borrow_mut().calls += 1);
}

/// What came before the calling thread's guest sleep: the objects it polled empty (taken:
/// the sleep consumes them), or how many short sleeps in a row it made with no other call
/// between them, this one included when `short`.
pub(crate) fn take(short: bool) -> (Polled, Vec<(Arc<PollSite>, u64)>) {
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        let sites = std::mem::take(&mut m.sites);
        let overflow = std::mem::take(&mut m.overflow);
        // At most one call since the last sleep: this sleep's own svc entry.
        let quiet = short && sites.is_empty() && !overflow && m.calls - m.calls_at_sleep <= 1;
        m.quiet_sleeps = if quiet {
            m.quiet_sleeps.saturating_add(1)
        } else {
            0
        };
        let polled = match (sites.is_empty(), overflow) {
            (false, false) => Polled::Objects,
            (_, true) => Polled::Nothing,
            (true, false) => Polled::Quiet(m.quiet_sleeps),
        };
        (polled, sites)
    })
}

/// The calling thread's guest sleep ended (the blind-poller rule counts calls from here).
pub(crate) fn slept() {
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        m.calls_at_sleep = m.calls;
    });
}

/// How an idle-poll wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// At its wake time (the OS timer alone), past the deadline, nothing promoted it.
    Tick,
    /// Work promoted it; `early` if before the deadline (the caller finishes the sleep on the
    /// precise path), else it ended at once.
    Promoted { early: bool },
    /// The runtime shut down.
    ShutDown,
}

/// Waits out one idle-poll sleep on `parker` (the calling thread's): linked to `sites` (each
/// with the generation its poll saw), until `wake_at` on the OS timer alone, or until one of
/// the sites promotes it. Never returns before `deadline` unless promoted early (then the
/// caller finishes the sleep) or `shut_down` says so. Unlinked from every site on return.
///
/// # Blocking
/// Parks the calling thread until `wake_at` (a `sys::now()` value, with the thread's own
/// timer slack), a promotion, or an unpark that `shut_down` then confirms.
pub(crate) fn wait(
    sites: &[(Arc<PollSite>, u64)],
    parker: &Arc<Parker>,
    deadline: u64,
    wake_at: u64,
    shut_down: impl Fn() -> bool,
) -> Woke {
    let me = Arc::new(Sleeper {
        parker: parker.clone(),
        promoted: AtomicBool::new(false),
    });
    for (site, _) in sites {
        site.link(&me);
    }
    // The sleeper's half of the Dekker pair: a readiness since the poll, which the object's
    // side may have missed us for, promotes us now (no unpark: we are awake).
    fence(Ordering::SeqCst);
    if sites.iter().any(|(site, seen)| site.gen() != *seen) {
        // Relaxed: only this thread reads it before the unlinks below.
        me.promoted.store(true, Ordering::Relaxed);
    }
    let woke = loop {
        let shut = shut_down();
        let promoted = me.is_promoted();
        match idle_step(sys::now(), deadline, wake_at, promoted, shut) {
            IdleStep::Park => {
                parker.park(Some(wake_at));
            }
            IdleStep::Precise => break Woke::Promoted { early: true },
            IdleStep::End if shut => break Woke::ShutDown,
            IdleStep::End if promoted => break Woke::Promoted { early: false },
            IdleStep::End => break Woke::Tick,
        }
    };
    for (site, _) in sites {
        site.unlink(&me);
    }
    woke
}

/// The shared ticks idle pollers wake on, and whether two wakes shared one.
#[derive(Debug, Default)]
pub(crate) struct Ticks {
    /// The last tick a poller woke on.
    last: AtomicU64,
}

impl Ticks {
    /// A poller woke on `tick`: `true` if another poller had already woken on it (the wake
    /// was coalesced with that one's).
    pub(crate) fn shared(&self, tick: u64) -> bool {
        // Relaxed: a counter's hint; two pollers racing on one tick count it once or twice.
        self.last.swap(tick, Ordering::Relaxed) == tick
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn marks_are_taken_once_and_cleared_by_a_wait() {
        clear();
        let (a, b) = (Arc::new(PollSite::new()), Arc::new(PollSite::new()));
        missed(&a);
        missed(&b);
        missed(&a);
        let (polled, sites) = take(true);
        assert_eq!(polled, Polled::Objects);
        assert_eq!(sites.len(), 2, "a site polled twice is marked once");
        slept();
        assert_eq!(take(true).0, Polled::Quiet(1), "the marks were taken");
        slept();
        missed(&a);
        clear();
        assert_eq!(take(true).0, Polled::Quiet(2), "a wait cleared them");
        slept();
    }

    #[test]
    fn too_many_marks_are_no_marks() {
        clear();
        let sites: Vec<_> = (0..=MAX_MARKS).map(|_| Arc::new(PollSite::new())).collect();
        sites.iter().for_each(missed);
        assert_eq!(take(true).0, Polled::Nothing);
        slept();
    }

    #[test]
    fn a_call_between_sleeps_breaks_a_quiet_run() {
        clear();
        slept();
        assert_eq!(take(true).0, Polled::Quiet(1));
        slept();
        note_call();
        assert_eq!(take(true).0, Polled::Quiet(2), "the sleep's own svc entry");
        slept();
        note_call();
        note_call();
        assert_eq!(take(true).0, Polled::Quiet(0));
        slept();
        assert_eq!(
            take(false).0,
            Polled::Quiet(0),
            "a long sleep breaks it too"
        );
        slept();
        assert_eq!(
            take(true).0,
            Polled::Quiet(1),
            "counted from the last sleep's end"
        );
        slept();
    }

    #[test]
    fn ready_counts_and_promote_takes_the_oldest() {
        let site = PollSite::new();
        assert!(!site.ready(1), "nobody linked");
        assert!(!site.ready(0));
        assert_eq!(site.gen(), 1, "a ready of 0 pollers is no readiness");
        let (p1, p2) = (Arc::new(Parker::new()), Arc::new(Parker::new()));
        let s1 = Arc::new(Sleeper {
            parker: p1.clone(),
            promoted: AtomicBool::new(false),
        });
        let s2 = Arc::new(Sleeper {
            parker: p2.clone(),
            promoted: AtomicBool::new(false),
        });
        site.link(&s1);
        site.link(&s2);
        assert!(site.ready(1));
        assert_eq!(site.promote(1), 1);
        assert!(s1.is_promoted() && !s2.is_promoted());
        assert!(p1.try_take() && !p2.try_take());
        site.unlink(&s1);
        assert_eq!(
            site.linked(),
            1,
            "unlinking a taken sleeper changes nothing"
        );
        site.unlink(&s2);
        assert_eq!(site.linked(), 0);
        assert_eq!(site.promote(usize::MAX), 0);
    }

    #[test]
    fn a_readiness_before_the_link_promotes_at_once() {
        let site = Arc::new(PollSite::new());
        let seen = site.gen();
        assert!(!site.ready(1));
        let parker = Arc::new(Parker::new());
        let deadline = sys::now() + 1_000_000_000;
        let woke = wait(&[(site.clone(), seen)], &parker, deadline, u64::MAX, || {
            false
        });
        assert_eq!(woke, Woke::Promoted { early: true });
        assert_eq!(site.linked(), 0);
    }

    #[test]
    fn ticks_are_shared_by_the_second_waker() {
        let t = Ticks::default();
        assert!(!t.shared(100));
        assert!(t.shared(100));
        assert!(!t.shared(200));
    }
}
