//! The per-thread parker: a futex word with a one-token memory, like `std::thread::park`.
//!
//! Invariant (no lost wakeup): the waker only ever sets the state to NOTIFIED, with a swap, so
//! exactly one side sees PARKED and makes the futex call; the owner consumes NOTIFIED (an
//! acquiring read of it) before it returns from a park.

use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::thread_local;
use crate::sys;
use std::sync::Arc;
use std::task::{Wake, Waker};

const EMPTY: u32 = 0;
const NOTIFIED: u32 = 1;
const PARKED: u32 = 2;

/// A futex-backed parker with a one-token memory.
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
