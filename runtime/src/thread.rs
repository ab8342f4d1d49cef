//! The runtime's record of one guest thread: name, role, priority, cores, parker, counters.
//!
//! Invariant: every field another thread reads is atomic or behind its own short lock, so a
//! name, a role or a priority is always read whole; the serial and first flags are decided
//! from the name and role under the lock that holds them ([`ThreadRecord::retitle`]), so
//! they always follow the last name and role set; only the thread itself changes its parker
//! and its CPU clock, once, when it enters the runtime.

pub use crate::activity::Activity;
use crate::activity::{ActivityCell, Reading};
use crate::parker::Parker;
use crate::pause::Pause;
use crate::policy::Waiter;
use crate::reactor::Timer;
use crate::role::{Flags, Role};
use crate::spin_gate::SpinGate;
use crate::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};
use crate::sync::{lock, Mutex};
use crate::sys::{self, CpuTime, ThreadClock};
use crate::vcore::{Occupant, Seat, Traits, Who};
use std::sync::Arc;
use std::sync::OnceLock;

/// What a guest thread is, as the runtime sees it.
///
/// Laid out for a waker's claim (`vcore/claim.rs`): what a waker reads of the thread (its
/// seat's line, its id and traits, its parker) fills the first cache line, which the thread
/// itself writes only when its traits change; what the thread writes as it waits (its
/// activity, counters, spin gate, deferral) lies on the lines after. Aligned to a cache line,
/// so that its `Arc`'s counts, which a claim's upgrade moves, sit on a line of their own. A
/// test holds the layout.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct ThreadRecord {
    /// The thread's virtual-core state, owned by the virtual cores: a handle to its line.
    seat: Seat,
    id: u64,
    core_mask: AtomicU64,
    ideal_core: AtomicI32,
    priority: AtomicU8,
    /// A better priority lent by a lock waiter (priority inheritance), or [`NOT_LENT`].
    lent: AtomicU8,
    serial: AtomicBool,
    first: AtomicBool,
    parker: OnceLock<Arc<Parker>>,
    /// Its name and declared role; the flags above are decided from them under this lock.
    title: Mutex<Title>,
    clock: OnceLock<ThreadClock>,
    /// Guest sleeps made (relaxed counter).
    sleeps: AtomicU64,
    /// Nanoseconds spent waiting for a virtual core (relaxed counter).
    vcore_wait_ns: AtomicU64,
    /// The spin gate of its waits for a core (`Occupant::core_gate`).
    core_gate: SpinGate,
    /// What it does now; only the thread itself writes it (`activity.rs`).
    activity: ActivityCell,
    /// The OS slice last asked for it (0: the OS default), or [`NOT_ASKED`] before it
    /// started. # Invariant: the OS was last asked for exactly this; asks are made under this
    /// lock, so the last ask made reflects the last priority and role set. A std lock even
    /// under loom, like `activity`.
    wake_slice: std::sync::Mutex<u64>,
    /// The pause asked of it, if any (`pause.rs`).
    pause: Pause,
    /// While a waker deferred its wake (`vcore/claim.rs`): the timer that wakes it at the
    /// latest when its queued claim would escape (`Runtime::claim_hook`). Dropped, so
    /// cancelled, when the thread takes a core or gives its claim back. A std lock even under
    /// loom, like `activity`.
    deferred: std::sync::Mutex<Option<Timer>>,
    /// Whether `deferred` may hold a timer: set under its lock as one is kept, cleared under it
    /// as one is taken; the thread reads it first, so a take with nothing kept (nearly every
    /// one) takes no lock. A std atomic, as `deferred` is a std lock.
    deferring: std::sync::atomic::AtomicBool,
}

/// A thread's name and declared role: what its serial and first flags are decided from.
#[derive(Debug)]
struct Title {
    name: Arc<str>,
    role: Role,
}

/// `ThreadRecord::wake_slice` before the thread started: nothing asked yet.
const NOT_ASKED: u64 = u64::MAX;

/// `ThreadRecord::lent` when no priority is lent.
const NOT_LENT: u8 = u8::MAX;

/// What a thread is made with.
#[derive(Clone, Debug)]
pub struct ThreadSpec {
    /// Its name.
    pub name: String,
    /// Horizon priority, 0 (best) ..= 63.
    pub priority: u8,
    /// Allowed virtual cores, a bit per core.
    pub core_mask: u64,
    /// Preferred virtual core.
    pub ideal_core: i32,
    /// Its role ([`Role::Auto`]: decided by its name).
    pub role: Role,
}

impl ThreadRecord {
    /// A record with a unique `id`, not registered with any runtime, with the flags its role
    /// makes of it: the runtime makes its own with `Runtime::register_thread`; tests, models
    /// and benches make bare ones.
    pub fn new(id: u64, spec: &ThreadSpec, serial: bool, first: bool) -> Self {
        ThreadRecord {
            seat: Seat::default(),
            id,
            core_mask: AtomicU64::new(spec.core_mask),
            ideal_core: AtomicI32::new(spec.ideal_core),
            priority: AtomicU8::new(spec.priority),
            lent: AtomicU8::new(NOT_LENT),
            serial: AtomicBool::new(serial),
            first: AtomicBool::new(first),
            parker: OnceLock::new(),
            title: Mutex::new(Title {
                name: Arc::from(spec.name.as_str()),
                role: spec.role,
            }),
            clock: OnceLock::new(),
            sleeps: AtomicU64::new(0),
            vcore_wait_ns: AtomicU64::new(0),
            core_gate: SpinGate::new(),
            activity: ActivityCell::default(),
            wake_slice: std::sync::Mutex::new(NOT_ASKED),
            pause: Pause::default(),
            deferred: std::sync::Mutex::new(None),
            deferring: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A runtime-unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The name now, read whole.
    pub fn name(&self) -> Arc<str> {
        lock(&self.title).name.clone()
    }

    /// The declared role now ([`Role::Auto`]: its name decides).
    pub fn role(&self) -> Role {
        lock(&self.title).role
    }

    /// Renames it (`name`) and declares its role (`role`), either or both, and sets its flags
    /// as `decide` makes them of the new name and role, all under one lock: a rename racing a
    /// role change leaves the flags of the last name and role.
    pub(crate) fn retitle(
        &self,
        name: Option<&str>,
        role: Option<Role>,
        decide: impl FnOnce(&str, Role) -> Flags,
    ) {
        let mut title = lock(&self.title);
        if let Some(name) = name {
            title.name = Arc::from(name);
        }
        if let Some(role) = role {
            title.role = role;
        }
        let flags = decide(&title.name, title.role);
        // Relaxed: flags read independently; a racing reader sees the old or the new role.
        self.serial.store(flags.serial, Ordering::Relaxed);
        self.first.store(flags.first, Ordering::Relaxed);
    }

    /// Whether the thread is serial (on the frame's critical chain).
    pub fn is_serial(&self) -> bool {
        self.serial.load(Ordering::Relaxed)
    }

    /// Who it is to the policy: serial, or a worker (`Role::flags` decided which).
    pub fn waiter(&self) -> Waiter {
        if self.is_serial() {
            Waiter::Serial
        } else {
            Waiter::Worker
        }
    }

    /// Whether it ranks first on the virtual cores (its role, or a HOS_VCORE_FIRST part of its
    /// name under `Role::Auto`).
    pub fn is_first(&self) -> bool {
        self.first.load(Ordering::Relaxed)
    }

    /// Its own Horizon priority now (a lent one aside: [`ThreadRecord::running_priority`]).
    pub fn priority(&self) -> u8 {
        self.priority.load(Ordering::Relaxed)
    }

    /// Sets the priority (validated by the caller; the runtime re-ranks the thread after).
    pub(crate) fn set_priority(&self, p: u8) {
        self.priority.store(p, Ordering::Relaxed);
    }

    /// The priority a lock waiter lends it, if any (priority inheritance).
    pub fn lent_priority(&self) -> Option<u8> {
        // Relaxed: read whole, like the priority; the virtual cores re-read it under their
        // lock at the re-rank that follows every change.
        match self.lent.load(Ordering::Relaxed) {
            NOT_LENT => None,
            p => Some(p),
        }
    }

    /// Lends it a priority, or takes the lent one back (the runtime re-ranks it after).
    pub(crate) fn set_lent_priority(&self, p: Option<u8>) {
        // Relaxed: as `lent_priority`.
        self.lent.store(p.unwrap_or(NOT_LENT), Ordering::Relaxed);
    }

    /// The priority it runs at, and ranks by on the virtual cores: its own, or a better one
    /// lent to it.
    pub fn running_priority(&self) -> u8 {
        self.lent_priority()
            .map_or(self.priority(), |lent| lent.min(self.priority()))
    }

    /// Allowed virtual cores.
    pub fn core_mask(&self) -> u64 {
        self.core_mask.load(Ordering::Relaxed)
    }

    /// Preferred virtual core.
    pub fn ideal_core(&self) -> i32 {
        self.ideal_core.load(Ordering::Relaxed)
    }

    /// Sets mask and ideal core (validated by the caller; the runtime re-places the thread
    /// after).
    pub(crate) fn set_affinity(&self, ideal_core: i32, core_mask: u64) {
        self.core_mask.store(core_mask, Ordering::Relaxed);
        self.ideal_core.store(ideal_core, Ordering::Relaxed);
    }

    /// Binds the record to the calling OS thread: its parker and CPU clock.
    pub(crate) fn bind(&self, parker: Arc<Parker>) {
        let _ = self.parker.set(parker);
        let _ = self.clock.set(ThreadClock::current());
    }

    /// Asks the OS for the slice `want(priority, serial)` names for the thread now (0: the OS
    /// default), unless that was the last ask; nothing before the thread started (its start
    /// asks). Returns the slice asked and whether the OS took it, when an ask was made.
    pub(crate) fn ask_wake_slice(&self, want: impl FnOnce(u8, bool) -> u64) -> Option<(u64, bool)> {
        let tid = self.os_id()?;
        let mut asked = lock(&self.wake_slice);
        // Read under the lock: a priority set before another thread's ask is seen by it.
        let ns = want(self.priority(), self.is_serial());
        let unchanged = *asked == ns || (*asked == NOT_ASKED && ns == 0);
        if unchanged {
            return None;
        }
        let took = sys::set_wake_slice(tid, ns);
        *asked = ns;
        Some((ns, took))
    }

    /// The thread's trace id (its parker's owner; 0 before it started): what the trace names
    /// it by, a lock's holder included.
    pub fn trace_id(&self) -> u64 {
        self.parker.get().map_or(0, |p| p.owner())
    }

    /// Sets (`Some`) or clears the wake hook of the thread's parker (see `Parker`), once it
    /// is bound. Only the thread itself calls it.
    pub(crate) fn set_wake_hook(&self, hook: Option<crate::parker::WakeHook>) {
        if let Some(p) = self.parker.get() {
            p.set_wake_hook(hook);
        }
    }

    #[cfg(all(test, not(loom)))]
    /// Whether the thread is parked now (tests wait for it before a wake).
    pub(crate) fn is_parked(&self) -> bool {
        self.parker.get().is_some_and(|p| p.is_parked())
    }

    /// Keeps `timer`, which wakes the thread at the latest when the claim a waker deferred
    /// its wake for would escape (`Runtime::claim_hook`), until [`ThreadRecord::end_deferral`].
    pub(crate) fn defer(&self, timer: Timer) {
        let mut kept = lock(&self.deferred);
        *kept = Some(timer);
        // Relaxed: under the lock; a thread that reads it before this store finds no timer,
        // as if it had taken the lock first (the timer then wakes it once, later: harmless).
        self.deferring.store(true, Ordering::Relaxed);
    }

    /// The thread takes a core or gives its claim back: a deferred wake's timer, if one is
    /// kept, is cancelled. Only the thread itself calls it; one load when none is kept.
    pub(crate) fn end_deferral(&self) {
        // Relaxed: a hint, as `defer` says; the lock orders the timer itself.
        if !self.deferring.load(Ordering::Relaxed) {
            return;
        }
        let timer = {
            let mut kept = lock(&self.deferred);
            // Relaxed: under the lock, as in `defer`.
            self.deferring.store(false, Ordering::Relaxed);
            kept.take()
        };
        drop(timer);
    }

    /// Wakes the thread if it is parked (shutdown, kicks).
    pub fn unpark(&self) {
        if let Some(p) = self.parker.get() {
            p.unpark();
        }
    }

    /// The thread's CPU time since it started (zero before it started).
    pub fn cpu(&self) -> CpuTime {
        self.clock.get().map(ThreadClock::read).unwrap_or_default()
    }

    /// The OS thread id, once started.
    pub fn os_id(&self) -> Option<u64> {
        self.clock.get().map(ThreadClock::tid)
    }

    /// Counts one guest sleep.
    pub(crate) fn count_sleep(&self) {
        // Relaxed: a counter (stats module invariant).
        self.sleeps.fetch_add(1, Ordering::Relaxed);
    }

    /// Guest sleeps made.
    pub fn sleeps(&self) -> u64 {
        // Relaxed: a counter (stats module invariant).
        self.sleeps.load(Ordering::Relaxed)
    }

    /// What the thread is doing now.
    pub fn activity(&self) -> Activity {
        self.activity.get().activity
    }

    /// What the thread is doing now, with the number of the write that set it: two reads of
    /// one wait carry one number (the watchdog's dumps, one a wait).
    pub(crate) fn activity_reading(&self) -> Reading {
        self.activity.get()
    }

    /// Notes that the thread's code returned or unwound (the thread itself calls it).
    pub fn mark_ended(&self) {
        self.activity.end();
        self.after_activity(true);
    }

    /// After the thread set its activity: if a pause is asked of it, tells the asker to look
    /// again. The end of a wait (`fenced`) is fenced first: its pause point reads the pause
    /// bit after its write is seen (`pause.rs` says why no stop is missed); a wait's begin is
    /// not, so an asker that misses it sees it at its next look.
    fn after_activity(&self, fenced: bool) {
        if fenced {
            // SeqCst: pairs with the asker's fence between its pause bit and its read of
            // the activity, so one of the two sees the other's write.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        }
        if self.seat.pause_asked() {
            self.pause.notify();
        }
    }

    /// Its pause (`pause.rs`).
    pub(crate) fn pause(&self) -> &Pause {
        &self.pause
    }

    /// Time spent waiting for a virtual core.
    pub fn vcore_wait_ns(&self) -> u64 {
        // Relaxed: a counter (stats module invariant).
        self.vcore_wait_ns.load(Ordering::Relaxed)
    }
}

impl Occupant for ThreadRecord {
    fn who(&self) -> Who {
        Who {
            id: self.id,
            traits: Traits::new(
                self.running_priority(),
                self.is_first(),
                self.core_mask(),
                self.ideal_core(),
            ),
        }
    }

    fn id(&self) -> u64 {
        self.id
    }

    fn seat(&self) -> &Seat {
        &self.seat
    }

    fn waited(&self, ns: u64) {
        // Relaxed: a counter (stats module invariant).
        self.vcore_wait_ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn mark_wait(&self, on: Option<&'static str>) {
        match on {
            Some(on) => self.activity.wait(on),
            None => self.activity.run(),
        }
        self.after_activity(on.is_none());
    }

    fn waker(&self) -> Option<std::task::Waker> {
        self.parker.get().map(|p| std::task::Waker::from(p.clone()))
    }

    fn core_gate(&self) -> &SpinGate {
        &self.core_gate
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Arc, OnceLock, Parker, Seat, ThreadRecord};
    use std::mem::{align_of, offset_of, size_of};

    /// What a waker reads of a thread lies on the record's first line, and nothing the thread
    /// writes as it waits does (the type's doc says why).
    #[test]
    fn a_wakers_reads_have_the_first_line_to_themselves() {
        assert_eq!(align_of::<ThreadRecord>(), 64);
        // Where each field a waker reads ends.
        let read = [
            offset_of!(ThreadRecord, seat) + size_of::<Seat>(),
            offset_of!(ThreadRecord, id) + 8,
            offset_of!(ThreadRecord, core_mask) + 8,
            offset_of!(ThreadRecord, ideal_core) + 4,
            offset_of!(ThreadRecord, priority) + 1,
            offset_of!(ThreadRecord, lent) + 1,
            offset_of!(ThreadRecord, first) + 1,
            offset_of!(ThreadRecord, parker) + size_of::<OnceLock<Arc<Parker>>>(),
        ];
        assert!(
            read.iter().all(|&e| e <= 64),
            "a waker's read off line 0: {read:?}"
        );
        let written = [
            offset_of!(ThreadRecord, sleeps),
            offset_of!(ThreadRecord, vcore_wait_ns),
            offset_of!(ThreadRecord, core_gate),
            offset_of!(ThreadRecord, activity),
            offset_of!(ThreadRecord, deferred),
            offset_of!(ThreadRecord, deferring),
        ];
        assert!(
            written.iter().all(|&o| o >= 64),
            "a wait's write on line 0: {written:?}"
        );
    }
}
