//! Guest threads from C: `hos_thread_spawn` and `hos_thread_join`.
//!
//! Invariant: the host's entry function runs on the new thread with no lock of hos held, and
//! only once the thread has a handle: a spawn that fails after the OS thread started (the
//! handle table is full) tells the thread to end without calling it, so a failed call never
//! runs the host's code. The new thread waits for that word as a guest thread waits (its
//! virtual core given back), since the spawner may need a core to name it (a checkpoint).

use crate::boundary::{self, Error, Out, Result, Versioned};
use crate::object::{self, hos_handle};
use crate::result::{hos_result, HOS_RESULT_INVALID_POINTER, HOS_RESULT_INVALID_STATE};
use crate::runtime::hos_runtime;
use hos_rs::os::{wait_any, Waitable};
use hos_rs::os::{ClearMode, Event};
use hos_rs::svc;
use std::ffi::{c_char, c_void};
use std::mem::size_of;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// A guest thread's entry: called once on the new thread with the `arg` given to
/// `hos_thread_spawn`. It must not unwind (a C++ exception must not leave it).
pub type hos_thread_entry = Option<unsafe extern "C" fn(arg: *mut c_void)>;

/// What a guest thread is made with. Set `size` to `sizeof(hos_thread_params)`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hos_thread_params {
    /// Set by the caller: `sizeof(hos_thread_params)`.
    pub size: u32,
    /// Its name, UTF-8, copied; NULL: "GuestThread". The name decides the serial role
    /// (HOS_SERIAL parts, default "MainThread" and "Presentation") and HOS_VCORE_FIRST.
    pub name: *const c_char,
    /// Horizon priority, 0 (best) ..= 63; a game's main thread is usually 44 (0x2C).
    pub priority: i32,
    /// Preferred virtual core, or -2 for the process's default (the mask's first core).
    pub ideal_core: i32,
    /// Allowed virtual cores, a bit per core (0x3F: all of 6); never 0.
    pub core_mask: u64,
}

// SAFETY: repr(C), a u32 size first; zero is a valid value of each field (a NULL name).
unsafe impl Versioned for hos_thread_params {
    const FIRST_SIZE: usize = size_of::<hos_thread_params>();
}

/// The host's entry and argument, moved to the new thread.
struct Entry {
    f: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
}

// SAFETY: the host hands `arg` to another thread by calling hos_thread_spawn; what it points
// to is the host's to make safe to use there (the C contract of any thread-creating call).
unsafe impl Send for Entry {}

impl Entry {
    fn run(self) {
        // SAFETY: the host's function, with the argument it asked for.
        unsafe { (self.f)(self.arg) }
    }
}

/// The start gate of a spawned thread (module invariant).
struct Gate {
    /// [`UNDECIDED`], [`RUN`] or [`NEVER`].
    state: AtomicU8,
    decided: Event,
}

const UNDECIDED: u8 = 0;
const RUN: u8 = 1;
const NEVER: u8 = 2;

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::new(Gate {
            state: AtomicU8::new(UNDECIDED),
            decided: Event::new(ClearMode::Manual),
        })
    }

    /// The spawner's word: run the host's entry or not.
    fn decide(&self, run: bool) {
        // Release: the thread that reads it sees the spawn's writes.
        self.state
            .store(if run { RUN } else { NEVER }, Ordering::Release);
        self.decided.signal();
    }

    /// Waits for the word on the new thread: whether to run the host's entry.
    fn pass(&self) -> bool {
        loop {
            // Acquire: pairs with `decide`.
            match self.state.load(Ordering::Acquire) {
                UNDECIDED => {
                    // A wait cancelled by a shutdown ends at once from now on: the word comes
                    // right after the spawn's last call, so yield until it does.
                    if self.decided.wait().is_err() {
                        std::thread::yield_now();
                    }
                }
                state => return state == RUN,
            }
        }
    }
}

/// A builder from `p`, or the defaults (NULL).
///
/// # Safety
/// `p` is NULL or points to a `hos_thread_params` whose `name` is NULL or NUL-terminated.
pub(crate) unsafe fn builder(
    rt: &hos_runtime,
    p: *const hos_thread_params,
) -> Result<hos_rs::thread::Builder> {
    let mut b = rt.rt.thread();
    if p.is_null() {
        return Ok(b);
    }
    // SAFETY: forwarded from the caller.
    let p = unsafe { boundary::read_sized(p, "p") }?;
    // SAFETY: forwarded from the caller.
    if let Some(name) = unsafe { boundary::opt_str(p.name, "p->name") }? {
        b = b.name(name);
    }
    Ok(b.priority(p.priority)
        .ideal_core(p.ideal_core)
        .core_mask(p.core_mask))
}

/// Starts a guest thread of `rt` that calls `entry(arg)` and writes its handle to `*out`.
/// `p` NULL: name "GuestThread", priority 44, every core, the default ideal core. The thread
/// ends when `entry` returns; its handle stays open until `hos_svc_close_handle` (closing it
/// does not stop the thread).
///
/// Errors: InvalidPointer for a NULL `rt`, `entry` or `out`, or a misaligned `p` or `out`;
/// InvalidSize; InvalidUtf8 for the name; InvalidPriority outside 0..=63; InvalidCoreId for a
/// mask of 0, a core past the runtime's cores, or an ideal core that is no core;
/// InvalidCombination for an ideal core outside the mask; OutOfHandles; InvalidState if the
/// OS refuses the thread. On any error `entry` is not called.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `p` is NULL or points to a
/// `hos_thread_params`; `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_thread_spawn(
    rt: *mut hos_runtime,
    p: *const hos_thread_params,
    entry: hos_thread_entry,
    arg: *mut c_void,
    out: *mut hos_handle,
) -> hos_result {
    boundary::entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, out) = unsafe { (boundary::arg(rt, "rt")?, Out::new(out, "out")?) };
        let f = entry.ok_or_else(|| Error::new(HOS_RESULT_INVALID_POINTER, "entry is NULL"))?;
        // SAFETY: forwarded from the caller.
        let builder = unsafe { builder(rt, p) }?;
        let host = Entry { f, arg };
        let gate = Gate::new();
        let pass = gate.clone();
        let thread = builder.spawn(move || {
            if pass.pass() {
                host.run();
            }
        })?;
        let named = svc::create_handle(thread.thread().clone());
        // The thread waits for this before it calls the host: a failed spawn never runs it.
        gate.decide(named.is_ok());
        rt.keep(thread);
        out.write(named?.0);
        Ok(())
    })
}

/// Waits until the guest thread `thread` has returned from its entry. `timeout_ns`: negative
/// waits without limit, 0 polls. Joining twice is fine; the handle stays open.
///
/// Errors: InvalidHandle; InvalidState for the calling thread itself (it would wait forever);
/// TimedOut; Cancelled once the runtime shuts down (when the caller is a guest thread).
#[no_mangle]
pub extern "C" fn hos_thread_join(thread: hos_handle, timeout_ns: i64) -> hos_result {
    boundary::entry(|| {
        let t = object::thread(thread)?;
        let me = hos_rs::thread::current().and_then(|c| c.os_id());
        if me.is_some() && me == t.os_id() {
            return Err(Error::new(
                HOS_RESULT_INVALID_STATE,
                "a thread cannot join itself",
            ));
        }
        let objects: [&dyn Waitable; 1] = [&t];
        wait_any(&objects, boundary::timeout(timeout_ns))?;
        Ok(())
    })
}
