//! The per-thread parker, and `block_on`: the one place every wait blocks.
//!
//! Invariant (no lost wakeup): a wake that happens after a future registered its waker always
//! ends the wait, whatever phase the waiter is in. The waker only ever sets the parker's state
//! to NOTIFIED (swap, so exactly one side sees PARKED and makes the futex call); the spin
//! phase and the park both consume NOTIFIED before polling again.
//!
//! The flow of one wait (DESIGN.md): poll; if pending, give the virtual core back, spin for the
//! role's length (unless the object's spin gate says spins miss), park; when woken, poll again;
//! when ready, take a virtual core again (itself a ranked wait through this same function).

use crate::context;
use crate::policy::SpinGate;
use crate::stats::Counters;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sys;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

const EMPTY: u32 = 0;
const NOTIFIED: u32 = 1;
const PARKED: u32 = 2;

/// A futex-backed parker with a one-token memory, like `std::thread::park`.
#[derive(Debug, Default)]
pub struct Parker {
    /// EMPTY, NOTIFIED or PARKED. # Invariant: only the owning thread moves it to PARKED or
    /// back to EMPTY; any thread may set NOTIFIED.
    state: AtomicU32,
}

impl Parker {
    /// A parker without a token.
    pub fn new() -> Self {
        Parker {
            state: AtomicU32::new(EMPTY),
        }
    }

    /// Gives the token; wakes the owner if it is parked.
    pub fn unpark(&self) {
        // Release: what the waker wrote before unpark is seen by the owner's Acquire take.
        // Swap, not store: exactly one unparker sees PARKED and pays for the futex call.
        if self.state.swap(NOTIFIED, Ordering::Release) == PARKED {
            sys::futex_wake(&self.state);
        }
    }

    /// Takes the token if it is there (the spin phase's check; no system call).
    #[inline]
    pub fn try_take(&self) -> bool {
        // Acquire: pairs with unpark's Release.
        self.state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Blocks until the token is given (returns `true`) or `deadline` (a `sys::now()` value)
    /// passes (returns `false`). Only the owning thread may park.
    pub fn park(&self, deadline: Option<u64>) -> bool {
        if self.try_take() {
            return true;
        }
        // Acquire on failure: the value is NOTIFIED, taken below.
        if let Err(s) =
            self.state
                .compare_exchange(EMPTY, PARKED, Ordering::Relaxed, Ordering::Acquire)
        {
            debug_assert_eq!(s, NOTIFIED, "parker in an impossible state {s}");
            self.state.store(EMPTY, Ordering::Relaxed);
            return true;
        }
        loop {
            sys::futex_wait(&self.state, PARKED, deadline);
            if self.try_take() {
                return true;
            }
            if deadline.is_some_and(|d| sys::now() >= d) {
                // Back to EMPTY unless a token arrived meanwhile, which we then take.
                return match self.state.compare_exchange(
                    PARKED,
                    EMPTY,
                    Ordering::Relaxed,
                    Ordering::Acquire,
                ) {
                    Ok(_) => false,
                    Err(_) => {
                        self.state.store(EMPTY, Ordering::Relaxed);
                        true
                    }
                };
            }
        }
    }
}

impl Wake for Parker {
    fn wake(self: Arc<Self>) {
        self.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.unpark();
    }
}

/// What a wait is for: decides its spin and whether it gives the virtual core back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFor {
    /// A sleep (served by the sleep paths; through block_on only for reactor deadlines).
    Sleep,
    /// A sync object: event, queue, mutex, condition variable, semaphore, wait_any.
    Object,
    /// A virtual core (the acquire itself: it holds no core to give back).
    Vcore,
}

/// One wait's description for [`block_on`].
#[derive(Clone, Copy, Debug)]
pub struct Wait<'a> {
    /// What the wait is for.
    pub what: WaitFor,
    /// The object's spin gate (miss counter); `None` spins by role alone.
    pub gate: Option<&'a SpinGate>,
    /// Skip the spin entirely (sleeps: their deadline is known to be far).
    pub spin: bool,
}

impl<'a> Wait<'a> {
    /// A wait on a sync object with its spin gate.
    pub fn object(gate: &'a SpinGate) -> Self {
        Wait {
            what: WaitFor::Object,
            gate: Some(gate),
            spin: true,
        }
    }

    /// A wait for a deadline, which never spins before it parks.
    pub fn sleep() -> Wait<'static> {
        Wait {
            what: WaitFor::Sleep,
            gate: None,
            spin: false,
        }
    }

    /// The wait for a virtual core.
    pub fn vcore() -> Wait<'static> {
        Wait {
            what: WaitFor::Vcore,
            gate: None,
            spin: true,
        }
    }
}

// Under loom the parker is per model thread (loom runs its threads on one OS thread), so
// that models of objects that call `block_on` see one parker a thread.
crate::sync::thread_local! {
    static LOCAL: (Arc<Parker>, Waker) = {
        let p = Arc::new(Parker::new());
        let w = Waker::from(p.clone());
        (p, w)
    };
}

/// Runs `f` with this thread's parker and a waker that unparks it.
pub fn with_parker<R>(f: impl FnOnce(&Arc<Parker>, &Waker) -> R) -> R {
    LOCAL.with(|(p, w)| f(p, w))
}

/// Blocks the calling thread on `fut` under the runtime's wait policy.
///
/// # Blocking
/// Returns when `fut` is ready. A guest thread holds no virtual core while it waits and takes
/// one again before returning (unless `wait.what` is [`WaitFor::Vcore`]).
pub fn block_on<F: Future>(fut: F, wait: Wait<'_>) -> F::Output {
    block_on_until(fut, wait, None)
}

/// [`block_on`] whose parks also end at `deadline` (a `sys::now()` value), so that `fut` is
/// polled again then even if nothing wakes it: for a future that completes by itself at a
/// known time without a reactor timer (the virtual-core wait's escape).
///
/// # Blocking
/// As [`block_on`]; past `deadline` every park returns at once, so `fut` should be ready by
/// then, or the thread polls it in a loop.
pub fn block_on_until<F: Future>(fut: F, wait: Wait<'_>, deadline: Option<u64>) -> F::Output {
    with_parker(|parker, waker| block_on_with(parker, waker, fut, wait, deadline))
}

/// [`block_on_until`] with a given parker and the waker that unparks it (the calling thread
/// must own the parker). For hosts that keep their own parker, and for loom models.
pub fn block_on_with<F: Future>(
    parker: &Parker,
    waker: &Waker,
    fut: F,
    wait: Wait<'_>,
    deadline: Option<u64>,
) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(waker);
    if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
        return v;
    }
    let ctx = context::current();
    let held = wait.what != WaitFor::Vcore && ctx.release_vcore();
    let out = loop {
        spin_then_park(parker, &ctx, wait, deadline);
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            break v;
        }
    };
    if held {
        ctx.acquire_vcore();
    }
    out
}

/// How the spin of one wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spin {
    /// No spin for this wait (a sleep, or a zero spin length).
    None,
    /// The object's gate said spins miss; skipped.
    Skipped,
    /// Woken while spinning: no park.
    Caught,
    /// Ran its whole length, then parked.
    Missed,
}

/// The policy part of a wait: spin for the role's length unless the gate is closed, then park
/// (until `deadline`, if any).
fn spin_then_park(parker: &Parker, ctx: &context::Current, wait: Wait<'_>, deadline: Option<u64>) {
    let spin = spin(parker, ctx, wait);
    if let Some(stats) = ctx.stats() {
        let counter = match spin {
            Spin::None => None,
            Spin::Skipped => Some(&stats.spins_skipped),
            Spin::Caught => Some(&stats.spins_caught),
            Spin::Missed => Some(&stats.spins_missed),
        };
        counter.into_iter().for_each(Counters::bump);
        if spin != Spin::Caught {
            Counters::bump(&stats.parks);
        }
    }
    if spin != Spin::Caught {
        parker.park(deadline);
    }
}

/// Spins until the parker is notified or the role's spin length passes.
fn spin(parker: &Parker, ctx: &context::Current, wait: Wait<'_>) -> Spin {
    let spin_ns = if wait.spin { ctx.spin_ns() } else { 0 };
    if spin_ns == 0 {
        return Spin::None;
    }
    if wait.gate.is_some_and(|g| !g.should_spin()) {
        return Spin::Skipped;
    }
    let full = ctx.is_full_spin(spin_ns);
    let end = sys::now().saturating_add(spin_ns);
    let caught = loop {
        if parker.try_take() {
            break true;
        }
        if sys::now() >= end {
            break false;
        }
        crate::sync::spin_hint();
    };
    if let Some(g) = wait.gate {
        g.record(caught, full);
    }
    if caught {
        Spin::Caught
    } else {
        Spin::Missed
    }
}
