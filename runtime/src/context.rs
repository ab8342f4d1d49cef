//! Which runtime and which guest thread the calling OS thread belongs to.
//!
//! Invariant: a thread's context is set once when it enters as a guest thread and cleared when
//! it leaves (by guard, unwinding included). Host threads have no guest record; their waits
//! use the process's default runtime (the newest one running), or plain defaults if none.

use crate::policy::Role;
use crate::runtime::Runtime;
use crate::stats::Counters;
use crate::sync::{read, write};
use crate::thread::ThreadRecord;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::RwLock;

std::thread_local! {
    static CURRENT: RefCell<Option<(Runtime, Arc<ThreadRecord>)>> = const { RefCell::new(None) };
}

static DEFAULT: RwLock<Option<Runtime>> = RwLock::new(None);

/// Makes `rt` the runtime of threads that have no guest context.
pub(crate) fn set_default(rt: Option<Runtime>) {
    *write(&DEFAULT) = rt;
}

/// Clears the default if it is `rt`.
pub(crate) fn clear_default(rt: &Runtime) {
    let mut d = write(&DEFAULT);
    if d.as_ref().is_some_and(|d| d.same(rt)) {
        *d = None;
    }
}

/// Ends the guest context when dropped.
#[must_use = "the context ends when the guard drops"]
pub struct EnterGuard(());

impl Drop for EnterGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.borrow_mut().take());
    }
}

/// Makes the calling OS thread the guest thread `record` of `rt`.
pub fn enter(rt: &Runtime, record: Arc<ThreadRecord>) -> EnterGuard {
    crate::park::with_parker(|p, _| record.bind(p.clone()));
    CURRENT.with(|c| *c.borrow_mut() = Some((rt.clone(), record)));
    EnterGuard(())
}

/// The calling thread's guest record, if it is a guest thread.
pub fn thread() -> Option<Arc<ThreadRecord>> {
    CURRENT.with(|c| c.borrow().as_ref().map(|(_, t)| t.clone()))
}

/// The runtime of the calling thread: its own if a guest, else the default.
pub fn runtime() -> Option<Runtime> {
    CURRENT
        .with(|c| c.borrow().as_ref().map(|(rt, _)| rt.clone()))
        .or_else(|| read(&DEFAULT).clone())
}

/// Runs `f` with the calling guest thread's runtime and record, borrowed (no clone, no lock);
/// `None`, without calling `f`, on any other thread. For hot paths such as checkpoints.
pub fn with_guest<R>(f: impl FnOnce(&Runtime, &Arc<ThreadRecord>) -> R) -> Option<R> {
    CURRENT.with(|c| c.borrow().as_ref().map(|(rt, t)| f(rt, t)))
}

/// Whether the calling thread's runtime is shutting down: its waits end with Cancelled.
pub fn is_cancelled() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().map(|(rt, _)| rt.is_shut_down())) == Some(true)
}

/// A snapshot of the calling thread's context for one wait.
pub struct Current {
    rt: Option<Runtime>,
    thread: Option<Arc<ThreadRecord>>,
}

/// The calling thread's context.
pub fn current() -> Current {
    let (rt, thread) = CURRENT.with(|c| match c.borrow().as_ref() {
        Some((rt, t)) => (Some(rt.clone()), Some(t.clone())),
        None => (None, None),
    });
    Current {
        rt: rt.or_else(|| read(&DEFAULT).clone()),
        thread,
    }
}

/// The context of a host thread of `rt` (no guest record, whatever the calling thread is).
pub fn current_host(rt: &Runtime) -> Current {
    Current {
        rt: Some(rt.clone()),
        thread: None,
    }
}

/// The default spin of a thread with no runtime (SPEC.md section 3).
const DEFAULT_SPIN_NS: u64 = 20_000;

impl Current {
    /// The runtime, if any.
    pub fn runtime(&self) -> Option<&Runtime> {
        self.rt.as_ref()
    }

    /// The guest record, if a guest thread.
    pub fn thread(&self) -> Option<&Arc<ThreadRecord>> {
        self.thread.as_ref()
    }

    /// The caller's role.
    pub fn role(&self) -> Role {
        match &self.thread {
            None => Role::Host,
            Some(t) if t.is_serial() => Role::Serial,
            Some(_) => Role::Other,
        }
    }

    /// The runtime's counters.
    pub fn stats(&self) -> Option<&Counters> {
        self.rt.as_ref().map(|rt| rt.counters())
    }

    /// The spin before a park, for this role.
    pub fn spin_ns(&self) -> u64 {
        self.rt
            .as_ref()
            .map_or(DEFAULT_SPIN_NS, |rt| rt.policy().spin_ns(self.role()))
    }

    /// Whether a spin of `ns` is full length.
    pub fn is_full_spin(&self, ns: u64) -> bool {
        self.rt
            .as_ref()
            .map_or(ns >= DEFAULT_SPIN_NS, |rt| rt.policy().is_full_spin(ns))
    }

    /// Gives the thread's virtual core back; `true` if it held one.
    pub fn release_vcore(&self) -> bool {
        match (&self.rt, &self.thread) {
            (Some(rt), Some(t)) => rt.vcores().release(t),
            _ => false,
        }
    }

    /// Takes a virtual core again (a ranked wait).
    pub fn acquire_vcore(&self) {
        if let (Some(rt), Some(t)) = (&self.rt, &self.thread) {
            rt.vcores().acquire(t);
        }
    }
}
