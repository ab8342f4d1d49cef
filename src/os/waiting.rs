//! The one wait of every object: an operation on the object's locked state, as a future.
//!
//! Invariant (no lost wakeup): an operation checks the object's state and, when it cannot
//! complete, registers in the object's waiter list under the same lock; whoever changes the
//! state notifies under that lock. A change that follows the check therefore always finds the
//! waiter registered, and its notice is consumed or passed on (see `waiters.rs`).
//!
//! Every form of a wait goes through here: the blocking form ([`block_on`] over a
//! [`Waiting`], with the object's spin gate), the timed form (the same future with a reactor
//! deadline), and the async form (the future itself). A zero timeout, in any of these forms
//! and from Rust or C alike, is one locked attempt that never registers: what a `try_*` is, so
//! that the idle-poll policy sees every poll that found nothing. A wait ends in one of three
//! ways: its operation completes; its deadline passes (TimedOut, nothing consumed); its
//! runtime shuts down (Cancelled, nothing consumed).

use super::waiters::{WaitSlot, Waiters, WakeBatch};
use crate::entry::entry;
use crate::result::ResultCode;
use crate::svc::timeout::timeout_from_ns;
use crate::sync::{lock, Mutex};
use hos_runtime::internal::trace::{self, Failed};
use hos_runtime::internal::{
    block_on, deadline_after, det_deadline, det_now, det_timeout_at, poll_found, sys, with_current,
    with_guest, DeadlineClass, Runtime, SpinGate, Timer, Wait,
};
use std::any::type_name;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// An object's shared state behind its lock, with its spin gate.
#[derive(Debug)]
pub(crate) struct Object<S> {
    state: Mutex<S>,
    /// The object's spin miss counter, handed to `block_on` (the spin policy stays there).
    pub(crate) gate: SpinGate,
}

/// One operation on an object's state: what completes it and which list it waits in.
pub trait Op {
    /// The object's state (behind its lock).
    type State;
    /// What the wait gives.
    type Output;
    /// What it waits on, in words: what a thread stuck in it is reported waiting on.
    const ON: &'static str;

    /// A lock-free attempt before the first lock (objects with an atomic fast path).
    fn fast(&mut self) -> Option<Self::Output> {
        None
    }

    /// Tries to complete on the locked state; the wakes it causes go into `batch`. `slot` is
    /// the caller's place in the list (a condition variable completes on its own notice).
    fn complete(
        &mut self,
        s: &mut Self::State,
        slot: &WaitSlot,
        batch: &mut WakeBatch,
    ) -> Option<Self::Output>;

    /// The list this operation waits in.
    fn waiters<'s>(&self, s: &'s mut Self::State) -> &'s mut Waiters;

    /// Whether completing consumes what a notice told about (a peek does not, so a notice it
    /// held is passed on).
    fn consumes(&self) -> bool {
        true
    }

    /// What the wait gives when it ends without completing (`code` is TimedOut or Cancelled).
    fn fail(&mut self, code: ResultCode) -> Self::Output;

    /// The trace id of the thread holding the object (a mutex's owner), 0 for none: the wait
    /// tree puts a waiter under its holder.
    fn holder(&self, _s: &Self::State) -> u64 {
        0
    }

    /// What the object does, under its lock, when this operation's waiter leaves its list
    /// without completing (a timeout, a shutdown, a dropped future): a barrier takes the
    /// arrival back; a reader-writer lock lets through the readers a leaving writer held back.
    fn left(&self, _s: &mut Self::State, _batch: &mut WakeBatch) {}
}

impl<S> Object<S> {
    /// An object with state `s` and an open spin gate.
    pub(crate) fn new(s: S) -> Self {
        Object {
            state: Mutex::new(s),
            gate: SpinGate::new(),
        }
    }

    /// Runs `f` on the locked state and wakes what it collected after unlocking.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut S, &mut WakeBatch) -> R) -> R {
        hos_runtime::internal::chaos::point();
        let mut batch = WakeBatch::new();
        let r = f(&mut lock(&self.state), &mut batch);
        batch.wake();
        r
    }

    /// One poll of `op`: completes it, or registers `waker` under `slot`; without a waker (a
    /// try), one that finds nothing marks the calling thread an idle poller of the list.
    pub(crate) fn poll_op<O: Op<State = S>>(
        &self,
        op: &mut O,
        slot: &mut WaitSlot,
        waker: Option<&Waker>,
    ) -> Poll<O::Output> {
        if !slot.is_registered() {
            if let Some(v) = op.fast() {
                return Poll::Ready(v);
            }
        }
        self.with(|s, batch| {
            let out = op.complete(s, slot, batch);
            let holder = op.holder(s);
            let list = op.waiters(s);
            match (out, waker) {
                (Some(v), _) => {
                    if list.remove(slot) && !op.consumes() {
                        list.notify(1, batch);
                    }
                    Poll::Ready(v)
                }
                (None, Some(w)) => {
                    if !slot.is_registered() {
                        trace::blocked(self as *const Self as usize, type_name::<O>(), holder);
                    }
                    list.register(slot, w);
                    Poll::Pending
                }
                (None, None) => {
                    list.missed();
                    Poll::Pending
                }
            }
        })
    }

    /// Takes `slot` out of `op`'s list, passing on a notice it held.
    pub(crate) fn leave<O: Op<State = S>>(&self, op: &O, slot: &mut WaitSlot) {
        if !slot.is_registered() {
            return;
        }
        self.with(|s, batch| {
            let list = op.waiters(s);
            if list.remove(slot) {
                list.notify(1, batch);
            }
            op.left(s, batch);
        });
    }

    /// One attempt at `op` that never waits: a wait with a zero timeout, in every form (a
    /// `try_*`, `.timeout(ZERO)`, a C call with a timeout of 0). One that finds nothing marks
    /// the calling thread an idle poller of the object and ends TimedOut, consuming nothing.
    fn attempt<O: Op<State = S>>(&self, op: &mut O) -> O::Output {
        match self.poll_op(op, &mut WaitSlot::new(), None) {
            Poll::Ready(v) => {
                poll_found();
                v
            }
            Poll::Pending => op.fail(ResultCode::TIMED_OUT),
        }
    }

    /// Runs `op` to its end on the calling thread (see [`Waiting::block`]).
    pub(crate) fn run<O: Op<State = S>>(&self, op: O, timeout: Timeout) -> O::Output {
        Waiting::new(self, op).limit(timeout).block()
    }
}

/// How long a wait may last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timeout {
    /// Until it completes or is cancelled.
    Never,
    /// One attempt (a zero timeout).
    Poll,
    /// Until it completes, is cancelled, or this much time has passed.
    After(Duration),
}

impl Timeout {
    /// A svc's timeout in nanoseconds ([`timeout_from_ns`]: negative waits without limit, 0
    /// polls).
    pub(crate) fn from_ns(ns: i64) -> Self {
        Timeout::from(timeout_from_ns(ns))
    }
}

impl From<Option<Duration>> for Timeout {
    fn from(d: Option<Duration>) -> Self {
        match d {
            None => Timeout::Never,
            Some(d) if d.is_zero() => Timeout::Poll,
            Some(d) => Timeout::After(d),
        }
    }
}

/// Whether the calling guest thread's runtime is shutting down: a svc that would block
/// answers Cancelled before it does anything, as the kernel answers a thread being
/// terminated. Other threads learn it from their wait's [`Limits`].
pub(crate) fn shutting_down() -> bool {
    with_guest(|rt, _| rt.is_shut_down()) == Some(true)
}

/// What a wait learns of its context at its first pending poll.
#[derive(Clone, Copy, Debug)]
struct WaitCtx {
    /// Guest threads are unparked by their record at shutdown; others watch the reactor.
    guest: bool,
    class: DeadlineClass,
}

/// The two ways a wait ends without completing: its deadline and its runtime's shutdown.
#[derive(Debug)]
pub(crate) struct Limits {
    deadline: Option<u64>,
    cancellable: bool,
    ctx: Option<WaitCtx>,
    /// A host thread's or task's runtime, kept from its first pending poll: the one its
    /// shutdown watch and timer are on. A guest thread's is its own context's for as long as
    /// it waits, and is not kept: no reference count moves for it, so that a hand-off's two
    /// threads do not pass the runtime's count between them on the woken one's path.
    host_rt: Option<Runtime>,
    timer: Option<Timer>,
    watch: Option<usize>,
}

impl Limits {
    /// No deadline, cancellable.
    pub(crate) fn new(deadline: Option<u64>) -> Self {
        Limits {
            deadline,
            cancellable: true,
            ctx: None,
            host_rt: None,
            timer: None,
            watch: None,
        }
    }

    /// Limits for `timeout`, cancellable.
    pub(crate) fn for_timeout(timeout: Timeout) -> Self {
        let mut limits = Limits::new(None);
        limits.set_timeout(timeout);
        limits
    }

    /// Whether the timeout is zero: the wait is one attempt ([`Object::attempt`]), never a
    /// registration (a zero timeout's deadline is 0, which no clock reading precedes).
    pub(crate) fn is_attempt(&self) -> bool {
        self.deadline == Some(0)
    }

    /// Sets the deadline from `timeout` (a zero timeout is a deadline of now).
    pub(crate) fn set_timeout(&mut self, timeout: Timeout) {
        self.deadline = match timeout {
            Timeout::Never => None,
            Timeout::Poll => Some(0),
            // A guest thread in the deterministic mode times out on the virtual clock.
            Timeout::After(d) => Some(det_deadline(d).unwrap_or_else(|| deadline_after(d))),
        };
    }

    /// Whether the wait must end now, and with which code: Cancelled once the runtime shut
    /// down, TimedOut once the deadline passed, InvalidState for a deadline with no runtime
    /// to time it. Otherwise arranges for `waker` to be woken when either happens.
    pub(crate) fn check(&mut self, waker: &Waker) -> Option<ResultCode> {
        let end = self.end(waker);
        if let Some(code) = end {
            trace::wait_failed(if code == ResultCode::CANCELLED {
                Failed::Cancelled
            } else {
                Failed::TimedOut
            });
        }
        end
    }

    /// [`Limits::check`] without the trace: a host thread's wait on the runtime it kept at
    /// its first pending poll, a guest thread's on its own context's.
    fn end(&mut self, waker: &Waker) -> Option<ResultCode> {
        if let Some(ctx) = self.ctx.filter(|c| !c.guest) {
            let rt = self.host_rt.take();
            let end = self.end_on(rt.as_ref(), ctx, waker);
            self.host_rt = rt;
            return end;
        }
        with_current(|c| {
            let ctx = *self.ctx.get_or_insert_with(|| WaitCtx {
                guest: c.thread().is_some(),
                class: c.deadline_class(),
            });
            if !ctx.guest {
                self.host_rt = c.runtime().cloned();
            }
            self.end_on(c.runtime(), ctx, waker)
        })
    }

    /// [`Limits::end`] on runtime `rt` (`None`: the caller has none).
    fn end_on(&mut self, rt: Option<&Runtime>, ctx: WaitCtx, waker: &Waker) -> Option<ResultCode> {
        if self.cancellable {
            if let Some(rt) = rt {
                if rt.is_shut_down() || (!ctx.guest && !watch_stop(rt, &mut self.watch, waker)) {
                    return Some(ResultCode::CANCELLED);
                }
            }
        }
        let deadline = self.deadline?;
        // The deterministic mode's timeout: on the virtual clock, served by the token.
        if let Some(vt) = det_now() {
            if vt >= deadline {
                return Some(ResultCode::TIMED_OUT);
            }
            det_timeout_at(deadline);
            return None;
        }
        if sys::now() >= deadline {
            return Some(ResultCode::TIMED_OUT);
        }
        let Some(rt) = rt else {
            return Some(ResultCode::INVALID_STATE);
        };
        let timer = self.timer.get_or_insert_with(|| {
            trace::deadline(deadline);
            rt.reactor().timer(deadline, ctx.class)
        });
        match Pin::new(timer).poll(&mut Context::from_waker(waker)) {
            // A shutdown that began after the check above fires every timer at once: its
            // flag is set before it does (and read here with Acquire), so the wait reports
            // the shutdown, not a deadline that has not passed.
            Poll::Ready(()) if self.cancellable && rt.is_shut_down() => Some(ResultCode::CANCELLED),
            Poll::Ready(()) => Some(ResultCode::TIMED_OUT),
            Poll::Pending => None,
        }
    }
}

/// A host thread's wait: arranges for `waker` to be woken at `rt`'s shutdown (the thread's
/// kept watch for a blocking wait; else, a task's wait, one for this wait under `key`);
/// `false` once it has stopped.
fn watch_stop(rt: &Runtime, key: &mut Option<usize>, waker: &Waker) -> bool {
    match rt.reactor().watch_stop_kept(waker) {
        Some(on) => on,
        None => rt.reactor().watch_stop(key, waker),
    }
}

impl Drop for Limits {
    fn drop(&mut self) {
        if let Some(rt) = &self.host_rt {
            rt.reactor().unwatch_stop(&mut self.watch);
        }
    }
}

/// A wait on an nn::os object, as a future: what every `*_async` method returns.
///
/// It completes with the operation's result, with TimedOut once the timeout set by
/// [`Waiting::timeout`] passes, or with Cancelled once the runtime shuts down; a wait that
/// ends without completing consumes nothing. Dropping it leaves the object's waiter list
/// (passing on a notice it held), so it is safe to drop at any point, e.g. in a `select!`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// let ev = hos::os::Event::new(hos::os::ClearMode::Auto);
/// let waited = ev.wait_async().timeout(Duration::from_millis(1)).await;
/// assert_eq!(waited, Err(hos::ResultCode::TIMED_OUT));
/// rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
#[derive(Debug)]
#[must_use = "a wait does nothing unless polled"]
pub struct Waiting<'a, O: Op> {
    obj: &'a Object<O::State>,
    op: O,
    slot: WaitSlot,
    limits: Limits,
}

// Never pin-projected: `op` is only reached through `&mut`, so moving it is fine.
impl<O: Op> Unpin for Waiting<'_, O> {}

impl<'a, O: Op> Waiting<'a, O> {
    /// A wait for `op` on `obj`, with no timeout.
    pub(crate) fn new(obj: &'a Object<O::State>, op: O) -> Self {
        Waiting {
            obj,
            op,
            slot: WaitSlot::new(),
            limits: Limits::new(None),
        }
    }

    /// Sets how long the wait may last.
    pub(crate) fn limit(mut self, timeout: Timeout) -> Self {
        self.limits.set_timeout(timeout);
        self
    }

    /// Ends the wait with TimedOut once `d` has passed from now (a zero `d` makes it one
    /// attempt). Call it before the first poll.
    pub fn timeout(self, d: Duration) -> Self {
        self.limit(Timeout::from(Some(d)))
    }

    /// Blocks the calling thread until the wait ends: the blocking form of any wait, with the
    /// operation's own output (TimedOut and Cancelled told apart where it can fail).
    ///
    /// # Blocking
    /// Through the runtime's `block_on` with the object's spin gate: a guest thread gives its
    /// virtual core back while it waits and takes one again before it returns. With a zero
    /// timeout it is one attempt, exactly a `try_*`: it neither blocks nor gives the core
    /// back, and one that finds nothing makes the thread's next short sleep an idle poll.
    pub fn block(mut self) -> O::Output {
        entry();
        if self.limits.is_attempt() {
            return self.obj.attempt(&mut self.op);
        }
        let obj = self.obj;
        block_on(self, Wait::object(O::ON, &obj.gate))
    }

    /// Makes the wait immune to shutdown (a condition variable taking its mutex back).
    pub(crate) fn uncancellable(mut self) -> Self {
        self.limits.cancellable = false;
        self
    }
}

impl<O: Op> Future for Waiting<'_, O> {
    type Output = O::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O::Output> {
        let this = self.get_mut();
        if this.limits.is_attempt() {
            return Poll::Ready(this.obj.attempt(&mut this.op));
        }
        if let Poll::Ready(v) = this
            .obj
            .poll_op(&mut this.op, &mut this.slot, Some(cx.waker()))
        {
            return Poll::Ready(v);
        }
        match this.limits.check(cx.waker()) {
            Some(code) => {
                this.obj.leave(&this.op, &mut this.slot);
                Poll::Ready(this.op.fail(code))
            }
            None => Poll::Pending,
        }
    }
}

impl<O: Op> Drop for Waiting<'_, O> {
    fn drop(&mut self) {
        self.obj.leave(&self.op, &mut self.slot);
    }
}
