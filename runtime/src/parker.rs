//! The per-thread parker: a futex word with a one-token memory, like `std::thread::park`.
//!
//! Invariant (no lost wakeup): the waker only ever sets the state to NOTIFIED, with a swap, so
//! exactly one side sees PARKED and makes the futex call; the owner consumes NOTIFIED with a
//! read-modify-write that acquires (a compare-exchange or a swap, never a plain store), so it
//! reads the latest token in the word's order and sees what every unpark before it published.
//!
//! A parker may carry a wake hook (a guest thread's: it claims a virtual core for the thread,
//! `vcore/claim.rs`), run by an unpark that finds the owner parked, before the token is given:
//! so the owner, once it runs, always finds what the hook did. A hook may keep the token back
//! (a deferred claim, HOS_VCORE_CLAIM_DEFER): then it has handed the owner's wake to someone
//! who owes it (`vcore/claim.rs` says who), and the unpark gives nothing.

use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::thread_local;
use crate::sync::{read, write};
use crate::sys;
use crate::trace;
use std::sync::{Arc, RwLock};
use std::task::{Wake, Waker};

/// What an unpark runs before it wakes a parked owner; `true`: the hook took the wake over
/// (module doc), and the unpark gives no token.
pub(crate) type WakeHook = Arc<dyn Fn() -> bool + Send + Sync>;

const EMPTY: u32 = 0;
const NOTIFIED: u32 = 1;
const PARKED: u32 = 2;

/// A futex-backed parker with a one-token memory.
#[derive(Default)]
pub struct Parker {
    /// EMPTY, NOTIFIED or PARKED. # Invariant: only the owning thread moves it to PARKED or
    /// back to EMPTY; any thread may set NOTIFIED.
    state: AtomicU32,
    /// The owning thread's trace id (0: unknown), for the trace's wake edges.
    owner: u64,
    /// Whether `hook` holds one: the unpark's check, one load. A std atomic even under loom:
    /// set by the owner before it waits, bookkeeping the models need not interleave.
    hooked: std::sync::atomic::AtomicBool,
    /// The wake hook (module doc), set and cleared by the owner.
    hook: RwLock<Option<WakeHook>>,
}

impl std::fmt::Debug for Parker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parker")
            .field("state", &self.state)
            .field("owner", &self.owner)
            .field("hooked", &self.hooked)
            .finish_non_exhaustive()
    }
}

impl Parker {
    /// A parker without a token, owned by the calling thread.
    pub fn new() -> Self {
        Parker {
            state: AtomicU32::new(EMPTY),
            owner: trace::thread_id(),
            ..Parker::default()
        }
    }

    /// Sets (`Some`) or clears the wake hook (module doc). Only the owning thread calls it.
    pub fn set_wake_hook(&self, hook: Option<WakeHook>) {
        let on = hook.is_some();
        *write(&self.hook) = hook;
        // Relaxed: read by unparks as a hint; the lock above orders the hook itself.
        self.hooked.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Runs the wake hook if the owner is parked now (it stays parked until a token comes,
    /// so the hook's work happens before the owner runs); `true` if the hook took the wake
    /// over.
    fn before_wake(&self) -> bool {
        // Relaxed, both: hints. A hook missed because the owner parks just after this load
        // only loses the claim's head start; a hook run for an owner that stopped waiting
        // meanwhile finds nothing to claim (the claim is checked under the cores' lock), or
        // defers a wake that the claim's end gives all the same (`vcore/claim.rs`).
        if !self.hooked.load(std::sync::atomic::Ordering::Relaxed)
            || self.state.load(Ordering::Relaxed) != PARKED
        {
            return false;
        }
        let hook = read(&self.hook).clone();
        hook.is_some_and(|h| h())
    }

    /// The owning thread's trace id (0: unknown).
    pub fn owner(&self) -> u64 {
        self.owner
    }

    /// Gives the token; wakes the owner if it is parked. Gives nothing if the wake hook took
    /// the wake over (module doc).
    pub fn unpark(&self) {
        crate::chaos::point();
        if self.before_wake() {
            return;
        }
        // Relaxed: a hint for the trace (a park just after it makes the wake untimed, which
        // only loses precision).
        trace::wake(self.owner, || self.state.load(Ordering::Relaxed) == PARKED);
        // Release: what the waker wrote before unpark is seen by the owner's Acquire take.
        // Swap, not store: exactly one unparker sees PARKED and pays for the futex call.
        if self.state.swap(NOTIFIED, Ordering::Release) == PARKED {
            sys::futex_wake(&self.state);
        }
    }

    #[cfg(all(test, not(loom)))]
    /// Whether the owner is parked now (tests wait for it before a wake).
    pub(crate) fn is_parked(&self) -> bool {
        self.state.load(Ordering::SeqCst) == PARKED
    }

    /// Whether a token waits to be taken: the deterministic mode's decisions read a waiting
    /// thread's wake here (`token.rs`), without taking it.
    pub(crate) fn is_notified(&self) -> bool {
        // Acquire: pairs with unpark's Release, so what the waker wrote is seen by the
        // decision (which hands it to the owner under the token's lock).
        self.state.load(Ordering::Acquire) == NOTIFIED
    }

    /// Takes the token if it is there (the spin phase's check; no system call).
    #[inline]
    pub fn try_take(&self) -> bool {
        // A load first, so that a spin's empty looks leave the line shared with the waker,
        // which then writes it without waiting for a compare-and-swap's ownership of it.
        // Relaxed: the compare-and-swap below decides, and orders.
        if self.state.load(Ordering::Relaxed) != NOTIFIED {
            return false;
        }
        // Acquire: pairs with unpark's Release.
        self.state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Blocks until the token is given (returns `true`) or `deadline` (a `sys::now()` value)
    /// passes (returns `false`). Only the owning thread may park.
    pub fn park(&self, deadline: Option<u64>) -> bool {
        self.park_on(deadline, sys::futex_wait)
    }

    /// As [`Parker::park`], the deadline served by the thread's timer at its slack, as
    /// precisely as a `sys::sleep_until` (`sys::wait_precise`): for a timed park that stands
    /// for a sleep, never a coarser wait timeout (Windows' ride the tick).
    pub fn park_timer(&self, deadline: u64) -> bool {
        self.park_on(Some(deadline), sys::wait_precise)
    }

    /// [`Parker::park`] with `wait` as the futex wait.
    fn park_on(&self, deadline: Option<u64>, wait: fn(&AtomicU32, u32, Option<u64>)) -> bool {
        if self.try_take() {
            return true;
        }
        // Relaxed on failure: the value seen is NOTIFIED, consumed by `take_notified`.
        if self
            .state
            .compare_exchange(EMPTY, PARKED, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return self.take_notified();
        }
        loop {
            wait(&self.state, PARKED, deadline);
            if self.try_take() {
                return true;
            }
            if deadline.is_some_and(|d| sys::now() >= d) {
                // Back to EMPTY unless a token arrived meanwhile, which we then take.
                return match self.state.compare_exchange(
                    PARKED,
                    EMPTY,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => false,
                    Err(_) => self.take_notified(),
                };
            }
        }
    }

    /// Consumes the token a failed compare-exchange saw. A swap, not a store: a second unpark
    /// may have swapped NOTIFIED in after the one that compare-exchange read, and only a
    /// read-modify-write is sure to read that latest one and acquire what it published (a
    /// store would leave the owner blind to it and then park on a token it erased; the loom
    /// model `two_unparkers_never_lose_a_wake` finds that interleaving).
    fn take_notified(&self) -> bool {
        // Acquire: pairs with the Release swap of every unpark before this one.
        let s = self.state.swap(EMPTY, Ordering::Acquire);
        debug_assert_eq!(s, NOTIFIED, "parker in an impossible state {s}");
        true
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

// Under loom the parker is per model thread (loom runs its threads on one OS thread), so
// that models of objects that block see one parker a thread.
thread_local! {
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

/// Whether `waker` wakes this thread's parker (a blocking wait's, not a task's); `false` too
/// where the thread's locals are being torn down.
pub(crate) fn is_own_waker(waker: &Waker) -> bool {
    LOCAL
        .try_with(|(_, own)| own.will_wake(waker))
        .unwrap_or(false)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::recorder::Settings;
    use crate::trace::{Kind, Session, UNTIMED};
    use std::sync::mpsc;

    #[test]
    fn a_wake_reads_the_clock_only_when_its_owner_is_parked() {
        let session = Session::start(
            u64::MAX - 9,
            Settings {
                flight: true,
                ..Settings::default()
            },
        );
        let parker = Arc::new(Parker::new());
        let (unparked, first) = mpsc::channel();
        let (read, done) = mpsc::channel::<()>();
        let p = parker.clone();
        let waker = std::thread::spawn(move || {
            p.unpark();
            unparked.send(()).unwrap();
            while !p.is_parked() {
                std::thread::yield_now();
            }
            p.unpark();
            let me = trace::thread_id();
            done.recv().unwrap();
            me
        });
        first.recv().unwrap();
        assert!(parker.park(None), "the token of the wake before the park");
        assert!(parker.park(None), "the wake of the parked owner");
        let snap = session.snapshot();
        read.send(()).unwrap();
        let me = waker.join().unwrap();
        let wakes: Vec<u64> = snap
            .threads
            .iter()
            .filter(|t| t.tid == me)
            .flat_map(|t| &t.events)
            .filter(|e| e.kind == Kind::Wake && e.a == parker.owner())
            .map(|e| e.x)
            .collect();
        assert_eq!(wakes, [UNTIMED, 0]);
        session.end();
    }
}
