//! `block_on`: the one loop every wait blocks in, with the wait policy's inputs as arguments.
//!
//! Invariant (no lost wakeup): a wake that happens after a future registered its waker always
//! ends the wait, whatever phase the waiter is in: the waker sets the thread's [`Parker`]
//! token, and both the spin phase and the park consume the token before polling again.
//!
//! The flow of one wait: poll; if pending, ask the caller for the policy ([`WaitPolicy`]:
//! the role's spin, the counters, the virtual-core hooks), open the wait bracket ([`Away`]:
//! mark the thread waiting, give the virtual core back; a sleep's wait is inside its sleep's
//! bracket), spin (unless the object's [`SpinGate`] says spins miss), park; when woken, poll
//! again; when ready, close the bracket: take a virtual core again (in an object wait, the
//! one its waker claimed for it before waking it, if it did: `vcore/claim.rs`; a wake that
//! does not end the wait gives that claim back). This layer knows no runtime: whoever blocks
//! (the runtime's context, the virtual cores' own wait, a loom model) says what the policy
//! is, and is asked only once the first poll found the future pending, so a wait that is
//! ready at once costs one poll.

use crate::chaos;
use crate::parker::Parker;
use crate::policy::Spin;
use crate::spin_gate::SpinGate;
use crate::stats::Stripe;
use crate::sys;
use crate::trace::{self, SpinEnd, WaitFor};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// One wait's description.
#[derive(Clone, Copy, Debug)]
pub struct Wait<'a> {
    /// What the wait is for.
    pub what: WaitFor,
    /// What it waits on, in words (`"sleep"`, `"virtual core"`, an object's kind): what a
    /// thread stuck in it is reported waiting on.
    pub on: &'static str,
    /// The object's spin gate (miss counter); `None` spins by role alone.
    pub gate: Option<&'a SpinGate>,
    /// Whether to spin before parking (a sleep's deadline is known to be far: it does not).
    pub spin: bool,
    /// Whether a waker may claim a virtual core for the caller while it waits
    /// (`vcore/claim.rs`): a wait that a wake ends and that takes a core after it (on
    /// objects, an idle poll's sleep); not a sleep's timer, nor a wait for a core.
    pub claims: bool,
}

impl<'a> Wait<'a> {
    /// A wait on a sync object of kind `on` with its spin gate.
    pub fn object(on: &'static str, gate: &'a SpinGate) -> Self {
        Wait {
            what: WaitFor::Object,
            on,
            gate: Some(gate),
            spin: true,
            claims: true,
        }
    }

    /// A wait on several objects (wait_any): no one object's gate applies.
    pub fn objects() -> Wait<'static> {
        Wait {
            what: WaitFor::Object,
            on: "several objects",
            gate: None,
            spin: true,
            claims: true,
        }
    }

    /// A sleep's wait for its reactor timer, which never spins before it parks. It is inside
    /// its sleep's wait bracket (`Away`, opened in `sleep.rs`), so it neither marks the thread
    /// nor gives a core back: the sleep did.
    ///
    /// # Caveats
    /// A guest thread that waits with it outside a sleep keeps its core while it waits.
    pub fn sleep() -> Wait<'static> {
        Wait {
            what: WaitFor::Sleep,
            on: "sleep",
            gate: None,
            spin: false,
            claims: false,
        }
    }

    /// An idle poll's sleep (`sleep.rs`): a sleep whose promotion is a wake, so the promoter
    /// claims the sleeper's core as an object's waker does (`vcore/claim.rs`), and where
    /// none is free, the sleeper is woken by the holder that hands one over.
    pub fn idle_poll() -> Wait<'static> {
        Wait {
            claims: true,
            ..Wait::sleep()
        }
    }

    /// The wait for a virtual core.
    pub fn vcore() -> Wait<'static> {
        Wait {
            what: WaitFor::Vcore,
            on: "virtual core",
            gate: None,
            spin: true,
            claims: false,
        }
    }
}

/// The wait policy of whoever blocks: its spin, its counters, and its virtual core.
pub trait WaitPolicy {
    /// The spin before a park.
    fn spin(&self) -> Spin;

    /// Where spins and parks are counted; `None`: nowhere.
    fn counters(&self) -> Option<&Stripe>;

    /// Gives the caller's virtual core back; `true` if it held one. With `claimable` (a wait
    /// on an object), whoever wakes the caller may claim a core for it meanwhile
    /// (`vcore/claim.rs`).
    fn release_core(&self, claimable: bool) -> bool;

    /// The wait goes on after a wake that did not end it: gives back a core claimed for the
    /// caller meanwhile.
    fn unclaim_core(&self);

    /// Takes a virtual core again (itself a ranked wait).
    fn acquire_core(&self);

    /// Notes what the caller is blocked on (`Some`) or that it runs again (`None`), for a
    /// shutdown's report and a watchdog.
    fn mark(&self, on: Option<&'static str>);
}

impl<P: WaitPolicy + ?Sized> WaitPolicy for &P {
    fn spin(&self) -> Spin {
        (**self).spin()
    }

    fn counters(&self) -> Option<&Stripe> {
        (**self).counters()
    }

    fn release_core(&self, claimable: bool) -> bool {
        (**self).release_core(claimable)
    }

    fn unclaim_core(&self) {
        (**self).unclaim_core();
    }

    fn acquire_core(&self) {
        (**self).acquire_core();
    }

    fn mark(&self, on: Option<&'static str>) {
        (**self).mark(on);
    }
}

/// The wait bracket: from [`Away::begin`] to [`Away::end`] the caller is marked waiting (on
/// what, in words) and holds no virtual core. Each wait that gives a core up opens one, once:
/// [`block_on_with`] for a wait on objects or for a core, a sleep (`sleep.rs`) around
/// whichever route serves it; a sleep's reactor wait ([`Wait::sleep`]) is inside its sleep's
/// bracket and opens none, so a sleep gives its core back once.
///
/// Not a drop guard: a wait that unwinds leaves without taking a core (taking one blocks).
#[must_use = "`end` unmarks the caller and takes its core back"]
#[derive(Debug)]
pub(crate) struct Away<P: WaitPolicy> {
    policy: P,
    held: bool,
}

impl<P: WaitPolicy> Away<P> {
    /// Marks the caller waiting on `wait.on` and gives its core back, unless it waits for a
    /// core (it holds none); for a wait that claims ([`Wait::claims`]), wakers may claim one
    /// for it meanwhile.
    /// Then wakes the idle pollers whose promotion the caller held (`pollers.rs`).
    pub(crate) fn begin(policy: P, wait: Wait<'_>) -> Self {
        policy.mark(Some(wait.on));
        let held = wait.what != WaitFor::Vcore && policy.release_core(wait.claims);
        // The thread stops running here (a wait for a core after a kick included): the pollers
        // it promoted are woken now, after the release so that they may take its core
        // (`pollers.rs`).
        crate::pollers::flush_deferred();
        Away { policy, held }
    }

    /// Whether the caller gave a core back at the begin.
    pub(crate) fn held(&self) -> bool {
        self.held
    }

    /// Marks the caller running and takes a core again if it gave one back (itself a ranked
    /// wait); returns whether it did.
    ///
    /// # Blocking
    /// Until the caller has a core, when it gave one back.
    pub(crate) fn end(self) -> bool {
        self.policy.mark(None);
        if self.held {
            self.policy.acquire_core();
        }
        self.held
    }
}

/// Blocks the calling thread on `fut`: `parker` must be the calling thread's and `waker` must
/// unpark it. `policy` is asked once, when the first poll finds `fut` pending. Parks also end
/// at `deadline()` (a `sys::now()` value), read before each park, so that `fut` is polled
/// again then even if nothing wakes it: for a future that has something to do by itself at a
/// time it knows, without a reactor timer, and may move as it polls (the virtual-core wait's
/// escape, and the end of a kick's grace).
///
/// # Blocking
/// Returns when `fut` is ready. A guest thread holds no virtual core while it waits and takes
/// one again before returning (a wait for a core holds none; a sleep's gave it back before,
/// in its wait bracket). Past `deadline()` every park returns at once, so a poll at that time
/// should move it or make `fut` ready, or the thread polls it in a loop.
pub fn block_on_with<F: Future, P: WaitPolicy>(
    parker: &Parker,
    waker: &Waker,
    fut: F,
    wait: Wait<'_>,
    deadline: impl Fn() -> Option<u64>,
    policy: impl FnOnce() -> P,
) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(waker);
    trace::first_poll();
    if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
        trace::wait_end(false);
        return v;
    }
    // Recorded before the core goes back, so that a wake the release leads to comes after.
    trace::wait_begin(wait.what);
    let policy = policy();
    // A sleep's wait is inside its sleep's bracket (`sleep.rs`): it opens none of its own.
    let away = (wait.what != WaitFor::Sleep).then(|| Away::begin(&policy, wait));
    let held = away.as_ref().is_some_and(Away::held);
    chaos::point();
    let out = loop {
        let spun = spin_then_park(parker, &policy, wait, deadline());
        chaos::point();
        let caught = spun == SpinEnd::Caught;
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            trace::wait_end(caught);
            break v;
        }
        if held {
            policy.unclaim_core();
        }
        trace::repoll(caught);
    };
    if let Some(away) = away {
        away.end();
    }
    out
}

/// Spin for the role's length unless the gate is closed, then park (until `deadline`);
/// returns how the spin ended.
fn spin_then_park(
    parker: &Parker,
    policy: &impl WaitPolicy,
    wait: Wait<'_>,
    deadline: Option<u64>,
) -> SpinEnd {
    let end = spin(parker, policy, wait);
    if end != SpinEnd::Caught {
        trace::spin_end(end);
    }
    if let Some(c) = policy.counters() {
        let counter = match end {
            SpinEnd::None => None,
            SpinEnd::Skipped => Some(&c.spins_skipped),
            SpinEnd::Caught => Some(&c.spins_caught),
            SpinEnd::Missed => Some(&c.spins_missed),
        };
        counter.into_iter().for_each(Stripe::bump);
        if end != SpinEnd::Caught {
            Stripe::bump(&c.parks);
        }
    }
    if end != SpinEnd::Caught {
        parker.park(deadline);
    }
    end
}

/// Spins until the parker is notified or the role's spin length passes.
fn spin(parker: &Parker, policy: &impl WaitPolicy, wait: Wait<'_>) -> SpinEnd {
    let spin = if wait.spin { policy.spin() } else { Spin::NONE };
    if spin.ns == 0 {
        return SpinEnd::None;
    }
    if wait.gate.is_some_and(|g| !g.should_spin()) {
        return SpinEnd::Skipped;
    }
    let end = sys::ticks().saturating_add(spin.ticks);
    let caught = loop {
        if parker.try_take() {
            break true;
        }
        if sys::ticks() >= end {
            break false;
        }
        crate::sync::spin_hint();
    };
    if let Some(g) = wait.gate {
        g.record(caught, spin.full);
    }
    if caught {
        SpinEnd::Caught
    } else {
        SpinEnd::Missed
    }
}
