//! What the virtual-core table is told and tells back: who asks ([`Who`], [`Traits`]), how a
//! thread yields ([`YieldKind`]), the clock it is given ([`Clock`]), where a step leaves a
//! thread ([`Step`], [`WaitId`]), what a holder is asked ([`Flag`]) and what the caller must
//! do after an operation ([`Effects`]).

use std::task::Waker;

/// The most virtual cores (HOS_CORES is 1..=8).
pub(crate) const MAX_CORES: usize = 8;

/// What ranks and places a thread: read from its record when it asks for a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Traits {
    /// Horizon priority, 0 (best) ..= 63.
    pub priority: u8,
    /// Whether a HOS_VCORE_FIRST part names it.
    pub first: bool,
    /// Allowed cores, a bit per core. Bits past the table's cores are ignored; a mask with
    /// none of its cores is a caller's bug (debug assertion) and is read as every core.
    pub mask: u64,
    /// The preferred core, if it names one of the table's cores.
    pub ideal: Option<usize>,
}

impl Traits {
    /// The traits of a thread of this priority, first flag, mask and ideal core; an ideal core
    /// that names no core of any table (negative, or past the most cores, 8) reads as none.
    pub fn new(priority: u8, first: bool, mask: u64, ideal_core: i32) -> Traits {
        Traits {
            priority,
            first,
            mask,
            ideal: usize::try_from(ideal_core).ok().filter(|&c| c < MAX_CORES),
        }
    }
}

/// A thread that asks for a core: a unique id and its traits. The table keeps nothing else
/// of a thread (no reference to its record: an uncontended acquire and release would pay two
/// reference-count updates for it, a third of their cost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Who {
    /// Unique among the threads the table sees.
    pub id: u64,
    /// How it ranks and where it may run.
    pub traits: Traits,
}

/// What the holder of a slot is asked, published for its checkpoint's fast path. Ordered:
/// a checkpoint takes the lock only at `Turn` (once its slice is over) or `Kick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub(crate) enum Flag {
    /// Nobody waits for this slot (or it is free).
    Idle = 0,
    /// Someone may take this slot, but none as good as the holder by priority: a yield to any
    /// thread (-2) would hand it over, nothing else.
    Waiter = 1,
    /// A waiter as good by priority asks for a turn: the holder gives the slot up once its
    /// time slice is over, or at a yield.
    Turn = 2,
    /// The holder must give the slot up at its next checkpoint: a better waiter claimed it, or
    /// the holder's core mask no longer allows it.
    Kick = 3,
}

impl Flag {
    /// The flag a `u8` (from [`Flag::as_u8`]) stands for.
    ///
    /// # Panics
    /// On any other value: an impossible state.
    pub(crate) fn from_u8(v: u8) -> Flag {
        match v {
            0 => Flag::Idle,
            1 => Flag::Waiter,
            2 => Flag::Turn,
            3 => Flag::Kick,
            _ => panic!("impossible vcore flag {v}"),
        }
    }

    /// The flag as a `u8`, for an atomic.
    pub(crate) fn as_u8(self) -> u8 {
        self as u8
    }
}

/// How a thread yields its core (svcSleepThread 0, -1, -2; docs/design.md section 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum YieldKind {
    /// 0: hand the core to the longest waiter of the same priority whose mask allows it, else
    /// keep it; then wait for this same core.
    SamePriority,
    /// -1: as 0, and come back on any allowed core, whichever frees first.
    Migrate,
    /// -2: hand the core to the best waiter whose mask allows it, whatever its priority; then
    /// wait for a core by its own rank.
    Any,
}

/// The table's two clocks. An operation reads one only where a decision needs the time, so
/// one that needs none (a release nobody waits for) reads none:
///
/// - `now`, in `sys::now()` nanoseconds: a wait's start, a kick's stamp, an escape, a kick's
///   grace (times that end a park, whose deadline is a `now()` value);
/// - `stamp`, on the event clock (`sys::ticks()`, in its own unit): a grant's stamp, which
///   only spans are taken of (a time slice, the longest holder, how long a holder held). An
///   uncontended acquire reads only this one, at about half a `now()`'s cost where the TSC
///   serves (BENCHMARKS.md, "Fast paths").
///
/// A `u64` is both clocks stopped at that time (its ticks are nanoseconds): tests drive the
/// table with one.
pub(crate) trait Clock {
    /// The time now. Within one operation every read must give the same value.
    fn now(&self) -> u64;

    /// The stamp now. Within one operation every read must give the same value.
    fn stamp(&self) -> u64;
}

impl Clock for u64 {
    fn now(&self) -> u64 {
        *self
    }

    fn stamp(&self) -> u64 {
        *self
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> u64 {
        (**self).now()
    }

    fn stamp(&self) -> u64 {
        (**self).stamp()
    }
}

/// A queued wait: poll it with [`super::table::Table::poll_wait`] until it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct WaitId(pub(super) usize);

/// Where a thread stands after an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    /// It holds `slot`, acquired at stamp `since` ([`Clock::stamp`]).
    Held {
        /// The slot.
        slot: usize,
        /// When it was acquired (the time slice counts from it).
        since: u64,
    },
    /// It waited past the escape time and runs beside the slots, holding none of them.
    Escaped,
    /// It keeps what it had.
    Kept,
    /// It waits: poll the key until the wait ends.
    Queued(WaitId),
    /// The table is shut down: the thread runs without a core.
    Cancelled,
}

/// What an operation asks of the caller once the lock is dropped (wake, count) or before
/// (mirror the dirty flags).
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// Wakers of waiters whose wait ended (granted or cancelled).
    pub wake: Vec<Waker>,
    /// Kicks made, indexed by [`crate::stats::KickReason`] `as usize`.
    pub kicks: [u32; 3],
    /// Waits begun.
    pub waits: u32,
    /// Waiters that escaped.
    pub escapes: u32,
    /// Slots whose flag changed, a bit per slot.
    pub dirty: u8,
    /// Slots whose holder was kicked, a bit per slot (for the trace).
    pub kicked: u8,
    /// Slots taken from a kicked holder after the kick's grace, each with the id of the holder
    /// it was taken from: the caller marks that holder's kick word revoked before it writes
    /// the slot's next holder's (`vcore/mod.rs`), counts and traces them.
    pub revoked: Vec<(usize, u64)>,
}

impl Effects {
    /// Whether the operation counted anything (waits, escapes, kicks, revocations): most
    /// steps of an uncontended thread count nothing.
    pub(crate) fn counts(&self) -> bool {
        self.waits != 0 || self.escapes != 0 || self.kicks != [0; 3] || !self.revoked.is_empty()
    }
}
