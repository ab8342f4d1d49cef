//! The arbiter as a pure state machine: who waits on which guest word, in which order, and
//! what each svc does to the words and to its waiters. No threads, no lock, no clock: every
//! operation runs to its end and says in [`Effects`] whom to wake and whose priority changed;
//! `mod.rs` runs it under the arbiter's one lock and blocks the callers.
//!
//! Three kinds of wait as in mesosphère, and one of hos's own:
//!
//! | wait | where it is kept | order |
//! | --- | --- | --- |
//! | WaitForAddress | the address queue of its word | priority, then arrival |
//! | WaitProcessWideKeyAtomic, before its signal | the condvar queue of its key | priority, then arrival |
//! | ArbitrateLock (and a signalled condvar wait whose mutex was held) | the lock owner's list | priority, then arrival |
//! | ArbitrateLock that stays out of a queue while it drains (hos's own: drain.rs) | the drain queue of its word | priority, then arrival (all end at once) |
//!
//! A lock waiter is registered against the owner the mutex word named when it came, so an
//! unlock only finds the waiters registered against its caller (mesosphère's
//! `RemoveWaiterByKey`), and the owner inherits the best waiter's priority.
//!
//! # Invariants (checked by [`Table::check`] after every operation in debug builds)
//!
//! - A waiter is in exactly one place: one queue or one owner's list; queues are sorted by
//!   (priority, ticket). A wait that ends leaves the table in the same step, its result in
//!   its key's [`Mailbox`] (whose invariant says when a key may still be used).
//! - A thread has an entry in `threads` while it waits or has lock waiters registered
//!   against it (it is *busy*); it waits at most once at a time. An entry that is no longer
//!   busy stays, *idle*, at the thread's own priority, until the thread is forgotten or the
//!   idle entries are swept (when a new thread comes to [`SWEEP_AT`] entries): a hand-off's
//!   two threads then touch their entries at each wait, never the map's slots, nor what the
//!   caller gave for them (`Party::r`, which the entry keeps from its making: the svcs give
//!   a weak reference, so a kept entry keeps no thread alive). Only the thread's own
//!   registration writes which wait is its current one; the operation that ends a wait does
//!   not touch the waiter's entry (`Info::wait` reads the slot so).
//! - A thread's effective priority is the best of its own priority and its lock waiters'
//!   effective priorities; a waiting thread's waiter carries its effective priority. A
//!   change of either re-ranks the wait at the back of its new priority, and goes up the
//!   chain of lock owners (mesosphère's `RestorePriority`).

mod check;
mod drain;
mod heirs;
mod priority;

use super::census::{self, Census};
use super::hasher::WordHash;
use super::heir::{self, Outcome};
use super::mailbox::{Mailbox, Spares};
use super::word;
use crate::os::waiters::WakeBatch;
use crate::result::ResultCode;
use crate::svc::arbitration::{ArbitrationType, SignalType, WAITERS};
use crate::sync::atomic::{AtomicU32, AtomicU64};
use crate::sync::Arc;
use slab::Slab;
use std::collections::HashMap;
use std::ops::Deref;
use std::task::Waker;

/// A thread as the arbiter sees it.
#[derive(Clone, Debug)]
pub(crate) struct Party<R> {
    /// Unique among live threads: a guest thread's real handle, or a host thread's own id.
    pub id: u32,
    /// Its own (base) priority, 0 (best) ..= 63.
    pub priority: u8,
    /// What the caller needs to lend it a priority, echoed in [`Effects::lend`].
    pub r: R,
    /// Whether its lock waits may be woken ahead of their hand-off, to spin for it (the heir,
    /// `heir.rs`): its runtime's policy says (`Current::wakes_heir`), asked by a lock wait's
    /// svc only (`locking_caller`).
    pub early: bool,
}

/// A registered wait, for polling and cancelling it: its slot in the table, live while its
/// mailbox is empty, and the mailbox its result comes to.
#[derive(Debug)]
pub(crate) struct WaitKey {
    slot: usize,
    mail: Arc<Mailbox>,
}

impl WaitKey {
    /// The wait's result, if the table ended it; read without the table (the key is spent
    /// once this returns a result). Called only by the waiting thread, whose heir's spin had
    /// not begun if its hand-off is here, marked: a late heir (`heir::count`).
    pub(crate) fn ended(&self) -> Option<Result<(), ResultCode>> {
        let taken = self.mail.take()?;
        if taken.heir && taken.result.is_ok() {
            heir::count(Outcome::Late);
        }
        Some(taken.result)
    }

    /// The mailbox its result comes to.
    pub(crate) fn mailbox(&self) -> &Mailbox {
        &self.mail
    }
}

/// What the caller must do after an operation: wake these (one waker inline: the common
/// hand-off allocates nothing), and lend these threads a
/// priority (`Some`) or give them their own back (`None`); and, if it asked for them
/// (`note_moves`, for the trace), the lock waits that moved to another owner.
#[derive(Debug)]
pub(crate) struct Effects<R> {
    pub wake: WakeBatch,
    pub lend: Vec<(R, Option<u8>)>,
    pub note_moves: bool,
    pub moved: Vec<Move>,
}

impl<R> Default for Effects<R> {
    fn default() -> Self {
        Effects {
            wake: WakeBatch::new(),
            lend: Vec::new(),
            note_moves: false,
            moved: Vec::new(),
        }
    }
}

/// A wait that now waits for another lock owner: an unlock handed the mutex to `owner` and
/// moved the other waiters to it, or a signal took a condition-variable waiter to its
/// mutex, which `owner` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Move {
    /// The waiting thread.
    pub waiter: u32,
    /// The owner it waits for now.
    pub owner: u32,
    /// The mutex word's address.
    pub addr: usize,
}

/// The address-keyed trees of a process (lock waiters hang off their owners instead): the
/// kernel's two, and hos's callers of ArbitrateLock that wait for a queue to drain (drain.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Tree {
    Address,
    CondVar,
    Drain,
}

#[derive(Debug)]
enum Place<W> {
    /// In the address queue of this word.
    Address(usize),
    /// In the condvar queue of `key`, to take `mutex` once signalled.
    CondVar { key: usize, mutex: W },
    /// In `owner`'s list of lock waiters, for the mutex word at `addr`.
    Lock { owner: u32, addr: usize },
    /// Outside the lock waiters of the mutex word at this address, until they drain.
    Drain(usize),
}

#[derive(Debug)]
struct Waiter<W> {
    thread: u32,
    /// Its thread's effective priority.
    priority: u8,
    /// Arrival order within a priority (renewed when the wait is re-ranked).
    ticket: u64,
    /// What a hand-off writes to the mutex word: the waiter's own tag.
    tag: u32,
    place: Place<W>,
    waker: Option<Waker>,
    /// Where its result goes when it ends (its key holds the other handle).
    mail: Arc<Mailbox>,
    /// Its party's `early`: a lock wait may be woken ahead of its hand-off (`heirs.rs`).
    early: bool,
}

#[derive(Debug)]
struct Info<R> {
    base: u8,
    effective: u8,
    /// What the caller gave for the thread when its entry was made.
    r: R,
    /// The slot of its last wait: its current wait while that slot holds a wait of this
    /// thread ([`Info::wait`]). A wait's end leaves it, so that the operation that ends it
    /// writes nothing of the waiter's entry, which the waiter's next wait writes again.
    waiting: Option<usize>,
    /// The lock waiters registered against this thread (any mutex word).
    held: Vec<usize>,
}

/// The waits of one process.
#[derive(Debug)]
pub(crate) struct Table<R, W> {
    waiters: Slab<Waiter<W>>,
    /// An entry may be empty (kept to reuse its allocation on the next wait on that
    /// address); the empty ones are swept when a new address comes to [`SWEEP_AT`] entries.
    queues: HashMap<(Tree, usize), Vec<usize>, WordHash>,
    threads: HashMap<u32, Info<R>, WordHash>,
    next_ticket: u64,
    /// The results of the waits the current operation ended, put in their mailboxes when it
    /// settles, after its last write to a guest word (a waiter may return the moment its
    /// result is there). Empty between operations; kept to reuse its allocation.
    ended: Vec<(Arc<Mailbox>, Result<(), ResultCode>)>,
    /// Mailboxes of waits that ended, for the next waits.
    spare: Spares,
    /// The condvar queues' waiters by bucket, kept for signallers without the lock.
    census: Arc<Census>,
}

/// The queue entries the table keeps before it sweeps the empty ones (a game's distinct
/// waited-on words in use at once are far fewer).
const SWEEP_AT: usize = 1024;

/// Thread `p`'s entry, made if it has none (a known thread's own priority is kept up to date
/// by [`Table::set_base`], which follows every change of it); a new thread's entry first
/// sweeps the idle ones once there are [`SWEEP_AT`] entries.
fn entry<'a, R: Clone, W>(
    threads: &'a mut HashMap<u32, Info<R>, WordHash>,
    waiters: &Slab<Waiter<W>>,
    p: &Party<R>,
) -> &'a mut Info<R> {
    if threads.len() >= SWEEP_AT && !threads.contains_key(&p.id) {
        threads.retain(|&id, i| i.busy(id, waiters));
    }
    threads.entry(p.id).or_insert_with(|| Info {
        base: p.priority,
        effective: p.priority,
        r: p.r.clone(),
        waiting: None,
        held: Vec::new(),
    })
}

impl<R> Info<R> {
    /// Thread `id`'s current wait: the slot of its last, if that slot still holds a wait of
    /// this thread. A thread waits once at a time, so a slot that holds one of its waits
    /// holds the current one; an ended wait's slot is empty or another thread's.
    fn wait<W>(&self, id: u32, waiters: &Slab<Waiter<W>>) -> Option<usize> {
        self.waiting
            .filter(|&k| waiters.get(k).is_some_and(|w| w.thread == id))
    }

    /// Whether thread `id` waits or has lock waiters registered against it (else: idle).
    fn busy<W>(&self, id: u32, waiters: &Slab<Waiter<W>>) -> bool {
        self.wait(id, waiters).is_some() || !self.held.is_empty()
    }
}

/// The address of a guest word: the key it is waited on by.
fn addr_of<T>(w: &T) -> usize {
    w as *const T as usize
}

impl<R: Clone, W: Deref<Target = AtomicU32> + std::fmt::Debug> Table<R, W> {
    /// A table nobody waits in.
    pub(crate) fn new() -> Self {
        Table {
            waiters: Slab::new(),
            queues: HashMap::default(),
            threads: HashMap::default(),
            next_ticket: 0,
            ended: Vec::new(),
            spare: Spares::default(),
            census: Arc::new(Census::new()),
        }
    }

    /// The census of this table's condvar waiters, which it keeps (census.rs).
    pub(crate) fn census(&self) -> &Arc<Census> {
        &self.census
    }

    /// svcArbitrateLock up to the wait: `None` (success at once) if the word is no longer
    /// `owner | WAITERS`; InvalidHandle if `resolve` finds no thread for `owner` (looked up
    /// only after the word matched, as the kernel does); else `me` waits in the owner's
    /// list, lending it its priority.
    pub(crate) fn lock(
        &mut self,
        me: &Party<R>,
        owner: u32,
        word: &AtomicU32,
        tag: u32,
        resolve: impl FnOnce(u32) -> Option<Party<R>>,
        fx: &mut Effects<R>,
    ) -> Result<Option<WaitKey>, ResultCode> {
        if word::load(word) != owner | WAITERS {
            return Ok(None);
        }
        let owner = resolve(owner).ok_or(ResultCode::INVALID_HANDLE)?;
        entry(&mut self.threads, &self.waiters, &owner);
        let place = Place::Lock {
            owner: owner.id,
            addr: addr_of(word),
        };
        let key = self.push(me, tag, place);
        self.restore(owner.id, fx);
        self.check();
        Ok(Some(key))
    }

    /// svcArbitrateUnlock by thread `me`: hands the word to its best waiter registered
    /// against `me` (woken with success), writing 0, the new owner's tag, or the tag with
    /// WAITERS if more waiters remain (they move to the new owner).
    pub(crate) fn unlock(&mut self, me: u32, word: &AtomicU32, fx: &mut Effects<R>) {
        let next = self.release(me, addr_of(word), fx);
        word::store(word, next);
        self.settle();
    }

    /// svcWaitProcessWideKeyAtomic up to the wait: releases `mutex` as an unlock does,
    /// writes 1 to `key`, then TimedOut if `poll` (the mutex stays released), else `me`
    /// waits in `key`'s condvar queue.
    pub(crate) fn wait_condvar(
        &mut self,
        me: &Party<R>,
        mutex: W,
        key: &AtomicU32,
        tag: u32,
        poll: bool,
        fx: &mut Effects<R>,
    ) -> Result<WaitKey, ResultCode> {
        let next = self.release(me.id, addr_of(&*mutex), fx);
        if poll {
            word::store(key, 1);
            word::store(&mutex, next);
            self.settle();
            return Err(ResultCode::TIMED_OUT);
        }
        // Registered and counted before the key and mutex words are written: a signaller
        // ordered after this wait by them finds it in the census (census.rs).
        let key_addr = addr_of(key);
        let place = Place::CondVar {
            key: key_addr,
            mutex,
        };
        let wait = self.push(me, tag, place);
        self.census.joined(key_addr);
        let Place::CondVar { mutex, .. } = &self.waiters[wait.slot].place else {
            unreachable!("a condvar wait is in its queue")
        };
        word::store(key, 1);
        word::store(mutex, next);
        self.settle();
        Ok(wait)
    }

    /// svcSignalProcessWideKey: up to `count` waiters of `key` (`<= 0`: all), best first,
    /// each take their mutex (woken with success) if it is free, else wait in the list of
    /// the owner its word names (InvalidState if `resolve` finds no such thread). Writes 0
    /// to `key` once nobody waits on it.
    pub(crate) fn signal_condvar(
        &mut self,
        key: &AtomicU32,
        count: i32,
        mut resolve: impl FnMut(u32) -> Option<Party<R>>,
        fx: &mut Effects<R>,
    ) {
        let key_addr = addr_of(key);
        let mut n = 0;
        while count <= 0 || n < count {
            let Some(k) = self.pop_first(Tree::CondVar, key_addr) else {
                break;
            };
            self.census.left(key_addr);
            n += 1;
            let w = &self.waiters[k];
            let Place::CondVar { mutex, .. } = &w.place else {
                unreachable!("a condvar queue holds {:?}", w.place)
            };
            let old = word::update_lock(mutex, w.tag, WAITERS);
            let addr = addr_of(&**mutex);
            if old == 0 {
                self.finish(k, Ok(()), fx);
                continue;
            }
            match resolve(old & !WAITERS) {
                Some(owner) => {
                    entry(&mut self.threads, &self.waiters, &owner);
                    if fx.note_moves {
                        fx.moved.push(Move {
                            waiter: self.waiters[k].thread,
                            owner: owner.id,
                            addr,
                        });
                    }
                    let ticket = self.ticket();
                    let w = &mut self.waiters[k];
                    w.ticket = ticket;
                    w.place = Place::Lock {
                        owner: owner.id,
                        addr,
                    };
                    self.link(k);
                    if self.heir_of(owner.id, addr) == Some(k) {
                        self.wake_heir(k, fx);
                    }
                    self.restore(owner.id, fx);
                }
                // InvalidState as mesosphère; Ryujinx answers InvalidHandle here.
                None => self.finish(k, Err(ResultCode::INVALID_STATE), fx),
            }
        }
        if self.first(Tree::CondVar, key_addr).is_none() {
            word::store(key, 0);
        }
        self.settle();
    }

    /// svcWaitForAddress (types 0..=2) up to the wait: InvalidState if the word does not
    /// call for a wait (type 1 decrements it first, if it is less than `value`), TimedOut if
    /// `poll`, else `me` waits in the word's address queue.
    pub(crate) fn wait_address(
        &mut self,
        me: &Party<R>,
        word: &AtomicU32,
        kind: ArbitrationType,
        value: i32,
        poll: bool,
    ) -> Result<WaitKey, ResultCode> {
        let waits = match kind {
            ArbitrationType::WaitIfLessThan => (word::load(word) as i32) < value,
            ArbitrationType::DecrementAndWaitIfLessThan => {
                word::decrement_if_less_than(word, value) < value
            }
            ArbitrationType::WaitIfEqual => word::load(word) as i32 == value,
        };
        self.enqueue(me, addr_of(word), waits, poll)
    }

    /// svcWaitForAddress WaitIfEqual64: as [`Table::wait_address`] on a 64-bit word.
    pub(crate) fn wait_address64(
        &mut self,
        me: &Party<R>,
        word: &AtomicU64,
        value: i64,
        poll: bool,
    ) -> Result<WaitKey, ResultCode> {
        let waits = word::load64(word) as i64 == value;
        self.enqueue(me, addr_of(word), waits, poll)
    }

    fn enqueue(
        &mut self,
        me: &Party<R>,
        addr: usize,
        waits: bool,
        poll: bool,
    ) -> Result<WaitKey, ResultCode> {
        if !waits {
            return Err(ResultCode::INVALID_STATE);
        }
        if poll {
            return Err(ResultCode::TIMED_OUT);
        }
        let key = self.push(me, 0, Place::Address(addr));
        self.check();
        Ok(key)
    }

    /// svcSignalToAddress: checks and updates the word as `kind` says (InvalidState, with
    /// nothing changed and nobody woken, if it is not `value`), then wakes up to `count`
    /// waiters of the word (`<= 0`: all), best first; returns how many it woke.
    pub(crate) fn signal_address(
        &mut self,
        word: &AtomicU32,
        kind: SignalType,
        value: i32,
        count: i32,
        fx: &mut Effects<R>,
    ) -> Result<usize, ResultCode> {
        let addr = addr_of(word);
        let old = match kind {
            SignalType::Signal => value,
            SignalType::SignalAndIncrementIfEqual => {
                word::update_if_equal(word, value, value.wrapping_add(1))
            }
            SignalType::SignalAndModifyByWaitingCountIfEqual => {
                let waiters = self.queue_len(Tree::Address, addr);
                let new = word::modified_value(value, count, waiters);
                if new != value {
                    word::update_if_equal(word, value, new)
                } else {
                    word::load(word) as i32
                }
            }
        };
        if old != value {
            return Err(ResultCode::INVALID_STATE);
        }
        let mut n = 0;
        while count <= 0 || n < count {
            let Some(k) = self.pop_first(Tree::Address, addr) else {
                break;
            };
            n += 1;
            self.finish(k, Ok(()), fx);
        }
        self.settle();
        Ok(n as usize)
    }

    /// Where the memory lies that a signal ending the registered address wait `key` reads and
    /// writes under the lock: its address queue's entry and buffer, its slab entry, its
    /// mailbox; `None` for any other wait. Addresses only, for a signaller to prefetch.
    pub(crate) fn lines_of(&self, key: &WaitKey) -> Option<[usize; 4]> {
        let waiter = &self.waiters[key.slot];
        let Place::Address(a) = waiter.place else {
            return None;
        };
        let queue = self.queues.get(&(Tree::Address, a))?;
        Some([
            queue as *const Vec<usize> as usize,
            queue.as_ptr() as usize,
            waiter as *const Waiter<W> as usize,
            Arc::as_ptr(&key.mail) as usize,
        ])
    }

    /// A wait's result if it ended (its entry is gone and `key` is spent), else keeps
    /// `waker` to wake it.
    pub(crate) fn poll(&mut self, key: &WaitKey, waker: &Waker) -> Option<Result<(), ResultCode>> {
        if let Some(r) = key.ended() {
            return Some(r);
        }
        let w = &mut self.waiters[key.slot];
        if !w.waker.as_ref().is_some_and(|x| x.will_wake(waker)) {
            w.waker = Some(waker.clone());
        }
        None
    }

    /// Ends a wait with `code` (its timeout, its runtime's shutdown, its future dropped),
    /// wherever it waits; a wait that already ended keeps its own result, which is returned.
    /// `key` is spent.
    pub(crate) fn cancel(
        &mut self,
        key: &WaitKey,
        code: ResultCode,
        fx: &mut Effects<R>,
    ) -> Result<(), ResultCode> {
        if let Some(r) = key.ended() {
            return r;
        }
        let k = key.slot;
        let owner = match self.waiters[k].place {
            Place::Lock { owner, .. } => Some(owner),
            Place::CondVar { key, .. } => {
                self.census.left(key);
                None
            }
            Place::Address(_) | Place::Drain(_) => None,
        };
        self.unlink(k);
        self.waiters.remove(k);
        if let Some(owner) = owner {
            self.restore(owner, fx);
        }
        self.check();
        Err(code)
    }

    /// Thread `id` is gone (its object destroyed): the lock waiters registered against it
    /// end with InvalidState, as mesosphère's `KThread::Finalize` ends them.
    pub(crate) fn forget(&mut self, id: u32, fx: &mut Effects<R>) {
        let Some(info) = self.threads.remove(&id) else {
            return;
        };
        debug_assert!(
            info.wait(id, &self.waiters).is_none(),
            "thread {id:#x} is gone but waits"
        );
        for k in info.held {
            self.finish(k, Err(ResultCode::INVALID_STATE), fx);
        }
        self.settle();
    }

    /// What the caller gave for thread `id` (its `Party::r`), while it is busy.
    pub(crate) fn party(&self, id: u32) -> Option<&R> {
        self.threads
            .get(&id)
            .filter(|i| i.busy(id, &self.waiters))
            .map(|i| &i.r)
    }

    /// The owner a lock wait waits for (`None` for any other wait). Only for a key whose wait
    /// is in the table: in the operation that registered it, or before its mailbox is full.
    pub(crate) fn lock_owner(&self, key: &WaitKey) -> Option<u32> {
        match self.waiters.get(key.slot)?.place {
            Place::Lock { owner, .. } => Some(owner),
            _ => None,
        }
    }

    /// How many wait on `addr` with svcWaitForAddress.
    #[cfg(test)]
    pub(crate) fn address_waiters(&self, addr: usize) -> usize {
        self.queue_len(Tree::Address, addr)
    }

    /// How many queue entries the table keeps, empty ones included.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn queue_entries(&self) -> usize {
        self.queues.len()
    }

    fn ticket(&mut self) -> u64 {
        let t = self.next_ticket;
        self.next_ticket += 1;
        t
    }

    fn rank(&self, k: usize) -> (u8, u64) {
        (self.waiters[k].priority, self.waiters[k].ticket)
    }

    fn queue_len(&self, tree: Tree, addr: usize) -> usize {
        self.queues.get(&(tree, addr)).map_or(0, Vec::len)
    }

    /// Takes the first waiter out of a queue (as `unlink` would: its place stays as it was).
    fn pop_first(&mut self, tree: Tree, addr: usize) -> Option<usize> {
        let q = self.queues.get_mut(&(tree, addr))?;
        (!q.is_empty()).then(|| q.remove(0))
    }

    fn first(&self, tree: Tree, addr: usize) -> Option<usize> {
        self.queues
            .get(&(tree, addr))
            .and_then(|q| q.first().copied())
    }

    /// Registers `me`'s wait at `place`, ranked by its effective priority.
    fn push(&mut self, me: &Party<R>, tag: u32, place: Place<W>) -> WaitKey {
        let ticket = self.ticket();
        let info = entry(&mut self.threads, &self.waiters, me);
        debug_assert!(
            info.wait(me.id, &self.waiters).is_none(),
            "thread {:#x} waits twice",
            me.id
        );
        let mail = self.spare.take();
        let k = self.waiters.insert(Waiter {
            thread: me.id,
            priority: info.effective,
            ticket,
            tag,
            place,
            waker: None,
            mail: mail.clone(),
            early: me.early,
        });
        info.waiting = Some(k);
        self.link(k);
        WaitKey { slot: k, mail }
    }

    /// Puts waiter `k` where its place says (its rank decides the position).
    fn link(&mut self, k: usize) {
        let rank = self.rank(k);
        let tree = match &self.waiters[k].place {
            Place::Address(a) => (Tree::Address, *a),
            Place::Drain(a) => (Tree::Drain, *a),
            Place::CondVar { key, .. } => (Tree::CondVar, *key),
            Place::Lock { owner, .. } => {
                let owner = *owner;
                self.threads
                    .get_mut(&owner)
                    .expect("a lock owner has an entry")
                    .held
                    .push(k);
                return;
            }
        };
        if self.queues.len() >= SWEEP_AT && !self.queues.contains_key(&tree) {
            self.queues.retain(|_, q| !q.is_empty());
        }
        let waiters = &self.waiters;
        let q = self.queues.entry(tree).or_default();
        let at = q.partition_point(|&j| (waiters[j].priority, waiters[j].ticket) < rank);
        q.insert(at, k);
    }

    /// Takes waiter `k` out of its queue or owner's list (its place stays as it was).
    fn unlink(&mut self, k: usize) {
        let tree = match &self.waiters[k].place {
            Place::Address(a) => (Tree::Address, *a),
            Place::Drain(a) => (Tree::Drain, *a),
            Place::CondVar { key, .. } => (Tree::CondVar, *key),
            Place::Lock { owner, .. } => {
                if let Some(info) = self.threads.get_mut(owner) {
                    info.held.retain(|&j| j != k);
                }
                return;
            }
        };
        if let Some(q) = self.queues.get_mut(&tree) {
            if let Some(i) = q.iter().position(|&j| j == k) {
                q.remove(i);
            }
        }
    }

    /// Ends waiter `k` (already unlinked) with `r`: takes it out of the table, and wakes it
    /// with `r` in its mailbox once the operation settles.
    fn finish(&mut self, k: usize, r: Result<(), ResultCode>, fx: &mut Effects<R>) {
        let w = self.waiters.remove(k);
        self.ended.push((w.mail, r));
        if let Some(waker) = w.waker {
            fx.wake.push(waker);
        }
        // The thread waits no more: its slot is empty now (`Info::wait`), and its entry is
        // left alone (idle if no lock waiters are registered against it).
    }

    /// Takes the lock waiters registered against `me` for the word at `addr`: the best
    /// becomes the owner (woken with success) and inherits the others. Returns the word's new
    /// value, before the drain's rule (drain.rs, `release`).
    fn hand_off(&mut self, me: u32, addr: usize, fx: &mut Effects<R>) -> u32 {
        let Some(next) = self.heir_of(me, addr) else {
            return 0;
        };
        let (next_id, tag) = (self.waiters[next].thread, self.waiters[next].tag);
        // The others at this word now wait for the next owner (no allocation unless they do).
        let mut moved = Vec::new();
        let waiters = &mut self.waiters;
        let info = self
            .threads
            .get_mut(&me)
            .expect("the heir's owner has an entry");
        info.held.retain(|&k| {
            let stays =
                k != next && !matches!(waiters[k].place, Place::Lock { addr: a, .. } if a == addr);
            if !stays && k != next {
                waiters[k].place = Place::Lock {
                    owner: next_id,
                    addr,
                };
                moved.push(k);
            }
            stays
        });
        // Some moved: the word keeps its waiters bit, so the next owner's unlock comes here too.
        let more = !moved.is_empty();
        if fx.note_moves {
            fx.moved.extend(moved.iter().map(|&k| Move {
                waiter: self.waiters[k].thread,
                owner: next_id,
                addr,
            }));
        }
        self.threads
            .get_mut(&next_id)
            .expect("a waiting thread has an entry")
            .held
            .extend(moved);
        if let Some(h) = self.heir_of(next_id, addr) {
            self.wake_heir(h, fx);
        }
        self.finish(next, Ok(()), fx);
        self.restore(next_id, fx);
        self.restore(me, fx);
        if more {
            tag | WAITERS
        } else {
            tag
        }
    }

    /// The end of an operation that may have ended waits, after its last write to a guest
    /// word: their results go to their mailboxes (the wakes follow once the lock is dropped).
    fn settle(&mut self) {
        for (mail, r) in self.ended.drain(..) {
            mail.put(r);
            self.spare.keep(mail);
        }
        self.check();
    }
}
