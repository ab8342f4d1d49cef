//! Guest threads from C: `hos_thread_spawn` and `hos_thread_join`.
//!
//! Invariant: the host's entry function runs on the new thread with no lock of hos held, only
//! if the spawn succeeded (the thread's handle is made before its OS thread starts), and only
//! once its handle is kept open for the host, so the entry may close it at once. The new
//! thread waits for that gate as a guest thread waits (its virtual core given back), since
//! a guest spawner may need a core to get there (a checkpoint). In the deterministic mode a
//! host spawner's opening would be a wall-time wake the mode decides on, and it needs no core
//! or token: there the new thread yields until it opens, without a guest wait.

use crate::boundary::{self, Error, Out, Result, Versioned};
use crate::object::{self, hos_handle};
use crate::reaper;
use crate::result::{hos_result, HOS_RESULT_INVALID_POINTER, HOS_RESULT_INVALID_STATE};
use crate::role::{hos_role, role_of};
use crate::runtime::hos_runtime;
use hos_rs::os::{wait_any, Waitable};
use hos_rs::os::{ClearMode, Event};
use std::ffi::{c_char, c_void};
use std::mem::size_of;
use std::sync::Arc;

/// A guest thread's entry: called once on the new thread with the `arg` given to
/// `hos_thread_spawn`. Only `hos_svc_exit_thread` may unwind out of it (a C++ exception must
/// not leave it).
pub type hos_thread_entry = Option<unsafe extern "C-unwind" fn(arg: *mut c_void)>;

/// What a guest thread is made with. Set `size` to `sizeof(hos_thread_params)`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct hos_thread_params {
    /// Set by the caller: `sizeof(hos_thread_params)`.
    pub size: u32,
    /// Its name, UTF-8, copied; NULL: "GuestThread". Under `HOS_ROLE_AUTO` the name decides
    /// the role: serial if a HOS_SERIAL part (default "MainThread", "Presentation") is in it,
    /// first on the virtual cores if a HOS_VCORE_FIRST part is.
    pub name: *const c_char,
    /// Horizon priority, 0 (best) ..= 63; a game's main thread is usually 44 (0x2C).
    pub priority: i32,
    /// Preferred virtual core, or -2 for the process's default (the mask's first core).
    pub ideal_core: i32,
    /// Allowed virtual cores, a bit per core (0x3F: all of 6); never 0.
    pub core_mask: u64,
    /// Its role, a `HOS_ROLE_*` value; 0 (`HOS_ROLE_AUTO`, and what a caller built against a
    /// header without this field gets): its name decides. Added after the first version.
    pub role: hos_role,
}

/// The size of `hos_thread_params`'s first version: up to `core_mask`, without `role`.
const THREAD_PARAMS_V1: usize =
    std::mem::offset_of!(hos_thread_params, core_mask) + size_of::<u64>();

// SAFETY: repr(C), a u32 size first; zero is a valid value of each field (a NULL name, the
// automatic role).
unsafe impl Versioned for hos_thread_params {
    const FIRST_SIZE: usize = THREAD_PARAMS_V1;
}

/// The host's entry and argument, moved to the new thread.
struct Entry {
    f: unsafe extern "C-unwind" fn(*mut c_void),
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

/// The start gate of a spawned thread (module invariant): open once its handle is kept; and
/// whether the new thread yields for it (a host spawner in the deterministic mode).
struct Gate(Event, bool);

impl Gate {
    fn new(rt: &hos_runtime) -> Arc<Gate> {
        let yields = rt.rt.det_stats().is_some() && hos_rs::thread::current().is_none();
        Arc::new(Gate(Event::new(ClearMode::Manual), yields))
    }

    /// The spawner's word: the host's entry may run.
    fn open(&self) {
        self.0.signal();
    }

    /// Waits on the new thread until the gate is open.
    fn pass(&self) {
        // A host spawner in the deterministic mode opens it right after the spawn's last
        // call, needing nothing of ours (module invariant): yield until it does.
        if self.1 {
            while !self.0.is_signalled() {
                std::thread::yield_now();
            }
            return;
        }
        // A wait cancelled by a shutdown ends at once from then on: the gate opens right after
        // the spawn's last call, so yield until it does.
        while self.0.wait().is_err() && !self.0.is_signalled() {
            std::thread::yield_now();
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
        .core_mask(p.core_mask)
        .role(role_of(p.role, "p->role")?))
}

/// Starts a guest thread of `rt` that calls `entry(arg)` and writes its handle to `*out`.
/// `p` NULL: name "GuestThread", priority 44, every core, the default ideal core, the role by
/// its name. The thread ends when `entry` returns. Its handle is its real one, what
/// `hos_svc_get_current_thread_handle` gives on it and what the SDK writes into the mutex
/// words it locks; it stays open until `hos_svc_close_handle`, after the thread's end too
/// (closing it does not stop the thread).
///
/// Errors: InvalidPointer for a NULL `rt`, `entry` or `out`, or a misaligned `p` or `out`;
/// InvalidSize; InvalidUtf8 for the name; InvalidPriority outside 0..=63; InvalidCoreId for a
/// mask of 0, a core past the runtime's cores, or an ideal core that is no core;
/// InvalidCombination for an ideal core outside the mask; InvalidEnumValue for a `role` that
/// is no `HOS_ROLE_*`; OutOfHandles; InvalidState if the OS refuses the thread. On any error
/// `entry` is not called.
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
        let gate = Gate::new(rt);
        let pass = gate.clone();
        let thread = builder.spawn(move || {
            pass.pass();
            host.run();
        })?;
        let h = object::keep_thread(thread.handle_share());
        gate.open();
        reaper::keep(rt.tag(), thread);
        out.write(h);
        Ok(())
    })
}

/// Waits until the guest thread `thread` has returned from its entry, then for its OS thread's
/// exit. `timeout_ns`: negative waits without limit, 0 polls. Joining twice is fine; the
/// handle stays open (the thread is listed by `hos_stats_threads` and the wait tree until it
/// is closed). A guest thread gives its virtual core back while it waits; a host thread has
/// none.
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
        reaper::reap_ended();
        Ok(())
    })
}
