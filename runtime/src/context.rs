//! Which runtime and which guest thread the calling OS thread belongs to, and the composed
//! `block_on` that waits under that runtime's policy.
//!
//! Invariant: a thread's context is set once when it enters as a guest thread and cleared when
//! it leaves (by guard, unwinding included). Host threads have no guest record; their waits
//! use the process's default runtime: the newest one still running; when none runs, the newest
//! one still alive, shut down (so a host's wait after shutdown is cancelled at once); plain
//! defaults when no runtime is alive.
//! A wait or a sleep borrows its context ([`Current`]) for its length (the slot is replaced
//! only when the thread enters or leaves, never inside a wait), so no reference count is
//! touched: the runtime's is shared by all its threads. A host thread's default runtime is
//! looked up once, only when the wait's first poll finds it pending, and every decision of
//! that wait (spin, deadline class, virtual core) comes from that one lookup; the thread keeps
//! the answer (weakly) until a runtime is built or shut down, so that its waits do not read
//! the process-wide list under its lock each time.

use crate::block_on::{block_on_with, Wait, WaitPolicy};
use crate::parker::with_parker;
use crate::policy::{deadline_class, Spin, Waiter};
use crate::poll;
use crate::reactor::DeadlineClass;
use crate::runtime::{defaults_changed, defaults_generation, Runtime, WeakRuntime};
use crate::stats::Stripe;
use crate::sync::{read, write};
use crate::thread::ThreadRecord;
use crate::trace;
use crate::vcore::{kick_is_set, Occupant};
use std::cell::{Cell, RefCell};
// std's atomic, not the loom seam's: kick words are std atomics (vcore/kick.rs).
use std::future::Future;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::sync::RwLock;

std::thread_local! {
    static CURRENT: RefCell<Option<(Runtime, Arc<ThreadRecord>)>> = const { RefCell::new(None) };
    /// The calling guest thread's kick word while it is entered: a `Copy` value with no
    /// destructor, so the checkpoint's fast path reads it without a borrow or a state check.
    static KICK: Cell<Option<&'static AtomicU32>> = const { Cell::new(None) };
    /// Whether the calling thread is a guest thread of a runtime in the deterministic mode:
    /// the one branch the mode costs a wait when it is off (`block_on`), and a tick read.
    static DET: Cell<bool> = const { Cell::new(false) };
    /// The virtual deadline the current poll of a deterministic wait noted ([`det_timeout_at`]).
    static DET_DEADLINE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Every runtime built and still alive, oldest first. # Invariant: weak, so it never keeps a
/// runtime alive; dead entries are dropped whenever one is added.
static BUILT: RwLock<Vec<WeakRuntime>> = RwLock::new(Vec::new());

std::thread_local! {
    /// A host thread's default runtime, as of a [`defaults_generation`]: weak, so that it
    /// keeps no runtime alive (a dead one is looked up again).
    static HOST_DEFAULT: RefCell<Option<(u64, WeakRuntime)>> = const { RefCell::new(None) };
}

/// Makes `rt` the runtime of threads that have no guest context (the builder calls it).
pub(crate) fn set_default(rt: &Runtime) {
    let mut built = write(&BUILT);
    built.retain(WeakRuntime::is_alive);
    built.push(rt.downgrade());
    defaults_changed();
}

/// [`default_runtime`], kept by the calling thread until it may have changed: the lookup reads
/// the process-wide list under its lock, which every host thread's every wait would
/// otherwise take.
fn host_default() -> Option<Runtime> {
    let gen = defaults_generation();
    let kept = HOST_DEFAULT.try_with(|h| match &*h.borrow() {
        Some((g, rt)) if *g == gen => rt.upgrade(),
        _ => None,
    });
    if let Ok(Some(rt)) = kept {
        return Some(rt);
    }
    let rt = default_runtime();
    let _ = HOST_DEFAULT.try_with(|h| *h.borrow_mut() = rt.as_ref().map(|r| (gen, r.downgrade())));
    rt
}

/// The runtime of threads that have no guest context: the newest one still running; when none
/// runs, the newest one alive (shut down: its waits end Cancelled at once).
fn default_runtime() -> Option<Runtime> {
    let built = read(&BUILT);
    let mut alive = built.iter().rev().filter_map(WeakRuntime::upgrade);
    let newest = alive.next()?;
    if !newest.is_shut_down() {
        return Some(newest);
    }
    Some(alive.find(|rt| !rt.is_shut_down()).unwrap_or(newest))
}

/// Ends the guest context when dropped.
#[must_use = "the context ends when the guard drops"]
#[derive(Debug)]
pub struct EnterGuard(());

impl Drop for EnterGuard {
    fn drop(&mut self) {
        trace::thread_exit();
        // At the thread's exit the slot may be torn down already (a guard held in another
        // thread-local, an attached thread that never detached): then there is nothing to end.
        let _ = KICK.try_with(|k| k.set(None));
        let _ = DET.try_with(|d| d.set(false));
        if let Ok(Some((_, record))) = CURRENT.try_with(|c| c.borrow_mut().take()) {
            record.set_wake_hook(None);
            // Leaving, the thread gets the OS default slice back (nothing to ask if it had it).
            let _ = record.ask_wake_slice(|_, _| 0);
        }
    }
}

/// Makes the calling OS thread the guest thread `record` of `rt`.
pub fn enter(rt: &Runtime, record: Arc<ThreadRecord>) -> EnterGuard {
    with_parker(|p, _| record.bind(p.clone()));
    rt.ask_wake_slice(&record);
    record.set_wake_hook(Some(rt.claim_hook(&record)));
    rt.trace_thread_start(&record);
    KICK.with(|k| k.set(Some(rt.kick_word(&record))));
    DET.with(|d| d.set(rt.token().is_some()));
    CURRENT.with(|c| *c.borrow_mut() = Some((rt.clone(), record)));
    EnterGuard(())
}

/// A checkpoint of the calling thread, if it is a guest thread: where a kicked thread gives its
/// virtual core up (`Runtime::checkpoint`). When nothing is asked of it (its kick word is 0,
/// the common case at a loop head) this is one thread-local read and one load.
///
/// # Blocking
/// Only when it gives its core up, until it has one again.
#[inline]
pub fn checkpoint() {
    let asked = KICK
        .try_with(|k| k.get().is_some_and(kick_is_set))
        .unwrap_or(false);
    if asked {
        with_guest(|rt, t| rt.checkpoint_kicked(t));
    }
}

/// The runtime of the calling thread: its own if a guest, else the default.
pub fn runtime() -> Option<Runtime> {
    CURRENT
        .with(|c| c.borrow().as_ref().map(|(rt, _)| rt.clone()))
        .or_else(default_runtime)
}

/// Runs `f` with the calling guest thread's runtime and record, borrowed (no clone, no lock);
/// `None`, without calling `f`, on any other thread. For hot paths such as checkpoints.
#[inline]
pub fn with_guest<R>(f: impl FnOnce(&Runtime, &Arc<ThreadRecord>) -> R) -> Option<R> {
    // A thread-local torn down at the thread's exit is no guest context.
    CURRENT
        .try_with(|c| c.borrow().as_ref().map(|(rt, t)| f(rt, t)))
        .ok()
        .flatten()
}

/// Notes what the calling guest thread now waits on (`Some`) or that it runs (`None`), for a
/// wait whose object changes inside one `block_on` (a condition variable taking its mutex
/// back). Nothing on other threads.
pub fn mark_wait(on: Option<&'static str>) {
    with_guest(|_, t| t.mark_wait(on));
}

/// The calling thread's context, borrowed (for one wait or sleep): its runtime (a guest
/// thread's own, else the default one) and its guest record. No reference count is touched:
/// the runtime's is shared by all its threads.
#[derive(Clone, Copy, Debug)]
pub struct Current<'a> {
    rt: Option<&'a Runtime>,
    thread: Option<&'a Arc<ThreadRecord>>,
}

/// Runs `f` with the calling thread's context. The slot is borrowed for the call: it is
/// replaced only when the thread enters or leaves, never inside a wait or a sleep.
pub fn with_current<R>(f: impl FnOnce(Current<'_>) -> R) -> R {
    let host = std::cell::OnceCell::new();
    CURRENT.with(|c| f(context_of(&c.borrow(), &host)))
}

/// The context of a thread whose slot holds `guest`; a host thread's runtime is the default
/// one, looked up into `host` at the first call.
fn context_of<'a>(
    guest: &'a Option<(Runtime, Arc<ThreadRecord>)>,
    host: &'a std::cell::OnceCell<Option<Runtime>>,
) -> Current<'a> {
    match guest {
        Some((rt, t)) => Current {
            rt: Some(rt),
            thread: Some(t),
        },
        None => Current {
            rt: host.get_or_init(host_default).as_ref(),
            thread: None,
        },
    }
}

/// The context of a host thread of `rt` (no guest record, whatever the calling thread is).
pub(crate) fn host_of(rt: &Runtime) -> Current<'_> {
    Current {
        rt: Some(rt),
        thread: None,
    }
}

impl<'a> Current<'a> {
    /// The runtime, if any.
    pub fn runtime(&self) -> Option<&'a Runtime> {
        self.rt
    }

    /// The guest record, if a guest thread.
    pub fn thread(&self) -> Option<&'a Arc<ThreadRecord>> {
        self.thread
    }

    /// Who the caller is to the policy: a host thread, or its guest thread's kind.
    pub fn waiter(&self) -> Waiter {
        self.thread.map_or(Waiter::Host, |t| t.waiter())
    }

    /// The class of this caller's wait deadlines.
    pub fn deadline_class(&self) -> DeadlineClass {
        deadline_class(self.waiter())
    }

    /// Whether a lock wait of this caller may be woken ahead of its hand-off, to spin for it
    /// (the policy's lock heirs): a guest thread of a runtime on a machine with room for it,
    /// in a role that spins. Host threads never are.
    pub fn wakes_heir(&self) -> bool {
        match (self.rt, self.thread) {
            (Some(rt), Some(_)) => rt.policy().wakes_heir(self.waiter()),
            _ => false,
        }
    }

    /// The priority this caller's promotions of idle pollers defer by (`PollSite::promote`'s
    /// `by`): a guest thread's own, where its runtime's policy defers them; host threads and
    /// other policies promote at once.
    pub fn promoter(&self) -> Option<u8> {
        match (self.rt, self.thread) {
            (Some(rt), Some(t)) if rt.policy().defers_promotions() => Some(t.priority()),
            _ => None,
        }
    }

    /// Blocks the calling thread (the one this context is of) on `fut` under its wait policy.
    ///
    /// # Blocking
    /// As [`block_on`].
    pub(crate) fn block_on<F: Future>(self, fut: F, wait: Wait<'_>) -> F::Output {
        with_parker(|p, w| block_on_with(p, w, fut, wait, || None, || self))
    }
}

impl WaitPolicy for Current<'_> {
    fn spin(&self) -> Spin {
        self.rt
            .map_or_else(Spin::without_runtime, |rt| rt.policy().spin(self.waiter()))
    }

    fn counters(&self) -> Option<&Stripe> {
        self.rt.map(Runtime::counters)
    }

    fn release_core(&self, claimable: bool) -> bool {
        match (self.rt, self.thread) {
            (Some(rt), Some(t)) if claimable => rt.step_away(t),
            (Some(rt), Some(t)) => rt.release_core(t),
            _ => false,
        }
    }

    fn unclaim_core(&self) {
        if let (Some(rt), Some(t)) = (self.rt, self.thread) {
            rt.unclaim_core(t);
        }
    }

    fn acquire_core(&self) {
        if let (Some(rt), Some(t)) = (self.rt, self.thread) {
            rt.acquire_core(t);
        }
    }

    fn mark(&self, on: Option<&'static str>) {
        if let Some(t) = self.thread {
            t.mark_wait(on);
        }
    }
}

/// Blocks the calling thread on `fut` under its runtime's wait policy (its role's spin, the
/// object's spin gate in `wait`, its virtual core given back while it waits).
///
/// # Blocking
/// Returns when `fut` is ready. A guest thread holds no virtual core while it waits and takes
/// one again before returning.
pub fn block_on<F: Future>(fut: F, wait: Wait<'_>) -> F::Output {
    // Pinned here, so that the closures below carry a pointer, not a copy of the future.
    let fut = std::pin::pin!(fut);
    // The deterministic mode's one branch when it is off: a thread-local read.
    if DET.get() {
        return det_block_on(fut, wait);
    }
    // A wait between a poll and a sleep makes the sleep no idle poll (docs/design.md section 4).
    poll::clear();
    // The context is borrowed for the wait (the slot is only replaced when the thread enters
    // or leaves, never inside a wait); a host thread's default runtime is looked up only if
    // the first poll finds the wait pending.
    let host = std::cell::OnceCell::new();
    let out = CURRENT.with(|c| {
        let guest = c.borrow();
        let ctx = || context_of(&guest, &host);
        with_parker(|p, w| block_on_with(p, w, fut, wait, || None, ctx))
    });
    // The end of a wait is a pause point (`pause.rs`): for a thread that held no core to take
    // back (taking one is a pause point itself).
    with_guest(|rt, t| rt.pause_point(t));
    out
}

/// [`block_on`] of a guest thread in the deterministic mode: it polls only while it holds
/// the token, and between polls gives the token up until a decision finds it woken and
/// picks it (`token.rs`). Once the mode stopped (a shutdown) the wait goes on as any other.
///
/// # Blocking
/// Until `fut` is ready; the thread holds the token when it returns, while the mode is on.
#[cold]
fn det_block_on<F: Future>(fut: F, wait: Wait<'_>) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    with_parker(|p, w| {
        let mut cx = std::task::Context::from_waker(w);
        // Traced as `block_on_with` traces a wait, so the wait tree (and a softlock's report)
        // sees what it waits on and who holds that.
        trace::first_poll();
        let mut begun = false;
        loop {
            DET_DEADLINE.set(None);
            if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                trace::wait_end(false);
                return v;
            }
            if begun {
                trace::repoll(false);
            } else {
                trace::wait_begin(wait.what);
                begun = true;
            }
            let deadline = DET_DEADLINE.take();
            let waited = with_guest(|rt, t| match rt.token() {
                Some(token) if token.is_on() => {
                    t.mark_wait(Some(wait.on));
                    token.wait(t.id(), p, deadline);
                    t.mark_wait(None);
                    true
                }
                _ => false,
            });
            if waited != Some(true) {
                trace::wait_end(false);
                return with_current(|ctx| {
                    block_on_with(p, w, fut.as_mut(), wait, || None, || ctx)
                });
            }
        }
    })
}

/// The system tick of the calling thread if it is a guest thread in the deterministic mode:
/// the virtual clock's (a read counts as a checkpoint of the clock); `None` otherwise, one
/// thread-local read.
pub fn det_tick() -> Option<u64> {
    with_token(crate::token::Token::tick)
}

/// The virtual time of the calling thread if it is a guest thread in the deterministic mode,
/// in ns; `None` otherwise.
pub fn det_now() -> Option<u64> {
    with_token(crate::token::Token::now)
}

/// `f` of the calling thread's runtime's token, if it is a guest thread in the deterministic
/// mode; `None` otherwise, after one thread-local read.
fn with_token<R>(f: impl FnOnce(&crate::token::Token) -> R) -> Option<R> {
    if !DET.try_with(Cell::get).unwrap_or(false) {
        return None;
    }
    with_guest(|rt, _| rt.token().map(f)).flatten()
}

/// The deadline `d` from now on the virtual clock, if the calling thread is a guest thread
/// in the deterministic mode (`None` otherwise: the caller's deadline is on the host clock).
pub fn det_deadline(d: std::time::Duration) -> Option<u64> {
    det_now().map(|vt| vt.saturating_add(crate::time::nanos(d)))
}

/// Notes, from a future's poll that returns pending in a deterministic wait, that the wait
/// also ends at the virtual time `deadline` (its timeout): the token makes the thread ready
/// then (`token.rs`), in place of a reactor timer.
pub fn det_timeout_at(deadline: u64) {
    DET_DEADLINE.set(Some(deadline));
}
