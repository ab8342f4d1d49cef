//! The objects a C handle names, kept in hos's handle table as one host object type, and their
//! lookup by handle and kind; and the guest threads' handles, kept open for the host.
//!
//! Invariant: a handle made here names an [`Object`] until `hos_svc_close_handle`; a call
//! borrows the object for its length (from the calling thread's cache of lookups or the
//! table, `hos::svc::with_handle_object`), so it uses the object even if another thread
//! closes the handle meanwhile. A handle of
//! another kind than the call wants is InvalidHandle, as on Horizon. A guest thread's handle
//! is its one real handle (the one its mutex words hold), made by hos; [`THREADS`] keeps a
//! share of each one a C call handed out, so that it too stays open until the host closes it,
//! whether the thread still runs, has ended or has detached.

use crate::boundary::{Error, Out, Result};
use crate::result::HOS_RESULT_INVALID_HANDLE;
use hos_rs::internal::lock;
use hos_rs::os::{
    Barrier, ConditionVariable, Event, MessageQueue, Mutex, ReaderWriterLock, Semaphore,
    TimerEvent, Waitable,
};
use hos_rs::svc::{self, Handle, HandleObject, HostObject};
use hos_rs::thread::{HandleShare, Thread};
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A Horizon handle: a process-wide name for an object or a guest thread. 0 is never a
/// handle.
pub type hos_handle = u32;

/// The pseudo-handle of the calling guest thread (Horizon's CUR_THREAD_HANDLE).
pub const HOS_CURRENT_THREAD: hos_handle = 0xFFFF_8000;

/// What a handle made through the C ABI names.
#[derive(Debug)]
pub enum Object {
    /// `hos_event_create`.
    Event(Event),
    /// `hos_timer_event_create`; an event too.
    TimerEvent(TimerEvent),
    /// `hos_queue_create`.
    Queue(MessageQueue<u64>),
    /// `hos_semaphore_create`.
    Semaphore(Semaphore),
    /// `hos_mutex_create`.
    Mutex(Mutex),
    /// `hos_condvar_create`.
    Condvar(ConditionVariable),
    /// `hos_rwlock_create`.
    RwLock(ReaderWriterLock),
    /// `hos_barrier_create`.
    Barrier(Barrier),
}

impl HostObject for Object {
    fn waitable(&self) -> Option<&dyn Waitable> {
        match self {
            Object::Event(e) => Some(e),
            Object::TimerEvent(t) => Some(t),
            Object::Queue(q) => Some(q),
            Object::Semaphore(s) => Some(s),
            Object::Mutex(_) | Object::Condvar(_) | Object::RwLock(_) | Object::Barrier(_) => None,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// Every kind but the timer event (whose drop stops its timer): nobody sees when the
    /// others are dropped.
    fn cacheable(&self) -> bool {
        !matches!(self, Object::TimerEvent(_))
    }
}

/// Names `object` with a new handle, written to `out`.
pub(crate) fn create(object: Object, out: Out<hos_handle>) -> Result<()> {
    let object: Arc<dyn HostObject> = Arc::new(object);
    let h = svc::create_handle(object)?;
    out.write(h.0);
    Ok(())
}

fn wrong_kind(h: hos_handle, want: &str) -> Error {
    Error::new(
        HOS_RESULT_INVALID_HANDLE,
        format!("handle {h:#x} names no {want}"),
    )
}

/// Runs `f` on the object `h` names, if `pick` finds the kind it wants in it.
pub(crate) fn with<T: ?Sized, R>(
    h: hos_handle,
    want: &str,
    pick: impl FnOnce(&Object) -> Option<&T>,
    f: impl FnOnce(&T) -> Result<R>,
) -> Result<R> {
    svc::with_handle_object(Handle(h), |o| match o {
        HandleObject::Host(o) => match o.as_any().downcast_ref::<Object>().and_then(pick) {
            Some(t) => f(t),
            None => Err(wrong_kind(h, want)),
        },
        _ => Err(wrong_kind(h, want)),
    })?
}

/// The guest thread `h` names.
pub(crate) fn thread(h: hos_handle) -> Result<Thread> {
    match svc::handle_object(Handle(h))? {
        HandleObject::Thread(t) => Ok(t),
        _ => Err(wrong_kind(h, "thread")),
    }
}

/// The shares that keep the guest threads' handles handed out to C open, by handle.
static THREADS: std::sync::Mutex<BTreeMap<hos_handle, HandleShare>> =
    std::sync::Mutex::new(BTreeMap::new());

/// Keeps the handle `share` names open until the host closes it; gives the handle.
pub(crate) fn keep_thread(share: HandleShare) -> hos_handle {
    let h = share.handle().0;
    let old = lock(&THREADS).insert(h, share);
    debug_assert!(old.is_none(), "handle {h:#x} kept twice");
    h
}

/// Closes `h` (svcCloseHandle), and lets a guest thread's handle go: once the thread has
/// ended too, hos forgets it, and its OS thread is reaped.
pub(crate) fn close(h: hos_handle) -> Result<()> {
    svc::close_handle(Handle(h))?;
    // Closed first: the share's drop would close it otherwise, and this call fail.
    let share = lock(&THREADS).remove(&h);
    // Dropped outside the lock: the last share tells hos's arbiter.
    if share.is_some() {
        drop(share);
        crate::reaper::reap_ended();
    }
    Ok(())
}
