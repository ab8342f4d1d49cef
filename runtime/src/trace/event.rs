//! One event of the trace stream: what a thread did and when, in four words.
//!
//! Invariant: an event is plain data of four `u64` words (time, kind with its small field,
//! two arguments), so a ring of them is made of atomics and another thread reads it without
//! a lock; what each word means is said once, on [`Kind`]. Events name other threads by
//! trace id ([`Kind::Wake`], [`Kind::Moved`]) or by guest id ([`Kind::Kick`], and with its
//! runtime's id the changes of a guest thread that any thread may make); the tracks say
//! which is whose.
//! Recorded, the time word is a `sys::ticks()` value (the cheap event clock); an [`Event`]
//! read back holds a `sys::now()` value, mapped by one [`TickScale`] for the whole reading.

use crate::stats::SleepPath;
use crate::sys::TickScale;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What happened. `x` is the kind's small field, `a` and `b` its two arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// The thread entered a runtime as a guest thread (its track says who it is).
    ThreadStart = 1,
    /// The guest thread left its runtime (and gave its core up).
    ThreadExit,
    /// Guest `b` of runtime `a` renamed (its track keeps the name now); recorded by the
    /// thread that renamed it, like the next three.
    Rename,
    /// Guest `b` of runtime `a` got its own priority `x`.
    Priority,
    /// Guest `b` of runtime `a` got new cores: `x` the mask (low 16 bits) and the ideal core
    /// (as `u32` bits) above it.
    Affinity,
    /// The wait in progress registered with one more object (another of a `wait_any`, or
    /// the same again after a notice it lost): `a` its address, `x` its label (interned),
    /// `b` the trace id of the thread holding it (0: none).
    Blocked,
    /// The wait in progress ends at `a` (a `sys::now()` value) at the latest.
    Deadline,
    /// A wait begins: `x` a [`WaitFor`] (low byte) and, for a wait that begins by registering
    /// with an object, the object's label above it; `a` the object's address (0: none), `b`
    /// the trace id of the thread holding it (0: none). A thread that begins a wait on
    /// anything but a core gives its core up.
    WaitBegin,
    /// A spin ended without the wake and a park follows: `x` a [`SpinEnd`] (skipped or
    /// missed). A spin that caught the wake records nothing: the poll after it says so.
    SpinEnd,
    /// A poll after a park or a spin was still pending: spin (and park) again. `x`:
    /// [`SpinEnd::Caught`] if a spin that caught the wake came before it, else 0 (a park).
    Repoll,
    /// The wait ends without completing: `x` a [`Failed`].
    WaitFailed,
    /// The wait ended: `x` as [`Kind::Repoll`]'s (how the phase before its last poll ended).
    WaitEnd,
    /// Woke the thread of trace id `a` (its parker). `x` [`UNTIMED`] when the target was not
    /// parked (spinning, or not waiting yet): then the clock was not read and the event
    /// carries its thread's previous event's time, a lower bound; it happened before its
    /// thread's next event (see [`Event::t`]). A wake of a parked thread is timed (`x` 0).
    Wake,
    /// Waits for a virtual core.
    CoreQueued,
    /// Now on virtual core `x` ([`ESCAPED`], [`NO_CORE`]).
    Core,
    /// Asked the holder of core `x`, guest id `a`, to give it up; `b` [`REVOKED`] when it took
    /// the core from it instead, past the kick's grace (the holder runs on beside the cores
    /// until its next checkpoint), else 0.
    Kick,
    /// A yield on the virtual cores: `x` 0, 1 or 2 for svcSleepThread 0, -1, -2; `a` 1 if
    /// it handed its core over.
    Yield,
    /// A sleep begins: `a` the nanoseconds asked, `x` 1 for a guest sleep, 0 a host sleep. A
    /// guest thread that sleeps gives its core up.
    SleepBegin,
    /// The sleep ended: `x` its [`SleepPath`] (low byte) and 0x100 if it held a poller slot;
    /// `a` its lateness in nanoseconds.
    SleepEnd,
    /// A host frame mark: `a` the frame's number.
    Frame,
    /// Guest `b` of runtime `a` was lent priority `x` by a thread waiting for a lock it holds
    /// (priority inheritance), or [`NOT_LENT`]: the lent one was taken back.
    Lent,
    /// The wait of the thread of trace id `a` now waits for the thread of trace id `b`, on the
    /// kernel mutex word at address `x`: an unlock handed the mutex to `b` and the others
    /// waiting for it moved to `b`, or a signal took a condition-variable waiter to its
    /// mutex, which `b` holds. Recorded by the thread that moved it, under the arbiter's lock.
    Moved,
    /// The deterministic mode reported a softlock (docs/determinism.md section 7): `a` the
    /// decision index, `b` the virtual time in ns; `x` 0 for a deadlock, else the id of the
    /// guest thread that held the token too long. Recorded by the thread that told it.
    Softlock,
    /// The calling guest thread took the deterministic mode's token: `a` the index of the
    /// decision that gave it the turn (the witness's, a softlock's turns' and a divergence's
    /// numbering), `b` the virtual time in ns. Its track's events up to its next `Decision`
    /// fall in that turn, so a trace of a deterministic run lines up with its decisions.
    Decision,
}

impl Kind {
    const ALL: [Kind; 24] = [
        Kind::ThreadStart,
        Kind::ThreadExit,
        Kind::Rename,
        Kind::Priority,
        Kind::Affinity,
        Kind::Blocked,
        Kind::Deadline,
        Kind::WaitBegin,
        Kind::SpinEnd,
        Kind::Repoll,
        Kind::WaitFailed,
        Kind::WaitEnd,
        Kind::Wake,
        Kind::CoreQueued,
        Kind::Core,
        Kind::Kick,
        Kind::Yield,
        Kind::SleepBegin,
        Kind::SleepEnd,
        Kind::Frame,
        Kind::Lent,
        Kind::Moved,
        Kind::Softlock,
        Kind::Decision,
    ];

    /// The kind a word's low byte names; `None` for a slot never written or torn.
    fn from_u8(v: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(v).checked_sub(1)?).copied()
    }
}

/// `Kind::Core`'s slot when the thread runs past the slots by escape.
pub const ESCAPED: u64 = 254;
/// `Kind::Core`'s slot when the thread holds no core.
pub const NO_CORE: u64 = 255;
/// `Kind::Wake`'s `x` when the wake read no clock (its target was not parked).
pub const UNTIMED: u64 = 1;
/// `Kind::Lent`'s priority when the lent one is taken back.
pub const NOT_LENT: u64 = 255;
/// `Kind::Kick`'s `b` when the core was taken from the holder after the kick's grace.
pub const REVOKED: u64 = 1;
/// The bits of `Kind::Affinity`'s `x` that hold the mask.
pub(crate) const MASK_BITS: u32 = 16;

/// What a wait is for: what `block_on` opens its bracket by (`block_on.rs`: a wait on
/// objects gives its core back, a core wait holds none, a sleep's wait is inside its sleep's
/// bracket), and what a [`Kind::WaitBegin`] keeps in its `x`'s low byte (the discriminant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitFor {
    /// A deadline: a sleep's wait for its reactor timer.
    Sleep = 0,
    /// One or more sync objects: event, queue, mutex, condition variable, semaphore,
    /// wait_any.
    Object = 1,
    /// A virtual core (the acquire itself: it holds no core to give back).
    Vcore = 2,
}

impl WaitFor {
    /// The kind `x` holds.
    pub fn from_x(x: u64) -> WaitFor {
        match x {
            0 => WaitFor::Sleep,
            2 => WaitFor::Vcore,
            _ => WaitFor::Object,
        }
    }
}

/// How the spin of one wait ended (a park follows unless it caught the wake).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpinEnd {
    /// No spin for this wait (a sleep, or a zero spin length).
    None = 0,
    /// The object's spin gate said spins miss there; skipped.
    Skipped = 1,
    /// Woken while spinning: no park.
    Caught = 2,
    /// Ran its whole length, then parked.
    Missed = 3,
}

/// Why a wait ended without completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Failed {
    /// Its deadline passed.
    TimedOut = 0,
    /// Its runtime shut down.
    Cancelled = 1,
}

/// One event, read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// When, in `sys::now()` nanoseconds: the event clock's reading as the event was
    /// recorded, after every earlier event of its thread. Two kinds read no clock and carry
    /// the time of their thread's event before them, a lower bound: an [`UNTIMED`] wake
    /// (it happened before the next event of its thread that is no untimed wake) and a core
    /// granted at once after a wait's or a sleep's end. Every event that another thread's
    /// event follows from reads the clock after it (a wait's end after the wake that ended
    /// it), so a cause is never stamped after its effect.
    pub t: u64,
    /// What.
    pub kind: Kind,
    /// The kind's small field (56 bits).
    pub x: u64,
    /// First argument.
    pub a: u64,
    /// Second argument.
    pub b: u64,
}

impl Event {
    /// The words of an event of `kind` recorded at `ticks` (a `sys::ticks()` value).
    #[inline]
    pub(crate) fn words(ticks: u64, kind: Kind, x: u64, a: u64, b: u64) -> [u64; 4] {
        [ticks, kind as u64 | x << 8, a, b]
    }

    /// The event four recorded words hold, its time mapped by `scale`; `None` for words that
    /// are no event.
    pub(crate) fn from_words(w: [u64; 4], scale: &TickScale) -> Option<Event> {
        Some(Event {
            t: scale.ns(w[0]),
            kind: Kind::from_u8(w[1] as u8)?,
            x: w[1] >> 8,
            a: w[2],
            b: w[3],
        })
    }

    /// A `SleepEnd`'s path.
    pub fn sleep_path(&self) -> SleepPath {
        SleepPath::ALL[(self.x & 0xFF) as usize % SleepPath::ALL.len()]
    }
}

/// Labels of waits (an object's operation, `event::Take`), interned: a wait records the
/// label's number, the writer its text.
///
/// # Invariant
/// `KEYS[i]` is the address of `NAMES[i]`'s text once set (never changed after), and a
/// label sits in the first slot free when it was added on its probe (from the hash of its
/// address on, wrapping): a label is looked up with loads alone, most often one, on one
/// cache line (a wait registers on every wait on objects), and added under `NAMES`'s lock.
const MAX_LABELS: usize = 256;
static KEYS: [AtomicUsize; MAX_LABELS] = [const { AtomicUsize::new(0) }; MAX_LABELS];
static NAMES: Mutex<[&str; MAX_LABELS]> = Mutex::new([""; MAX_LABELS]);

/// The slots a label's key is looked for in, in order: from its hash (Fibonacci hashing of
/// the address: its top 8 bits) on, wrapping.
fn probe(key: usize) -> impl Iterator<Item = usize> {
    let home = (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
    (0..MAX_LABELS).map(move |k| (home as usize + k) % MAX_LABELS)
}

/// The number of `label` (by the address of its text); past 256 labels, 0 (`?`).
pub(crate) fn label_id(label: &'static str) -> u64 {
    let key = label.as_ptr() as usize;
    for i in probe(key) {
        // Acquire: pairs with the Release below, so `NAMES[i]` is there for the writer.
        match KEYS[i].load(Ordering::Acquire) {
            0 => return add_label(label, key),
            v if v == key => return i as u64 + 1,
            _ => {}
        }
    }
    0
}

fn add_label(label: &'static str, key: usize) -> u64 {
    let mut names = crate::sync::lock(&NAMES);
    // Under the lock (another thread may have added it meanwhile): every key is stored
    // under it, so Relaxed loads see them all.
    for i in probe(key) {
        match KEYS[i].load(Ordering::Relaxed) {
            0 => {
                names[i] = label;
                // Release: the name is set before its key is seen.
                KEYS[i].store(key, Ordering::Release);
                return i as u64 + 1;
            }
            v if v == key => return i as u64 + 1,
            _ => {}
        }
    }
    0
}

/// The whole text of label `id`; `"?"` for 0 (past the 256 labels) or a number never given.
pub(crate) fn label_text(id: u64) -> &'static str {
    let names = crate::sync::lock(&NAMES);
    let named = id.checked_sub(1).and_then(|i| names.get(i as usize));
    named.copied().filter(|n| !n.is_empty()).unwrap_or("?")
}

/// The text of label `id`, shortened to its last two path segments without generics
/// (`hos::os::event::Take` is `event::Take`); `"?"` as [`label_text`].
pub(crate) fn label_name(id: u64) -> String {
    let full = label_text(id);
    let plain = full.split('<').next().unwrap_or(full);
    let parts: Vec<&str> = plain.rsplitn(3, "::").collect();
    match parts.as_slice() {
        [last, module, ..] => format!("{module}::{last}"),
        _ => plain.to_string(),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_garbage_is_no_event() {
        for kind in Kind::ALL {
            let e = Event {
                t: 7,
                kind,
                x: 0x00AB_CDEF,
                a: u64::MAX,
                b: 3,
            };
            let w = Event::words(e.t, e.kind, e.x, e.a, e.b);
            assert_eq!(Event::from_words(w, &TickScale::IDENTITY), Some(e));
        }
        let id = TickScale::IDENTITY;
        assert_eq!(Event::from_words([0; 4], &id), None);
        assert_eq!(Event::from_words([0, 200, 0, 0], &id), None);
        let twice = TickScale::between((0, 0), (1_000, 2_000));
        let w = Event::words(50, Kind::Frame, 0, 1, 0);
        assert_eq!(Event::from_words(w, &twice).map(|e| e.t), Some(100));
    }

    #[test]
    fn labels_intern_by_address_and_read_short() {
        let a = label_id("hos::os::event::Take");
        assert_eq!(a, label_id("hos::os::event::Take"));
        assert_ne!(a, 0);
        assert_eq!(label_name(a), "event::Take");
        let q = label_id("hos::os::message_queue::Receive<u64, hos::os::message_queue::Q>");
        assert_eq!(label_name(q), "message_queue::Receive");
        assert_eq!(label_name(0), "?");
        // Enough labels that some share a probe's start: each keeps its own number.
        let many: Vec<&'static str> = (0..40)
            .map(|i| &*format!("hos::test::label_{i}").leak())
            .collect();
        let ids: Vec<u64> = many.iter().map(|l| label_id(l)).collect();
        for (i, (l, id)) in many.iter().zip(&ids).enumerate() {
            assert_eq!(label_id(l), *id);
            assert_eq!(label_name(*id), format!("test::label_{i}"));
        }
    }
}
