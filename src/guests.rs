//! The guest threads of one runtime: which are live, what each is doing, and their OS threads
//! not yet joined.
//!
//! Invariant: a guest thread is *live* from its admission (under this registry's lock, where
//! a runtime that has shut down admits no one) until its code has returned or unwound (or,
//! attached, it detached) and it has given back everything it held; it then leaves, under
//! the same lock, and wakes every shutdown waiting for the live set to empty. Its OS
//! thread's handle sits in one slot shared with its
//! [`JoinHandle`](crate::thread::JoinHandle): whoever takes it out joins it, or drops it to
//! detach the thread.

use crate::result::ResultCode;
use crate::sync::{lock, wait};
use hos_runtime::internal::{sys, Activity, Runtime as Inner, ThreadRecord};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The OS thread of a guest thread, in a slot shared by its handle and the runtime.
pub(crate) type JoinSlot = Mutex<Option<JoinHandle<()>>>;

/// What a guest thread is doing, as the runtime last saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doing {
    /// Running guest code, or blocked outside the runtime (an OS call, a std lock, a join
    /// of another thread): nothing the runtime can end.
    GuestCode,
    /// Blocked in a wait of the runtime: on what (`"mutex"`, `"sleep"`, `"virtual core"`, ...)
    /// and for how long so far.
    Waiting {
        /// What it waits on.
        on: &'static str,
        /// How long it has waited.
        waited: Duration,
    },
    /// Its code returned or unwound; it is giving back what it held.
    Leaving,
}

/// One live guest thread and what it is doing: what a shutdown reports of a thread that did
/// not leave, and what a watchdog names ([`Runtime::guest_states`](crate::Runtime::guest_states)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestState {
    /// Its name now.
    pub name: String,
    /// Its runtime-unique id ([`Thread::id`](crate::thread::Thread::id)).
    pub id: u64,
    /// What it is doing.
    pub doing: Doing,
}

impl GuestState {
    fn of(record: &ThreadRecord, now: u64) -> Self {
        GuestState {
            name: record.name().to_string(),
            id: record.id(),
            doing: match record.activity() {
                Activity::Running => Doing::GuestCode,
                Activity::Waiting { on, since } => Doing::Waiting {
                    on,
                    waited: Duration::from_nanos(now.saturating_sub(since)),
                },
                Activity::Ended => Doing::Leaving,
            },
        }
    }
}

impl fmt::Display for GuestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} (id {}): ", self.name, self.id)?;
        match self.doing {
            Doing::GuestCode => f.write_str("running guest code"),
            Doing::Waiting { on, waited } => write!(f, "waiting on {on} for {waited:.1?}"),
            Doing::Leaving => f.write_str("leaving (its code returned)"),
        }
    }
}

/// The registry of one runtime's guest threads.
#[derive(Debug, Default)]
pub(crate) struct Guests {
    list: Mutex<List>,
    /// Notified whenever a guest thread leaves.
    left: Condvar,
}

#[derive(Debug, Default)]
struct List {
    /// Live guest threads, in admission order.
    live: Vec<Arc<ThreadRecord>>,
    /// OS threads not yet joined, by guest id.
    joins: Vec<(u64, Arc<JoinSlot>)>,
}

/// The guest threads a shutdown waited for: those that left, and those still live at its end.
pub(crate) struct Outcome {
    /// The OS threads to join (their guests left) or to detach (stragglers), by guest id.
    pub(crate) joins: Vec<(u64, Arc<JoinSlot>)>,
    /// The guests still live when the wait ended (the calling thread excluded).
    pub(crate) stragglers: Vec<GuestState>,
}

impl Guests {
    fn list(&self) -> MutexGuard<'_, List> {
        lock(&self.list)
    }

    /// Admits `record` as a live guest thread of `rt` and starts its OS thread with `spawn`.
    ///
    /// # Errors
    /// InvalidState once `rt` has shut down (nothing is started), or if the OS refuses the
    /// thread.
    pub(crate) fn admit(
        &self,
        rt: &Inner,
        record: &Arc<ThreadRecord>,
        spawn: impl FnOnce() -> std::io::Result<JoinHandle<()>>,
    ) -> Result<Arc<JoinSlot>, ResultCode> {
        let mut list = self.admitting(rt)?;
        let os = spawn().map_err(|e| {
            hos_runtime::warn!(name = %record.name(), error = %e, "the OS refused a guest thread");
            ResultCode::INVALID_STATE
        })?;
        list.live.push(record.clone());
        let slot = Arc::new(Mutex::new(Some(os)));
        list.joins.retain(|(_, s)| lock(&**s).is_some());
        list.joins.push((record.id(), slot.clone()));
        Ok(slot)
    }

    /// Admits `record` as a live guest thread of `rt` running on the calling OS thread (an
    /// attached thread: the host's, with no OS thread to join).
    ///
    /// # Errors
    /// InvalidState once `rt` has shut down.
    pub(crate) fn admit_here(
        &self,
        rt: &Inner,
        record: &Arc<ThreadRecord>,
    ) -> Result<(), ResultCode> {
        self.admitting(rt)?.live.push(record.clone());
        Ok(())
    }

    /// The list, locked for an admission, unless `rt` has shut down.
    fn admitting(&self, rt: &Inner) -> Result<MutexGuard<'_, List>, ResultCode> {
        let list = self.list();
        // Under the lock: a shutdown sets its flag before it takes this lock, so it either
        // sees this thread live or this check sees the flag.
        if rt.is_shut_down() {
            return Err(ResultCode::INVALID_STATE);
        }
        Ok(list)
    }

    /// Takes `record` out of the live set (its thread calls it as it ends) and wakes every
    /// shutdown that waits.
    pub(crate) fn leave(&self, record: &Arc<ThreadRecord>) {
        let mut list = self.list();
        list.live.retain(|r| !Arc::ptr_eq(r, record));
        drop(list);
        self.left.notify_all();
    }

    /// What every live guest thread is doing.
    pub(crate) fn states(&self) -> Vec<GuestState> {
        let now = sys::now();
        self.list()
            .live
            .iter()
            .map(|r| GuestState::of(r, now))
            .collect()
    }

    /// Waits until no guest thread other than `me` is live, or `deadline` passes (`None`: no
    /// limit), and hands out the OS threads to join or detach.
    pub(crate) fn wait_empty(&self, me: Option<u64>, deadline: Option<Instant>) -> Outcome {
        let others = |l: &List| l.live.iter().any(|r| Some(r.id()) != me);
        let mut list = self.list();
        while others(&list) {
            let left = match deadline.map(|d| d.checked_duration_since(Instant::now())) {
                None => None,
                Some(Some(left)) if !left.is_zero() => Some(left),
                Some(_) => break,
            };
            list = wait(&self.left, list, left);
        }
        let now = sys::now();
        let stragglers = list
            .live
            .iter()
            .filter(|r| Some(r.id()) != me)
            .map(|r| GuestState::of(r, now))
            .collect();
        // The caller's own OS thread stays: its handle may still join it.
        let (mine, joins) = std::mem::take(&mut list.joins)
            .into_iter()
            .partition(|(id, _)| Some(*id) == me);
        list.joins = mine;
        Outcome { joins, stragglers }
    }
}
