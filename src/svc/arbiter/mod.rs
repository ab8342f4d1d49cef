//! The arbiter: the one table of waits on guest words, behind one lock, and the blocking of
//! the threads that wait in it.
//!
//! Invariant: every arbiter operation (the decision of [`table::Table`] and the atomics it does on
//! guest words) runs under the one lock, so each is atomic with respect to every other, as under
//! the console kernel's scheduler lock; guest code still races with it on the words through their
//! atomics. The one operation that may skip it is a condition-variable signal that would change
//! nothing (no wait counted in its key's bucket of the table's [`census::Census`], the key already
//! 0): it reads two words and returns. The priorities the table lends (priority inheritance) are
//! put on the threads' virtual-core rank still under the lock, so they land in order; wakes happen
//! after it is dropped. The sleeping pollers of words (a zero-timeout WaitForAddress that found
//! nothing, a signal that readies them) are kept under the same lock. Locks nest in one order only:
//! the arbiter's, then the handle table's (looking a mutex word's owner up) or the virtual cores'
//! (a lent priority).
//!
//! A wait ends when the table ends it (a signal, a hand-off, a drain, an owner gone: its
//! result goes to the wait's mailbox, which the woken waiter reads without the lock), at its
//! deadline (TimedOut), or at its runtime's shutdown (Cancelled): the last two take it out of
//! the table under the lock, unless it ended first, whose result then wins. A wait's entry is
//! gone from the table before the call that made it returns, on every path (its future's drop
//! removes it).
//!
//! One table for the process, not sharded, since priority inheritance and priority changes
//! re-rank waits across addresses under it. The two sides of one hand-off work on one
//! address, so shards would not part them; what such a hand-off costs beyond `os::Event`'s is
//! the table's lines that both threads write (BENCHMARKS.md, "Hand-offs"), which is why a
//! thread's entry stays between its waits, ended waits' mailboxes are reused, and a
//! SignalToAddress prefetches its group's last wait's lines ([`hints`]) before it locks.
//! Hand-offs on unrelated addresses do meet at the lock: spinning ones run as if one at a
//! time (two pairs at once 3.6-3.9x `os::Event`'s round trip, three 5.4-6.1x, on the 16-core
//! machine), which an arbiter sharded by address would remove. `benches/arbiter.rs` measures
//! both.

mod census;
mod hasher;
mod heir;
mod hints;
mod lent;
#[cfg(all(test, loom))]
mod loom;
mod mailbox;
mod pollers;
mod table;
#[cfg(all(test, not(loom)))]
mod tests;
mod word;

pub(crate) use lent::GuestWord;
pub(crate) use table::{Effects, Move, Party, Table, WaitKey};

use super::handle::Handle;
use super::handles::{self, HandleObject};
use crate::entry::entry;
use crate::os::Limits;
use crate::result::ResultCode;
use crate::sync::atomic::AtomicU32;
use crate::sync::{lock, Arc, Mutex};
use crate::thread::{Thread, WeakThread};
use census::Census;
use hints::Hint;
use hos_runtime::internal::with_current as with_context;
use hos_runtime::internal::{block_on, poll_found, trace, with_parker, SpinGate, Wait};
use pollers::WordPollers;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

/// Groups of addresses: a word's waits share its group's spin gate (one miss counter; the
/// nn::os objects keep one per object) and prefetch hint ([`Hint`]), as guest words are
/// too many to keep either for each.
const GROUPS: usize = 64;

/// The group of the word at `addr` (words are 4-byte aligned).
fn group(addr: usize) -> usize {
    (addr >> 2) % GROUPS
}

/// The table as the svcs use it: guest threads carry a [`WeakThread`] for priority lending
/// (weak: a table entry kept between waits keeps no thread, nor its handle, alive).
pub(crate) type Waits = Table<Option<WeakThread>, GuestWord>;

/// A caller or an owner, as the table sees it.
pub(crate) type Caller = Party<Option<WeakThread>>;

/// The priority a host thread (no guest thread) waits with: the best, as host sleeps are
/// always precise; a host thread is a frame's or a device's, which no guest work outranks.
pub(crate) const HOST_PRIORITY: u8 = 0;

/// The start of every svc that may wait: an svc entry (a checkpoint), then Cancelled once the
/// runtime has shut down, else the calling thread as the table sees it.
pub(crate) fn waiting_caller() -> Result<Caller, ResultCode> {
    entry();
    if crate::os::shutting_down() {
        return Err(ResultCode::CANCELLED);
    }
    Ok(caller())
}

/// As [`waiting_caller`], for a lock wait (ArbitrateLock, WaitProcessWideKeyAtomic): the one
/// kind a heir's early wake applies to, so only it asks the runtime's policy
/// (`Party::early`); an address wait's party never asks.
pub(crate) fn locking_caller() -> Result<Caller, ResultCode> {
    let mut me = waiting_caller()?;
    me.early = with_context(|c| c.wakes_heir());
    Ok(me)
}

/// The calling thread as the table sees it: a guest thread by its real handle and own
/// priority; any other thread by an id of its own (bit 31 set, so never a handle).
pub(crate) fn caller() -> Caller {
    let guest = crate::thread::with_current(|t| Party {
        id: t.handle().0,
        priority: t.priority(),
        r: Some(t.downgrade()),
        early: false,
    });
    guest.unwrap_or_else(|| Party {
        id: host_id(),
        priority: HOST_PRIORITY,
        r: None,
        early: false,
    })
}

/// The calling thread's id in the table ([`caller`]'s, without the thread).
pub(crate) fn caller_id() -> u32 {
    crate::thread::with_current(|t| t.handle().0).unwrap_or_else(host_id)
}

/// The guest thread that handle `h` (a pseudo-handle is none) names, for a mutex word's
/// owner: named by its own real handle whatever handle the word held.
pub(crate) fn resolve(h: u32) -> Option<Caller> {
    match handles::get_object(Handle(h)) {
        Ok(HandleObject::Thread(t)) => Some(Party {
            id: t.handle().0,
            priority: t.priority(),
            r: Some(t.downgrade()),
            early: false,
        }),
        _ => None,
    }
}

/// Guest thread `h` is gone (its handle closed): lock waits registered against it end
/// with InvalidState.
pub(crate) fn thread_gone(h: Handle) {
    Arbiter::global().run(|t, fx| t.forget(h.0, fx));
}

/// Guest thread `t`'s own priority changed: the waits it is in and the lock owners it lends
/// to are re-ranked.
pub(crate) fn priority_changed(t: &Thread) {
    let id = t.handle().0;
    // Read under the lock: of two changes racing, the later in the lock's order reads the
    // later priority, so the table ends with the thread's own (an idle entry keeps it).
    Arbiter::global().run(|table, fx| table.set_base(id, t.priority(), fx));
}

/// This host thread's id in the table.
fn host_id() -> u32 {
    // Std's atomic and thread-local, not the loom shim's: an identity, never a
    // synchronisation point (models make their callers by hand).
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    std::thread_local! {
        // Relaxed: uniqueness only. Bit 31 keeps it apart from every handle.
        static ID: u32 = 0x8000_0000 | (NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0x7fff_ffff);
    }
    ID.with(|id| *id)
}

/// The arbiter of one process.
#[derive(Debug)]
pub(crate) struct Arbiter {
    /// Where each group's last address wait lies, for its signallers to prefetch.
    hints: [Hint; GROUPS],
    state: Mutex<State>,
    /// The table's census of condvar waiters, read without the lock.
    census: Arc<Census>,
    gates: [SpinGate; GROUPS],
}

/// What the arbiter's one lock guards: the table of waits, and the sleeping pollers of words
/// (marked and readied in the same step as the table's check or signal of the word).
#[derive(Debug)]
struct State {
    waits: Waits,
    words: WordPollers,
}

/// How a blocked wait learns it must end without its signal: its deadline and its
/// runtime's shutdown ([`Limits`]), or a model's stand-in.
pub(crate) trait Limit {
    /// `Some(code)` once the wait must end, else arranges for `waker` to be woken then.
    fn check(&mut self, waker: &Waker) -> Option<ResultCode>;
}

impl Limit for Limits {
    fn check(&mut self, waker: &Waker) -> Option<ResultCode> {
        Limits::check(self, waker)
    }
}

impl Arbiter {
    /// An arbiter nobody waits in.
    pub(crate) fn new() -> Self {
        let waits = Table::new();
        Arbiter {
            hints: std::array::from_fn(|_| Hint::default()),
            census: waits.census().clone(),
            state: Mutex::new(State {
                waits,
                words: WordPollers::default(),
            }),
            gates: std::array::from_fn(|_| SpinGate::new()),
        }
    }

    /// The process's arbiter.
    pub(crate) fn global() -> &'static Arbiter {
        static ARBITER: OnceLock<Arbiter> = OnceLock::new();
        ARBITER.get_or_init(Arbiter::new)
    }

    /// Runs one table operation under the lock, then does its effects: the priorities it
    /// lends or takes back still under the lock (so two operations' changes to one thread
    /// land in their order; the virtual cores' lock nests inside this one, never the other
    /// way), and so are the trace's records of the waits it moved to another lock owner
    /// (after the registrations that began them); the wakes after it.
    pub(crate) fn run<T>(
        &self,
        op: impl FnOnce(&mut Waits, &mut Effects<Option<WeakThread>>) -> T,
    ) -> T {
        self.run_with_words(|t, _, fx| op(t, fx))
    }

    /// [`Arbiter::run`], with the word pollers too.
    fn run_with_words<T>(
        &self,
        op: impl FnOnce(&mut Waits, &mut WordPollers, &mut Effects<Option<WeakThread>>) -> T,
    ) -> T {
        let mut fx = Effects {
            note_moves: trace::on(),
            ..Effects::default()
        };
        let r = {
            let mut state = lock(&self.state);
            let State {
                waits: table,
                words,
            } = &mut *state;
            let r = op(table, words, &mut fx);
            // A thread gone meanwhile (nothing keeps it) has nothing to lend to.
            for (thread, lent) in fx.lend.drain(..) {
                if let Some(t) = thread.as_ref().and_then(WeakThread::upgrade) {
                    t.lend_priority(lent);
                }
            }
            for m in fx.moved.drain(..) {
                trace_move(table, m);
            }
            r
        };
        fx.wake.wake();
        r
    }

    /// A zero-timeout WaitForAddress on the word at `addr`: runs `op` (the table's check of
    /// the word, which never registers a wait for a poll; one it did is cancelled as timed
    /// out). A poll that finds the word calling for a wait (TimedOut) marks the calling
    /// thread a poller of the word, under the lock; one that finds it ready (InvalidState)
    /// clears the thread's marks, as a try that finds something does.
    pub(crate) fn poll_word(
        &self,
        addr: usize,
        op: impl FnOnce(&mut Waits) -> Result<WaitKey, ResultCode>,
    ) -> Result<(), ResultCode> {
        let r = self.run_with_words(|t, words, fx| {
            let r = op(t).and_then(|k| t.cancel(&k, ResultCode::TIMED_OUT, fx));
            if r == Err(ResultCode::TIMED_OUT) {
                words.missed(addr);
            }
            r
        });
        if r == Err(ResultCode::INVALID_STATE) {
            poll_found();
        }
        r
    }

    /// A SignalToAddress on the word at `addr` for `told` waiters (`usize::MAX`: all): runs
    /// `op` (the table's signal, which says how many blocked waiters it woke), then promotes
    /// as many of the word's sleeping pollers as it told and woke no blocked waiter for,
    /// after the lock is dropped.
    pub(crate) fn signal_word(
        &self,
        addr: usize,
        told: usize,
        op: impl FnOnce(&mut Waits, &mut Effects<Option<WeakThread>>) -> Result<usize, ResultCode>,
    ) -> Result<(), ResultCode> {
        self.hints[group(addr)].prefetch();
        let promote = self.run_with_words(|t, words, fx| {
            let woken = op(t, fx)?;
            Ok(words.ready(addr, told, woken))
        })?;
        if let Some((site, n)) = promote {
            site.promote(n, with_context(|c| c.promoter()));
        }
        Ok(())
    }

    /// svcSignalProcessWideKey on the condition-variable word `key`: the table's signal of
    /// up to `count` waiters (`<= 0`: all), each taking its mutex or waiting for the owner
    /// `resolve` finds. Without the lock when nothing is there to change: no wait counted in
    /// `key`'s bucket of the census and the key already 0, which is what the table's signal
    /// would leave (census.rs says why a count of 0 is exact for this signal).
    pub(crate) fn signal_key(
        &self,
        key: &AtomicU32,
        count: i32,
        resolve: impl FnMut(u32) -> Option<Caller>,
    ) {
        // Either load, in either order, sees every wait registered before this signal; a wait
        // registered meanwhile is ordered after it (census.rs).
        if word::load(key) == 0 && !self.census.may_wait(key as *const AtomicU32 as usize) {
            return;
        }
        self.run(|t, fx| t.signal_condvar(key, count, resolve, fx));
    }

    /// Runs `op`, which may register a wait (`Ok(Some(key))`), and blocks until that wait
    /// ends, or until `limit` ends it. `addr` picks the spin gate; `on` names the svc in a
    /// stuck thread's report.
    ///
    /// # Blocking
    /// Through the runtime's `block_on`: a guest thread holds no virtual core while it waits.
    pub(crate) fn block(
        &self,
        on: &'static str,
        addr: usize,
        limit: impl Limit,
        op: impl FnOnce(
            &mut Waits,
            &mut Effects<Option<WeakThread>>,
        ) -> Result<Option<WaitKey>, ResultCode>,
    ) -> Result<(), ResultCode> {
        // The waker `block_on` will poll with (this thread's parker's), registered with the
        // wait in the same locked step: the first poll then needs no lock of its own.
        let (waker, parker) = with_parker(|p, w| (w.clone(), Arc::as_ptr(p) as usize));
        let registered = self.run(|t, fx| {
            let key = op(t, fx)?;
            if let Some(k) = &key {
                let ended = t.poll(k, &waker);
                debug_assert!(ended.is_none(), "a wait ended as it registered");
                if let Some(lines) = t.lines_of(k) {
                    self.hints[group(addr)].remember(lines, parker);
                }
                if trace::on() {
                    let holder = t.lock_owner(k).map_or(0, |o| trace_id(t, o));
                    trace::blocked_before_wait(addr, on, holder);
                }
            }
            Ok(key)
        });
        let Some(key) = registered? else {
            return Ok(());
        };
        let wait = Waiting {
            arbiter: self,
            key: Some(key),
            registered: waker,
            limit,
        };
        let gate = &self.gates[group(addr)];
        block_on(wait, Wait::object(on, gate))
    }
}

/// The trace id of thread `id` of `table` (0: a host thread, or one the table forgot or
/// that is gone).
fn trace_id(table: &Waits, id: u32) -> u64 {
    table
        .party(id)
        .and_then(Option::as_ref)
        .and_then(WeakThread::upgrade)
        .map_or(0, |t| t.trace_id())
}

/// Records that a wait moved to another lock owner (a host thread's wait is in no trace's
/// wait tree: nothing).
fn trace_move(table: &Waits, m: Move) {
    let waiter = trace_id(table, m.waiter);
    if waiter != 0 {
        trace::moved(m.addr, waiter, trace_id(table, m.owner));
    }
}

/// One registered wait as a future: ready when the table ends it (its result then waits in
/// the key's mailbox, taken without the lock) or its limit does. Dropping it before then
/// takes it out of the table (Cancelled).
struct Waiting<'a, L> {
    arbiter: &'a Arbiter,
    /// `None` once the wait ended.
    key: Option<WaitKey>,
    /// The waker the table holds for this wait: a poll with one that wakes the same needs
    /// no lock to register it.
    registered: Waker,
    limit: L,
}

// Never pin-projected: the fields are only reached through `&mut`.
impl<L> Unpin for Waiting<'_, L> {}

impl<L: Limit> Future for Waiting<'_, L> {
    type Output = Result<(), ResultCode>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(key) = &this.key else {
            // Polled after it returned: nothing more will come.
            return Poll::Pending;
        };
        // Ended by the table (the common wake): the result is in the mailbox, no lock.
        if let Some(r) = key.ended() {
            this.key = None;
            return Poll::Ready(r);
        }
        // A poll with the waker the table holds skips the table: a wake since the mailbox
        // was read went to that waker, which will poll again.
        if !this.registered.will_wake(cx.waker()) {
            if let Some(r) = this.arbiter.run(|t, _| t.poll(key, cx.waker())) {
                this.key = None;
                return Poll::Ready(r);
            }
            this.registered = cx.waker().clone();
        }
        let Some(code) = this.limit.check(cx.waker()) else {
            // Woken as its mutex's heir: spin for the hand-off before parking again.
            if let Some(r) = heir::spin(key.mailbox()) {
                this.key = None;
                return Poll::Ready(r);
            }
            return Poll::Pending;
        };
        let r = this.arbiter.run(|t, fx| t.cancel(key, code, fx));
        this.key = None;
        Poll::Ready(r)
    }
}

impl<L> Drop for Waiting<'_, L> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let _ = self
                .arbiter
                .run(|t, fx| t.cancel(&key, ResultCode::CANCELLED, fx));
        }
    }
}
