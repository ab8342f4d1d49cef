//! Waiter lists: who waits on an object, in arrival order, and which of them were told.
//!
//! Ground rules: a [`Waiters`] lives inside its object's state mutex and every method runs
//! under that lock. No waker is woken under the lock: `notify` moves wakers into a
//! [`WakeBatch`], which the caller wakes after it has dropped the lock, all in one go.
//!
//! Idle pollers: a list also keeps the runtime's [`PollSite`] of the guest threads that polled
//! it empty and sleep (made at the first such poll). A notify that finds fewer registered
//! waiters than it was asked to tell makes the site ready for the rest, and the batch promotes
//! that many sleeping pollers after the lock is dropped (docs/design.md section 4).
//!
//! # Invariant (no lost notice)
//! An entry is *notified* from the `notify` that picked it until its own future takes it out:
//! on success (the future consumed what it was told about), on a re-poll that finds nothing
//! (someone else consumed it, so there is nothing to pass on), or on drop, where the future
//! passes the notice on to the next waiter ([`Waiters::remove`] says whether it held one).
//! So a notice always ends in a consumer or in another waiter, never in a dropped future.
//!
//! A notified entry stays in the list, marked, except one: a notify that picks the oldest
//! entry while no other is handed takes it out and keeps only its id (`Waiters::handed`),
//! which counts as waiting as the entry did. Why: the list's entries live in a buffer of
//! their own, which the notifier writes last; the woken waiter's re-poll then finds its
//! notice beside the object's lock and flag, on the line its lock took anyway, and does not
//! fetch that buffer too (a parked hand-off's woken side, docs/design.md section 3). A
//! handed waiter whose re-poll finds nothing goes back to the front, where it was.

use hos_runtime::internal::with_current as with_context;
use hos_runtime::internal::{poll_missed, promotions, PollSite};
use std::sync::Arc;
use std::task::Waker;

/// A future's place in one waiter list: empty until its first pending poll.
#[derive(Debug, Default)]
pub struct WaitSlot(Option<u64>);

impl WaitSlot {
    /// An empty slot.
    pub const fn new() -> Self {
        WaitSlot(None)
    }

    /// Whether the slot holds an entry.
    pub(crate) fn is_registered(&self) -> bool {
        self.0.is_some()
    }
}

#[derive(Debug)]
struct Entry {
    id: u64,
    waker: Option<Waker>,
    notified: bool,
}

/// `Waiters::handed` when no entry is handed; never an entry's id.
const NONE: u64 = u64::MAX;

/// The waiters of one object (or of one side of it: a queue has senders and receivers).
///
/// A `Vec` scanned by id, oldest first: waiters are OS threads or host tasks, a handful per
/// object, and arrival order is the order they are told in. 48 bytes, so that an event's
/// flag, lock and list share one cache line (`event.rs`).
#[derive(Debug)]
pub struct Waiters {
    entries: Vec<Entry>,
    next_id: u64,
    /// The id of the oldest waiter, notified and taken out of `entries` (module invariant),
    /// or [`NONE`].
    handed: u64,
    /// The guest threads that polled this list empty and sleep; `None` until the first did.
    site: Option<Arc<PollSite>>,
}

impl Default for Waiters {
    fn default() -> Self {
        Waiters::new()
    }
}

impl Waiters {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        Waiters {
            entries: Vec::new(),
            next_id: 0,
            handed: NONE,
            site: None,
        }
    }

    /// Whether `slot`'s entry is the handed one.
    fn is_handed(&self, slot: &WaitSlot) -> bool {
        slot.0 == Some(self.handed)
    }

    fn find(&mut self, slot: &WaitSlot) -> Option<usize> {
        let id = slot.0?;
        self.entries.iter().position(|e| e.id == id)
    }

    /// Puts the caller in the list (at the back), or refreshes its waker if it is there. A
    /// refreshed entry loses its notice: the caller polled after it and found nothing.
    pub(crate) fn register(&mut self, slot: &mut WaitSlot, waker: &Waker) {
        if self.is_handed(slot) {
            // Back to the front, where it was when it was handed (module invariant).
            self.handed = NONE;
            self.entries.insert(
                0,
                Entry {
                    id: slot.0.expect("a handed slot holds its id"),
                    waker: Some(waker.clone()),
                    notified: false,
                },
            );
            return;
        }
        if let Some(i) = self.find(slot) {
            let e = &mut self.entries[i];
            e.notified = false;
            match &mut e.waker {
                Some(w) if w.will_wake(waker) => {}
                w => *w = Some(waker.clone()),
            }
            return;
        }
        let id = self.next_id;
        self.next_id = match id.wrapping_add(1) {
            NONE => 0,
            next => next,
        };
        self.entries.push(Entry {
            id,
            waker: Some(waker.clone()),
            notified: false,
        });
        slot.0 = Some(id);
    }

    /// Takes the caller's entry out (nothing if it has none); `true` if it held a notice,
    /// which the caller then consumes or passes on.
    pub(crate) fn remove(&mut self, slot: &mut WaitSlot) -> bool {
        if self.is_handed(slot) {
            self.handed = NONE;
            slot.0 = None;
            return true;
        }
        let Some(i) = self.find(slot) else {
            slot.0 = None;
            return false;
        };
        slot.0 = None;
        self.entries.remove(i).notified
    }

    /// Whether the caller's entry holds a notice.
    pub(crate) fn is_notified(&mut self, slot: &WaitSlot) -> bool {
        self.is_handed(slot) || self.find(slot).is_some_and(|i| self.entries[i].notified)
    }

    /// Notifies up to `n` waiters that hold no notice yet, oldest first; the rest of `n` goes
    /// to the sleeping pollers of the list, promoted when `batch` wakes.
    pub(crate) fn notify(&mut self, n: usize, batch: &mut WakeBatch) {
        let mut left = n;
        // The oldest, if it holds no notice, is handed (module invariant).
        if left > 0 && self.handed == NONE && self.entries.first().is_some_and(|e| !e.notified) {
            let e = self.entries.remove(0);
            self.handed = e.id;
            if let Some(w) = e.waker {
                batch.push(w);
            }
            left -= 1;
        }
        for e in self.entries.iter_mut() {
            if left == 0 {
                break;
            }
            if !e.notified {
                e.notified = true;
                if let Some(w) = e.waker.take() {
                    batch.push(w);
                }
                left -= 1;
            }
        }
        if let Some(site) = &self.site {
            let n = promotions(n, n - left);
            if site.ready(n) {
                batch.promote.push((site.clone(), n));
            }
        }
    }

    /// The calling thread polled the list's object and found nothing (a try, or a wait with
    /// a zero timeout): if it is a guest thread, its next short sleep is an idle poll of it.
    pub(crate) fn missed(&mut self) {
        poll_missed(self.site.get_or_insert_with(Default::default));
    }

    /// Notifies every waiter.
    pub(crate) fn notify_all(&mut self, batch: &mut WakeBatch) {
        self.notify(usize::MAX, batch);
    }

    /// Whether nobody waits (a handed waiter waits until it takes its entry out).
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.handed == NONE
    }
}

/// Wakers collected under an object's lock, woken after it is dropped. One waker inline (the
/// common hand-off), the rest in a vector that is only allocated for a broadcast; and the
/// sleeping pollers to promote, by site and count (a vector only allocated when some sleep).
#[derive(Debug, Default)]
pub struct WakeBatch {
    first: Option<Waker>,
    rest: Vec<Waker>,
    promote: Vec<(Arc<PollSite>, usize)>,
}

impl WakeBatch {
    /// An empty batch.
    pub(crate) const fn new() -> Self {
        WakeBatch {
            first: None,
            rest: Vec::new(),
            promote: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, w: Waker) {
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.push(w);
        }
    }

    /// Whether nothing was collected.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none() && self.promote.is_empty()
    }

    /// Wakes everything collected, then promotes the sleeping pollers. Call it with no lock
    /// held.
    pub(crate) fn wake(self) {
        let WakeBatch {
            first,
            rest,
            promote,
        } = self;
        // The common poll collects nothing, the common hand-off one waker: no iterators to
        // build and drop for them (`rest` is only pushed to after `first`).
        if let Some(first) = first {
            hos_runtime::internal::chaos::point();
            first.wake();
            if !rest.is_empty() {
                rest.into_iter().for_each(Waker::wake);
            }
        }
        if !promote.is_empty() {
            for (site, n) in promote {
                site.promote(n, with_context(|c| c.promoter()));
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn notices_go_oldest_first_and_pass_on() {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        let w = Waker::from(c.clone());
        let mut list = Waiters::new();
        let (mut a, mut b) = (WaitSlot::new(), WaitSlot::new());
        list.register(&mut a, &w);
        list.register(&mut b, &w);
        let mut batch = WakeBatch::new();
        list.notify(1, &mut batch);
        batch.wake();
        assert_eq!(c.0.load(Ordering::Relaxed), 1);
        assert!(list.is_notified(&a) && !list.is_notified(&b));
        // `a` leaves with its notice: it passes to `b`.
        assert!(list.remove(&mut a));
        let mut batch = WakeBatch::new();
        list.notify(1, &mut batch);
        batch.wake();
        assert!(list.is_notified(&b));
        // A re-poll that found nothing clears the notice.
        list.register(&mut b, &w);
        assert!(!list.is_notified(&b));
        assert!(!list.remove(&mut b));
        assert!(list.is_empty());
        assert!(!a.is_registered() && !b.is_registered());
    }

    /// The oldest waiter's notice is kept beside the list (module invariant): it counts as
    /// waiting, a second notice goes to the next waiter in place, a handed waiter that found
    /// nothing goes back to the front, and one that leaves passes its notice on.
    #[test]
    fn a_handed_notice_waits_goes_back_to_the_front_and_passes_on() {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        let w = Waker::from(c.clone());
        let mut list = Waiters::new();
        let (mut a, mut b, mut d) = (WaitSlot::new(), WaitSlot::new(), WaitSlot::new());
        list.register(&mut a, &w);
        let mut batch = WakeBatch::new();
        list.notify(1, &mut batch);
        assert!(list.is_handed(&a) && list.entries.is_empty());
        assert!(!list.is_empty(), "a handed waiter still waits");
        list.register(&mut b, &w);
        list.register(&mut d, &w);
        list.notify(1, &mut batch);
        assert!(list.is_handed(&a), "one handed at a time");
        assert!(list.is_notified(&b) && !list.is_notified(&d));
        batch.wake();
        assert_eq!(c.0.load(Ordering::Relaxed), 2);
        // `a` found nothing: back to the front, without its notice, ahead of `b` and `d`.
        list.register(&mut a, &w);
        assert!(!list.is_notified(&a) && list.handed == NONE);
        let order: Vec<_> = list.entries.iter().map(|e| e.id).collect();
        assert_eq!(order, [a.0.unwrap(), b.0.unwrap(), d.0.unwrap()]);
        // `b` leaves with its notice: it goes to `a`, the oldest without one, handed.
        assert!(list.remove(&mut b));
        let mut batch = WakeBatch::new();
        list.notify(1, &mut batch);
        assert!(list.is_handed(&a));
        // `a` leaves with it: it passes to `d`.
        assert!(list.remove(&mut a));
        list.notify(1, &mut batch);
        assert!(list.is_handed(&d));
        assert!(list.remove(&mut d));
        assert!(list.is_empty());
    }

    /// A re-registration with another waker (a task polled from another executor) keeps the
    /// new one: the notice wakes it, not the old.
    #[test]
    fn a_refreshed_entry_keeps_the_newer_waker() {
        let (old, new) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        let mut list = Waiters::new();
        let mut a = WaitSlot::new();
        list.register(&mut a, &Waker::from(old.clone()));
        list.register(&mut a, &Waker::from(new.clone()));
        let mut batch = WakeBatch::new();
        list.notify(1, &mut batch);
        batch.wake();
        assert_eq!(old.0.load(Ordering::Relaxed), 0);
        assert_eq!(new.0.load(Ordering::Relaxed), 1);
    }

    /// A notice of none tells nobody; a notice of all tells every waiter, the oldest handed.
    #[test]
    fn notify_tells_as_many_as_asked() {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        let w = Waker::from(c.clone());
        let mut list = Waiters::new();
        let mut slots = [WaitSlot::new(), WaitSlot::new(), WaitSlot::new()];
        for slot in &mut slots {
            list.register(slot, &w);
        }
        let mut batch = WakeBatch::new();
        list.notify(0, &mut batch);
        assert!(batch.is_empty() && list.handed == NONE);
        assert!(slots.iter().all(|s| !list.is_notified(s)));
        list.notify_all(&mut batch);
        assert!(list.is_handed(&slots[0]));
        assert!(slots.iter().all(|s| list.is_notified(s)));
        batch.wake();
        assert_eq!(c.0.load(Ordering::Relaxed), 3);
    }
}
