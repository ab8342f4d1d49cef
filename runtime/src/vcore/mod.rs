//! The virtual-core semaphore: N slots (HOS_CORES, 1..=8), and a guest thread runs guest code
//! only while it holds one (docs/design.md, "Virtual cores", has every rule).
//!
//! # Invariant
//!
//! A slot is never held by two threads and never leaks: a thread that ends, panics or blocks
//! gives its slot back (the `hos` crate's `CoreGuard`, `block_on` and the sleep paths call
//! [`Vcores::release`]); a wait that is dropped half-way gives back a slot granted to it.
//! Two exceptions are documented and counted, and let more than N threads run guest code for
//! a while, the extra ones beside the slots, holding none of them:
//!
//! - an escape (reported, with each slot's holder): a waiter that waited past
//!   HOS_VCORE_ESCAPE_MS runs anyway. It takes a slot at a later checkpoint if one is free.
//! - a revocation (HOS_VCORE_GRACE_US, 100 us by default; `table/grace.rs`): a waiter whose kick
//!   of a holder was not answered within the grace takes that holder's slot. The holder runs
//!   on until its next checkpoint or yield, where it waits for a slot by its rank, or its
//!   release, where it leaves.
//!
//! # Ground rules
//!
//! - Every decision is made by the pure state machine [`table::Table`] under one `Mutex`
//!   (`Inner::table`): slots, the queue of waiters, kicks, turns, escapes. N is at most 8 and
//!   the waiters are OS threads (tens, at most hundreds), so one lock and O(N * W) scans are
//!   cheap next to a park. The one exception is the fast path (`fast.rs`): while nobody waits
//!   the table lends its slots to their cells (`cells.rs`), where a thread takes a free slot
//!   and gives it back by one compare-and-swap each, and every locked step takes the lent slots
//!   back first, so the table decides on every holder.
//! - `Inner::flags[s]` mirrors `Table::flag(s)` and `Inner::free` the free-slot mask. Both are
//!   written only under the table lock, and read without it by the holder of slot `s` (or an
//!   escaped thread) at its checkpoint: a hint that says whether to take the lock, never a
//!   decision. Relaxed: the lock orders what the decision reads.
//! - A thread's [`Seat`] is written and read only by that thread (acquire, release, checkpoint
//!   and yield run on the thread they are for), after the table told it where it stands or it
//!   took a lent slot; except its claim state, which a waker's [`claim`] moves by
//!   compare-and-swap (under the lock, or without it to take a lent slot for the thread), and
//!   its card, which such a waker and a lend write (`card.rs`).
//! - A thread's kick word ([`kick`]) is non-zero while its checkpoint has something to do:
//!   its slot's flag is `Turn` or `Kick`, it runs by escape, or its slot was taken (revoked:
//!   the word says so, and the slot its seat names is no longer its own). It is written only
//!   under the lock: by the thread's own steps (`Locked::seat`, when a step tells the thread
//!   where it stands) and, for the holder of a slot whose flag changed or that was taken, by
//!   whoever changed it (`Locked::words`, `Locked::revoke`). So `word == 0` implies the
//!   checkpoint has nothing to do whenever the lock is free, and the checkpoint's fast path is
//!   that one load. Relaxed, as the flags.
//! - Wakers are collected under the lock ([`step::Effects`]) and woken after it is dropped.
//! - A waiter waits through [`crate::block_on::block_on_with`]: the vcore wait's spin (the
//!   caller's, by its role), then a park on its own parker that also ends at the time the
//!   table gives it ([`Table::poll_at`]: its escape time, or sooner the end of its kick's
//!   grace), so it escapes, or takes a slot after the grace, even if nobody releases one.
//! - The semaphore knows a thread only as an [`Occupant`] (an id, its traits, its seat) and
//!   names nobody: an escape is returned to the caller as an [`Escape`] report, which the
//!   caller logs with the holders' names.
//!
//! | file | what |
//! | --- | --- |
//! | [`rank`] | who outranks whom: priority, the first flag, turns |
//! | [`step`] | what the table is told and tells back |
//! | [`table`] | the slots and the queue as a pure state machine with an injected clock; `table/grace.rs`, the kicks' grace |
//! | [`claim`] | a waker claims the core of the guest thread it wakes, before the thread runs |
//! | [`seat`] | a thread's own copy of where it stands: slot, kick word, claim state |
//! | [`card`] | who a thread is and since when it holds its slot, beside its kick word |
//! | [`line`] | a thread's one shared cache line (kick word, claim state, card), its own half (slot); the pool |
//! | [`cells`] | one word a slot: a lent slot taken and given back by compare-and-swap |
//! | [`fast`] | the fast path: when slots are lent, taken back, and why no wake is lost |
//! | [`escape`] | the report of an escape: each core's holder when a waiter ran past the slots |
//! | [`wait`] | a queued step waited out through the one `block_on`, as a future over the table |
//! | `mod.rs` | [`Vcores`]: the lock, the steps, the checkpoint's fast path, the counters |
//!
//! Costs (`cargo bench --bench vcore`; figures in BENCHMARKS.md, "Fast paths"): while
//! nobody waits, an acquire is a few relaxed loads (the thread's traits), an event-clock read
//! (the slot's stamp), three relaxed stores to its own card and one compare-and-swap of a
//! cell, a release one compare-and-swap: no lock, no ranking (`fast.rs`). Otherwise each takes
//! the lock once and reads the event clock at most once (the slot's stamp for the time slice: the TSC where the kernel
//! keeps time on it, half a `now()`); they mirror flags, count and trace only what a step
//! changed. A checkpoint that nobody asks anything of is one load of the thread's kick word;
//! a yield, one load of its slot's flag.

mod card;
mod cells;
mod claim;
mod escape;
mod fast;
mod kick;
mod line;
pub(crate) mod rank;
mod seat;
pub(crate) mod step;
pub(crate) mod table;
mod wait;

pub use escape::Escape;
pub(crate) use kick::is_set as kick_is_set;
use seat::Home;
pub use seat::Seat;
pub use step::{Traits, Who, YieldKind};

use crate::chaos;
use crate::config::Config;
use crate::policy::Spin;
use crate::spin_gate::SpinGate;
use crate::stats::Counters;
use crate::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use crate::sync::{lock, Arc, Mutex};
use crate::sys::{self, TickScale};
use crate::time::{MS, US};
use crate::trace;
use cells::Cells;
use line::Line;
use std::cell::Cell;
use step::{Clock, Effects, Flag, Step, MAX_CORES};
use table::{bits, Table};

/// A thread as the virtual cores see it: the runtime's thread record is one.
pub trait Occupant {
    /// Its id and traits (priority, first flag, mask, ideal core), read now.
    fn who(&self) -> Who;

    /// Its id alone (`who().id`), for the steps that need no traits: a release, a checkpoint.
    fn id(&self) -> u64 {
        self.who().id
    }

    /// Its seat: its own copy of where it stands.
    fn seat(&self) -> &Seat;

    /// Counts `ns` more nanoseconds spent waiting for a core.
    fn waited(&self, ns: u64);

    /// Notes that it waits on `on` (`Some`) or runs again (`None`): what a shutdown's report
    /// and a watchdog say it does.
    fn mark_wait(&self, on: Option<&'static str>);

    /// A waker that unparks it, where a deferred claim's wake goes (`claim.rs`); `None` before
    /// it is bound to an OS thread (its claims are never deferred).
    fn waker(&self) -> Option<std::task::Waker>;

    /// The spin gate of its waits for a core (`wait.rs`): whether such a wait spins before it
    /// parks, learnt from how its own last ones ended.
    fn core_gate(&self) -> &SpinGate;
}

/// The virtual-core semaphore of one runtime.
#[derive(Debug)]
pub struct Vcores {
    /// `None` when the semaphore is off (HOS_VCORES=0).
    inner: Option<Inner>,
}

#[derive(Debug)]
struct Inner {
    table: Mutex<Locked>,
    /// # Invariant: `flags[s]` is `table.flag(s)` whenever the lock is free (ground rules).
    flags: [AtomicU8; MAX_CORES],
    /// # Invariant: the table's free-slot mask whenever the lock is free (ground rules), as of
    /// the last step: its readers, escaped threads, exist only while no slot is lent.
    free: AtomicU64,
    /// The slots' cells, for the fast path (`fast.rs`).
    cells: Cells,
    /// Every slot, a bit each.
    all: u64,
    /// The time slice in stamp ticks (`Clock::stamp`, `sys::ticks()`).
    slice_ticks: u64,
    /// The event clock's rate, as of the semaphore's making: a stamp's span in ns (an
    /// escape's report).
    scale: TickScale,
    escape_ns: u64,
    /// HOS_VCORE_CLAIM: whether wakers claim cores (`claim.rs`).
    claims: bool,
    /// HOS_VCORE_CLAIM_DEFER: whether a claim that queues its thread defers its wake (`claim.rs`).
    defer: bool,
    counters: Arc<Counters>,
}

/// The table's clocks ([`Clock`]), each read at most once, at first use: an operation that
/// needs no time reads no clock (an uncontended release), one that needs a stamp alone (an
/// uncontended acquire) reads only the cheaper event clock, and one that reads either twice
/// sees one instant.
#[derive(Default)]
struct Now {
    now: Cell<Option<u64>>,
    stamp: Cell<Option<u64>>,
}

/// `cell`'s value, read from `clock` at the first call.
fn once(cell: &Cell<Option<u64>>, clock: fn() -> u64) -> u64 {
    if let Some(t) = cell.get() {
        return t;
    }
    let t = clock();
    cell.set(Some(t));
    t
}

impl Clock for Now {
    fn now(&self) -> u64 {
        once(&self.now, sys::now)
    }

    fn stamp(&self) -> u64 {
        once(&self.stamp, sys::ticks)
    }
}

impl Vcores {
    /// The slots of `config` (`cores`, `vcore_slice_us`, `vcore_escape_ms`, `vcore_claim`,
    /// `vcore_claim_defer`, `vcore_grace_us`); with `config.vcores` false the semaphore is off
    /// and every method returns at once.
    pub fn new(config: &Config, counters: Arc<Counters>) -> Self {
        let inner = config.vcores.then(|| {
            let scale = sys::tick_scale();
            let slice_ticks = scale.ticks_in(config.vcore_slice_us.saturating_mul(US));
            let escape_ns = config.vcore_escape_ms.saturating_mul(MS);
            let grace_ns = config.vcore_grace_us.saturating_mul(US);
            Inner {
                table: Mutex::new(Locked {
                    table: Table::new(config.cores, slice_ticks, escape_ns, grace_ns),
                    words: [None; MAX_CORES],
                    claims: Vec::new(),
                    lent: 0,
                }),
                flags: std::array::from_fn(|_| AtomicU8::new(Flag::Idle.as_u8())),
                free: AtomicU64::new((1 << config.cores) - 1),
                cells: Cells::new(),
                all: (1 << config.cores) - 1,
                slice_ticks,
                scale,
                escape_ns,
                claims: config.vcore_claim,
                defer: config.vcore_claim_defer,
                counters,
            }
        });
        if let Some(inner) = &inner {
            // A step that changes nothing ends by lending every slot: the first take is fast.
            inner.run(|_, _| ());
        }
        Vcores { inner }
    }

    /// Takes a core for `t`: a free allowed one at once (its ideal core first), else a ranked
    /// wait, spinning `spin` before it parks, that kicks the worst holder `t` outranks on its
    /// allowed cores. Returns the report of an escape, for the caller to log.
    ///
    /// # Blocking
    /// Until a core is granted, the runtime shuts down (returns without a core), or the
    /// escape time passes (runs without a core, counted and reported).
    ///
    /// # Caveats
    /// Call it on the thread `t` itself (it parks that thread), and only while `t` holds no
    /// core (a second acquire is a bug: a debug assertion, else ignored). A core granted at
    /// once right after a wait or a sleep is traced at the wait's or sleep's end, with no
    /// clock read of its own.
    #[inline]
    pub fn acquire(&self, t: &impl Occupant, spin: Spin) -> Option<Escape> {
        let inner = self.inner.as_ref()?;
        if t.seat().holds() {
            debug_assert!(false, "thread {} acquires a core it holds", t.id());
            return None;
        }
        if let Some(slot) = inner.take_fast(t) {
            trace::core_granted(slot as u64);
            // A slot a waker took for `t` (`claim.rs`), then taken from it after a kick's
            // grace before `t` ran: asked for again, as at a checkpoint.
            if kick::is_revoked(t.seat().kick_word()) {
                return inner.checkpoint_asked(t, spin);
            }
            return None;
        }
        inner.acquire_locked(t, spin)
    }

    /// Gives `t`'s core back (it blocks or ends): the core goes to the best waiter allowed on
    /// it. `true` if `t` held one (or ran by escape), `false` if it held nothing or the
    /// semaphore is off. Call it on the thread `t` itself.
    ///
    /// The trace records no event for it: the caller's wait, sleep or exit, recorded just
    /// before or after, says that the thread gave its core up (docs/design.md section 17).
    #[inline]
    pub fn release(&self, t: &impl Occupant) -> bool {
        let Some(inner) = &self.inner else {
            return false;
        };
        let seat = t.seat();
        if !seat.holds() {
            // An exit from an object wait that unwound: a claim made for it goes back.
            match seat.come_home() {
                Home::Free => {}
                Home::Granted(slot) => inner.give_back_granted(t, slot, false),
                Home::Claimed => inner.forget(t),
            }
            return false;
        }
        inner.give_fast(t, false) || inner.release_locked(t)
    }

    /// A checkpoint of `t` (svc entry, nn::os call, polled loop header): if a better waiter
    /// kicked it, its mask no longer allows its core, or its time slice is over and a waiter
    /// as good by priority asks for a turn, it gives the core up and waits again by rank
    /// (spinning `spin`). An escaped thread takes a free allowed core. A thread whose core a
    /// waiter took after the kick's grace takes a free allowed core or waits by its rank.
    /// Without any of these, a load or two and no lock (an event-clock read once a turn is
    /// asked).
    ///
    /// # Blocking
    /// Only when it gives its core up, as [`Vcores::acquire`].
    #[inline]
    pub fn checkpoint(&self, t: &impl Occupant, spin: Spin) -> Option<Escape> {
        let inner = self.inner.as_ref()?;
        if !t.seat().is_asked() {
            return None;
        }
        inner.checkpoint_asked(t, spin)
    }

    /// A yield of `t` on the virtual cores (sleep_thread 0, -1, -2; see [`YieldKind`]).
    /// `handed` is `true` if `t` handed its core over, or found it taken after a kick's grace
    /// (and waited for one again, spinning `spin`); `false` if it kept it (nobody to hand it
    /// to), held none, or the semaphore is off: the caller may then yield the OS thread
    /// instead.
    ///
    /// # Blocking
    /// When it hands its core over, until it has one again, as [`Vcores::acquire`].
    pub fn yield_core(&self, t: &impl Occupant, kind: YieldKind, spin: Spin) -> Yielded {
        let kept = Yielded {
            handed: false,
            escape: None,
        };
        let Some(inner) = &self.inner else {
            return kept;
        };
        let Some(s) = t.seat().slot() else {
            return kept;
        };
        // Relaxed: a hint (ground rules); the table decides under the lock.
        let flag = Flag::from_u8(inner.flags[s].load(Ordering::Relaxed));
        let nobody = match kind {
            YieldKind::Any => flag == Flag::Idle,
            YieldKind::SamePriority | YieldKind::Migrate => flag <= Flag::Waiter,
        };
        // A revoked thread's slot is another's: its flag says nothing about this thread.
        if nobody && !kick::is_revoked(t.seat().kick_word()) {
            return kept;
        }
        let now = Now::default();
        let id = t.id();
        let step = inner.run_for(t, |table, fx| table.yield_core(id, kind, &now, fx));
        Yielded {
            handed: step != Step::Kept,
            escape: inner.settle(t, step, &now, spin),
        }
    }

    /// Re-reads `t`'s priority, first flag (name), core mask and ideal core into the
    /// semaphore: call it after changing any of them. A waiter is re-ranked (and may kick); a
    /// holder may be kicked, or asked to leave a core its mask no longer allows.
    pub fn refresh(&self, t: &impl Occupant) {
        let Some(inner) = &self.inner else { return };
        let who = t.who();
        inner.run(|table, fx| table.refresh(who.id, who.traits, Now::default(), fx));
    }

    /// Slots held now (a gauge read under the lock, the lent ones from their cells; 0 when the
    /// semaphore is off): once no guest thread runs guest code, 0, or a core leaked.
    pub fn held(&self) -> usize {
        self.inner.as_ref().map_or(0, |inner| {
            let l = lock(&inner.table);
            let table_held = l.table.cores() - l.table.free_mask().count_ones() as usize;
            table_held + inner.cells.held(l.lent)
        })
    }

    #[cfg(all(test, not(loom)))]
    /// The slots lent to the fast path now, a bit each (`fast.rs`).
    pub(crate) fn lent(&self) -> u64 {
        self.inner
            .as_ref()
            .map_or(0, |inner| lock(&inner.table).lent)
    }

    /// Wakes every waiter (they return without a core); later acquires return at once.
    /// Holders keep their cores until they release them.
    pub fn shutdown(&self) {
        if let Some(inner) = &self.inner {
            inner.run(Table::shutdown);
        }
    }
}

/// Where the table says a thread is (for the wait tree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Holds `slot` since `since`.
    Holds { slot: usize, since: u64 },
    /// Runs beside the slots by escape.
    Escaped,
    /// Runs beside the slots until its next checkpoint: a waiter took its slot after the
    /// kick's grace.
    Revoked,
    /// Waits for a slot; `holders` hold the slots its mask allows.
    Queued { holders: Vec<u64> },
    /// None of these, or the semaphore is off.
    Nowhere,
}

impl Vcores {
    /// Where each of `threads` is, read at once under the lock (which takes the lent slots
    /// back first, `fast.rs`).
    pub(crate) fn view(&self, threads: &[Arc<impl Occupant>]) -> Vec<Place> {
        let Some(inner) = &self.inner else {
            return threads.iter().map(|_| Place::Nowhere).collect();
        };
        // The map as of now: the wait tree sets these times beside `now()` readings.
        let scale = sys::tick_scale();
        inner.locked(|l, _| Self::places(&l.table, threads, &scale))
    }

    /// Where each of `threads` is in `table`.
    fn places(table: &Table, threads: &[Arc<impl Occupant>], scale: &TickScale) -> Vec<Place> {
        let queued = table.queue();
        threads
            .iter()
            .map(|t| {
                let who = t.who();
                if let Some(slot) = table.slot_of(who.id) {
                    let since = table.holder(slot).map_or(0, |(_, s)| scale.ns(s));
                    Place::Holds { slot, since }
                } else if table.is_escaped(who.id) {
                    Place::Escaped
                } else if table.is_revoked(who.id) {
                    Place::Revoked
                } else if queued.contains(&who.id) {
                    let holders = (0..table.cores())
                        .filter(|s| who.traits.mask & (1 << s) != 0)
                        .filter_map(|s| table.holder(s).map(|(w, _)| w.id))
                        .collect();
                    Place::Queued { holders }
                } else {
                    Place::Nowhere
                }
            })
            .collect()
    }
}

/// What the semaphore's lock guards: the table, the kick word of each slot's holder, the
/// claims, and which slots are lent to the fast path.
#[derive(Debug)]
struct Locked {
    table: Table,
    /// # Invariant: `words[s]` is the kick-word line of the thread holding slot `s` once a step
    /// of that thread told it so ([`Locked::seat`]) or the slot was taken back from it
    /// (`fast.rs`), until it gives the slot up, the slot is taken from it
    /// ([`Locked::revoke`]) or lent with it; else `None` (a slot granted to a waiter that has
    /// not polled yet, a free slot, a lent slot).
    words: [Option<&'static Line>; MAX_CORES],
    /// Cores claimed by wakers for threads that have not taken them yet (`claim.rs`): the
    /// thread's id and the step the claim made (`Held` or `Queued`).
    /// # Invariant: one entry a thread, present exactly while its seat's `claimed` is set.
    claims: Vec<(u64, Step)>,
    /// The slots lent to the fast path, a bit each (`fast.rs`).
    lent: u64,
}

impl Locked {
    /// Records in the kick words where `step` left the thread whose word is `word` and which
    /// held slot `before` (as its seat says): a slot it left no longer names it (unless the
    /// slot was taken from it and names its next holder now); a slot it holds does, and its
    /// word says whether that slot's flag asks for a checkpoint; an escaped thread's word is
    /// set (its checkpoint looks for a free core), a waiting or cancelled thread's cleared.
    #[inline]
    fn seat(&mut self, line: &'static Line, before: Option<usize>, step: &Step) {
        if *step == Step::Kept {
            return;
        }
        let word = line.word();
        if let Some(b) = before {
            if self.words[b].is_some_and(|w| std::ptr::eq(w, line)) {
                self.words[b] = None;
            } else {
                debug_assert!(kick::is_revoked(word), "slot {b} names another thread");
            }
        }
        let on = match *step {
            Step::Held { slot, .. } => {
                self.words[slot] = Some(line);
                needs_check(self.table.flag(slot))
            }
            Step::Escaped => true,
            Step::Queued(_) | Step::Cancelled | Step::Kept => false,
        };
        kick::store(word, on);
    }

    /// Marks the kick word of each holder a step took its slot from ([`Effects::revoked`])
    /// revoked, and forgets it as the slot's word: before the slot's next holder's word is
    /// written, in the same locked operation. A holder that was never told it held the slot
    /// (a claim not taken yet; a granted waiter that has not polled) has no word there.
    fn revoke(&mut self, revoked: &[(usize, u64)]) {
        for &(s, _) in revoked {
            if let Some(line) = self.words[s].take() {
                kick::revoke(line.word());
            }
        }
    }
}

/// Whether a holder whose slot has `flag` must look at its checkpoint.
#[inline]
fn needs_check(flag: Flag) -> bool {
    flag >= Flag::Turn
}

/// How a yield on the virtual cores ended.
#[derive(Debug)]
#[must_use = "an escape report is the caller's to log"]
pub struct Yielded {
    /// Whether the core was handed to another thread (else the caller keeps it).
    pub handed: bool,
    /// The report of an escape while waiting for a core again.
    pub escape: Option<Escape>,
}

impl Inner {
    /// [`Vcores::acquire`] under the lock: the fast path found no lent free slot.
    #[inline(never)]
    fn acquire_locked(&self, t: &impl Occupant, spin: Spin) -> Option<Escape> {
        let now = Now::default();
        let step = self.acquire_for(t, &now);
        self.settle(t, step, &now, spin)
    }

    /// [`Vcores::release`] under the lock: `t`'s slot is not lent to it.
    #[inline(never)]
    fn release_locked(&self, t: &impl Occupant) -> bool {
        let held = self.release_for(t, false);
        debug_assert!(
            held,
            "thread {} released a core the table never gave",
            t.id()
        );
        held
    }

    /// [`Vcores::checkpoint`] once `t`'s kick word is set: off the inlined fast path.
    #[inline(never)]
    fn checkpoint_asked(&self, t: &impl Occupant, spin: Spin) -> Option<Escape> {
        if !self.must_check(t) {
            return None;
        }
        let now = Now::default();
        let id = t.id();
        let step = self.run_for(t, |table, fx| table.checkpoint(id, &now, fx));
        self.settle(t, step, &now, spin)
    }

    /// Runs one table operation under the lock.
    fn run<R>(&self, op: impl FnOnce(&mut Table, &mut Effects) -> R) -> R {
        self.locked(|l, fx| op(&mut l.table, fx))
    }

    /// Runs one table operation of the calling thread `t` under the lock, and records in the
    /// kick words where the step it returns leaves `t`.
    fn run_for(
        &self,
        t: &impl Occupant,
        op: impl FnOnce(&mut Table, &mut Effects) -> Step,
    ) -> Step {
        let (line, before) = (t.seat().line(), t.seat().slot());
        self.locked(|l, fx| {
            let step = op(&mut l.table, fx);
            l.seat(line, before, &step);
            step
        })
    }

    /// Runs `op` under the lock between taking the lent slots back and lending them again
    /// (`fast.rs`), mirrors the flags (and the kick words of the slots whose flag changed)
    /// before unlocking, then counts and wakes.
    fn locked<R>(&self, op: impl FnOnce(&mut Locked, &mut Effects) -> R) -> R {
        chaos::point();
        let mut fx = Effects::default();
        let r = {
            let mut l = lock(&self.table);
            l.take_back(&self.cells);
            let r = op(&mut l, &mut fx);
            if fx.kicked != 0 || !fx.revoked.is_empty() {
                trace_kicks(&l.table, fx.kicked, &fx.revoked);
            }
            for s in bits(u64::from(fx.dirty)) {
                let flag = l.table.flag(s);
                // Relaxed: written under the lock, read as a hint (ground rules).
                self.flags[s].store(flag.as_u8(), Ordering::Relaxed);
                if let Some(line) = l.words[s] {
                    kick::store(line.word(), needs_check(flag));
                }
            }
            // Relaxed: as the flags.
            self.free.store(l.table.free_mask(), Ordering::Relaxed);
            l.lend(&self.cells);
            r
        };
        if fx.counts() {
            self.count(&fx);
        }
        if !fx.wake.is_empty() {
            chaos::point();
            for w in fx.wake {
                w.wake();
            }
        }
        r
    }

    /// Adds what an operation counted ([`Effects::counts`]) to the semaphore's counters.
    fn count(&self, fx: &Effects) {
        let c = self.counters.here();
        let add = |counter: &AtomicU64, n: u32| {
            if n > 0 {
                // Relaxed: independent counters (stats module invariant).
                counter.fetch_add(u64::from(n), Ordering::Relaxed);
            }
        };
        add(&c.vcore_waits, fx.waits);
        add(&c.vcore_escapes, fx.escapes);
        add(&c.vcore_revokes, fx.revoked.len() as u32);
        for (counter, n) in c.vcore_kicks.iter().zip(fx.kicks) {
            add(counter, n);
        }
    }

    /// Whether `t`'s checkpoint must take the lock (ground rules: flags are hints).
    fn must_check(&self, t: &impl Occupant) -> bool {
        let seat = t.seat();
        if kick::is_revoked(seat.kick_word()) {
            // Its slot is another's now (the seat's slot is stale): the lock says where it is.
            return true;
        }
        if seat.is_escaped() {
            // Relaxed: a hint (ground rules).
            return self.free.load(Ordering::Relaxed) & t.who().traits.mask != 0;
        }
        let Some(s) = seat.slot() else {
            return false;
        };
        // Relaxed: a hint (ground rules).
        match Flag::from_u8(self.flags[s].load(Ordering::Relaxed)) {
            Flag::Idle | Flag::Waiter => false,
            // A stamp not known here yet (the flag was read before it): the lock says.
            // The card's stamp: the thread's own step wrote it, or a lend the same value.
            Flag::Turn => sys::ticks().saturating_sub(seat.card().since()) >= self.slice_ticks,
            Flag::Kick => true,
        }
    }

    /// Finishes a step of `t` begun at `now`: waits out a queued step (spinning `spin`
    /// first), then records the result in the seat and the wait in `t`'s counter. Returns the
    /// report of an escape.
    fn settle(&self, t: &impl Occupant, step: Step, now: &Now, spin: Spin) -> Option<Escape> {
        let (step, escape) = match step {
            Step::Queued(key) => self.wait_out(t, key, now, spin),
            step => (step, None),
        };
        trace_step(step);
        t.seat().settle(step);
        escape
    }
}

/// Records where a step left the thread (nothing for `Kept`: where it was): the one place
/// that traces a thread's core, but for a lent slot's take ([`Vcores::acquire`]). A core granted right after a wait or a sleep (an acquire at
/// once, or the end of a wait for a core) is stamped with that wait's or sleep's end, with
/// no clock read of its own.
fn trace_step(step: Step) {
    match step {
        Step::Held { slot, .. } => trace::core_granted(slot as u64),
        Step::Escaped => trace::core(trace::ESCAPED),
        Step::Cancelled => trace::core(trace::NO_CORE),
        Step::Kept | Step::Queued(_) => {}
    }
}

/// Records a kick of each slot in `kicked` (a bit per slot) with its holder, and each slot
/// taken after a kick's grace with the holder it was taken from.
/// Most steps kick nothing: the caller looks first.
fn trace_kicks(table: &Table, kicked: u8, revoked: &[(usize, u64)]) {
    for &(s, id) in revoked {
        trace::revoke(s, id);
    }
    for s in bits(u64::from(kicked)) {
        trace::kick(s, table.holder(s).map_or(0, |(w, _)| w.id));
    }
}
