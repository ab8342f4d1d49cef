//! An object's sleeping pollers: the link from one waiter list of an hos object (or one guest
//! word) to the idle-poll sleeps of the threads that polled it empty, and the wait of such a
//! sleep (docs/design.md section 4, "Idle pollers"). What a thread polled is `poll.rs`.
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
//! - A promotion of a sleeper worse in priority than the guest thread that makes it (where
//!   that thread's runtime defers them, HOS_IDLE_POLL_DEFER) waits in that thread's own list
//!   until it gives its core up or offers it ([`flush_deferred`]) or ends. The sleep's own
//!   wake time bounds the wait: such a readiness comes late at most by the stretch, never lost.

use crate::parker::Parker;
use crate::policy::{idle_step, IdleStep};
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{lock, Arc, Mutex};
use crate::sys;
use std::collections::VecDeque;

/// The pollers of one waiter list of one object, or of one guest word (module ground rules).
#[derive(Debug, Default)]
pub struct PollSite {
    /// Whether it is a guest word's: a plain store can make the word ready without a signal,
    /// which no site sees (docs/design.md section 4).
    word: bool,
    /// Times the list's object became ready for a poller.
    gen: AtomicU64,
    /// Sleepers in `sleepers`. # Invariant: equals `sleepers.len()` whenever the lock is free.
    linked: AtomicUsize,
    sleepers: Mutex<VecDeque<Arc<Sleeper>>>,
}

impl PollSite {
    /// The site of an hos object's waiter list, which every readiness passes through.
    pub fn new() -> Self {
        PollSite::made(false)
    }

    /// The site of a guest word polled by WaitForAddress: SignalToAddress readies it, a
    /// plain store of the guest's does not.
    pub fn word() -> Self {
        PollSite::made(true)
    }

    fn made(word: bool) -> Self {
        PollSite {
            word,
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
    /// with no lock held. `by`: the caller's guest priority where its runtime defers
    /// promotions (`Current::promoter`): a sleeper worse in priority is then promoted when
    /// the caller next gives its core up or offers it ([`flush_deferred`]) or ends, else at
    /// once.
    pub fn promote(&self, n: usize, by: Option<u8>) -> usize {
        let taken: Vec<Arc<Sleeper>> = {
            let mut list = lock(&self.sleepers);
            let k = n.min(list.len());
            let taken: Vec<_> = list.drain(..k).collect();
            // Relaxed: changed under the lock; `ready` reads it through the fences.
            self.linked.fetch_sub(k, Ordering::Relaxed);
            taken
        };
        let k = taken.len();
        for s in taken {
            match (by, s.rank) {
                (Some(by), Some(rank)) if rank > by => s.defer(),
                _ => s.promote(),
            }
        }
        k
    }

    /// Whether it is a guest word's ([`PollSite::word`]).
    pub(crate) fn is_word(&self) -> bool {
        self.word
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

/// The promotions this thread made and holds until it gives its core up (module ground
/// rules); promoted when the thread ends too.
#[derive(Default)]
struct Deferred(Vec<Arc<Sleeper>>);

impl Drop for Deferred {
    fn drop(&mut self) {
        for s in self.0.drain(..) {
            s.promote();
        }
    }
}

std::thread_local! {
    static DEFERRED: std::cell::RefCell<Deferred> = std::cell::RefCell::default();
}

/// Promotes what the calling thread deferred: call it where the thread gives its core up or
/// offers it (a wait's or a sleep's start, after the release; a wait for a core; a yield),
/// with no lock held.
pub(crate) fn flush_deferred() {
    // Taken and dropped here, the list promotes its sleepers; an empty one (every wait of a
    // thread that promoted nothing) is left as it is. `try_with`: a thread whose locals are
    // being torn down has promoted them (the same drop).
    let taken = DEFERRED.try_with(|d| {
        let mut d = d.borrow_mut();
        (!d.0.is_empty()).then(|| std::mem::take(&mut *d))
    });
    drop(taken);
}

/// One idle-poll sleep: the sleeping thread's priority and parker, whether work promoted it,
/// and whether that promotion was deferred.
#[derive(Debug)]
struct Sleeper {
    /// The sleeping guest thread's priority (`None`: not a guest thread, never deferred).
    rank: Option<u8>,
    parker: Arc<Parker>,
    promoted: AtomicBool,
    deferred: AtomicBool,
}

impl Sleeper {
    /// The sleep of the thread of `parker`, at guest priority `rank`: not promoted yet.
    fn new(rank: Option<u8>, parker: Arc<Parker>) -> Arc<Sleeper> {
        Arc::new(Sleeper {
            rank,
            parker,
            promoted: AtomicBool::new(false),
            deferred: AtomicBool::new(false),
        })
    }

    /// Holds its promotion in the calling thread's deferred list (module ground rules).
    fn defer(self: Arc<Self>) {
        // Relaxed: read by the sleeper after the Acquire of `promoted`, which the flush's
        // promotion publishes it with; a sleeper that ends first never reads it.
        self.deferred.store(true, Ordering::Relaxed);
        match DEFERRED.try_with(|d| d.borrow_mut().0.push(self.clone())) {
            Ok(()) => {}
            // The thread is ending: nothing would flush it.
            Err(_) => self.promote(),
        }
    }

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

    /// How a promoted sleep ended (after `is_promoted` read `true`).
    fn promoted_woke(&self, early: bool) -> Woke {
        Woke::Promoted {
            early,
            // Relaxed: `defer`'s store came before the promotion `is_promoted` acquired.
            deferred: self.deferred.load(Ordering::Relaxed),
        }
    }
}

/// How an idle-poll wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// At its wake time (the OS timer alone), past the deadline, nothing promoted it.
    Tick,
    /// Work promoted it; `early` if before the deadline (the caller finishes the sleep on the
    /// precise path), else it ended at once; `deferred` if its promoter held the promotion
    /// until it gave its core up.
    Promoted { early: bool, deferred: bool },
    /// The runtime shut down.
    ShutDown,
}

/// Waits out one idle-poll sleep on `parker` (the calling thread's): linked to `sites` (each
/// with the generation its poll saw), until `wake_at` on the OS timer alone, or until one of
/// the sites promotes it. Never returns before `deadline` unless promoted early (then the
/// caller finishes the sleep) or `shut_down` says so. Unlinked from every site on return.
/// A promotion's unpark claims the sleeper's core (`vcore/claim.rs`); a wake that does not
/// end the sleep (an unpark left from an earlier wait) gives such a claim back by `unclaim`
/// before the sleeper parks again.
///
/// # Blocking
/// Parks the calling thread until `wake_at` (a `sys::now()` value, with the thread's own
/// timer slack), a promotion, or an unpark that `shut_down` then confirms.
pub(crate) fn wait(
    sites: &[(Arc<PollSite>, u64)],
    rank: Option<u8>,
    parker: &Arc<Parker>,
    [deadline, wake_at]: [u64; 2],
    shut_down: impl Fn() -> bool,
    unclaim: impl Fn(),
) -> Woke {
    let me = Sleeper::new(rank, parker.clone());
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
                unclaim();
                parker.park(Some(wake_at));
            }
            IdleStep::Precise => break me.promoted_woke(true),
            IdleStep::End if shut => break Woke::ShutDown,
            IdleStep::End if promoted => break me.promoted_woke(false),
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
    fn ready_counts_and_promote_takes_the_oldest() {
        let site = PollSite::new();
        assert!(!site.ready(1), "nobody linked");
        assert!(!site.ready(0));
        assert_eq!(site.gen(), 1, "a ready of 0 pollers is no readiness");
        let (p1, p2) = (Arc::new(Parker::new()), Arc::new(Parker::new()));
        let (s1, s2) = (
            Sleeper::new(None, p1.clone()),
            Sleeper::new(None, p2.clone()),
        );
        site.link(&s1);
        site.link(&s2);
        assert!(site.ready(1));
        assert_eq!(site.promote(1, None), 1);
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
        assert_eq!(site.promote(usize::MAX, None), 0);
    }

    #[test]
    fn a_readiness_before_the_link_promotes_at_once() {
        let site = Arc::new(PollSite::new());
        let seen = site.gen();
        assert!(!site.ready(1));
        let parker = Arc::new(Parker::new());
        let deadline = sys::now() + 1_000_000_000;
        let woke = wait(
            &[(site.clone(), seen)],
            None,
            &parker,
            [deadline, u64::MAX],
            || false,
            || {},
        );
        assert_eq!(
            woke,
            Woke::Promoted {
                early: true,
                deferred: false
            }
        );
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
