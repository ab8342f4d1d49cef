//! TimerEvent: an [`Event`] that a timer on the reactor's wheel signals, once or periodically
//! (nn::os `TimerEventType`).
//!
//! Ground rules: the arming state (the pending reactor [`Timer`], the period) is behind one
//! lock. The reactor fires a timer by waking the arming itself (it implements `Wake`), which
//! signals the event and, if periodic, arms the next period. Every arming registers through
//! the reactor's queue, so a deadline that has passed fires on the reactor's next pass, never
//! inside the call that armed it: a period shorter than the reactor can serve fires once a
//! pass, with the periods in between merged and counted ([`TimerEvent::missed_ticks`]), and
//! neither the caller nor the reactor loops. A wake can come while the lock is held (from the
//! reactor, or at once on a stopped reactor): it then only raises `pending`, and whoever holds
//! the lock handles it after unlocking ([`Arming::drain`]). A wake for a timer that is no
//! longer the armed one (stopped, restarted) finds the armed timer unfired and does nothing.
//!
//! A handle is a cheap `Clone`: the clones share one `Handles`, and the last of them to drop
//! stops the timer (the reactor's pending timer holds the arming too, so the arming's own
//! count cannot tell).

use super::event::{ClearMode, Event};
use super::wait_any::{sealed, Waitable};
use super::waiters::WaitSlot;
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use crate::sync::{lock, Arc, Mutex};
use hos_runtime::internal::{deadline_after, nanos, runtime, sys, DeadlineClass, Runtime, Timer};
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

/// A timer event: an [`Event`] (it derefs to one) signalled at a deadline, or every period.
///
/// Timer events are host deadlines: served precisely by the reactor. A handle: clones share
/// one timer event, and dropping the last one stops it.
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// use hos::os::{ClearMode, TimerEvent};
/// use std::time::Duration;
/// let t = TimerEvent::new(ClearMode::Auto);
/// t.start_periodic(Duration::from_micros(200), Duration::from_micros(200))?;
/// t.wait()?; // the first period
/// t.wait()?; // the second
/// t.stop();
/// # rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct TimerEvent {
    handles: Arc<Handles>,
}

/// What the clones of a [`TimerEvent`] share: dropped with the last clone, it stops the timer.
#[derive(Debug)]
struct Handles {
    arm: Arc<Arming>,
}

impl Drop for Handles {
    fn drop(&mut self) {
        self.arm.stop();
    }
}

#[derive(Debug)]
struct Arming {
    event: Event,
    state: Mutex<Armed>,
    /// A fire not yet handled. Set by `wake`, cleared by whoever holds `state`.
    pending: AtomicBool,
    /// Periods merged into a later signal since the last start (relaxed counter).
    missed: AtomicU64,
}

#[derive(Debug, Default)]
struct Armed {
    rt: Option<Runtime>,
    /// The armed timer. # Invariant: a fired timer here has not been handled yet.
    timer: Option<Timer>,
    /// Nanoseconds between fires; 0: one-shot.
    period: u64,
}

impl TimerEvent {
    /// A stopped timer event, cleared.
    pub fn new(clear: ClearMode) -> Self {
        TimerEvent {
            handles: Arc::new(Handles {
                arm: Arc::new(Arming {
                    event: Event::new(clear),
                    state: Mutex::new(Armed::default()),
                    pending: AtomicBool::new(false),
                    missed: AtomicU64::new(0),
                }),
            }),
        }
    }

    /// Signals it once, `after` from now (replacing what was armed).
    ///
    /// # Errors
    /// InvalidState with no runtime running; Cancelled once the runtime shut down.
    pub fn start_one_shot(&self, after: Duration) -> Result<(), ResultCode> {
        self.start(after, 0)
    }

    /// Signals it `first` from now, then every `period` (replacing what was armed). Periods
    /// missed while the reactor was late are merged into one signal and counted
    /// ([`TimerEvent::missed_ticks`]); the phase is kept. Any period from 1 ns is accepted: one
    /// shorter than the reactor can serve (a few microseconds a fire) fires once each pass of
    /// the reactor, which then serves every other deadline in the same pass; it never blocks
    /// this call or stalls the reactor.
    ///
    /// # Errors
    /// OutOfRange for a zero period; otherwise as [`TimerEvent::start_one_shot`].
    pub fn start_periodic(&self, first: Duration, period: Duration) -> Result<(), ResultCode> {
        match nanos(period) {
            0 => Err(ResultCode::OUT_OF_RANGE),
            p => self.start(first, p),
        }
    }

    fn start(&self, first: Duration, period: u64) -> Result<(), ResultCode> {
        entry();
        let rt = runtime().ok_or(ResultCode::INVALID_STATE)?;
        if rt.is_shut_down() {
            return Err(ResultCode::CANCELLED);
        }
        let deadline = deadline_after(first);
        self.handles.arm.with_state(|arm, st| {
            // Relaxed: a counter, reset under the state lock.
            arm.missed.store(0, Ordering::Relaxed);
            st.period = period;
            st.timer = Some(arm.timer(&rt, deadline));
            st.rt = Some(rt);
        });
        Ok(())
    }

    /// Periods merged into a later signal since the last start: those that passed while the
    /// reactor was late, or that were shorter than it can serve.
    pub fn missed_ticks(&self) -> u64 {
        self.handles.arm.missed.load(Ordering::Relaxed)
    }

    /// Stops it; a signal already given stays.
    pub fn stop(&self) {
        self.handles.arm.stop();
    }
}

impl std::ops::Deref for TimerEvent {
    type Target = Event;

    fn deref(&self) -> &Event {
        &self.handles.arm.event
    }
}

impl sealed::Sealed for TimerEvent {}

impl Waitable for TimerEvent {
    fn poll_wait(&self, slot: &mut WaitSlot, waker: Option<&Waker>) -> Poll<()> {
        self.handles.arm.event.poll_wait(slot, waker)
    }

    fn leave_wait(&self, slot: &mut WaitSlot) {
        self.handles.arm.event.leave_wait(slot);
    }
}

impl Arming {
    /// A reactor timer for `deadline` that wakes this arming, registered through the queue
    /// (never fired inside this call, see the ground rules).
    fn timer(self: &Arc<Self>, rt: &Runtime, deadline: u64) -> Timer {
        let mut t = rt.reactor().timer(deadline, DeadlineClass::Precise);
        t.register_queued(&Waker::from(self.clone()));
        t
    }

    /// Disarms: drops the pending timer and the period.
    fn stop(self: &Arc<Self>) {
        self.with_state(|_, st| {
            st.timer = None;
            st.period = 0;
        });
    }

    /// Runs `f` on the locked state, then handles fires that came meanwhile.
    fn with_state<R>(self: &Arc<Self>, f: impl FnOnce(&Arc<Self>, &mut Armed) -> R) -> R {
        let r = f(self, &mut lock(&self.state));
        self.drain();
        r
    }

    /// Handles pending fires while nobody else holds the lock.
    fn drain(self: &Arc<Self>) {
        // SeqCst fence: pairs with the one in `wake_by_ref`. Either this load sees its
        // `pending`, or its try_lock sees our unlock (store buffering is forbidden).
        fence(Ordering::SeqCst);
        while self.pending.load(Ordering::Relaxed) {
            let Ok(mut st) = self.state.try_lock() else {
                // The holder drains after it unlocks.
                return;
            };
            // Acquire: what the waking thread did before `pending` (the timer's FIRED state
            // is itself Acquire-read by is_fired).
            if self.pending.swap(false, Ordering::Acquire) {
                self.fire(&mut st);
            }
            drop(st);
            fence(Ordering::SeqCst);
        }
    }

    /// Handles the armed timer if it fired: signals, and arms the next period. A timer the
    /// reactor fired before its deadline (it fires every pending timer when it stops) is no
    /// tick: the event is not signalled, and nothing is armed again.
    fn fire(self: &Arc<Self>, st: &mut Armed) {
        let Some(t) = st.timer.as_ref().filter(|t| t.is_fired()) else {
            return;
        };
        if sys::now() < t.deadline() {
            st.timer = None;
            return;
        }
        self.event.signal();
        let (Some(rt), p) = (st.rt.as_ref(), st.period) else {
            return;
        };
        if p == 0 || rt.is_shut_down() {
            st.timer = None;
            return;
        }
        let now = sys::now();
        let mut next = t.deadline().saturating_add(p);
        if next <= now {
            // Late by whole periods: merge them, keep the phase.
            let merged = (now - next) / p + 1;
            // Relaxed: a counter.
            self.missed.fetch_add(merged, Ordering::Relaxed);
            next = next.saturating_add(merged.saturating_mul(p));
        }
        st.timer = Some(self.timer(rt, next));
    }
}

impl Wake for Arming {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Relaxed + the SeqCst fence in `drain`.
        self.pending.store(true, Ordering::Relaxed);
        self.drain();
    }
}
