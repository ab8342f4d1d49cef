//! The virtual-core semaphore: N slots (HOS_CORES, 1..=8), and a guest thread runs guest code
//! only while it holds one (SPEC.md section 5, DESIGN.md "Virtual cores").
//!
//! # Invariant
//!
//! A slot is never held by two threads and never leaks: a thread that ends, panics or blocks
//! gives its slot back (the `hos` crate's `CoreGuard`, `block_on` and the sleep paths call
//! [`Vcores::release`]); a wait that is dropped half-way gives back a slot granted to it.
//! The one exception is documented, counted and logged: a waiter that waited past
//! HOS_VCORE_ESCAPE_MS runs anyway, beside the slots and holding none of them, so for a while
//! more than N threads run guest code. It takes a slot at a later checkpoint if one is free.
//!
//! # Ground rules
//!
//! - Every decision is made by the pure state machine [`table::Table`] under one `Mutex`
//!   (`Inner::table`): slots, the queue of waiters, kicks, turns, escapes. N is at most 8 and
//!   the waiters are OS threads (tens, at most hundreds), so one lock and O(N * W) scans are
//!   cheap next to a park; no lock-free structure is worth its proof here.
//! - `Inner::flags[s]` mirrors `Table::flag(s)` and `Inner::free` the free-slot mask. Both are
//!   written only under the table lock, and read without it by the holder of slot `s` (or an
//!   escaped thread) at its checkpoint: a hint that says whether to take the lock, never a
//!   decision. Relaxed: the lock orders what the decision reads.
//! - A thread's [`Seat`] is written and read only by that thread (acquire, release, checkpoint
//!   and yield run on the thread they are for), after the table told it where it stands.
//! - Wakers are collected under the lock ([`step::Effects`]) and woken after it is dropped.
//! - A waiter waits through [`crate::park::block_on_until`]: the vcore wait's spin, then a park
//!   on its own parker that also ends at its escape time, so it escapes even if nobody
//!   releases a slot.
//!
//! | file | what |
//! | --- | --- |
//! | [`rank`] | who outranks whom: priority, the first flag, turns |
//! | [`step`] | what the table is told and tells back |
//! | [`table`] | the slots and the queue as a pure state machine with an injected clock |
//! | `mod.rs` | [`Vcores`]: the lock, the waits, the checkpoint's fast path, stats, the escape log |
//!
//! Costs (`cargo bench --bench vcore`, figures in the bench's doc): an uncontended acquire and
//! release take the lock once each and read the clock once (the slot's stamp for the time
//! slice), 53 ns the pair on the 2-core VM, under the 100 ns target; so there is no atomic
//! fast path, which would have to publish holders for kicks outside the lock. A checkpoint or
//! a yield that nobody asks anything of is one load of its slot's flag (2 ns). A hand-off to a
//! parked waiter costs what a futex hand-off after the same spin costs, plus under a
//! microsecond.

pub mod rank;
pub mod step;
pub mod table;

pub use step::YieldKind;

use crate::config::Config;
use crate::context;
use crate::park::{block_on_until, Wait};
use crate::stats::Counters;
use crate::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use crate::sync::{lock, Arc, Mutex};
use crate::sys;
use crate::thread::ThreadRecord;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use step::{Clock, Effects, Flag, Step, Traits, WaitId, Who, MAX_CORES};
use table::Table;

/// `Seat::at` when the thread holds no slot.
const NO_SLOT: u8 = u8::MAX;
/// `Seat::at` when the thread runs past the slots by escape.
const ESCAPED: u8 = u8::MAX - 1;

/// A thread's virtual-core state: the slot it holds and since when, for its own checkpoints.
///
/// # Invariant
/// Only the thread itself reads or writes it (module ground rules), so every access is
/// Relaxed; the table under its lock is the truth, the seat the thread's copy of its part.
#[derive(Debug)]
pub struct Seat {
    /// The slot, [`NO_SLOT`] or [`ESCAPED`].
    at: AtomicU8,
    /// When the slot was acquired (`sys::now()`), for the time slice.
    since: AtomicU64,
}

impl Default for Seat {
    fn default() -> Self {
        Seat {
            at: AtomicU8::new(NO_SLOT),
            since: AtomicU64::new(0),
        }
    }
}

impl Seat {
    /// The slot the thread holds.
    pub fn slot(&self) -> Option<usize> {
        // Relaxed: only the owning thread touches the seat (type invariant).
        match self.at.load(Ordering::Relaxed) {
            NO_SLOT | ESCAPED => None,
            s => Some(usize::from(s)),
        }
    }

    /// Whether the thread runs past the slots by escape.
    pub fn is_escaped(&self) -> bool {
        // Relaxed: only the owning thread touches the seat (type invariant).
        self.at.load(Ordering::Relaxed) == ESCAPED
    }

    /// Whether the thread holds a slot or runs by escape: what a release gives back.
    pub fn holds(&self) -> bool {
        // Relaxed: only the owning thread touches the seat (type invariant).
        self.at.load(Ordering::Relaxed) != NO_SLOT
    }

    /// Records where a finished step left the thread.
    fn settle(&self, step: Step) {
        // Relaxed: only the owning thread touches the seat (type invariant).
        match step {
            Step::Held { slot, since } => {
                self.since.store(since, Ordering::Relaxed);
                self.at.store(slot as u8, Ordering::Relaxed);
            }
            Step::Escaped => self.at.store(ESCAPED, Ordering::Relaxed),
            Step::Cancelled => self.at.store(NO_SLOT, Ordering::Relaxed),
            Step::Kept => {}
            Step::Queued(k) => unreachable!("a seat settles after the wait {k:?} ends"),
        }
    }
}

/// The virtual-core semaphore of one runtime.
///
/// ```
/// use hos_runtime::{Calibration, Config, Runtime};
/// use hos_runtime::thread::ThreadSpec;
///
/// let config = Config { cores: 1, calibration: Some(Calibration::default()), ..Config::default() };
/// let rt = Runtime::builder().config(config).build().unwrap();
/// let spec = ThreadSpec { name: "Worker".into(), priority: 44, core_mask: 1, ideal_core: 0 };
/// let t = rt.register_thread(&spec);
/// rt.vcores().acquire(&t);               // takes the free slot at once
/// assert_eq!(t.vcore.slot(), Some(0));
/// rt.vcores().checkpoint(&t);            // nobody waits: keeps it
/// assert!(rt.vcores().release(&t));      // gives it back
/// assert!(!rt.vcores().release(&t));     // held nothing
/// rt.shutdown();
/// ```
#[derive(Debug)]
pub struct Vcores {
    /// `None` when the semaphore is off (HOS_VCORES=0).
    inner: Option<Inner>,
}

#[derive(Debug)]
struct Inner {
    table: Mutex<Table>,
    /// # Invariant: `flags[s]` is `table.flag(s)` whenever the lock is free (ground rules).
    flags: [AtomicU8; MAX_CORES],
    /// # Invariant: the table's free-slot mask whenever the lock is free (ground rules).
    free: AtomicU64,
    slice_ns: u64,
    escape_ns: u64,
    stats: Arc<Counters>,
}

/// The table's view of a thread's record now.
fn traits(t: &ThreadRecord) -> Traits {
    Traits {
        priority: t.priority(),
        first: t.is_first(),
        mask: t.core_mask(),
        ideal: usize::try_from(t.ideal_core())
            .ok()
            .filter(|&c| c < MAX_CORES),
    }
}

/// `sys::now()` read at most once, at first use: an operation that needs no time reads no
/// clock (an uncontended release), and one that needs it twice sees one instant.
#[derive(Default)]
struct Now(Cell<Option<u64>>);

impl Clock for Now {
    fn now(&self) -> u64 {
        if let Some(t) = self.0.get() {
            return t;
        }
        let t = sys::now();
        self.0.set(Some(t));
        t
    }
}

/// The vcore wait's policy. Under loom the spin is off: its length is wall-clock time, which
/// a model cannot replay.
fn wait_kind() -> Wait<'static> {
    Wait {
        spin: !cfg!(loom),
        ..Wait::vcore()
    }
}

impl Vcores {
    /// The slots of `config` (`cores`, `vcore_slice_us`, `vcore_escape_ms`); with
    /// `config.vcores` false the semaphore is off and every method returns at once.
    pub fn new(config: &Config, stats: Arc<Counters>) -> Self {
        let inner = config.vcores.then(|| {
            let slice_ns = config.vcore_slice_us.saturating_mul(1_000);
            let escape_ns = config.vcore_escape_ms.saturating_mul(1_000_000);
            Inner {
                table: Mutex::new(Table::new(config.cores, slice_ns, escape_ns)),
                flags: std::array::from_fn(|_| AtomicU8::new(Flag::Idle.as_u8())),
                free: AtomicU64::new((1 << config.cores) - 1),
                slice_ns,
                escape_ns,
                stats,
            }
        });
        Vcores { inner }
    }

    /// Takes a core for `t`: a free allowed one at once (its ideal core first), else a ranked
    /// wait that kicks the worst holder `t` outranks on its allowed cores.
    ///
    /// # Blocking
    /// Until a core is granted, the runtime shuts down (returns without a core), or the
    /// escape time passes (runs without a core, logged and counted).
    ///
    /// # Caveats
    /// Call it on the thread `t` itself (it parks that thread), and only while `t` holds no
    /// core (a second acquire is a bug: a debug assertion, else ignored).
    pub fn acquire(&self, t: &Arc<ThreadRecord>) {
        let Some(inner) = &self.inner else { return };
        if t.vcore.holds() {
            debug_assert!(false, "thread {} acquires a core it holds", t.id());
            return;
        }
        let now = Now::default();
        let step = inner.run(|table, fx| {
            let who = Who {
                id: t.id(),
                traits: traits(t),
            };
            table.acquire(who, &now, fx)
        });
        inner.settle(t, step, &now);
    }

    /// Gives `t`'s core back (it blocks or ends): the core goes to the best waiter allowed on
    /// it. `true` if `t` held one (or ran by escape), `false` if it held nothing or the
    /// semaphore is off. Call it on the thread `t` itself.
    pub fn release(&self, t: &ThreadRecord) -> bool {
        let Some(inner) = &self.inner else {
            return false;
        };
        if !t.vcore.holds() {
            return false;
        }
        let held = inner.run(|table, fx| table.release(t.id(), Now::default(), fx));
        debug_assert!(
            held,
            "thread {} released a core the table never gave",
            t.id()
        );
        t.vcore.settle(Step::Cancelled);
        held
    }

    /// A checkpoint of `t` (svc entry, nn::os call, polled loop header): if a better waiter
    /// kicked it, its mask no longer allows its core, or its time slice is over and a waiter
    /// as good by priority asks for a turn, it gives the core up and waits again by rank. An
    /// escaped thread takes a free allowed core. Without any of these, a load or two and no
    /// lock (a clock read once a turn is asked).
    ///
    /// # Blocking
    /// Only when it gives its core up, as [`Vcores::acquire`].
    pub fn checkpoint(&self, t: &Arc<ThreadRecord>) {
        let Some(inner) = &self.inner else { return };
        if !inner.must_check(t) {
            return;
        }
        let now = Now::default();
        let step = inner.run(|table, fx| table.checkpoint(t.id(), &now, fx));
        inner.settle(t, step, &now);
    }

    /// A yield of `t` on the virtual cores (sleep_thread 0, -1, -2; see [`YieldKind`]).
    /// Returns `true` if `t` handed its core over (and waited for one again); `false` if it
    /// kept it (nobody to hand it to), held none, or the semaphore is off: the caller may then
    /// yield the OS thread instead.
    ///
    /// # Blocking
    /// When it hands its core over, until it has one again, as [`Vcores::acquire`].
    pub fn yield_core(&self, t: &Arc<ThreadRecord>, kind: YieldKind) -> bool {
        let Some(inner) = &self.inner else {
            return false;
        };
        let Some(s) = t.vcore.slot() else {
            return false;
        };
        // Relaxed: a hint (ground rules); the table decides under the lock.
        let flag = Flag::from_u8(inner.flags[s].load(Ordering::Relaxed));
        let nobody = match kind {
            YieldKind::Any => flag == Flag::Idle,
            YieldKind::SamePriority | YieldKind::Migrate => flag <= Flag::Waiter,
        };
        if nobody {
            return false;
        }
        let now = Now::default();
        let step = inner.run(|table, fx| table.yield_core(t.id(), kind, &now, fx));
        let handed = step != Step::Kept;
        inner.settle(t, step, &now);
        handed
    }

    /// Re-reads `t`'s priority, first flag (name), core mask and ideal core into the
    /// semaphore: call it after changing any of them. A waiter is re-ranked (and may kick); a
    /// holder may be kicked, or asked to leave a core its mask no longer allows.
    pub fn refresh(&self, t: &ThreadRecord) {
        let Some(inner) = &self.inner else { return };
        inner.run(|table, fx| table.refresh(t.id(), traits(t), Now::default(), fx));
    }

    /// Sets `t`'s Horizon priority (validated by the caller) and re-ranks it.
    pub fn set_priority(&self, t: &ThreadRecord, priority: u8) {
        t.set_priority(priority);
        self.refresh(t);
    }

    /// Sets `t`'s ideal core and core mask (validated by the caller) and re-places it.
    pub fn set_affinity(&self, t: &ThreadRecord, ideal_core: i32, core_mask: u64) {
        t.set_affinity(ideal_core, core_mask);
        self.refresh(t);
    }

    /// Wakes every waiter (they return without a core); later acquires return at once.
    /// Holders keep their cores until they release them.
    pub fn shutdown(&self) {
        if let Some(inner) = &self.inner {
            inner.run(|table, fx| table.shutdown(fx));
        }
    }
}

impl Inner {
    /// Runs one table operation under the lock, mirrors the flags before unlocking, then
    /// counts and wakes.
    fn run<R>(&self, op: impl FnOnce(&mut Table, &mut Effects) -> R) -> R {
        let mut fx = Effects::default();
        let r = {
            let mut table = lock(&self.table);
            let r = op(&mut table, &mut fx);
            for s in (0..table.cores()).filter(|s| fx.dirty & (1 << s) != 0) {
                // Relaxed: written under the lock, read as a hint (ground rules).
                self.flags[s].store(table.flag(s).as_u8(), Ordering::Relaxed);
            }
            // Relaxed: as the flags.
            self.free.store(table.free_mask(), Ordering::Relaxed);
            r
        };
        // Relaxed: independent counters (stats.rs invariant).
        let add = |c: &AtomicU64, n: u32| {
            if n > 0 {
                c.fetch_add(u64::from(n), Ordering::Relaxed);
            }
        };
        add(&self.stats.vcore_waits, fx.waits);
        add(&self.stats.vcore_escapes, fx.escapes);
        for (c, n) in self.stats.vcore_kicks.iter().zip(fx.kicks) {
            add(c, n);
        }
        for w in fx.wake {
            w.wake();
        }
        r
    }

    /// Whether `t`'s checkpoint must take the lock (ground rules: flags are hints).
    fn must_check(&self, t: &ThreadRecord) -> bool {
        if t.vcore.is_escaped() {
            // Relaxed: a hint (ground rules).
            return self.free.load(Ordering::Relaxed) & t.core_mask() != 0;
        }
        let Some(s) = t.vcore.slot() else {
            return false;
        };
        // Relaxed: a hint (ground rules).
        match Flag::from_u8(self.flags[s].load(Ordering::Relaxed)) {
            Flag::Idle | Flag::Waiter => false,
            Flag::Turn => {
                // Relaxed: the seat is the thread's own (Seat invariant).
                let since = t.vcore.since.load(Ordering::Relaxed);
                sys::now().saturating_sub(since) >= self.slice_ns
            }
            Flag::Kick => true,
        }
    }

    /// Finishes a step of `t` begun at `now`: waits out a queued step, then records the result
    /// in the seat and the wait in `t`'s counter.
    fn settle(&self, t: &ThreadRecord, step: Step, now: &Now) {
        let step = match step {
            Step::Queued(key) => {
                // The instant the table stamped the wait with (the clock reads once).
                let now = now.now();
                let wait = Waiting {
                    inner: self,
                    thread: t,
                    key: Some(key),
                };
                let deadline = now.saturating_add(self.escape_ns);
                let step = block_on_until(wait, wait_kind(), Some(deadline));
                // Relaxed: a counter read for stats only.
                t.vcore_wait_ns
                    .fetch_add(sys::now().saturating_sub(now), Ordering::Relaxed);
                step
            }
            step => step,
        };
        t.vcore.settle(step);
    }
}

/// One queued wait as a future: ready when the table grants a slot, cancels, or the escape
/// time passes. Dropping it before then gives up the wait (and a slot granted meanwhile).
struct Waiting<'a> {
    inner: &'a Inner,
    thread: &'a ThreadRecord,
    /// `None` once the wait ended.
    key: Option<WaitId>,
}

impl Future for Waiting<'_> {
    type Output = Step;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Step> {
        let key = self.key.expect("a vcore wait polled after it ended");
        let now = Now::default();
        let mut held = None;
        let step = self.inner.run(|table, fx| {
            let step = table.poll_wait(key, &now, cx.waker(), fx);
            if step == Some(Step::Escaped) {
                held = Some(Held::each(table, now.now()));
            }
            step
        });
        if let Some(held) = held {
            let holders = self.inner.describe(&held);
            tracing::warn!(
                thread = %self.thread.name(),
                priority = self.thread.priority(),
                escape_ms = self.inner.escape_ns / 1_000_000,
                holders = %holders,
                "waited past HOS_VCORE_ESCAPE_MS for a virtual core: runs without one, so more \
                 threads than cores run guest code until it blocks",
            );
        }
        match step {
            None => Poll::Pending,
            Some(step) => {
                self.key = None;
                Poll::Ready(step)
            }
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.inner
                .run(|table, fx| table.abandon(key, Now::default(), fx));
        }
    }
}

/// A core's holder when a waiter escaped, read under the lock for the log.
struct Held {
    id: u64,
    priority: u8,
    held_ns: u64,
}

impl Held {
    /// Each slot's holder, in slot order.
    fn each(table: &Table, now: u64) -> Vec<Option<Held>> {
        (0..table.cores())
            .map(|s| {
                let (who, since) = table.holder(s)?;
                Some(Held {
                    id: who.id,
                    priority: who.traits.priority,
                    held_ns: now.saturating_sub(since),
                })
            })
            .collect()
    }
}

impl Inner {
    /// The escape log's list of each core's holder in order: `0: name (priority 44, held
    /// 2.003 s)`. The table keeps ids only; names come from the calling thread's runtime when
    /// these are its virtual cores, else a holder is `thread <id>`. Called without the table
    /// lock (the runtime's thread list has its own).
    fn describe(&self, held: &[Option<Held>]) -> String {
        let threads = context::runtime()
            .filter(|rt| {
                rt.vcores()
                    .inner
                    .as_ref()
                    .is_some_and(|i| std::ptr::eq(i, self))
            })
            .map(|rt| rt.threads())
            .unwrap_or_default();
        let name = |id: u64| match threads.iter().find(|t| t.id() == id) {
            Some(t) => t.name().to_string(),
            None => format!("thread {id}"),
        };
        held.iter()
            .enumerate()
            .map(|(s, h)| match h {
                Some(h) => format!(
                    "{s}: {} (priority {}, held {:.3} s)",
                    name(h.id),
                    h.priority,
                    h.held_ns as f64 / 1e9
                ),
                None => format!("{s}: free"),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}
