//! Sleeps: each served along the route the policy picks for it (docs/design.md section 4).
//!
//! Invariant: no sleep returns before its deadline unless the runtime is shutting down (every
//! path ends on a clock check or a timer that never fires early), a sleep that starts after
//! shutdown returns at once, and a guest thread holds no virtual core while it sleeps.
//!
//! | route ([`Policy::sleep_route`](crate::policy::Policy::sleep_route)) | served by |
//! | --- | --- |
//! | yield | a yield loop, within the poller cap; past it, the sleeper's own timer |
//! | timer | the sleeper's own OS timer, no spin; where that timer is coarse (its lateness is a tick), sleeps to a tick before the deadline, then a spin |
//! | precise, short | within the poller cap, the calibrated precise path; past it, the own timer |
//! | precise, long (1 ms or more) | the reactor, so that shutdown can end it (a host thread's too) |
//! | relaxed | the sleeper's own OS timer (1 ns of slack), no spin: a park that shutdown's unpark ends |
//! | idle poll ([`Policy::idle_poll`](crate::policy::Policy::idle_poll), checked first) | a park on the OS timer alone to the stretch past the deadline, linked to the objects the thread polled empty; promoted when one becomes ready |
//!
//! The precise path is (own slack-1 timer to the deadline minus its margin, the 75th
//! percentile of its lateness as tracked, then spin) or (the reactor wakes the sleeper early
//! by the wake latency, then spin). A job worker's short sleep (one that holds a poller slot)
//! takes its own timer whenever that can arm, so the reactor never spins for pollers (an
//! unseen poller's, [`unseen_poller`], arms by the timer's median lateness instead); serial
//! and host threads take the one that cost the process less at boot; a sleep no longer than
//! the margin takes the reactor (on its own timer it would be all spin), except one in 32
//! that arms its own timer for half of it, so that the margin keeps meeting samples (none
//! where the margin is a timer's tick, which the probe would overshoot). Where the margin is
//! a tick, such a sleep spins on the sleeper's own processor instead (unseen pollers'
//! aside): the reactor's wait rides the same tick, so the reactor would spin it all too, and
//! then wake the sleeper, an OS wake on the sleep's own deadline. A frame
//! limiter's `host_sleep(Duration::MAX)` is a long precise sleep: shutdown ends it.

use crate::block_on::{Away, Wait, WaitPolicy};
use crate::calibration::spin_until;
use crate::context::{host_of, with_current, Current};
use crate::machine::PrecisePath;
use crate::parker::with_parker;
use crate::policy::{unseen_poller, IdlePoll, Polled, SleepRoute, Waiter, SHORT_SLEEP_NS};
use crate::poll;
use crate::pollers::{self, PollSite, Woke};
use crate::reactor::DeadlineClass;
use crate::runtime::Runtime;
use crate::stats::{SleepPath, Stripe};
use crate::sys;
use crate::time::nanos;
use crate::trace;
use crate::vcore::Occupant;
use std::sync::Arc;
use std::time::Duration;

/// Linux's default timer slack, where the thread's own cannot be read.
const DEFAULT_SLACK_NS: u64 = 50_000;

/// One precise sleep in this many parks to measure the wake latency even where the estimate
/// says there is no time to park.
const SAMPLE_EVERY: u64 = 32;

/// The shortest OS timer sleep worth its system call on the own-timer precise path.
const MIN_OWN_SLEEP_NS: u64 = 2_000;

/// A margin this large is the timer's tick, not a stall to probe past: three quarters of a
/// timer's wakes came that late (Windows' high-resolution timer fires on a 0.5 ms grid: its
/// margin sits at 0.47 ms), so a probe of half a short sleep overshoots its deadline by up
/// to a tick. Linux's slack-1 timer keeps a margin of microseconds (tens on a loaded VM).
const PROBE_MARGIN_LIMIT_NS: u64 = 250_000;

std::thread_local! {
    /// (the thread's own slack, read once; whether it is at 1 ns now).
    static SLACK: std::cell::Cell<Option<(u64, bool)>> = const { std::cell::Cell::new(None) };
}

/// Sets this thread's timer slack for the next OS timer sleep: 1 ns for a precise one (so it
/// is as late as the calibration measured), the thread's own slack (50 us by default) for a
/// relaxed or timer-mode one (fewer, cheaper wakes: the OS timer alone). One system call when
/// the class changes, none when it does not.
fn timer_slack(precise: bool) {
    SLACK.with(|s| {
        let (own, at_one) = s.get().unwrap_or_else(|| {
            let own = sys::timer_slack_ns().unwrap_or(DEFAULT_SLACK_NS);
            (own, own == 1)
        });
        if at_one != precise {
            sys::set_timer_slack_ns(if precise { 1 } else { own });
        }
        s.set(Some((own, precise)));
    });
}

/// Which precise path a precise sleep may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Precise {
    /// A long one: the reactor, so that shutdown can end it.
    Cancellable,
    /// A job worker's short one: its own timer where that can arm (pollers are many and the
    /// reactor would spin for each).
    Poller,
    /// An unseen poller's ([`unseen_poller`]): as `Poller`, armed by the pollers' margin.
    Unseen,
    /// A serial or host thread's short one: the path the boot calibration found cheaper.
    Calibrated,
}

impl Precise {
    /// Whether a sleep of this kind that its own timer cannot serve, where the margin is a
    /// tick, spins on its own processor ([`own_timer`]): all but unseen pollers', which are
    /// many at once and each would spin, where the reactor spins once for all of them.
    fn spins_below_a_tick(self) -> bool {
        self != Precise::Unseen
    }
}

/// Sleeps the calling host thread for `d` on `rt`, always precisely (frame limiter, audio).
///
/// # Blocking
/// Returns at the deadline, or once the runtime shuts down (at once if it has).
pub fn host_sleep(rt: &Runtime, d: Duration) {
    sleep(rt, &host_of(rt), nanos(d));
}

/// Sleeps the calling thread `ns` nanoseconds as what it is, on its own runtime (a guest
/// thread by its role; any other thread as a host thread of the default runtime): the
/// svcSleepThread path past its yields. `false`, without sleeping, where no runtime runs.
///
/// # Blocking
/// Through the runtime's sleep paths, at least `ns` unless the runtime shuts down.
pub fn sleep_current(ns: u64) -> bool {
    with_current(|ctx| {
        let Some(rt) = ctx.runtime() else {
            return false;
        };
        sleep(rt, &ctx, ns);
        true
    })
}

/// Sleeps the calling thread for `ns` as `ctx` says it is (guest or host, serial or not);
/// nothing, not even counted, once the runtime has shut down.
fn sleep(rt: &Runtime, ctx: &Current<'_>, ns: u64) {
    if rt.is_shut_down() {
        return;
    }
    // The deterministic mode: a guest sleep is a wait on the virtual clock (`token.rs`).
    if let (Some(token), Some(t)) = (rt.token(), ctx.thread()) {
        if token.is_on() {
            t.mark_wait(Some("sleep"));
            token.sleep(t.id(), ns);
            t.mark_wait(None);
            t.count_sleep();
            return;
        }
    }
    let waiter = ctx.waiter();
    let deadline = sys::now().saturating_add(ns);
    trace::sleep_begin(ns, waiter != Waiter::Host);
    let (polled, sites) = poll::take(ns < SHORT_SLEEP_NS);
    let idle = rt.policy().idle_poll(waiter, ns, polled);
    // The one bracket of the sleep: a route through the reactor opens none of its own. An
    // idle poll's promotion claims the sleeper's core ([`Wait::idle_poll`]).
    let wait = if idle.is_some() {
        Wait::idle_poll()
    } else {
        Wait::sleep()
    };
    let away = Away::begin(*ctx, wait);
    crate::chaos::point();
    let path = match idle {
        Some(idle) => idle_poll(rt, ctx, deadline, idle, &sites),
        None => serve(rt, ctx, waiter, ns, deadline, polled),
    };
    drop(sites);
    let late = sys::now().saturating_sub(deadline);
    trace::sleep_end(path, late, held_poller_slot(waiter, ns, path));
    rt.counters().sleep(path, late);
    if let Some(t) = ctx.thread() {
        t.count_sleep();
    }
    if rt.config().sleep_log && waiter != Waiter::Host {
        // HOS_SLEEP_LOG is the filter: every guest sleep, at info, under its own target.
        let name = ctx.thread().map(|t| t.name());
        tracing::info!(
            target: "hos::sleep",
            thread = ?name,
            asked_ns = ns,
            mode = ?rt.config().short_sleep,
            path = path.name(),
            late_ns = late,
            "guest sleep"
        );
    }
    let took_core = away.end();
    // The end of a sleep is a pause point (`pause.rs`); taking a core is one itself.
    if let (false, Some(t)) = (took_core, ctx.thread()) {
        rt.pause_point(t);
    }
    poll::slept();
}

/// An idle poll: parks on the OS timer alone (the thread's own slack) until the policy's
/// stretch past the deadline, linked to `sites`; promoted by one of them before the deadline, it finishes on the precise
/// path, without a poller slot (promotions are as many as the work that arrives, not as the
/// polls).
fn idle_poll(
    rt: &Runtime,
    ctx: &Current<'_>,
    deadline: u64,
    idle: IdlePoll,
    sites: &[(Arc<PollSite>, u64)],
) -> SleepPath {
    let c = rt.counters();
    Stripe::bump(&c.idle_polls);
    let wake_at = idle.wake_at(deadline);
    timer_slack(false);
    let rank = ctx.thread().map(|t| t.priority());
    let (shut_down, unclaim) = (|| rt.is_shut_down(), || ctx.unclaim_core());
    let woke =
        with_parker(|p, _| pollers::wait(sites, rank, p, [deadline, wake_at], shut_down, unclaim));
    match woke {
        Woke::Tick => {
            Stripe::bump(&c.idle_relaxed);
            if idle.on_ticks() && rt.ticks().shared(wake_at) {
                Stripe::bump(&c.idle_coalesced);
            }
        }
        Woke::Promoted { early, deferred } => {
            Stripe::bump(&c.idle_promoted);
            if deferred {
                Stripe::bump(&c.idle_deferred);
            }
            if early {
                precise(rt, ctx, deadline, Precise::Poller);
            }
        }
        Woke::ShutDown => {}
    }
    SleepPath::IdlePoll
}

/// Whether a sleep held a poller slot (docs/design.md section 5): a short sleep of a
/// non-serial guest thread that yielded or took the precise path.
fn held_poller_slot(waiter: Waiter, ns: u64, path: SleepPath) -> bool {
    waiter == Waiter::Worker
        && ns < SHORT_SLEEP_NS
        && matches!(
            path,
            SleepPath::Yield | SleepPath::PreciseOwn | SleepPath::PreciseReactor
        )
}

/// Serves one sleep, which came after `polled`, by the policy's route; a capped-out yield or
/// precise sleep takes the sleeper's own timer. A long precise sleep goes through the
/// reactor, so shutdown ends it.
fn serve(
    rt: &Runtime,
    ctx: &Current<'_>,
    waiter: Waiter,
    ns: u64,
    deadline: u64,
    polled: Polled,
) -> SleepPath {
    let policy = rt.policy();
    match policy.sleep_route(waiter, ns) {
        SleepRoute::Yield => match policy.poller_slot(waiter) {
            Some(_slot) => yield_until(rt, deadline),
            None => timer(rt, deadline),
        },
        SleepRoute::Timer => timer(rt, deadline),
        SleepRoute::Precise if ns >= SHORT_SLEEP_NS => {
            precise(rt, ctx, deadline, Precise::Cancellable)
        }
        SleepRoute::Precise => match policy.poller_slot(waiter) {
            Some(_slot) if unseen_poller(waiter, polled) => {
                Stripe::bump(&rt.counters().unseen_polls);
                precise(rt, ctx, deadline, Precise::Unseen)
            }
            Some(_slot) if waiter == Waiter::Worker => precise(rt, ctx, deadline, Precise::Poller),
            Some(_slot) => precise(rt, ctx, deadline, Precise::Calibrated),
            None => timer(rt, deadline),
        },
        SleepRoute::Relaxed => relaxed(rt, deadline),
    }
}

/// Yields until the deadline: exact on an idle machine, a core busy per sleeper.
fn yield_until(rt: &Runtime, deadline: u64) -> SleepPath {
    while sys::now() < deadline && !rt.is_shut_down() {
        sys::yield_now();
    }
    SleepPath::Yield
}

/// The sleeper's own OS timer, no spin; where the timer is coarse, its ticks ridden.
fn timer(rt: &Runtime, deadline: u64) -> SleepPath {
    match rt.tracker().coarse_tick() {
        Some(tick) => ride_ticks(rt, deadline, tick),
        None => {
            // Not fed to the calibration: its slack is the thread's own, not the 1 ns it
            // measures.
            timer_slack(false);
            sys::sleep_until(deadline);
        }
    }
    SleepPath::Timer
}

/// Rides a coarse timer whose lateness is a `tick`: OS sleeps to a tick before the deadline
/// while it lies past the next tick, then a spin of the rest (less than a tick: half of one on
/// average), as yuzu, Ryujinx, RPCS3 and Dolphin sleep on Windows. Never a yield loop: under
/// load a yield loses the processor for a quantum.
fn ride_ticks(rt: &Runtime, deadline: u64, tick: u64) {
    timer_slack(true);
    while deadline.saturating_sub(sys::now()) > tick {
        if rt.is_shut_down() {
            return;
        }
        sys::sleep_until(deadline - tick);
    }
    spin_until(deadline);
}

/// The precise class, by the path `kind` allows (module doc).
fn precise(rt: &Runtime, ctx: &Current<'_>, deadline: u64, kind: Precise) -> SleepPath {
    let tracker = rt.tracker();
    let left = deadline.saturating_sub(sys::now());
    let (may_own, margin) = match kind {
        Precise::Cancellable => (false, 0),
        Precise::Poller => (true, tracker.timer_margin_ns()),
        Precise::Unseen => (true, tracker.poller_margin_ns()),
        Precise::Calibrated => (
            tracker.precise() == PrecisePath::OwnTimer,
            tracker.timer_margin_ns(),
        ),
    };
    let own = may_own
        .then(|| {
            own_timer(left, margin, kind.spins_below_a_tick(), || {
                tracker.sample_due(SAMPLE_EVERY)
            })
        })
        .flatten();
    match own {
        Some(early) => {
            let target = deadline - early;
            if target > sys::now() {
                timer_slack(true);
                sys::sleep_until(target);
                tracker.observe_timer(sys::now().saturating_sub(target));
            }
            spin_until(deadline);
            SleepPath::PreciseOwn
        }
        None => {
            // Early by the wake latency. Where that is more than what is left, the sleeper
            // spins it all, except one sleep in `SAMPLE_EVERY`, which parks for half of it so
            // that the wake latency keeps being measured (an estimate larger than the sleep
            // would otherwise never meet a sample that brings it down).
            let early = match tracker.wake_latency_ns() {
                w if w < left => w,
                _ if tracker.sample_due(SAMPLE_EVERY) => left / 2,
                _ => left,
            };
            let fire = deadline - early;
            if fire > sys::now() {
                let t = rt.reactor().timer(fire, DeadlineClass::Precise);
                let fired = ctx.block_on(OwnedTimer(t), Wait::sleep());
                if let Some(at) = fired {
                    tracker.observe_wake(sys::now().saturating_sub(at));
                }
            }
            if !rt.is_shut_down() {
                spin_until(deadline);
            }
            SleepPath::PreciseReactor
        }
    }
}

/// How early before its deadline a precise sleep with `left` to go arms its own timer, or
/// `None` to go through the reactor instead. By the margin where that leaves an OS sleep worth
/// its system call; where it does not, the reactor, except one sleep in `SAMPLE_EVERY`
/// (`probe` says which), which arms for half of what is left so that the margin keeps meeting
/// samples: a margin above the sleeps would otherwise be fed only by the reactor's undisturbed
/// waits, which busy pollers' registrations rarely leave it (seen on the 16-core device: 5
/// pollers of 20 us went through the reactor for a whole run, 2.74 CPU s/s). No probe where
/// the margin is a tick ([`PROBE_MARGIN_LIMIT_NS`]): there the probed sleep would be late by
/// up to the tick (under the Windows simulation's grid timers, 1 sleep in 32 was: 100 us
/// sleeps' p99 lateness 0.29 ms), and the margin is the timer's, not a stall's. There, with
/// `spin_below_a_tick`, the whole of what is left is spun here (`Some(left)`): the reactor's
/// wait rides the same tick (the Windows backend's timer), so the reactor would spin it all
/// as well and then wake the sleeper, whose OS wake lands on the deadline (under the Windows
/// simulation's `0.5ms` and `1ms` profiles, a promoted idle poll's last microseconds went
/// through that wake). Linux's margin is microseconds: never a tick, nothing changes there.
pub(crate) fn own_timer(
    left: u64,
    margin: u64,
    spin_below_a_tick: bool,
    probe: impl FnOnce() -> bool,
) -> Option<u64> {
    let tick = margin >= PROBE_MARGIN_LIMIT_NS;
    if left > margin + MIN_OWN_SLEEP_NS {
        Some(margin)
    } else if tick && spin_below_a_tick {
        Some(left)
    } else if left >= 2 * MIN_OWN_SLEEP_NS && !tick && probe() {
        Some(left / 2)
    } else {
        None
    }
}

/// The relaxed class: the sleeper's own OS timer, no spin and no reactor, so one OS wake a
/// sleep (through the reactor's relaxed wheel it was two: the reactor's, then the sleeper's).
/// At 1 ns of slack, as the reactor's timer was: the thread's own slack (50 us by default)
/// would make a 1 ms sleep twice as late; a timer's park (`Parker::park_timer`), never a
/// wait timeout that rides Windows' tick. A park on the thread's parker, so that shutdown,
/// which unparks every guest thread, ends it; only guest threads sleep relaxed
/// (`policy::deadline_class`). A token left from an earlier wake ends a park early: the loop
/// parks again.
fn relaxed(rt: &Runtime, deadline: u64) -> SleepPath {
    timer_slack(true);
    with_parker(|p, _| {
        while !rt.is_shut_down() && sys::now() < deadline {
            p.park_timer(deadline);
        }
    });
    SleepPath::Relaxed
}

/// A timer future that yields when the reactor fired it (`None` if it completed without the
/// reactor: its deadline had passed or the reactor stopped).
struct OwnedTimer(crate::reactor::Timer);

impl std::future::Future for OwnedTimer {
    type Output = Option<u64>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<u64>> {
        std::pin::Pin::new(&mut self.0)
            .poll(cx)
            .map(|()| self.0.fired_at())
    }
}
