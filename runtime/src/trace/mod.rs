//! The trace: one stream of events from every wait, sleep and virtual-core step, kept per
//! thread, and read back as a [`Snapshot`] (docs/design.md section 17). What is made of it
//! (a Chrome trace-event file, the wait tree, each frame's critical path) is `analysis/`.
//!
//! Invariant: an event site is one call here, and with no session recording it costs one
//! relaxed load ([`on`]); recording costs no lock, no allocation and no system call per
//! event (see [`recorder`]'s ground rules). Events describe; nothing in the runtime reads
//! them to decide anything: an event site returns nothing, and the trace is read only to be
//! shown (a file, a dump, the wait tree, critical paths). When to dump is decided outside it
//! (`observe.rs`): on an escape, by the watchdog (a guest wait past HOS_FLIGHT_WAIT_MS:
//! `watchdog.rs`), on a shutdown that times out, at a host's request.
//!
//! | file | what |
//! | --- | --- |
//! | [`event`] | one event: four words; the labels of waits |
//! | [`ring`] | a thread's ring of its latest events, read by others without a lock |
//! | [`snapshot`] | a reading: each thread's events and who it is |
//! | [`recorder`] | the tracks, the flags, the collector, one session a runtime |
//! | `tracy` | with the `tracy` feature: the same events, live, to Tracy |

pub(crate) mod event;
pub(crate) mod recorder;
pub(crate) mod ring;
pub(crate) mod snapshot;
#[cfg(feature = "tracy")]
mod tracy;

pub use event::{
    Event, Failed, Kind, SpinEnd, WaitFor, ESCAPED, NOT_LENT, NO_CORE, REVOKED, UNTIMED,
};
pub use recorder::Session;
pub use snapshot::{Guest, Meta, Snapshot, ThreadTrace};

use recorder::{record, ACTIVE};
use std::sync::atomic::Ordering;

/// Whether any session records: every event site's one load.
#[inline]
pub fn on() -> bool {
    // Relaxed: a count; an event racing a session's start or end is kept or not, either way.
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// The calling thread's trace id (process-unique, never 0 while it runs): what events name
/// a thread by, a parker's owner, a mutex's holder.
pub fn thread_id() -> u64 {
    recorder::thread_id()
}

/// The calling thread wakes the thread of trace id `target`; `parked` says (as a hint)
/// whether it is parked. A wake of a parked thread reads the clock (it costs a system call
/// anyway); any other is [`UNTIMED`]: stamped with the calling thread's previous event's
/// time, so that a hand-off to a spinning waiter, the fastest there is, reads no clock on the
/// waker's side. Called before the wake is given, so that the woken thread's wait end is
/// stamped after it.
#[inline]
pub fn wake(target: u64, parked: impl FnOnce() -> bool) {
    if on() {
        if parked() {
            record(Kind::Wake, 0, target, 0);
        } else {
            recorder::record_after_last(Kind::Wake, UNTIMED, target, 0);
        }
    }
}

/// A blocking wait (`block_on`) makes its first poll: a registration in it begins the wait.
#[inline]
pub fn first_poll() {
    if on() {
        recorder::first_poll();
    }
}

/// The calling thread registered as a waiter of the object at `addr` (`label` names its
/// operation, `holder` is the trace id of its holder, 0 for none). Recorded only in a
/// blocking wait: the first registration of its first poll begins it.
#[inline]
pub fn blocked(addr: usize, label: &'static str, holder: u64) {
    if on() {
        recorder::registered(addr as u64, event::label_id(label), holder);
    }
}

/// The calling thread registered as a waiter of the object at `addr` (as [`blocked`]) before
/// the blocking wait it goes on to (`block_on`): that begins the wait, and the wait's first
/// poll records no begin of its own. The kernel's arbiter calls it under its lock, so that
/// whatever the wait goes through under that lock ([`moved`]) comes after its begin.
#[inline]
pub fn blocked_before_wait(addr: usize, label: &'static str, holder: u64) {
    if on() {
        recorder::registered_before_wait(addr as u64, event::label_id(label), holder);
    }
}

/// The wait of the thread of trace id `waiter` now waits for the thread of trace id
/// `holder`, on the kernel mutex word at `addr` (an unlock's hand-off, or a signalled
/// condition variable's waiter taken to its mutex).
#[inline]
pub fn moved(addr: usize, waiter: u64, holder: u64) {
    if on() {
        debug_assert!(addr >> 56 == 0, "an address of 56 bits: {addr:#x}");
        record(Kind::Moved, addr as u64, waiter, holder);
    }
}

/// The blocking wait in progress ends at `at` (a `sys::now()` value) at the latest.
#[inline]
pub fn deadline(at: u64) {
    if on() {
        recorder::record_in_wait(Kind::Deadline, 0, at, 0);
    }
}

/// The blocking wait in progress ends without completing.
#[inline]
pub fn wait_failed(why: Failed) {
    if on() {
        recorder::record_in_wait(Kind::WaitFailed, why as u64, 0, 0);
    }
}

/// A wait begins in `block_on` (its first poll was pending): recorded unless a registration
/// began it.
#[inline]
pub fn wait_begin(on_: WaitFor) {
    if on() {
        recorder::wait_begin(on_);
    }
}

/// A spin of a wait ended without the wake, and a park follows (`Skipped` or `Missed`; a
/// caught spin is said by the poll after it, no spin by nothing).
#[inline]
pub fn spin_end(how: SpinEnd) {
    debug_assert!(
        how != SpinEnd::Caught,
        "a caught spin is said by the poll after it"
    );
    if on() && how != SpinEnd::None {
        record(Kind::SpinEnd, how as u64, 0, 0);
    }
}

/// A poll after a park or a spin was still pending (`caught`: a spin that caught the wake
/// came before it).
#[inline]
pub fn repoll(caught: bool) {
    if on() {
        record(Kind::Repoll, caught_x(caught), 0, 0);
    }
}

/// The wait ended (`caught`: the spin before its last poll caught the wake); also after a
/// first poll that completed, which ends a wait only if a registration began one.
#[inline]
pub fn wait_end(caught: bool) {
    if on() {
        recorder::wait_end(caught_x(caught));
    }
}

/// The `x` of a repoll or wait end.
fn caught_x(caught: bool) -> u64 {
    if caught {
        SpinEnd::Caught as u64
    } else {
        0
    }
}

/// The calling thread waits for a virtual core.
#[inline]
pub fn core_queued() {
    if on() {
        record(Kind::CoreQueued, 0, 0, 0);
    }
}

/// The calling thread is now on core `slot` ([`ESCAPED`], [`NO_CORE`]).
#[inline]
pub fn core(slot: u64) {
    if on() {
        record(Kind::Core, slot, 0, 0);
    }
}

/// The calling thread was granted core `slot`: stamped with the time of the wait's or sleep's
/// end it follows at once (no clock read), if its last event is one, else now.
#[inline]
pub fn core_granted(slot: u64) {
    if on() {
        recorder::record_after_end(Kind::Core, slot, 0, 0);
    }
}

/// The calling thread's step asked the holder of core `slot`, guest `victim`, to leave it.
#[inline]
pub fn kick(slot: usize, victim: u64) {
    if on() {
        record(Kind::Kick, slot as u64, victim, 0);
    }
}

/// The calling thread's step took core `slot` from guest `victim`, kicked and still on it
/// past the kick's grace (HOS_VCORE_GRACE_US); `victim` runs on beside the cores until its
/// next checkpoint.
#[inline]
pub fn revoke(slot: usize, victim: u64) {
    if on() {
        record(Kind::Kick, slot as u64, victim, REVOKED);
    }
}

/// A yield on the virtual cores: `kind` 0, 1, 2 for svcSleepThread 0, -1, -2.
#[inline]
pub fn yielded(kind: u8, handed: bool) {
    if on() {
        record(Kind::Yield, u64::from(kind), u64::from(handed), 0);
    }
}

/// A sleep of `ns` begins (`guest`: a guest sleep, else a host sleep); a guest thread gives
/// its core up right after.
#[inline]
pub fn sleep_begin(ns: u64, guest: bool) {
    if on() {
        record(Kind::SleepBegin, u64::from(guest), ns, 0);
    }
}

/// The sleep ended along `path`, `late` ns past its deadline; `polled`: it held a poller
/// slot.
#[inline]
pub fn sleep_end(path: crate::stats::SleepPath, late: u64, polled: bool) {
    if on() {
        record(
            Kind::SleepEnd,
            path as u64 | u64::from(polled) << 8,
            late,
            0,
        );
    }
}

/// The calling thread becomes guest thread `guest` of `session`'s runtime, named `name`.
pub fn thread_start(session: &std::sync::Arc<Session>, guest: Guest, name: &str) {
    if on() {
        session.adopt(guest, name);
        record(Kind::ThreadStart, 0, guest.id, 0);
    }
}

/// The calling guest thread leaves its runtime (it gives its core up about then).
#[inline]
pub fn thread_exit() {
    if on() {
        record(Kind::ThreadExit, 0, 0, 0);
    }
}

/// Guest `guest` of runtime `runtime` changed (name, priority or cores): `change` updates
/// its track; the calling thread records `kind` (`Rename`, `Priority`, `Affinity`, with `x`
/// as the kind says).
pub fn retitle(runtime: u64, guest: u64, kind: Kind, x: u64, change: impl FnOnce(&mut Meta)) {
    if on() {
        recorder::retitle(runtime, guest, change);
        record(kind, x, runtime, guest);
    }
}

/// Guest `guest` of runtime `runtime` was lent priority `lent` (priority inheritance), or
/// the lent one was taken back (`None`); the calling thread records it.
#[inline]
pub fn lent(runtime: u64, guest: u64, lent: Option<u8>) {
    if on() {
        let x = lent.map_or(NOT_LENT, u64::from);
        record(Kind::Lent, x, runtime, guest);
    }
}

/// The deterministic mode reported a softlock at decision `decision`, virtual time `vt` ns:
/// a deadlock (`held` `None`), or guest `held` kept the token too long.
#[inline]
pub fn softlock(decision: u64, vt: u64, held: Option<u64>) {
    if on() {
        record(Kind::Softlock, held.unwrap_or(0), decision, vt);
    }
}

/// The calling guest thread took the deterministic mode's token at decision `decision`,
/// virtual time `vt` ns: its next events fall in that turn.
#[inline]
pub fn decision(decision: u64, vt: u64) {
    if on() {
        record(Kind::Decision, 0, decision, vt);
    }
}

/// A host frame mark, number `n`.
#[inline]
pub fn frame(n: u64) {
    if on() {
        record(Kind::Frame, 0, n, 0);
    }
}
