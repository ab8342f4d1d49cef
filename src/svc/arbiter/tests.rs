//! The arbiter's table driven step by step: hand-off order, what each operation writes to
//! the words, priority inheritance and its chains, and how waits end.

use super::table::{Effects, Move, Party, Table, WaitKey};
use crate::result::ResultCode;
use crate::svc::arbitration::{ArbitrationType, SignalType, WAITERS};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

mod entries;
mod heirs;
mod waiting;

type Word = Arc<AtomicU32>;

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// A waker that counts its wakes.
struct Count(AtomicU32);
impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counting waker and its count.
fn counting() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicU32::new(0)));
    (c.clone(), Waker::from(c))
}

fn wakes(c: &Count) -> u32 {
    c.0.load(Ordering::SeqCst)
}

/// A table of threads known by id (their tag is their id), with the effects of the last
/// operation.
struct Harness {
    t: Table<u32, Word>,
    fx: Effects<u32>,
    threads: HashMap<u32, u8>,
    /// The threads whose lock waits are never woken ahead of their hand-off (`Party::early`
    /// off); every other is.
    late: Vec<u32>,
    waker: Waker,
}

fn word(v: u32) -> Word {
    Arc::new(AtomicU32::new(v))
}

/// Looks a tag up among `threads`, as the handle table would.
fn resolver(threads: &HashMap<u32, u8>) -> impl Fn(u32) -> Option<Party<u32>> + '_ {
    |h| {
        threads.get(&h).map(|&priority| Party {
            id: h,
            priority,
            r: h,
            early: true,
        })
    }
}

/// Effects that note the waits moved to another owner (as while a trace records).
fn noting() -> Effects<u32> {
    Effects {
        note_moves: true,
        ..Effects::default()
    }
}

fn addr(w: &Word) -> usize {
    Arc::as_ptr(w) as usize
}

fn get(w: &Word) -> u32 {
    w.load(Ordering::SeqCst)
}

impl Harness {
    fn new(threads: &[(u32, u8)]) -> Self {
        Harness {
            t: Table::new(),
            fx: noting(),
            threads: threads.iter().copied().collect(),
            late: Vec::new(),
            waker: Waker::from(Arc::new(Noop)),
        }
    }

    fn me(&self, id: u32) -> Party<u32> {
        Party {
            id,
            priority: self.threads[&id],
            r: id,
            early: !self.late.contains(&id),
        }
    }

    /// `id` waits for the lock `w` it found held by `owner` (with WAITERS set by the caller).
    fn lock(&mut self, id: u32, owner: u32, w: &Word) -> Result<Option<WaitKey>, ResultCode> {
        self.fx = noting();
        let me = self.me(id);
        let r = self
            .t
            .lock(&me, owner, w, id, resolver(&self.threads), &mut self.fx);
        self.t.check();
        r
    }

    /// As [`Harness::lock`], waiting outside a queue it would join at no better priority.
    fn lock_outside(
        &mut self,
        id: u32,
        owner: u32,
        w: &Word,
    ) -> Result<Option<WaitKey>, ResultCode> {
        self.fx = noting();
        let me = self.me(id);
        let r =
            self.t
                .lock_or_wait_outside(&me, owner, w, id, resolver(&self.threads), &mut self.fx);
        self.t.check();
        r
    }

    fn unlock(&mut self, id: u32, w: &Word) {
        self.fx = noting();
        self.t.unlock(id, w, &mut self.fx);
        self.t.check();
    }

    fn poll(&mut self, k: &WaitKey) -> Option<Result<(), ResultCode>> {
        let r = self.t.poll(k, &self.waker);
        self.t.check();
        r
    }

    fn cancel(&mut self, k: &WaitKey, code: ResultCode) -> Result<(), ResultCode> {
        self.fx = noting();
        let r = self.t.cancel(k, code, &mut self.fx);
        self.t.check();
        r
    }

    fn wait_condvar(
        &mut self,
        id: u32,
        m: &Word,
        key: &Word,
        poll: bool,
    ) -> Result<WaitKey, ResultCode> {
        self.fx = noting();
        let me = self.me(id);
        let r = self
            .t
            .wait_condvar(&me, m.clone(), key, id, poll, &mut self.fx);
        self.t.check();
        r
    }

    fn signal_condvar(&mut self, key: &Word, count: i32) {
        self.fx = noting();
        let resolve = resolver(&self.threads);
        self.t.signal_condvar(key, count, resolve, &mut self.fx);
        self.t.check();
    }

    fn wait_address(&mut self, id: u32, w: &Word, v: i32) -> WaitKey {
        self.fx = noting();
        let me = self.me(id);
        let k = self
            .t
            .wait_address(&me, w, ArbitrationType::WaitIfEqual, v, false)
            .expect("waits");
        self.t.check();
        k
    }

    fn lent(&self, id: u32) -> Option<Option<u8>> {
        self.fx
            .lend
            .iter()
            .rev()
            .find(|(r, _)| *r == id)
            .map(|(_, p)| *p)
    }
}

#[test]
fn a_lock_goes_to_the_best_waiter_then_the_longest() {
    let mut h = Harness::new(&[(1, 44), (2, 40), (3, 30), (4, 30)]);
    let m = word(1 | WAITERS);
    let b = h.lock(2, 1, &m).unwrap().unwrap();
    let c = h.lock(3, 1, &m).unwrap().unwrap();
    let d = h.lock(4, 1, &m).unwrap().unwrap();
    assert_eq!(
        h.t.effective(1),
        Some(30),
        "the owner ranks at its best waiter's priority"
    );
    h.unlock(1, &m);
    assert_eq!(
        get(&m),
        3 | WAITERS,
        "priority 30 first, the earlier of two; others remain"
    );
    assert_eq!(h.poll(&c), Some(Ok(())));
    assert_eq!((h.poll(&b), h.poll(&d)), (None, None));
    assert_eq!(
        h.lent(1),
        Some(None),
        "the old owner gets its own priority back"
    );
    assert_eq!(h.t.effective(1), None, "and is forgotten");
    h.unlock(3, &m);
    assert_eq!(get(&m), 4 | WAITERS);
    assert_eq!(h.poll(&d), Some(Ok(())));
    h.unlock(4, &m);
    assert_eq!(get(&m), 2, "the last waiter: no WAITERS bit");
    assert_eq!(h.poll(&b), Some(Ok(())));
    h.unlock(2, &m);
    assert_eq!(get(&m), 0);
}

#[test]
fn a_lock_checks_the_word_before_the_owner() {
    let mut h = Harness::new(&[(1, 44)]);
    let free = word(5);
    let me = h.me(1);
    let nobody = |_: u32| -> Option<Party<u32>> { panic!("looked the owner up") };
    let r = h.t.lock(&me, 5, &free, 1, nobody, &mut h.fx);
    assert!(
        matches!(r, Ok(None)),
        "the word is not owner | WAITERS: success at once"
    );
    let ghost = word(7 | WAITERS);
    assert_eq!(h.lock(1, 7, &ghost).err(), Some(ResultCode::INVALID_HANDLE));
    assert_eq!(get(&ghost), 7 | WAITERS, "untouched");
}

#[test]
fn an_unlock_finds_only_the_waiters_registered_against_its_caller() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let m = word(1 | WAITERS);
    let b = h.lock(2, 1, &m).unwrap().unwrap();
    h.unlock(3, &m);
    assert_eq!(
        get(&m),
        0,
        "a stranger's unlock writes 0, as the kernel's does"
    );
    assert_eq!(h.poll(&b), None, "and hands nothing over");
    h.unlock(1, &m);
    assert_eq!((get(&m), h.poll(&b)), (2, Some(Ok(()))));
}

#[test]
fn inheritance_goes_up_the_chain_and_comes_back() {
    // L (59) holds m1; M (44) holds m2 and waits for m1; H (28) waits for m2.
    let (l, mid, hi) = (1, 2, 3);
    let mut h = Harness::new(&[(l, 59), (mid, 44), (hi, 28)]);
    let (m1, m2) = (word(l | WAITERS), word(mid | WAITERS));
    let km = h.lock(mid, l, &m1).unwrap().unwrap();
    assert_eq!(h.lent(l), Some(Some(44)));
    let kh = h.lock(hi, mid, &m2).unwrap().unwrap();
    assert_eq!((h.t.effective(mid), h.t.effective(l)), (Some(28), Some(28)));
    assert_eq!((h.lent(mid), h.lent(l)), (Some(Some(28)), Some(Some(28))));
    // H gives up (its timeout): both fall back, L to what M still lends.
    assert_eq!(
        h.cancel(&kh, ResultCode::TIMED_OUT),
        Err(ResultCode::TIMED_OUT)
    );
    assert_eq!((h.lent(mid), h.lent(l)), (Some(None), Some(Some(44))));
    assert_eq!(
        get(&m2),
        mid | WAITERS,
        "a cancel leaves the word to its owner"
    );
    h.unlock(l, &m1);
    assert_eq!((get(&m1), h.poll(&km)), (mid, Some(Ok(()))));
    assert_eq!(h.lent(l), Some(None));
    assert_eq!(h.t.effective(l), None);
}

#[test]
fn an_owners_own_priority_change_is_taken_in() {
    let mut h = Harness::new(&[(1, 50), (2, 40)]);
    let m = word(1 | WAITERS);
    let _k = h.lock(2, 1, &m).unwrap().unwrap();
    assert_eq!(h.t.effective(1), Some(40));
    h.t.set_base(1, 30, &mut h.fx);
    h.t.check();
    assert_eq!(
        h.t.effective(1),
        Some(30),
        "its own priority is now the better"
    );
    h.t.set_base(1, 60, &mut h.fx);
    h.t.check();
    assert_eq!(h.t.effective(1), Some(40), "the waiter's again");
}

#[test]
fn a_re_ranked_waiter_goes_to_the_back_of_its_new_priority() {
    let mut h = Harness::new(&[(1, 40), (2, 40), (3, 40)]);
    let w = word(0);
    let (a, b, c) = (
        h.wait_address(1, &w, 0),
        h.wait_address(2, &w, 0),
        h.wait_address(3, &w, 0),
    );
    h.t.set_base(2, 30, &mut h.fx);
    h.t.set_base(1, 30, &mut h.fx);
    let mut fx = Effects::default();
    h.t.signal_address(&w, SignalType::Signal, 0, 1, &mut fx)
        .unwrap();
    assert_eq!(
        (h.poll(&b), h.poll(&a), h.poll(&c)),
        (Some(Ok(())), None, None)
    );
    h.t.signal_address(&w, SignalType::Signal, 0, 1, &mut fx)
        .unwrap();
    assert_eq!((h.poll(&a), h.poll(&c)), (Some(Ok(())), None));
}

#[test]
fn a_condvar_wait_releases_the_mutex_and_marks_the_key() {
    let mut h = Harness::new(&[(1, 44), (2, 44)]);
    let (m, key) = (word(1 | WAITERS), word(0));
    let b = h.lock(2, 1, &m).unwrap().unwrap();
    let a = h.wait_condvar(1, &m, &key, false).unwrap();
    assert_eq!(
        (get(&m), get(&key)),
        (2, 1),
        "handed to the lock waiter; key marked"
    );
    assert_eq!(h.poll(&b), Some(Ok(())));
    // B signals while it holds the mutex: A waits for B now, marking the word.
    h.signal_condvar(&key, 1);
    assert_eq!(
        (get(&m), get(&key)),
        (2 | WAITERS, 0),
        "nobody left on the key"
    );
    assert_eq!(h.poll(&a), None);
    h.unlock(2, &m);
    assert_eq!((get(&m), h.poll(&a)), (1, Some(Ok(()))));
}

/// Horizon's hand-off for a signalled condvar waiter: queued on the mutex at the signal, it
/// ranks before a thread of its priority that comes to the mutex later, gets the mutex at the
/// unlock (its tag written before anyone runs), and a newcomer after the unlock finds it held.
#[test]
fn a_signalled_waiter_gets_the_mutex_before_a_newcomer() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let (m, key) = (word(1), word(0));
    let a = h.wait_condvar(1, &m, &key, false).unwrap();
    // B takes the free mutex and signals while it holds it: A now waits for B.
    m.store(2, Ordering::SeqCst);
    h.signal_condvar(&key, 1);
    assert_eq!(get(&m), 2 | WAITERS, "A queued on the mutex");
    // C comes to the held mutex after the signal, at A's priority.
    let c = h.lock(3, 2, &m).unwrap().expect("C waits");
    h.unlock(2, &m);
    assert_eq!(get(&m), 1 | WAITERS, "handed to A, C still waits");
    assert_eq!((h.poll(&a), h.poll(&c)), (Some(Ok(())), None));
    // A newcomer after the unlock finds the word held (not 0): it cannot take it.
    assert_ne!(get(&m), 0);
    h.unlock(1, &m);
    assert_eq!((get(&m), h.poll(&c)), (3, Some(Ok(()))));
}

/// The census (read without the lock by a signal with nobody to wake) counts a condvar wait
/// from its registration until it leaves the key's queue, on every way out: a signal, a
/// timeout, a cancel; a re-ranking keeps it counted.
#[test]
fn the_census_counts_a_condvar_wait_until_it_leaves_its_queue() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let (m, key) = (word(0), word(0));
    let census = h.t.census().clone();
    let may_wait = || census.may_wait(addr(&key));
    assert!(!may_wait(), "nobody waits");
    m.store(1, Ordering::SeqCst);
    let a = h.wait_condvar(1, &m, &key, false).unwrap();
    m.store(2, Ordering::SeqCst);
    let b = h.wait_condvar(2, &m, &key, false).unwrap();
    assert!(may_wait(), "two wait");
    h.fx = noting();
    h.t.set_base(1, 10, &mut h.fx);
    assert!(may_wait(), "re-ranked, still counted");
    assert_eq!(
        h.cancel(&a, ResultCode::TIMED_OUT),
        Err(ResultCode::TIMED_OUT)
    );
    assert!(may_wait(), "one waits");
    h.signal_condvar(&key, 1);
    assert_eq!(h.poll(&b), Some(Ok(())), "the free mutex taken");
    assert!(!may_wait(), "signalled: nobody waits");
    m.store(3, Ordering::SeqCst);
    let c = h.wait_condvar(3, &m, &key, false).unwrap();
    assert!(may_wait());
    assert_eq!(
        h.cancel(&c, ResultCode::CANCELLED),
        Err(ResultCode::CANCELLED)
    );
    assert!(!may_wait(), "cancelled: nobody waits");
}

#[test]
fn a_zero_timeout_releases_and_times_out() {
    let mut h = Harness::new(&[(1, 44)]);
    let (m, key) = (word(1), word(0));
    assert_eq!(
        h.wait_condvar(1, &m, &key, true).err(),
        Some(ResultCode::TIMED_OUT)
    );
    assert_eq!(
        (get(&m), get(&key)),
        (0, 1),
        "the mutex stays released, as on the console"
    );
}

#[test]
fn a_broadcast_gives_the_free_mutex_to_the_best_and_queues_the_rest() {
    let mut h = Harness::new(&[(1, 44), (2, 30), (3, 50), (9, 10)]);
    let (m, key) = (word(0), word(0));
    let mut keys = Vec::new();
    for id in [1, 2, 3] {
        m.store(id, Ordering::SeqCst);
        keys.push(h.wait_condvar(id, &m, &key, false).unwrap());
    }
    assert_eq!(get(&m), 0);
    h.signal_condvar(&key, -1);
    assert_eq!(
        (get(&m), get(&key)),
        (2 | WAITERS, 0),
        "priority 30 took it; the others wait"
    );
    assert_eq!(h.poll(&keys[1]), Some(Ok(())));
    assert_eq!(h.t.effective(2), Some(30));
    h.unlock(2, &m);
    assert_eq!(get(&m), 1 | WAITERS);
    h.unlock(1, &m);
    assert_eq!(get(&m), 3);
    assert_eq!(
        (h.poll(&keys[0]), h.poll(&keys[2])),
        (Some(Ok(())), Some(Ok(())))
    );
}

#[test]
fn a_signal_counts_and_keeps_the_key_while_waiters_remain() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let (m, key) = (word(0), word(0));
    let ks: Vec<_> = [1, 2, 3]
        .iter()
        .map(|&id| h.wait_condvar(id, &m, &key, false).unwrap())
        .collect();
    h.signal_condvar(&key, 1);
    assert_eq!(
        (get(&m), get(&key)),
        (1, 1),
        "one signalled, two still wait"
    );
    h.signal_condvar(&key, 0);
    assert_eq!((get(&m), get(&key)), (1 | WAITERS, 0), "count 0 is all");
    assert_eq!(h.poll(&ks[0]), Some(Ok(())));
    let empty = word(1);
    h.signal_condvar(&empty, 1);
    assert_eq!(get(&empty), 0, "a signal that finds nobody writes 0 too");
}

#[test]
fn a_signal_into_a_word_naming_no_thread_is_invalid_state() {
    let mut h = Harness::new(&[(1, 44)]);
    let (m, key) = (word(1), word(0));
    let a = h.wait_condvar(1, &m, &key, false).unwrap();
    m.store(0x77, Ordering::SeqCst);
    h.signal_condvar(&key, 1);
    assert_eq!(
        get(&m),
        0x77 | WAITERS,
        "the word was marked before the lookup"
    );
    assert_eq!(h.poll(&a), Some(Err(ResultCode::INVALID_STATE)));
}

#[test]
fn a_wait_that_ended_keeps_its_result_against_its_timeout() {
    let mut h = Harness::new(&[(1, 44), (2, 44)]);
    let w = word(0);
    let a = h.wait_address(1, &w, 0);
    let mut fx = Effects::default();
    h.t.signal_address(&w, SignalType::Signal, 0, -1, &mut fx)
        .unwrap();
    assert_eq!(
        h.cancel(&a, ResultCode::TIMED_OUT),
        Ok(()),
        "the signal came first"
    );
    let m = word(1 | WAITERS);
    let b = h.lock(2, 1, &m).unwrap().unwrap();
    h.unlock(1, &m);
    assert_eq!(
        h.cancel(&b, ResultCode::CANCELLED),
        Ok(()),
        "a hand-off is never lost"
    );
}

#[test]
fn a_gone_owner_ends_its_lock_waiters_with_invalid_state() {
    let mut h = Harness::new(&[(1, 44), (2, 30)]);
    let m = word(1 | WAITERS);
    let b = h.lock(2, 1, &m).unwrap().unwrap();
    h.t.forget(1, &mut h.fx);
    h.t.check();
    assert_eq!(h.poll(&b), Some(Err(ResultCode::INVALID_STATE)));
    assert_eq!(h.t.effective(2), None);
}

#[test]
fn address_waits_wake_by_count_best_first() {
    let mut h = Harness::new(&[(1, 44), (2, 20), (3, 44)]);
    let w = word(0);
    let ks = [
        h.wait_address(1, &w, 0),
        h.wait_address(2, &w, 0),
        h.wait_address(3, &w, 0),
    ];
    assert_eq!(h.t.address_waiters(&*w as *const AtomicU32 as usize), 3);
    let mut fx = Effects::default();
    h.t.signal_address(&w, SignalType::Signal, 0, 2, &mut fx)
        .unwrap();
    assert!(fx.wake.is_empty(), "no waker was registered");
    assert_eq!(
        ks.map(|k| h.poll(&k)),
        [Some(Ok(())), Some(Ok(())), None],
        "priority 20, then the longest of the 44s"
    );
}

#[test]
fn empty_queues_are_kept_then_swept() {
    let mut h = Harness::new(&[(1, 44)]);
    let words: Vec<Word> = (0..3_000).map(|_| word(0)).collect();
    for (i, w) in words.iter().enumerate() {
        let k = h.wait_address(1, w, 0);
        let mut fx = Effects::default();
        h.t.signal_address(w, SignalType::Signal, 0, 1, &mut fx)
            .unwrap();
        assert_eq!(h.poll(&k), Some(Ok(())));
        if i < 100 {
            assert_eq!(h.t.queue_entries(), i + 1, "an emptied entry is kept");
        }
    }
    let kept = h.t.queue_entries();
    assert!(
        (2..=1_024).contains(&kept),
        "{kept} entries for 3000 words used once"
    );
    // A word used again reuses its entry.
    let last = words.last().unwrap();
    let k = h.wait_address(1, last, 0);
    assert_eq!(h.t.queue_entries(), kept);
    assert_eq!(
        h.cancel(&k, ResultCode::TIMED_OUT),
        Err(ResultCode::TIMED_OUT)
    );
}

#[test]
fn an_owner_of_two_locks_hands_over_only_the_one_it_unlocks() {
    let mut h = Harness::new(&[(1, 44), (2, 30), (3, 20)]);
    let (m1, m2) = (word(1 | WAITERS), word(1 | WAITERS));
    let k2 = h.lock(2, 1, &m1).unwrap().unwrap();
    let k3 = h.lock(3, 1, &m2).unwrap().unwrap();
    assert_eq!(h.t.effective(1), Some(20));
    h.unlock(1, &m1);
    assert_eq!((get(&m1), h.poll(&k2)), (2, Some(Ok(()))));
    assert_eq!(h.poll(&k3), None, "still waits for m2");
    assert_eq!(h.t.effective(1), Some(20), "and still lends its priority");
    h.unlock(1, &m2);
    assert_eq!((get(&m2), h.poll(&k3)), (3, Some(Ok(()))));
    assert_eq!(h.t.effective(1), None);
}

#[test]
fn a_tag_is_written_as_its_waiter_gave_it() {
    // The kernel never checks a tag: one with the waiters bit set stays so.
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let m = word(1 | WAITERS);
    let tag = 0x4000_0009;
    let me = h.me(2);
    let k = h.t.lock(&me, 1, &m, tag, resolver(&h.threads), &mut h.fx);
    let k = k.unwrap().unwrap();
    let _other = h.lock(3, 1, &m).unwrap().unwrap();
    h.unlock(1, &m);
    assert_eq!((get(&m), h.poll(&k)), (tag | WAITERS, Some(Ok(()))));
}

#[test]
fn the_waits_moved_to_another_owner_are_noted_when_asked() {
    let mut h = Harness::new(&[(1, 44), (2, 40), (3, 30), (4, 50)]);
    let m = word(1 | WAITERS);
    h.lock(2, 1, &m).unwrap().unwrap();
    h.lock(3, 1, &m).unwrap().unwrap();
    assert_eq!(h.fx.moved, [], "a lock moves nobody");
    h.unlock(1, &m);
    let to_3 = Move {
        waiter: 2,
        owner: 3,
        addr: addr(&m),
    };
    assert_eq!(h.fx.moved, [to_3], "3 took the lock; 2 now waits for 3");
    h.unlock(3, &m);
    assert_eq!(h.fx.moved, [], "the last waiter took it: nobody moved");
    // A signalled condvar waiter whose mutex is held moves to its owner.
    let (m2, key) = (word(0), word(0));
    let k = h.wait_condvar(4, &m2, &key, false).unwrap();
    m2.store(1, Ordering::SeqCst);
    h.signal_condvar(&key, 1);
    let to_1 = Move {
        waiter: 4,
        owner: 1,
        addr: addr(&m2),
    };
    assert_eq!(h.fx.moved, [to_1]);
    // Not asked (no trace records): nothing noted, the same hand-off made.
    let mut quiet = Effects::default();
    h.t.unlock(1, &m2, &mut quiet);
    assert_eq!((quiet.moved, get(&m2)), (vec![], 4));
    assert_eq!(h.poll(&k), Some(Ok(())));
    h.unlock(2, &m);
    h.unlock(4, &m2);
}

/// The drain (table/drain.rs): a caller that would queue behind the word's lock waiters at no
/// better priority waits outside; a better one queues and lends the owner its priority. The
/// hand-offs go to the queued waiters in Horizon's order, the word keeping WAITERS while
/// anyone waits outside, and the unlock that leaves the word free ends the waits outside with
/// success (the caller retries in user space).
#[test]
fn a_caller_behind_waiters_of_its_priority_waits_outside_until_they_drain() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44), (4, 30)]);
    let m = word(1 | WAITERS);
    let b = h.lock_outside(2, 1, &m).unwrap().expect("waits");
    assert_eq!(h.t.lock_owner(&b), Some(1), "the first caller queues");
    let c = h.lock_outside(3, 1, &m).unwrap().expect("waits");
    assert_eq!((h.t.lock_owner(&c), h.t.outside(addr(&m))), (None, 1));
    let d = h.lock_outside(4, 1, &m).unwrap().expect("waits");
    assert_eq!(h.t.lock_owner(&d), Some(1), "a better caller queues");
    assert_eq!(h.t.effective(1), Some(30));
    h.unlock(1, &m);
    assert_eq!(
        (get(&m), h.poll(&d), h.poll(&c)),
        (4 | WAITERS, Some(Ok(())), None)
    );
    // The last lock waiter is handed the word, which keeps WAITERS for the one outside.
    h.unlock(4, &m);
    assert_eq!(
        (get(&m), h.poll(&b), h.poll(&c)),
        (2 | WAITERS, Some(Ok(())), None)
    );
    h.unlock(2, &m);
    assert_eq!(
        (get(&m), h.poll(&c), h.t.outside(addr(&m))),
        (0, Some(Ok(())), 0),
        "drained: free, and the wait outside ends with success"
    );
}

/// A wait outside that times out (ArbitrateLock's bound) leaves the table, and the caller
/// then queues for real behind the waiters it stayed out of the way of.
#[test]
fn an_outside_wait_that_times_out_leaves_and_the_caller_queues() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let m = word(1 | WAITERS);
    let b = h.lock_outside(2, 1, &m).unwrap().expect("waits");
    let c = h.lock_outside(3, 1, &m).unwrap().expect("waits");
    assert_eq!(
        h.cancel(&c, ResultCode::TIMED_OUT),
        Err(ResultCode::TIMED_OUT)
    );
    assert_eq!(h.t.outside(addr(&m)), 0);
    let c = h.lock(3, 1, &m).unwrap().expect("waits");
    h.unlock(1, &m);
    assert_eq!(
        (get(&m), h.poll(&b), h.poll(&c)),
        (2 | WAITERS, Some(Ok(())), None)
    );
    h.unlock(2, &m);
    assert_eq!((get(&m), h.poll(&c)), (3, Some(Ok(()))));
}

/// The hand-off test with the newcomer as ArbitrateLock makes it (it waits outside the queue
/// it would join): the signalled waiter still gets the mutex first, and the newcomer's wait
/// ends, with success, only once the word is free.
#[test]
fn a_signalled_waiter_gets_the_mutex_before_a_newcomer_that_waits_outside() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let (m, key) = (word(1), word(0));
    let a = h.wait_condvar(1, &m, &key, false).unwrap();
    m.store(2, Ordering::SeqCst);
    h.signal_condvar(&key, 1);
    let c = h.lock_outside(3, 2, &m).unwrap().expect("C waits");
    assert_eq!(h.t.lock_owner(&c), None, "outside, behind A");
    h.unlock(2, &m);
    assert_eq!(get(&m), 1 | WAITERS, "handed to A, marked for C outside");
    assert_eq!((h.poll(&a), h.poll(&c)), (Some(Ok(())), None));
    h.unlock(1, &m);
    assert_eq!((get(&m), h.poll(&c)), (0, Some(Ok(()))), "free: C retries");
}
