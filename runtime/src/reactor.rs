//! The reactor thread: owns every deadline, sleeps on the OS timer, spins the last stretch,
//! wakes exactly the due waiters.
//!
//! Ground rules:
//! - Only the reactor thread touches the wheels. Other threads reach it through a lock-free
//!   queue of operations (add, cancel) and, when a new deadline is earlier than the one it
//!   sleeps to, a nudge (a futex word whose generation changes).
//! - A [`Timer`] is shared between its waiter and the reactor. Its state moves once from
//!   WAITING to FIRED (reactor) or to CANCELLED (waiter's drop); whoever moves it owns the end.
//! - Wakers are collected while the reactor holds its state and woken after, in a batch.
//! - Stop watchers (waits of host threads that shutdown must end) sit in a slab under one
//!   lock; none is added once `stop` is set, and `shutdown` wakes them all after the lock. A
//!   thread may keep its watch between waits ([`Reactor::watch_stop_kept`]): it is taken out
//!   when the thread ends, or by that wake.
//! - Every timer registered fires: one registered after `stop` fires where it is made, and
//!   one that raced the stop is either drained by the reactor's stopping pass or fired by its
//!   own re-check of `stop` after the push (`Timer::register_as`).
//!
//! Two wheels: precise deadlines (the reactor waits to the earliest minus its wait's measured
//! lateness, on `sys::wait_precise`, a timer that a nudge also ends, then spins to it exactly) and relaxed ones (the OS timer alone, no spin). No
//! deadline fires early: the wheel never returns an entry before its tick, and ticks are the
//! clock's own nanoseconds.

use crate::build_error::BuildError;
use crate::calibration::{measure, Tracker};
use crate::parker::is_own_waker;
use crate::spawn::Spawn;
use crate::stats::Counters;
use crate::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use crate::sync::{lock, Mutex};
use crate::sys;
use crate::wheel::{Wheel, WheelKey};
use atomic_waker::AtomicWaker;
use crossbeam_queue::SegQueue;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Queued operations that make the reactor drain its queue even when no deadline is due.
const DRAIN_EVERY: usize = 64;

const WAITING: u8 = 0;
const FIRED: u8 = 1;
const CANCELLED: u8 = 2;

/// Whether a deadline is served precisely (reactor spin) or relaxed (OS timer alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadlineClass {
    /// Sleep to the deadline minus the timer's lateness, spin to it, wake.
    Precise,
    /// Sleep to the deadline on the OS timer, wake; no spin.
    Relaxed,
}

#[derive(Debug)]
struct TimerShared {
    deadline: u64,
    class: DeadlineClass,
    state: AtomicU8,
    waker: AtomicWaker,
    /// When the reactor fired it (`sys::now()`), for wake-latency tracking.
    fired_at: AtomicU64,
    /// The wheel key. # Invariant: only the reactor thread locks it.
    key: Mutex<Option<WheelKey>>,
}

enum Op {
    Add(Arc<TimerShared>),
    Cancel(Arc<TimerShared>),
}

#[derive(Debug)]
struct Shared {
    ops: SegQueue<OpBox>,
    /// The time the reactor sleeps to (`u64::MAX`: no deadline, `0`: awake).
    armed: AtomicU64,
    /// Bumped to wake the reactor early.
    nudge: AtomicU32,
    stop: AtomicBool,
    /// Gauge: entries in the wheels after the reactor's last pass.
    pending: AtomicU64,
    /// Wakers to wake when the reactor stops. # Invariant: none is added after `stop` is set
    /// (checked under this lock, which `shutdown` takes after setting it).
    stop_watch: Mutex<slab::Slab<Waker>>,
    tracker: Arc<Tracker>,
    counters: Arc<Counters>,
}

/// `Op` behind a debug-printable wrapper.
struct OpBox(Op);

impl std::fmt::Debug for OpBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Op::Add(_) => "Add",
            Op::Cancel(_) => "Cancel",
        })
    }
}

impl Shared {
    /// Queues `op`; nudges the reactor if `deadline` is no later than the time it sleeps to,
    /// or if the queue has grown by another [`DRAIN_EVERY`] ops (so cancels of long waits
    /// cannot pile up while the reactor sleeps for hours).
    fn push(&self, op: Op, deadline: Option<u64>) {
        self.ops.push(OpBox(op));
        // SeqCst fence: pairs with the reactor's fence between storing `armed` and checking
        // the queue, so either it sees this op or we see the deadline it sleeps to.
        fence(Ordering::SeqCst);
        let due = deadline.is_some_and(|d| d <= self.armed.load(Ordering::Relaxed));
        if due || self.ops.len() % DRAIN_EVERY == 0 {
            self.wake();
        }
    }

    fn wake(&self) {
        // Release: orders the queued op before the generation the reactor re-reads.
        self.nudge.fetch_add(1, Ordering::Release);
        sys::futex_wake(&self.nudge);
    }
}

/// The handle threads use to reach the reactor; dropping the last one does not stop it
/// (call [`Reactor::shutdown`]).
#[derive(Debug)]
pub struct Reactor {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    clock: sys::ThreadClock,
}

impl Reactor {
    /// Starts the reactor thread (through `spawn`). With `calibrate`, it first measures the
    /// machine (a few tens of ms) and stores the result in `tracker` before it serves any
    /// deadline.
    ///
    /// # Errors
    /// [`BuildError::Thread`] if the OS refuses the thread; [`BuildError::Calibration`] if the
    /// measurement fails (the thread is joined first: nothing is left running).
    pub(crate) fn start(
        tracker: Arc<Tracker>,
        counters: Arc<Counters>,
        calibrate: bool,
        spawn: Spawn,
    ) -> Result<Self, BuildError> {
        let shared = Arc::new(Shared {
            ops: SegQueue::new(),
            armed: AtomicU64::new(0),
            nudge: AtomicU32::new(0),
            stop: AtomicBool::new(false),
            pending: AtomicU64::new(0),
            stop_watch: Mutex::new(slab::Slab::new()),
            tracker,
            counters,
        });
        let s = shared.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = spawn(
            "hos-reactor",
            Box::new(move || {
                sys::set_timer_slack_ns(1);
                if calibrate {
                    match measure(spawn) {
                        Ok(c) => s.tracker.reset(c),
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    }
                }
                let _ = ready_tx.send(Ok(sys::ThreadClock::current()));
                run(&s);
            }),
        )
        .map_err(|error| BuildError::Thread {
            name: "hos-reactor",
            error,
        })?;
        let ready = ready_rx.recv().unwrap_or_else(|_| {
            Err(BuildError::Calibration(
                "the reactor thread panicked while it measured".into(),
            ))
        });
        match ready {
            Ok(clock) => Ok(Reactor {
                shared,
                thread: Mutex::new(Some(thread)),
                clock,
            }),
            Err(e) => {
                let _ = thread.join();
                Err(e)
            }
        }
    }

    /// A timer that completes at `deadline` (a `sys::now()` value), served as `class`.
    pub fn timer(&self, deadline: u64, class: DeadlineClass) -> Timer {
        Timer {
            shared: Arc::new(TimerShared {
                deadline,
                class,
                state: AtomicU8::new(WAITING),
                waker: AtomicWaker::new(),
                fired_at: AtomicU64::new(0),
                key: Mutex::new(None),
            }),
            reactor: self.shared.clone(),
            registered: false,
        }
    }

    /// Stops the reactor: every pending timer fires, later ones complete at once.
    pub fn shutdown(&self) {
        // SeqCst: in the single order with a registration's re-check and the reactor's
        // stopping pass (`Timer::register_as`); it releases everything before it too.
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        let watchers: Vec<Waker> = {
            let mut w = lock(&self.shared.stop_watch);
            w.drain().collect()
        };
        for w in watchers {
            w.wake();
        }
        let t = lock(&self.thread).take();
        // Never on the reactor thread itself (a runtime whose last handle a waker it drops
        // held ends there): that thread returns once it sees `stop`; joining it would fail.
        if let Some(t) = t.filter(|t| t.thread().id() != std::thread::current().id()) {
            let _ = t.join();
        }
    }

    /// A weak handle on the reactor's shared state: it upgrades while the reactor thread
    /// runs or any timer or handle holds it (tests use it to see the thread end; none is a
    /// loom model).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn shared_weak(&self) -> std::sync::Weak<impl Sized> {
        Arc::downgrade(&self.shared)
    }

    /// The reactor thread's CPU time (it spins the last stretch of precise deadlines).
    pub fn cpu(&self) -> sys::CpuTime {
        self.clock.read()
    }

    /// Deadlines in the wheels after the reactor's last pass (a gauge: cancelled and fired
    /// timers leave it; it reads 0 once every waiter is gone and the reactor has run).
    pub fn pending(&self) -> u64 {
        self.shared.pending.load(Ordering::Relaxed)
    }

    /// Whether the reactor was stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire)
    }

    /// Arranges for `waker` to be woken when the reactor stops (a wait that shutdown must end,
    /// on a thread that no guest record unparks). `key` holds the registration: `None` makes
    /// one, `Some` refreshes its waker. Returns `false`, registering nothing, once stopped.
    /// Undo with [`Reactor::unwatch_stop`].
    pub fn watch_stop(&self, key: &mut Option<usize>, waker: &Waker) -> bool {
        let mut w = lock(&self.shared.stop_watch);
        // Acquire under the lock: `shutdown` sets `stop` before it drains, so either it
        // drains this entry or we see `stop` here.
        if self.shared.stop.load(Ordering::Acquire) {
            return false;
        }
        match key.and_then(|k| w.get_mut(k)) {
            Some(old) if old.will_wake(waker) => {}
            Some(old) => old.clone_from(waker),
            None => *key = Some(w.insert(waker.clone())),
        }
        true
    }

    /// As [`Reactor::watch_stop`] for every wait of the calling thread whose `waker` is its
    /// own parker's (every blocking wait): registered at the first and kept until the thread
    /// ends (or the reactor stops), so that a host thread's wait takes no lock for it. `None`
    /// for any other waker (a task's), or where the thread's locals are being torn down: the
    /// caller registers for the one wait instead.
    ///
    /// Why a kept watch needs no lock: it was registered while `stop` was clear, so the
    /// shutdown that sets `stop` wakes it later; that wake gives the thread's parker a token,
    /// and the thread reads `stop` after it takes the token (or here before, seeing it clear,
    /// and parks on the token). That holds for every wait that parks on that parker, and for
    /// no other: a task's waits, each with its own waker, register one each.
    pub fn watch_stop_kept(&self, waker: &Waker) -> Option<bool> {
        // Acquire: as in `watch_stop`, and after a token the stop's wake gave.
        if self.shared.stop.load(Ordering::Acquire) {
            return Some(false);
        }
        if !is_own_waker(waker) {
            return None;
        }
        KEPT.try_with(|kept| {
            let mut kept = kept.borrow_mut();
            let mine = Arc::as_ptr(&self.shared);
            if kept.iter().any(|k| std::ptr::eq(k.reactor.as_ptr(), mine)) {
                return true;
            }
            kept.retain(|k| k.reactor.strong_count() > 0);
            let mut key = None;
            let on = self.watch_stop(&mut key, waker);
            if let Some(key) = key {
                kept.push(Kept {
                    reactor: Arc::downgrade(&self.shared),
                    key,
                });
            }
            on
        })
        .ok()
    }

    /// How many stop watches are registered (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn stop_watchers(&self) -> usize {
        lock(&self.shared.stop_watch).len()
    }

    /// How many stop watches the calling thread keeps (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn kept_watches() -> usize {
        KEPT.with(|k| k.borrow().len())
    }

    /// Takes a [`Reactor::watch_stop`] registration out (nothing if `key` is `None`).
    pub fn unwatch_stop(&self, key: &mut Option<usize>) {
        if let Some(k) = key.take() {
            let mut w = lock(&self.shared.stop_watch);
            w.try_remove(k);
        }
    }
}

std::thread_local! {
    /// The stop watches the calling thread keeps, one a reactor ([`Reactor::watch_stop_kept`]).
    static KEPT: std::cell::RefCell<Vec<Kept>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A kept stop watch: its reactor and its key there (whose entry holds the thread's
/// parker's waker).
struct Kept {
    reactor: std::sync::Weak<Shared>,
    key: usize,
}

impl Drop for Kept {
    /// The thread ends: its watch leaves the reactor, if that still runs.
    fn drop(&mut self) {
        if let Some(shared) = self.reactor.upgrade() {
            lock(&shared.stop_watch).try_remove(self.key);
        }
    }
}

/// A deadline registered with the reactor; a future that completes when it fires.
///
/// Dropping a timer that has not fired cancels it (the reactor removes it from its wheel).
#[derive(Debug)]
pub struct Timer {
    shared: Arc<TimerShared>,
    reactor: Arc<Shared>,
    registered: bool,
}

impl Timer {
    /// The deadline.
    pub fn deadline(&self) -> u64 {
        self.shared.deadline
    }

    /// Whether it fired.
    pub fn is_fired(&self) -> bool {
        self.shared.state.load(Ordering::Acquire) == FIRED
    }

    /// When the reactor thread fired it; `None` if it has not fired or completed without the
    /// reactor (its deadline had passed at registration, or the reactor had stopped).
    pub fn fired_at(&self) -> Option<u64> {
        let at = self.shared.fired_at.load(Ordering::Relaxed);
        (self.is_fired() && at != 0).then_some(at)
    }

    /// Registers with the reactor and sets the waker to wake when it fires. Later calls only
    /// replace the waker. A timer whose deadline has passed, or whose reactor has stopped,
    /// fires at once, inside this call.
    pub fn register(&mut self, waker: &Waker) {
        self.register_as(waker, true);
    }

    /// As [`Timer::register`], but a deadline that has passed fires on the reactor's next
    /// pass, never inside this call (only a stopped reactor's timer fires at once): for a
    /// waker that re-arms a timer when it fires (a periodic timer), so that a period shorter
    /// than the reactor can serve is one fire a pass, not a loop in its caller.
    pub fn register_queued(&mut self, waker: &Waker) {
        self.register_as(waker, false);
    }

    fn register_as(&mut self, waker: &Waker, inline_if_due: bool) {
        crate::chaos::point();
        self.shared.waker.register(waker);
        if self.registered {
            return;
        }
        self.registered = true;
        let due = inline_if_due && self.shared.deadline <= sys::now();
        if due || self.reactor.stop.load(Ordering::Acquire) {
            self.fire_here();
            return;
        }
        self.reactor
            .push(Op::Add(self.shared.clone()), Some(self.shared.deadline));
        crate::chaos::point();
        // SeqCst, after `push`'s SeqCst fence: the reactor's stopping pass reads `stop`
        // (SeqCst) and fences before it drains the queue, so either that drain finds this add
        // or this load sees `stop`, and fires the timer here (a reactor that stopped between
        // the check above and the push would otherwise leave it unfired for good; found by
        // the C boundary's fuzzer: a sleep racing `hos_runtime_shutdown` never ended). Both
        // may fire it: the state's compare-exchange lets one through.
        if self.reactor.stop.load(Ordering::SeqCst) {
            self.fire_here();
        }
    }

    fn fire_here(&self) {
        if self
            .shared
            .state
            .compare_exchange(WAITING, FIRED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.shared.waker.wake();
        }
    }
}

impl Future for Timer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_fired() {
            return Poll::Ready(());
        }
        self.register(cx.waker());
        // Acquire: pairs with the reactor's AcqRel move to FIRED.
        if self.is_fired() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        let was = self.shared.state.compare_exchange(
            WAITING,
            CANCELLED,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if was.is_ok() && self.registered {
            self.reactor.push(Op::Cancel(self.shared.clone()), None);
        }
    }
}

/// The reactor thread's loop.
fn run(s: &Shared) {
    let mut precise: Wheel<Arc<TimerShared>> = Wheel::new();
    let mut relaxed: Wheel<Arc<TimerShared>> = Wheel::new();
    let mut due = Vec::new();
    let mut wakers: Vec<Waker> = Vec::new();
    loop {
        // SeqCst and a fence before the drain: a registration that pushed its add before this
        // pass saw `stop` unset re-checks it, so a stopping pass drains every add that was
        // not fired where it was made (`Timer::register_as`).
        let stopping = s.stop.load(Ordering::SeqCst);
        if stopping {
            fence(Ordering::SeqCst);
        }
        // 1. Registrations and cancels.
        while let Some(OpBox(op)) = s.ops.pop() {
            match op {
                Op::Add(t) => {
                    if t.state.load(Ordering::Acquire) != WAITING {
                        continue;
                    }
                    let wheel = match t.class {
                        DeadlineClass::Precise => &mut precise,
                        DeadlineClass::Relaxed => &mut relaxed,
                    };
                    let key = wheel.insert(t.deadline, t.clone());
                    *lock(&t.key) = Some(key);
                }
                Op::Cancel(t) => {
                    let key = lock(&t.key).take();
                    if let Some(key) = key {
                        match t.class {
                            DeadlineClass::Precise => precise.remove(key),
                            DeadlineClass::Relaxed => relaxed.remove(key),
                        };
                    }
                }
            }
        }
        // 2. Fire what is due (everything when stopping).
        let now = if stopping { u64::MAX } else { sys::now() };
        precise.poll(now, &mut due);
        relaxed.poll(now, &mut due);
        if !due.is_empty() {
            let at = sys::now();
            for t in due.drain(..) {
                lock(&t.key).take();
                // AcqRel: publishes `fired_at` with FIRED; loses to a racing cancel cleanly.
                t.fired_at.store(at, Ordering::Relaxed);
                if t.state
                    .compare_exchange(WAITING, FIRED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    if let Some(w) = t.waker.take() {
                        wakers.push(w);
                    }
                }
            }
            s.counters
                .here()
                .reactor_fired
                .fetch_add(wakers.len() as u64, Ordering::Relaxed);
            // 3. Wake in a batch, holding nothing.
            crate::chaos::point();
            for w in wakers.drain(..) {
                w.wake();
            }
        }
        // Relaxed: a gauge for stats and tests.
        s.pending
            .store((precise.len() + relaxed.len()) as u64, Ordering::Relaxed);
        if stopping {
            return;
        }
        // 4. Sleep to the next deadline: precise ones minus the wait's lateness, then spin.
        let lateness = s.tracker.wait_lateness_ns();
        let next_precise = precise.next_deadline();
        let wake_at = match (next_precise, relaxed.next_deadline()) {
            (Some(p), Some(r)) => p.saturating_sub(lateness).min(r),
            (Some(p), None) => p.saturating_sub(lateness),
            (None, Some(r)) => r,
            (None, None) => u64::MAX,
        };
        let gen = s.nudge.load(Ordering::Acquire);
        s.armed.store(wake_at, Ordering::Relaxed);
        // SeqCst fence: pairs with the one in `Shared::push` (no registration is missed).
        fence(Ordering::SeqCst);
        if s.ops.is_empty() && !s.stop.load(Ordering::Acquire) {
            let now = sys::now();
            if wake_at > now {
                s.counters
                    .here()
                    .reactor_wakeups
                    .fetch_add(1, Ordering::Relaxed);
                // A timer's wait, never a coarser wait timeout (`sys::wait_precise`).
                sys::wait_precise(&s.nudge, gen, (wake_at != u64::MAX).then_some(wake_at));
                let woke = sys::now();
                if woke >= wake_at && s.nudge.load(Ordering::Relaxed) == gen {
                    s.tracker.observe_wait(woke - wake_at);
                }
            }
            // The last stretch to a precise deadline: spin, unless new work arrives.
            if let Some(p) = next_precise {
                if sys::now() >= p.saturating_sub(lateness) {
                    while sys::now() < p && s.ops.is_empty() && !s.stop.load(Ordering::Relaxed) {
                        crate::sync::spin_hint();
                    }
                }
            }
        }
        s.armed.store(0, Ordering::Relaxed);
    }
}
