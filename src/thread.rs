//! Guest threads: OS threads that run guest code under the runtime.
//!
//! Invariant: a guest thread holds a virtual core only while it runs guest code; when it
//! ends, by return or by panic, everything it held is given back before its result is
//! published: its core (guard), the mutex levels it held (guards unwind as abandoned; levels
//! held without a guard are released as abandoned), its context (guard). Then its exit event
//! is signalled and it leaves the runtime's live set (what a shutdown waits for). Its OS
//! thread is joined at most once: by [`JoinHandle::join`] or by `Runtime::shutdown`, whichever
//! takes the handle out of its shared slot first (a shutdown that times out detaches it). A
//! runtime that has shut down starts no guest thread.
//!
//! A guest thread has a real handle from its spawn or attach (the value the SDK writes into
//! mutex words) until it has ended and every [`HandleShare`] is gone: its [`JoinHandle`]
//! joined or dropped, or its [`Attached`] guard dropped, and those a host took. Then the
//! handle is closed and the arbiter forgets the thread, ending the lock waits registered
//! against it with InvalidState (the console's thread object destruction).

mod attach;

pub use attach::Attached;
pub use hos_runtime::Role;

use crate::guests::JoinSlot;
use crate::os::wait_any::{sealed, Waitable};
use crate::os::waiters::WaitSlot;
use crate::os::{ClearMode, Event};
use crate::result::ResultCode;
use crate::runtime::Runtime;
use crate::svc::arbiter::{priority_changed, thread_gone};
use crate::svc::cancel::CancelState;
use crate::svc::exit::{is_exit, run_body};
use crate::svc::handle::Handle;
use crate::svc::handles::{close_handle, create_handle, HandleObject};
use crate::sync::lock;
use hos_runtime::internal::{
    enter, sys, with_guest, EnterGuard, Occupant, ThreadRecord, ThreadSpec,
};
use hos_runtime::CpuTime;
use std::cell::RefCell;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Poll, Waker};

/// Highest (worst) Horizon priority.
pub const PRIORITY_MAX: u8 = 63;
/// Ideal core -1 (in a core-mask change): keep the ideal core if the new mask allows it,
/// else take the mask's first core.
pub const IDEAL_CORE_DONT_CARE: i32 = -1;
/// Ideal core -2: the process's default core (here: the mask's first core).
pub const IDEAL_CORE_DEFAULT: i32 = -2;
/// Ideal core -3 (in a core-mask change): keep the current ideal core.
pub const IDEAL_CORE_KEEP: i32 = -3;

/// Builds a guest thread. Made by [`Runtime::thread`].
///
/// ```
/// let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// let worker = rt
///     .thread()
///     .name("ModuleSystemWorker0")
///     .priority(44)
///     .core_mask(0b11_1111)
///     .ideal_core(0)
///     .spawn(|| hos::thread::current().map(|t| t.priority()))?;
/// assert_eq!(worker.join().ok().flatten(), Some(44));
/// assert_eq!(rt.thread().priority(64).spawn(|| ()).err(), Some(hos::ResultCode::INVALID_PRIORITY));
/// rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Builder {
    rt: Runtime,
    name: String,
    priority: i32,
    core_mask: u64,
    ideal_core: i32,
    role: Role,
    stack_size: Option<usize>,
}

impl Runtime {
    /// A guest thread builder bound to this runtime.
    pub fn thread(&self) -> Builder {
        Builder::new(self.clone())
    }
}

impl Builder {
    fn new(rt: Runtime) -> Self {
        let cores = rt.inner().config().cores;
        Builder {
            rt,
            name: String::from("GuestThread"),
            priority: 0x2C,
            core_mask: all_cores(cores),
            ideal_core: IDEAL_CORE_DEFAULT,
            role: Role::Auto,
            stack_size: None,
        }
    }

    /// The thread's name (default `GuestThread`). Under [`Role::Auto`] it decides the role:
    /// serial if a HOS_SERIAL part (default `MainThread`, `Presentation`) is in it, first on the
    /// virtual cores if a HOS_VCORE_FIRST part is.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The thread's role (default [`Role::Auto`]: its name decides). An explicit role decides
    /// whatever the thread is named, and no rename changes it.
    ///
    /// ```
    /// use hos::thread::Role;
    /// let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
    /// let render = rt.thread().name("RenderLoop").role(Role::Serial).spawn(|| {
    ///     let me = hos::thread::current().expect("a guest thread");
    ///     me.set_name("ModuleSystemWorker0");
    ///     (me.role(), me.is_serial())
    /// })?;
    /// assert_eq!(render.join().ok(), Some((Role::Serial, true)));
    /// rt.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// Horizon priority, 0 (best) ..= 63 (default 0x2C); anything else fails at spawn with
    /// InvalidPriority.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }

    /// Allowed virtual cores, a bit per core (default: all).
    pub fn core_mask(mut self, mask: u64) -> Self {
        self.core_mask = mask;
        self
    }

    /// Preferred virtual core; -2 (the default) is the process's default core.
    pub fn ideal_core(mut self, core: i32) -> Self {
        self.ideal_core = core;
        self
    }

    /// The size of the thread's stack in bytes (svcCreateThread's stack; default: the OS
    /// thread default, 2 MiB on Linux). The OS may round it up or refuse it (then `spawn`
    /// returns InvalidState).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Starts the thread.
    ///
    /// # Errors
    /// InvalidPriority for a priority outside 0..=63; InvalidCoreId for an empty mask, a mask
    /// with a core past the runtime's cores, or an ideal core that is no core;
    /// InvalidCombination for an ideal core outside the mask; OutOfHandles if the handle table
    /// is full; InvalidState if the runtime has shut down or the OS refuses the thread (its
    /// stack, say).
    pub fn spawn<T, F>(self, f: F) -> Result<JoinHandle<T>, ResultCode>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let stack_size = self.stack_size;
        let (thread, share, trace) = self.make()?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let t = thread.clone();
        let named = share.clone();
        let mut os = std::thread::Builder::new().name(thread.name().to_string());
        if let Some(bytes) = stack_size {
            os = os.stack_size(bytes);
        }
        let body = move || {
            // First made, last dropped: whatever happens below, the thread leaves the live set.
            let _leave = LeaveGuard(&t);
            let _entered = t.enter_here(trace);
            let out = {
                let _core = CoreGuard::take(&t);
                run_body(f)
            };
            if out.as_ref().is_err_and(|p| !is_exit(&**p)) {
                hos_runtime::warn!(name = %t.name(), "guest thread panicked");
            }
            crate::os::mutex::abandon_held();
            t.0.record.mark_ended();
            let _ = tx.send(out);
            t.0.exit.signal();
            drop(named);
        };
        let rt = thread.0.rt.clone();
        let slot = rt
            .guests()
            .admit(rt.inner(), &thread.0.record, || os.spawn(body))
            .inspect_err(|_| rt.inner().end_thread(&thread.0.record))?;
        rt.inner().start_thread(&thread.0.record);
        Ok(JoinHandle {
            thread,
            rx,
            slot,
            share,
        })
    }

    /// Checks the builder's values, registers the thread and gives it its real handle; also
    /// whether HOS_TLS_TRACE is on.
    fn make(self) -> Result<(Thread, HandleShare, bool), ResultCode> {
        let priority = check_priority(self.priority)?;
        let config = self.rt.inner().config();
        let ideal_core = check_affinity(config.cores, self.ideal_core, self.core_mask, None)?;
        let trace = config.tls_trace;
        let spec = ThreadSpec {
            name: self.name,
            priority,
            core_mask: self.core_mask,
            ideal_core,
            role: self.role,
        };
        let thread = Thread(Arc::new(Shared {
            record: self.rt.inner().register_thread(&spec),
            rt: self.rt,
            exit: Event::new(ClearMode::Manual),
            handle: OnceLock::new(),
            cancel: CancelState::default(),
        }));
        let handle = create_handle(HandleObject::Thread(thread.clone()))
            .inspect_err(|_| thread.0.rt.inner().end_thread(&thread.0.record))?;
        let _ = thread.0.handle.set(handle);
        Ok((thread, HandleShare(Arc::new(HandleOwner(handle))), trace))
    }
}

fn all_cores(cores: usize) -> u64 {
    match cores {
        64.. => u64::MAX,
        n => (1u64 << n) - 1,
    }
}

/// Checks a Horizon priority.
fn check_priority(p: i32) -> Result<u8, ResultCode> {
    u8::try_from(p)
        .ok()
        .filter(|p| *p <= PRIORITY_MAX)
        .ok_or(ResultCode::INVALID_PRIORITY)
}

/// Checks an ideal core and mask against `cores` (svcCreateThread when `current` is `None`,
/// svcSetThreadCoreMask with the current ideal core) and resolves the ideal core.
fn check_affinity(
    cores: usize,
    ideal: i32,
    mask: u64,
    current: Option<i32>,
) -> Result<i32, ResultCode> {
    if mask == 0 || mask & !all_cores(cores) != 0 {
        return Err(ResultCode::INVALID_CORE_ID);
    }
    let in_mask = |c: i32| (0..64).contains(&c) && mask & (1u64 << c) != 0;
    let first = mask.trailing_zeros() as i32;
    let ideal = match (ideal, current) {
        (IDEAL_CORE_DEFAULT, _) => first,
        (IDEAL_CORE_DONT_CARE, Some(c)) if in_mask(c) => c,
        (IDEAL_CORE_DONT_CARE, Some(_)) => first,
        (IDEAL_CORE_KEEP, Some(c)) => c,
        (c, _) if (0..cores as i64).contains(&i64::from(c)) => c,
        _ => return Err(ResultCode::INVALID_CORE_ID),
    };
    if in_mask(ideal) {
        Ok(ideal)
    } else {
        Err(ResultCode::INVALID_COMBINATION)
    }
}

/// A share in a guest thread's real handle ([`Thread::handle`]): the handle stays open while
/// a share lives. The running thread holds one until it ends, its [`JoinHandle`] or
/// [`Attached`] guard another; the last share to go closes the handle and has the arbiter
/// forget the thread. A host that hands the handle to guest code which waits on it after the
/// thread ended and closes it itself (svcWaitSynchronization, svcCloseHandle, as the SDK's
/// thread objects do) keeps a share until that close.
#[derive(Clone, Debug)]
pub struct HandleShare(Arc<HandleOwner>);

impl HandleShare {
    /// The handle it keeps open.
    pub fn handle(&self) -> Handle {
        self.0 .0
    }
}

/// A guest thread's real handle; closed when the last [`HandleShare`] drops.
#[derive(Debug)]
struct HandleOwner(Handle);

impl Drop for HandleOwner {
    fn drop(&mut self) {
        // Closed already if the host closed it itself: the console's handle would be gone too.
        let _ = close_handle(self.0);
        thread_gone(self.0);
    }
}

/// Holds the thread's virtual core for its guest code; gives it back on any exit.
struct CoreGuard<'a>(&'a Thread);

impl<'a> CoreGuard<'a> {
    fn take(t: &'a Thread) -> Self {
        t.0.rt.inner().acquire_core(&t.0.record);
        CoreGuard(t)
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        self.0 .0.rt.inner().release_core(&self.0 .0.record);
    }
}

/// Takes the thread out of its runtime's live set when dropped: at its end, unwinding included.
struct LeaveGuard<'a>(&'a Thread);

impl Drop for LeaveGuard<'_> {
    fn drop(&mut self) {
        let t = &self.0 .0;
        t.record.mark_ended();
        t.rt.guests().leave(&t.record);
        // The last thing it does as a guest thread: the deterministic mode's token goes on.
        t.rt.inner().end_thread(&t.record);
    }
}

std::thread_local! {
    static CURRENT: RefCell<Option<Thread>> = const { RefCell::new(None) };
}

/// A guest thread entered on the calling OS thread: its runtime context, and [`current`].
/// Both end when it drops (a thread-local already torn down at the thread's exit is left as
/// it is).
#[derive(Debug)]
struct Entered {
    _ctx: EnterGuard,
}

impl Thread {
    /// Enters the thread on the calling OS thread, with the HOS_TLS_TRACE line if `trace`.
    fn enter_here(&self, trace: bool) -> Entered {
        let ctx = enter(self.0.rt.inner(), self.0.record.clone());
        CURRENT.with(|c| *c.borrow_mut() = Some(self.clone()));
        if trace {
            tracing::info!(
                name = %self.name(),
                role = self.role().name(),
                priority = self.priority(),
                ideal_core = self.ideal_core(),
                core_mask = format_args!("{:#x}", self.core_mask()),
                "guest thread starts"
            );
        }
        Entered { _ctx: ctx }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.borrow_mut().take());
        // Then `_ctx` leaves the runtime context.
    }
}

/// The calling guest thread; `None` on any other thread.
pub fn current() -> Option<Thread> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Runs `f` with the calling guest thread, borrowed (no reference count touched); `None`,
/// without calling `f`, on any other thread.
pub(crate) fn with_current<R>(f: impl FnOnce(&Thread) -> R) -> Option<R> {
    CURRENT.with(|c| c.borrow().as_ref().map(f))
}

/// The calling thread's own CPU time, user and kernel: one system call
/// (`getrusage(RUSAGE_THREAD)` on Linux), no handle to make or release.
pub fn cpu_time() -> CpuTime {
    sys::thread_cpu()
}

/// A guest thread: its name, priority, cores and CPU time. A cheap clone (one reference
/// count); waitable (ready once the thread has ended), so `svc` can name it by handle.
#[derive(Clone, Debug)]
pub struct Thread(Arc<Shared>);

/// A guest thread that may be gone ([`Thread::downgrade`]).
#[derive(Clone, Debug)]
pub(crate) struct WeakThread(Weak<Shared>);

impl WeakThread {
    /// The thread, while anything else keeps it.
    pub(crate) fn upgrade(&self) -> Option<Thread> {
        self.0.upgrade().map(Thread)
    }
}

/// What every handle of one guest thread shares.
#[derive(Debug)]
struct Shared {
    rt: Runtime,
    record: Arc<ThreadRecord>,
    /// Signalled once the thread has ended.
    exit: Event,
    /// Its real handle: set once, when it is made, before the thread runs.
    handle: OnceLock<Handle>,
    cancel: CancelState,
}

impl Thread {
    /// A runtime-unique id.
    pub fn id(&self) -> u64 {
        self.0.record.id()
    }

    /// The name now (read whole).
    pub fn name(&self) -> Arc<str> {
        self.0.record.name()
    }

    /// Renames the thread; under [`Role::Auto`] whether it is serial and first follows the new
    /// name (HOS_SERIAL and HOS_VCORE_FIRST parts), under any other role nothing but the name
    /// changes.
    pub fn set_name(&self, name: &str) {
        self.0.rt.inner().rename_thread(&self.0.record, name);
    }

    /// Its role as declared: at spawn ([`Builder::role`]) or since by [`Thread::set_role`];
    /// [`Role::Auto`] when its name decides.
    pub fn role(&self) -> Role {
        self.0.record.role()
    }

    /// Declares its role; [`Role::Auto`] hands the decision back to its name. It applies at
    /// once: its rank on the virtual cores, its wake slice, and its next waits and sleeps.
    pub fn set_role(&self, role: Role) {
        self.0.rt.inner().set_role(&self.0.record, role);
    }

    /// Whether it is serial (on the frame's critical chain): its role, or under
    /// [`Role::Auto`] its name.
    pub fn is_serial(&self) -> bool {
        self.0.record.is_serial()
    }

    /// Its own Horizon priority (what svcSetThreadPriority set); it may run at a better one
    /// while a lock waiter lends it one ([`Thread::running_priority`]).
    pub fn priority(&self) -> u8 {
        self.0.record.priority()
    }

    /// Sets the priority (svcSetThreadPriority).
    ///
    /// # Errors
    /// InvalidPriority outside 0..=63.
    pub fn set_priority(&self, p: i32) -> Result<(), ResultCode> {
        let p = check_priority(p)?;
        // Through the virtual cores: a waiting or holding thread is re-ranked at once; and
        // through the arbiter: a wait it is in, and the lock owners it lends to, too.
        self.0.rt.inner().set_priority(&self.0.record, p);
        priority_changed(self);
        Ok(())
    }

    /// The priority it runs at: its own, or a better one that a thread waiting for a lock it
    /// holds lends it (svcGetThreadPriority reads this one, as on the console).
    pub fn running_priority(&self) -> u8 {
        self.0.record.running_priority()
    }

    /// Lends it a better priority while a thread waits for a lock it holds (`None`: takes it
    /// back); the virtual cores re-rank it at once.
    pub(crate) fn lend_priority(&self, lent: Option<u8>) {
        self.0.rt.inner().lend_priority(&self.0.record, lent);
    }

    /// A reference that does not keep it (nor its handle) alive: what the arbiter's table
    /// keeps of a thread between its waits.
    pub(crate) fn downgrade(&self) -> WeakThread {
        WeakThread(Arc::downgrade(&self.0))
    }

    /// Its trace id: what the trace names it by (0 before it started).
    pub(crate) fn trace_id(&self) -> u64 {
        self.0.record.trace_id()
    }

    /// Its real handle: the value the SDK keeps in the thread's TLS and writes into the mutex
    /// words it locks. Valid from spawn (or attach) until the thread has ended and its
    /// [`JoinHandle`] is joined or dropped (or it detached), and no other [`HandleShare`] of
    /// it is left.
    pub fn handle(&self) -> Handle {
        self.0.handle.get().copied().unwrap_or(Handle::INVALID)
    }

    /// The runtime's record of it, and its runtime (svcSetThreadActivity).
    pub(crate) fn record(&self) -> (&Arc<ThreadRecord>, &Runtime) {
        (&self.0.record, &self.0.rt)
    }

    /// Its cancel state (svcCancelSynchronization).
    pub(crate) fn cancel_state(&self) -> &CancelState {
        &self.0.cancel
    }

    /// The virtual core it holds, else its ideal core.
    pub(crate) fn current_core(&self) -> i32 {
        self.0
            .record
            .seat()
            .slot()
            .map_or(self.0.record.ideal_core(), |s| s as i32)
    }

    /// Allowed virtual cores.
    pub fn core_mask(&self) -> u64 {
        self.0.record.core_mask()
    }

    /// Preferred virtual core.
    pub fn ideal_core(&self) -> i32 {
        self.0.record.ideal_core()
    }

    /// Sets the ideal core and mask (svcSetThreadCoreMask): `ideal` -3 keeps the current one,
    /// -2 takes the process's default, -1 keeps it if the mask allows it.
    ///
    /// # Errors
    /// InvalidCoreId for an empty mask, a core past the runtime's cores, or an ideal core
    /// that is no core; InvalidCombination for an ideal core outside the mask.
    pub fn set_core_mask(&self, ideal: i32, mask: u64) -> Result<(), ResultCode> {
        let cores = self.0.rt.inner().config().cores;
        let ideal = check_affinity(cores, ideal, mask, Some(self.ideal_core()))?;
        self.0.rt.inner().set_affinity(&self.0.record, ideal, mask);
        Ok(())
    }

    /// Its CPU time, user and kernel. For the calling thread itself: one system call
    /// ([`cpu_time`]); for another thread: through the clock it made once when it started.
    pub fn cpu_time(&self) -> CpuTime {
        let me = with_guest(|_, r| Arc::ptr_eq(r, &self.0.record));
        if me == Some(true) {
            cpu_time()
        } else {
            self.0.record.cpu()
        }
    }

    /// The OS thread id, once started.
    pub fn os_id(&self) -> Option<u64> {
        self.0.record.os_id()
    }

    /// Whether it has ended (its result is ready for `join`), or detached.
    pub fn is_finished(&self) -> bool {
        self.0.exit.is_signalled()
    }

    /// Its kick word: non-zero while its virtual core is asked for (a better thread waits, or
    /// its time slice is over and an equal one waits), it runs by escape, or its core was
    /// taken after a kick's grace (HOS_VCORE_GRACE_US), so that its next
    /// [`crate::svc::checkpoint`] has something to do. Generated code (a JIT's or a
    /// recompiler's loop heads) tests it with a plain load and calls the checkpoint only when
    /// it is set. The address is stable for the thread's life and stays readable after it.
    /// In the deterministic mode it is always set: every checkpoint counts in the turn.
    pub fn kick_flag(&self) -> &'static AtomicU32 {
        self.0.rt.inner().kick_word(&self.0.record)
    }
}

impl sealed::Sealed for Thread {}

impl Waitable for Thread {
    fn poll_wait(&self, slot: &mut WaitSlot, waker: Option<&Waker>) -> Poll<()> {
        self.0.exit.poll_wait(slot, waker)
    }

    fn leave_wait(&self, slot: &mut WaitSlot) {
        self.0.exit.leave_wait(slot);
    }
}

/// The handle of a guest thread; `join` returns its value or its panic.
#[derive(Debug)]
pub struct JoinHandle<T> {
    thread: Thread,
    rx: std::sync::mpsc::Receiver<std::thread::Result<T>>,
    slot: Arc<JoinSlot>,
    /// Keeps the thread's handle open while this lives.
    share: HandleShare,
}

impl<T> JoinHandle<T> {
    /// Waits for the thread to end; `Err` carries its panic, or a
    /// [`svc::ThreadExit`](crate::svc::ThreadExit) if it ended by `svc::exit_thread`
    /// (everything it held was given back first, see the module's invariant).
    ///
    /// # Blocking
    /// Blocks the calling OS thread until the guest thread ends (a plain OS join, not a
    /// runtime wait: it is not cancelled by shutdown).
    pub fn join(self) -> std::thread::Result<T> {
        let os = lock(&*self.slot).take();
        if let Some(os) = os {
            let _ = os.join();
        }
        self.rx
            .recv()
            .unwrap_or_else(|_| Err(Box::new("guest thread ended without a result")))
    }

    /// The thread.
    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    /// A share in the thread's real handle, to keep it open after this is joined or dropped.
    pub fn handle_share(&self) -> HandleShare {
        self.share.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_rules() {
        let c = ResultCode::INVALID_CORE_ID;
        assert_eq!(check_affinity(6, -2, 0b110, None), Ok(1));
        assert_eq!(check_affinity(6, 0, 0, None), Err(c));
        assert_eq!(check_affinity(6, 0, 1 << 6, None), Err(c));
        assert_eq!(check_affinity(6, 6, 0b1, None), Err(c));
        assert_eq!(check_affinity(6, -3, 0b1, None), Err(c));
        assert_eq!(check_affinity(6, i32::MIN, 0b1, None), Err(c));
        assert_eq!(
            check_affinity(6, 2, 0b1, None),
            Err(ResultCode::INVALID_COMBINATION)
        );
        assert_eq!(check_affinity(6, -3, 0b100, Some(2)), Ok(2));
        assert_eq!(
            check_affinity(6, -3, 0b1, Some(2)),
            Err(ResultCode::INVALID_COMBINATION)
        );
        assert_eq!(check_affinity(6, -1, 0b110, Some(0)), Ok(1));
        assert_eq!(check_affinity(64, -2, u64::MAX, None), Ok(0));
        assert_eq!(check_priority(64), Err(ResultCode::INVALID_PRIORITY));
        assert_eq!(check_priority(-1), Err(ResultCode::INVALID_PRIORITY));
        assert_eq!(check_priority(63), Ok(63));
    }
}
