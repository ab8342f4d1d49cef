//! The handle table: 32-bit names for waitable objects and guest threads, as svc-level code
//! passes them around (one table per process, as on Horizon), and the calls that make, look
//! up and close them (svcCloseHandle; `create_handle` is hos's own).
//!
//! Invariant: a handle is `(linear id << 15) | index`, both 15 bits, as on Horizon: never 0
//! and bits 30 and 31 always clear, so a handle fits a mutex word beside its waiters bit. A
//! slot's linear id changes each time it is filled (never 0), so a closed handle stays
//! invalid after its slot is reused (until the 32767th refill). The
//! table is behind one std mutex (process bookkeeping, outside the loom models), held only to
//! look up, insert or remove: a lookup clones the entry out, and no wait happens under it.
//! Every close is counted ([`closes`]) after its slot is emptied, and each thread keeps its
//! recent lookups ([`cache`]), used only while that count has not moved.

mod cache;

pub(crate) use cache::with_object;

use super::handle::Handle;
use crate::entry::entry;
use crate::os::{Event, Waitable};
use crate::result::ResultCode;
use crate::sync::lock;
use crate::thread::Thread;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Handles a process may hold at once (Horizon's usual handle table size).
pub const MAX_HANDLES: usize = 1024;

const INDEX_BITS: u32 = 15;
/// The largest linear id (bits 15..=29).
const LINEAR_MAX: u32 = (1 << 15) - 1;
/// Bits no handle has (Horizon's reserved bits); a value with them names nothing.
const RESERVED: u32 = 0xC000_0000;

/// What a handle names.
#[derive(Clone)]
pub enum HandleObject {
    /// A waitable object (event, timer event, semaphore, message queue).
    Waitable(Arc<dyn Waitable + Send + Sync>),
    /// A guest thread (waitable too: ready once it has ended). A thread has one handle, its
    /// real one ([`Thread::handle`]), made by hos when the thread is spawned or attached.
    Thread(Thread),
    /// A kernel event's writable side (svcSignalEvent, svcClearEvent); not waitable.
    WritableEvent(Arc<Event>),
    /// A kernel event's readable side (waited on; svcClearEvent, svcResetSignal).
    ReadableEvent(Arc<Event>),
    /// An object a host names by handle (the C ABI's events, queues, mutexes).
    Host(Arc<dyn HostObject>),
}

/// An object a host keeps in the handle table: hos's objects wrapped in the host's own type
/// (the C ABI's, for one), so that a handle can name any of them, waitable or not.
pub trait HostObject: Any + Send + Sync {
    /// The object to wait for, if a wait may name it; a wait for one that is not waitable (a
    /// mutex, a condition variable) is InvalidHandle.
    fn waitable(&self) -> Option<&dyn Waitable>;

    /// The object as `Any`, for the host to downcast to its own type.
    fn as_any(&self) -> &dyn Any;

    /// Whether a thread's cache of lookups may keep the object after its handle is closed,
    /// until that thread's next lookup or its exit: true only if nobody can tell when it is
    /// dropped (an event: yes; a timer event, whose drop stops its timer: no).
    fn cacheable(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for HandleObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandleObject::Waitable(_) => f.write_str("Waitable"),
            HandleObject::Thread(t) => write!(f, "Thread({:?})", t.name()),
            HandleObject::WritableEvent(_) => f.write_str("WritableEvent"),
            HandleObject::ReadableEvent(_) => f.write_str("ReadableEvent"),
            HandleObject::Host(_) => f.write_str("Host"),
        }
    }
}

impl HandleObject {
    /// The object as something to wait for; `None` for one that cannot be waited on (an
    /// event's writable side, a host object no wait may name).
    pub fn as_waitable(&self) -> Option<&dyn Waitable> {
        match self {
            HandleObject::Waitable(w) => Some(&**w),
            HandleObject::Thread(t) => Some(t),
            HandleObject::ReadableEvent(e) => Some(&**e),
            HandleObject::WritableEvent(_) => None,
            HandleObject::Host(h) => h.waitable(),
        }
    }
}

impl<T: Waitable + Send + Sync + 'static> From<Arc<T>> for HandleObject {
    fn from(obj: Arc<T>) -> Self {
        HandleObject::Waitable(obj)
    }
}

impl From<Arc<dyn HostObject>> for HandleObject {
    fn from(obj: Arc<dyn HostObject>) -> Self {
        HandleObject::Host(obj)
    }
}

struct Slot {
    /// The linear id of the handle in it; 0 while free.
    linear: u32,
    object: Option<HandleObject>,
}

struct Table {
    slots: Vec<Slot>,
    free: Vec<u16>,
    next_linear: u32,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
    next_linear: 1,
});

/// Handles closed so far, process-wide.
static CLOSES: AtomicU64 = AtomicU64::new(0);

/// How many handles have been closed so far: a close ordered before this call (by anything,
/// in any thread) is counted in what it reads.
fn closes() -> u64 {
    // Relaxed: only the count is read; coherence makes a close that happens before this load
    // visible to it, whatever ordered the two.
    CLOSES.load(Ordering::Relaxed)
}

fn table() -> std::sync::MutexGuard<'static, Table> {
    lock(&TABLE)
}

fn split(h: Handle) -> (usize, u32) {
    ((h.0 & ((1 << INDEX_BITS) - 1)) as usize, h.0 >> INDEX_BITS)
}

/// Names `object`.
pub(crate) fn insert(object: HandleObject) -> Result<Handle, ResultCode> {
    let mut t = table();
    let index = match t.free.pop() {
        Some(i) => i as usize,
        None if t.slots.len() < MAX_HANDLES => {
            t.slots.push(Slot {
                linear: 0,
                object: None,
            });
            t.slots.len() - 1
        }
        None => return Err(ResultCode::OUT_OF_HANDLES),
    };
    let linear = t.next_linear;
    t.next_linear = if linear >= LINEAR_MAX { 1 } else { linear + 1 };
    t.slots[index] = Slot {
        linear,
        object: Some(object),
    };
    Ok(Handle(linear << INDEX_BITS | index as u32))
}

/// What `h` names (the calling guest thread for [`Handle::CURRENT_THREAD`]).
pub(crate) fn get(h: Handle) -> Result<HandleObject, ResultCode> {
    if h == Handle::CURRENT_THREAD {
        return crate::thread::current()
            .map(HandleObject::Thread)
            .ok_or(ResultCode::INVALID_HANDLE);
    }
    get_object(h)
}

/// What `h` names, a pseudo-handle being nothing (the kernel's
/// `GetObjectWithoutPseudoHandle`).
pub(crate) fn get_object(h: Handle) -> Result<HandleObject, ResultCode> {
    let (index, linear) = split(h);
    if h.0 & RESERVED != 0 {
        return Err(ResultCode::INVALID_HANDLE);
    }
    let t = table();
    t.slots
        .get(index)
        .filter(|s| s.linear == linear && linear != 0)
        .and_then(|s| s.object.clone())
        .ok_or(ResultCode::INVALID_HANDLE)
}

/// Closes `h`; the object lives on while others hold it (a wait in progress included).
pub(crate) fn close(h: Handle) -> Result<(), ResultCode> {
    let (index, linear) = split(h);
    if h.0 & RESERVED != 0 {
        return Err(ResultCode::INVALID_HANDLE);
    }
    let object = {
        let mut t = table();
        let slot = t
            .slots
            .get_mut(index)
            .filter(|s| s.linear == linear && linear != 0)
            .ok_or(ResultCode::INVALID_HANDLE)?;
        slot.linear = 0;
        let object = slot.object.take();
        t.free.push(index as u16);
        // Relaxed: counted under the table's lock after the slot is emptied; a reader needs
        // only the count (`closes`).
        CLOSES.fetch_add(1, Ordering::Relaxed);
        object
    };
    // Dropped outside the lock: an object's drop may do anything.
    drop(object);
    Ok(())
}

/// Names `object` with a new handle.
///
/// # Errors
/// OutOfHandles once [`MAX_HANDLES`] are open.
///
/// ```
/// use hos::os::{ClearMode, Event};
/// use hos::svc::{self, Handle};
/// use std::sync::Arc;
/// let ev = Arc::new(Event::new(ClearMode::Auto));
/// let h = svc::create_handle(ev.clone())?;
/// ev.signal();
/// assert_eq!(svc::wait_synchronization(&[h], 0), Ok(0));
/// svc::close_handle(h)?;
/// assert_eq!(svc::wait_synchronization(&[h], 0), Err(hos::ResultCode::INVALID_HANDLE));
/// # Ok::<(), hos::ResultCode>(())
/// ```
pub fn create_handle(object: impl Into<HandleObject>) -> Result<Handle, ResultCode> {
    entry();
    insert(object.into())
}

/// What `h` names (the calling guest thread for [`Handle::CURRENT_THREAD`]): for hosts that
/// keep their own objects in the table ([`HostObject`]).
///
/// # Errors
/// InvalidHandle for a handle that is not open.
pub fn handle_object(h: Handle) -> Result<HandleObject, ResultCode> {
    get(h)
}

/// Runs `f` on what `h` names (the calling guest thread for [`Handle::CURRENT_THREAD`]),
/// borrowed: the way for hosts that call on their own objects often ([`HostObject`]), since a
/// lookup of one the calling thread used lately takes neither the table's lock nor a
/// reference count (a [`HostObject::cacheable`] one).
///
/// # Errors
/// InvalidHandle for a handle that is not open (then `f` is not called).
pub fn with_handle_object<R>(
    h: Handle,
    f: impl FnOnce(&HandleObject) -> R,
) -> Result<R, ResultCode> {
    if h == Handle::CURRENT_THREAD {
        return get(h).map(|o| f(&o));
    }
    with_object(h, f)
}

/// svcCloseHandle (0x16).
///
/// # Errors
/// InvalidHandle for a handle that is not open.
pub fn close_handle(h: Handle) -> Result<(), ResultCode> {
    entry();
    close(h)
}

/// The guest thread `h` names (the calling one for [`Handle::CURRENT_THREAD`]).
///
/// # Errors
/// InvalidHandle for a handle that is not open or names no thread.
pub(crate) fn thread_of(h: Handle) -> Result<Thread, ResultCode> {
    match get(h)? {
        HandleObject::Thread(t) => Ok(t),
        _ => Err(ResultCode::INVALID_HANDLE),
    }
}
