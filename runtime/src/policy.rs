//! Every runtime choice in one place: short-sleep path, poller cap, idle pollers, spin length.
//! What each object learns at run time about its own spins is its spin gate (`spin_gate.rs`).
//!
//! Invariant: decisions are made once, at build, from a validated `Config` and the processor
//! count; the hot path only reads them. A poller slot is an RAII guard, so the count of taken
//! slots always comes back to zero, unwinding included. Serial threads and host sleeps never
//! take a counted slot.
//!
//! Each decision is by [`Waiter`]: a host thread, or a guest thread that is serial or a worker
//! as its role makes it (`crate::role`, the one place that decides; docs/design.md section 7).
//!
//! # The decisions (docs/design.md sections 4 to 6)
//!
//! Short sleeps (under 1 ms), by mode; `n` is the logical processor count, "few" is n <= 6:
//!
//! | HOS_SHORT_SLEEP_TIMER | HOS_SHORT_SLEEP | guest (serial and other) | host | poller cap |
//! | --- | --- | --- | --- | --- |
//! | on | any | timer | precise | none |
//! | off | any | yield | yield | none |
//! | unset | `yield` | yield | yield | yes |
//! | unset | `timer` | timer | precise | none (nothing yields) |
//! | unset | `reactor` (default) | precise | precise | yes |
//! | unset | `auto`, few | timer | yield | none (nothing yields) |
//! | unset | `auto`, more or unknown | yield | yield | yes |
//!
//! Host sleeps are never on the plain timer: they yield wherever the reference host's design
//! is asked for (`yield`, `auto`, timer switch off), else they are precise.
//!
//! The poller cap: at most that many *other* (non-serial) guest threads yield-poll, or take
//! the precise path in `reactor` mode, at once; the rest take the timer. HOS_SHORT_SLEEP_POLLERS
//! sets it (0: none); by default it is a quarter of `n`, at least 1, and 1 when `n` is unknown
//! (an unknown machine may be a small one, where yielding pollers cost the frame the most).
//!
//! Idle pollers (reactor mode only; docs/design.md section 4): a short sleep of an *other*
//! guest thread that follows a poll that found nothing ([`polled`]: a try or zero-timeout
//! wait of an hos object, a zero-timeout WaitForAddress, with no wait between) is an idle
//! poll ([`Policy::idle_poll`]): it parks on the OS timer alone (the thread's own slack),
//! linked to what it polled, and the moment one of them becomes ready it is promoted
//! ([`promotions`] says how many a readiness promotes, [`idle_step`] what a promoted sleep
//! does): finished on the precise path, or ended at once past its deadline. After hos
//! objects only, whose every readiness it sees, it may last HOS_IDLE_POLL_STRETCH_US past its
//! deadline (with HOS_IDLE_POLL_COALESCE, until the first shared tick that far apart at or
//! after it: [`IdlePoll::wake_at`]); after a guest word, which a plain store readies unseen,
//! it ends at the deadline. HOS_IDLE_POLL_BLIND > 0 also treats that many short sleeps in a
//! row with no other call between them as an idle poll of something hos cannot see: relaxed
//! at the deadline (no stretch: nothing could promote it). Serial threads and host sleeps
//! never are.
//!
//! The spin before a wait parks: serial and host threads HOS_SPIN_US (20 us); other guest
//! threads HOS_SPIN_OTHER_US (5 us) with more than 6 processors, HOS_SPIN_US with 6 or fewer or
//! an unknown count unless HOS_SPIN_OTHER_US is set; never more than HOS_SPIN_US (the one
//! documented clamp). Spin arithmetic saturates, so no length overflows.
//!
//! The wake slice (docs/switches.md, HOS_WAKE_SLICE_US): guest threads of priority
//! HOS_WAKE_SLICE_PRIORITY or better, and serial threads, ask the OS for a short scheduling
//! slice ([`Policy::wake_slice_ns`]), so that when one wakes while worse threads fill the
//! processors the OS runs it first rather than after their longer slices; everyone else keeps
//! the OS default (0). The thread's own priority decides, not a lent one (a lock's lending is
//! brief and would cost a system call each way). Slices change the order threads run in, not
//! their shares of the CPU.
//!
//! Lock heirs (hos's arbiter, `src/svc/arbiter/heir.rs`): with [`HEIR_PROCESSORS`] or more
//! logical processors, a guest thread whose role spins before it parks may be woken ahead of
//! a mutex hand-off it will get, to spin for it ([`Policy::wakes_heir`]); with fewer, or an
//! unknown count, it is woken by the hand-off, as every waiter is.
//!
//! # Publication
//!
//! The choice must be made once and published so that no thread ever reads half a decision or
//! races to make it (the reference host publishes it as one atomic word). Here it is made by
//! the thread that builds the runtime, before any guest thread exists, and never changes: the
//! `Policy` is immutable (its one atomic is the poller count, which is not a decision) and
//! reaches every thread inside the runtime's `Arc`, whose publication orders it. That gives
//! the same guarantee with plain loads on the hot path, so no word is packed. The decision is
//! logged once a runtime, one `info` line for each part, each with the processor count.

use crate::config::{Config, ShortSleep, DEFAULT_SPIN_US};
use crate::reactor::DeadlineClass;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sys::{self, TickScale};
use crate::time::{MS, US};
use std::fmt;
use std::sync::LazyLock;

/// Who waits: a serial guest thread (the frame's critical chain), a worker, or a host thread.
/// A guest thread's role decides which of the first two it is (`crate::role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Waiter {
    /// A serial guest thread. Never capped, never an idle poller.
    Serial,
    /// Any other guest thread, a worker: the only waiter the poller cap counts.
    Worker,
    /// A host thread: frame limiter, audio, timer events. Never on the plain timer, never capped.
    Host,
}

/// What a guest thread did before a sleep, as its poll marks say ([`polled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Polled {
    /// It polled hos objects and found them empty, with no wait since: every readiness of
    /// theirs passes their notify, so the sleep can be promoted by all of them.
    Objects,
    /// As `Objects`, but one of them is a guest word (a zero-timeout WaitForAddress): a
    /// plain store of the guest's can ready it unseen.
    Words,
    /// Its sleeps since its last call: this many short sleeps in a row, this one included, with
    /// no other svc or nn::os call between them (0: it made other calls).
    Quiet(u32),
    /// Nothing the policy can use (more objects polled than a sleep links).
    Nothing,
}

/// What a guest thread's poll marks held when it went to sleep (`poll.rs` keeps them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marked {
    /// Waiter lists it polled empty since its last wait or sleep.
    pub(crate) lists: usize,
    /// Whether one of them is a guest word's.
    pub(crate) words: bool,
    /// It polled more lists than one sleep links: none can be trusted to cover its work.
    pub(crate) overflow: bool,
    /// Svc and nn::os calls since its last sleep ended (this sleep's own svc entry included).
    pub(crate) calls: u64,
}

/// Which sleeps count as polls: a sleep after polls that found nothing (and no wait since,
/// which clears the marks) follows those polls; else a short sleep with at most one call
/// since the last sleep (its own svc entry) extends a run of quiet sleeps, `quiet` long
/// before it, and anything else breaks the run. Returns what the sleep follows and the run
/// after it.
pub(crate) fn polled(marked: Marked, short: bool, quiet: u32) -> (Polled, u32) {
    if marked.overflow {
        return (Polled::Nothing, 0);
    }
    if marked.lists > 0 {
        let what = if marked.words {
            Polled::Words
        } else {
            Polled::Objects
        };
        return (what, 0);
    }
    if short && marked.calls <= 1 {
        let run = quiet.saturating_add(1);
        return (Polled::Quiet(run), run);
    }
    (Polled::Quiet(0), 0)
}

/// Quiet short sleeps in a row (this one included) from which a job worker's precise sleep is
/// an unseen poller's ([`unseen_poller`]).
pub(crate) const UNSEEN_POLLER_SLEEPS: u32 = 8;

/// Whether a precise short sleep of `waiter` after `polled` is an unseen poller's: a job
/// worker's, the [`UNSEEN_POLLER_SLEEPS`]th or later of short sleeps in a row with no other
/// svc or nn::os call between them (it polls what hos cannot see, a plain atomic). Such a
/// sleep arms its own timer by the timer's median lateness instead of its 75th percentile:
/// it spins less, and the half of its sleeps that wake past the deadline are late by what
/// the timer was late beyond its median, which no host sees in a poll that finds nothing
/// (SPEC 2b: never early; lateness only where nobody gains from punctuality).
pub(crate) fn unseen_poller(waiter: Waiter, polled: Polled) -> bool {
    waiter == Waiter::Worker && matches!(polled, Polled::Quiet(n) if n >= UNSEEN_POLLER_SLEEPS)
}

/// How many sleeping pollers a readiness promotes: an object made ready for `told` waiters
/// (`usize::MAX`: all) whose blocked waiters took `woken` of them promotes the rest, so a
/// poller is promoted only by what no blocked waiter takes.
pub fn promotions(told: usize, woken: usize) -> usize {
    told.saturating_sub(woken)
}

/// How an idle-poll sleep is served ([`Policy::idle_poll`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdlePoll {
    /// How far past its deadline it may last while nothing promotes it, in ns.
    pub(crate) stretch_ns: u64,
    /// Whether it wakes on the shared ticks `stretch_ns` apart instead.
    pub(crate) coalesce: bool,
}

impl IdlePoll {
    /// Relaxed at the deadline, no stretch: the sleep of a poller whose readiness hos may
    /// not see (a guest word's plain store, a blind poller's memory).
    pub(crate) const AT_DEADLINE: IdlePoll = IdlePoll {
        stretch_ns: 0,
        coalesce: false,
    };

    /// When the sleep of `deadline` wakes if nothing promotes it: `stretch_ns` past the
    /// deadline, or (coalesced) the first shared tick at or after it; never before it.
    pub(crate) fn wake_at(self, deadline: u64) -> u64 {
        match (self.stretch_ns, self.coalesce) {
            (0, _) => deadline,
            (t, true) => deadline.div_ceil(t).saturating_mul(t).max(deadline),
            (t, false) => deadline.saturating_add(t),
        }
    }

    /// Whether its wake is on a shared tick (counted when another poller woke on it too).
    pub(crate) fn on_ticks(self) -> bool {
        self.coalesce && self.stretch_ns > 0
    }
}

/// What an idle-poll sleeper does when it wakes ([`idle_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdleStep {
    /// Park again: nothing happened (a stale token), its wake time has not come.
    Park,
    /// Promoted before its deadline: finish the sleep on the precise path.
    Precise,
    /// Return: past its deadline and promoted or at its wake time, or the runtime shut down.
    End,
}

/// The rule of an idle-poll sleeper that wakes at `now`: never return before `deadline` unless
/// the runtime `shut` down; a promotion ends the sleep at once past the deadline and sends it
/// to the precise path before it; without one, the sleep lasts until `wake_at`.
pub(crate) fn idle_step(
    now: u64,
    deadline: u64,
    wake_at: u64,
    promoted: bool,
    shut: bool,
) -> IdleStep {
    if shut {
        return IdleStep::End;
    }
    if now < deadline {
        return if promoted {
            IdleStep::Precise
        } else {
            IdleStep::Park
        };
    }
    if promoted || now >= wake_at {
        IdleStep::End
    } else {
        IdleStep::Park
    }
}

/// How one sleep is served, before the poller cap: what the policy decides for a waiter and a
/// length ([`Policy::sleep_route`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SleepRoute {
    /// Yield in a loop until the deadline (subject to the poller cap).
    Yield,
    /// The sleeper's own OS timer, no spin.
    Timer,
    /// The precise class: calibrated own timer or reactor wake, then a short spin
    /// (subject to the poller cap for non-serial guest threads).
    Precise,
    /// The relaxed class: the sleeper's own OS timer alone, no spin, ended by shutdown.
    Relaxed,
}

impl SleepRoute {
    /// The route's name in logs: `yield`, `timer`, `precise` or `relaxed`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SleepRoute::Yield => "yield",
            SleepRoute::Timer => "timer",
            SleepRoute::Precise => "precise",
            SleepRoute::Relaxed => "relaxed",
        }
    }
}

/// The spin before a wait parks: its length, and whether it is full length (HOS_SPIN_US: only
/// a full-length spin that misses counts against an object's spin gate,
/// [`SpinGate`](crate::spin_gate::SpinGate)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spin {
    /// Nanoseconds to spin; 0: none.
    pub ns: u64,
    /// The same on the event clock (`sys::ticks()`), which the spin reads: a few nanoseconds
    /// a read where `sys::now()` costs tens, so a spin sees a wake sooner.
    pub ticks: u64,
    /// Whether it is the full (HOS_SPIN_US) length.
    pub full: bool,
}

impl Spin {
    /// No spin.
    pub const NONE: Spin = Spin {
        ns: 0,
        ticks: 0,
        full: false,
    };

    /// A spin of `ns` on the event clock that `scale` maps.
    pub(crate) fn new(ns: u64, full: bool, scale: &TickScale) -> Spin {
        Spin {
            ns,
            ticks: scale.ticks_in(ns),
            full,
        }
    }

    /// The spin of a thread no runtime serves: the default HOS_SPIN_US, full length.
    pub fn without_runtime() -> Spin {
        static DEFAULT: LazyLock<Spin> =
            LazyLock::new(|| Spin::new(DEFAULT_SPIN_US * US, true, &sys::tick_scale()));
        *DEFAULT
    }
}

/// Sleeps at or past this length are long: no short-sleep mode applies (precise or relaxed by
/// waiter, on a path that shutdown ends: the reactor, or a relaxed sleeper's own timer).
pub(crate) const SHORT_SLEEP_NS: u64 = MS;

/// The deadline class of a wait or long sleep by `waiter`: other guest threads are relaxed (a
/// timed-out job wait or a long sleep gains nothing from a spin); serial and host threads are
/// precise.
pub(crate) fn deadline_class(waiter: Waiter) -> DeadlineClass {
    match waiter {
        Waiter::Worker => DeadlineClass::Relaxed,
        Waiter::Serial | Waiter::Host => DeadlineClass::Precise,
    }
}

/// With this many logical processors or fewer, or an unknown count, `auto` puts guest short
/// sleeps on the timer and every thread spins the full length (docs/design.md sections 4 and 6).
const FEW_PROCESSORS: usize = 6;

/// The default spin of non-serial guest threads with more than [`FEW_PROCESSORS`], in us.
const SPIN_OTHER_US: u64 = 5;

/// The fewest logical processors where a lock waiter is woken ahead of its hand-off: one for
/// the owner, one for the thread that handed it the mutex, one for the heir's spin. Measured on
/// the 16-core device, the SDK condition variable (`sdk_lock --bench
/// sdk_condvar_4x4/alternated`, 4 producers and 4 consumers): 3.6-4.0x std's with heirs
/// against 5.9-6.5x without at 4 and 16 processors; at 2, 9.3x against 7.7-8.1x (the heir's
/// wake and spin take the processor the owner needs). 3 itself is not measured.
const HEIR_PROCESSORS: usize = 3;

/// The default poller cap is the logical processors divided by this (at least 1).
const PROCESSORS_A_POLLER: usize = 4;

/// The decisions of one runtime (the module doc lists them).
#[derive(Debug)]
pub(crate) struct Policy {
    processors: Option<usize>,
    guest: SleepRoute,
    host: SleepRoute,
    cap: usize,
    /// Idle-poll sleeps: `None` when the policy is off or the mode has no precise guest sleeps.
    idle: Option<IdlePoll>,
    /// Quiet short sleeps in a row that make a blind idle poll (0: never).
    blind: u32,
    /// Whether a guest thread's promotion of a worse-priority idle poller waits until the
    /// thread gives its core up (`pollers.rs`); only where there are idle polls.
    defer: bool,
    /// Counted slots taken now. # Invariant: at most `cap` when `cap > 0`, and 0 when no
    /// [`PollerSlot`] of this policy is alive.
    pollers: AtomicUsize,
    /// The spins of serial and host threads' waits, and of other guest threads'.
    spin_serial: Spin,
    spin_other: Spin,
    /// The wake slice (0: never asked) and the worst priority it is asked for.
    wake_slice_ns: u64,
    wake_slice_priority: u8,
}

impl Policy {
    /// Decides everything from `config` and the process's logical processor count (`None`:
    /// unknown), and logs each decision once with the count.
    pub(crate) fn new(config: &Config, processors: Option<usize>) -> Self {
        let (guest, host) = short_routes(config, processors);
        let serial_ns = config.spin_us.saturating_mul(US);
        let other_ns = spin_other_us(config, processors).saturating_mul(US);
        let scale = sys::tick_scale();
        let policy = Policy {
            processors,
            guest,
            host,
            cap: poller_cap(config, processors, guest),
            idle: idle_polls(config, guest),
            blind: config.idle_poll_blind,
            defer: config.idle_poll_defer,
            pollers: AtomicUsize::new(0),
            spin_serial: Spin::new(serial_ns, true, &scale),
            spin_other: Spin::new(other_ns, other_ns >= serial_ns, &scale),
            wake_slice_ns: config.wake_slice_us.saturating_mul(US),
            wake_slice_priority: config.wake_slice_priority,
        };
        policy.log(config);
        policy
    }

    fn log(&self, config: &Config) {
        let count = Count(self.processors);
        let (mode, timer) = (config.short_sleep, config.short_sleep_timer);
        tracing::info!(
            ?mode,
            ?timer,
            "guest short sleeps: {}, {count}",
            self.guest.name()
        );
        tracing::info!(
            ?mode,
            ?timer,
            "host short sleeps: {}, {count}",
            self.host.name()
        );
        match self.cap {
            0 => tracing::info!("poller cap: none, {count}"),
            cap => tracing::info!("poller cap: {cap}, {count}"),
        }
        match self.idle {
            None => tracing::info!("idle polls: served like other sleeps, {count}"),
            Some(idle) => {
                let ticks = if idle.coalesce {
                    ", on shared ticks"
                } else {
                    ""
                };
                let deferred = if self.defer {
                    " (by a better-priority guest thread: when it gives its core up)"
                } else {
                    ""
                };
                tracing::info!(
                    "idle polls of hos objects: relaxed, up to {} ns past the deadline{ticks}, promoted by work{deferred}, {count}",
                    idle.stretch_ns
                );
                tracing::info!(
                    "idle polls of guest words: relaxed at the deadline, promoted by a signal{deferred}, {count}"
                );
                match self.blind {
                    0 => tracing::info!("blind pollers: precise, {count}"),
                    n => tracing::info!(
                        "blind pollers: relaxed at the deadline after {n} quiet sleeps, {count}"
                    ),
                }
            }
        }
        tracing::info!(
            "spin: serial and host {} ns, other {} ns, {count}",
            self.spin_serial.ns,
            self.spin_other.ns
        );
        match self.heirs() {
            true => tracing::info!("lock heirs: woken ahead of their hand-off, {count}"),
            false => tracing::info!("lock heirs: none, woken by their hand-off, {count}"),
        }
        match self.wake_slice_ns {
            0 => tracing::info!("wake slice: none asked, {count}"),
            ns => tracing::info!(
                "wake slice: {ns} ns for guest threads of priority {} or better and serial threads, {count}",
                self.wake_slice_priority
            ),
        }
    }

    /// The OS scheduling slice a guest thread of its own `priority` and role asks for: the
    /// wake slice for the frame's chain (that priority or better, or serial), else 0 (the OS
    /// default). 0 for everyone while the switch is off.
    pub(crate) fn wake_slice_ns(&self, priority: u8, serial: bool) -> u64 {
        if serial || priority <= self.wake_slice_priority {
            self.wake_slice_ns
        } else {
            0
        }
    }

    #[cfg(all(test, not(loom)))]
    /// The processor count the decisions were made with (`None`: unknown).
    pub(crate) fn processors(&self) -> Option<usize> {
        self.processors
    }

    /// The path of a short sleep by `waiter`, before the poller cap.
    pub(crate) fn short_route(&self, waiter: Waiter) -> SleepRoute {
        match waiter {
            Waiter::Serial | Waiter::Worker => self.guest,
            Waiter::Host => self.host,
        }
    }

    #[cfg(all(test, not(loom)))]
    /// The poller cap (0: none, either because it is switched off or because no guest short
    /// sleep yields or takes the precise path).
    pub(crate) fn poller_cap(&self) -> usize {
        self.cap
    }

    /// A slot to yield-poll or to take the precise path; `None` when `waiter` is capped out (the
    /// sleep then takes the timer). Serial threads and host sleeps are never capped, and their
    /// slots are not counted.
    pub(crate) fn poller_slot(&self, waiter: Waiter) -> Option<PollerSlot<'_>> {
        if waiter != Waiter::Worker || self.cap == 0 {
            return Some(PollerSlot { policy: None });
        }
        // Relaxed: the count is a budget, not a lock; it orders no other memory.
        let mut n = self.pollers.load(Ordering::Relaxed);
        loop {
            if n >= self.cap {
                return None;
            }
            // Relaxed (both): as above; the compare-exchange alone keeps the count exact.
            match self
                .pollers
                .compare_exchange_weak(n, n + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(PollerSlot { policy: Some(self) }),
                Err(now) => n = now,
            }
        }
    }

    #[cfg(all(test, not(loom)))]
    /// Counted slots taken now (for stats and tests).
    pub(crate) fn pollers(&self) -> usize {
        // Relaxed: a reading for stats; it orders nothing.
        self.pollers.load(Ordering::Relaxed)
    }

    /// The spin before a wait of `waiter` parks.
    pub(crate) fn spin(&self, waiter: Waiter) -> Spin {
        match waiter {
            Waiter::Worker => self.spin_other,
            Waiter::Serial | Waiter::Host => self.spin_serial,
        }
    }

    /// Whether a lock wait of `waiter` may be woken ahead of its hand-off, to spin for it (the
    /// module doc's lock heirs): on a machine of [`HEIR_PROCESSORS`] or more, by a role that
    /// spins.
    pub(crate) fn wakes_heir(&self, waiter: Waiter) -> bool {
        self.heirs() && self.spin(waiter).ns > 0
    }

    /// Whether a guest thread's promotion of an idle poller worse in priority waits until the
    /// thread gives its core up (HOS_IDLE_POLL_DEFER; docs/design.md section 4).
    pub(crate) fn defers_promotions(&self) -> bool {
        self.defer
    }

    /// Whether the machine has room for heirs ([`HEIR_PROCESSORS`]; an unknown count has not).
    fn heirs(&self) -> bool {
        self.processors.is_some_and(|n| n >= HEIR_PROCESSORS)
    }

    /// Whether a sleep of `ns` by `waiter` after `polled` is an idle poll, and how it is served:
    /// only short sleeps of other guest threads, in a mode whose guest short sleeps are
    /// precise; after a poll of hos objects that found nothing, stretched; after a poll of a
    /// guest word, or HOS_IDLE_POLL_BLIND quiet sleeps in a row (when set), at the deadline
    /// (a readiness hos cannot see must not wait for the stretch).
    pub(crate) fn idle_poll(&self, waiter: Waiter, ns: u64, polled: Polled) -> Option<IdlePoll> {
        let idle = self.idle?;
        if waiter != Waiter::Worker || ns >= SHORT_SLEEP_NS {
            return None;
        }
        match polled {
            Polled::Objects => Some(idle),
            Polled::Words => Some(IdlePoll::AT_DEADLINE),
            Polled::Quiet(n) if self.blind > 0 && n >= self.blind => Some(IdlePoll::AT_DEADLINE),
            Polled::Quiet(_) | Polled::Nothing => None,
        }
    }

    /// How a sleep of `ns` by `waiter` is served, before the poller cap: a long sleep by its
    /// deadline class, a short one by the short-sleep table above.
    pub(crate) fn sleep_route(&self, waiter: Waiter, ns: u64) -> SleepRoute {
        if ns < SHORT_SLEEP_NS {
            return self.short_route(waiter);
        }
        match deadline_class(waiter) {
            DeadlineClass::Precise => SleepRoute::Precise,
            DeadlineClass::Relaxed => SleepRoute::Relaxed,
        }
    }
}

/// Whether `processors` is a small machine, or an unknown one, for the spin rule.
fn few(processors: Option<usize>) -> bool {
    processors.is_none_or(|n| n <= FEW_PROCESSORS)
}

/// The short paths of guest and host sleeps (the table in the module doc).
fn short_routes(config: &Config, processors: Option<usize>) -> (SleepRoute, SleepRoute) {
    match (config.short_sleep_timer, config.short_sleep) {
        (Some(true), _) | (None, ShortSleep::Timer) => (SleepRoute::Timer, SleepRoute::Precise),
        (Some(false), _) | (None, ShortSleep::Yield) => (SleepRoute::Yield, SleepRoute::Yield),
        (None, ShortSleep::Reactor) => (SleepRoute::Precise, SleepRoute::Precise),
        (None, ShortSleep::Auto) => match processors {
            Some(n) if n <= FEW_PROCESSORS => (SleepRoute::Timer, SleepRoute::Yield),
            _ => (SleepRoute::Yield, SleepRoute::Yield),
        },
    }
}

/// The poller cap: 0 where the timer switch decides for all or no guest sleep yields or takes
/// the precise path; else the switch, or a quarter of the processors, at least 1.
fn poller_cap(config: &Config, processors: Option<usize>, guest: SleepRoute) -> usize {
    if config.short_sleep_timer.is_some() || guest == SleepRoute::Timer {
        return 0;
    }
    config
        .short_sleep_pollers
        .unwrap_or_else(|| processors.map_or(1, |n| (n / PROCESSORS_A_POLLER).max(1)))
}

/// The idle-poll rule: on (HOS_IDLE_POLL) where guest short sleeps are precise, stretched by
/// HOS_IDLE_POLL_STRETCH_US, on shared ticks with HOS_IDLE_POLL_COALESCE.
fn idle_polls(config: &Config, guest: SleepRoute) -> Option<IdlePoll> {
    (config.idle_poll && guest == SleepRoute::Precise).then(|| IdlePoll {
        stretch_ns: config.idle_poll_stretch_us.saturating_mul(US),
        coalesce: config.idle_poll_coalesce,
    })
}

/// The spin of other guest threads, in us: the switch, else 5 or, on few or unknown
/// processors, the serial spin; never more than the serial spin (the one clamp).
fn spin_other_us(config: &Config, processors: Option<usize>) -> u64 {
    let us = match config.spin_other_us {
        Some(us) => us,
        None if few(processors) => config.spin_us,
        None => SPIN_OTHER_US,
    };
    us.min(config.spin_us)
}

/// "4 logical processors", "1 logical processor", "logical processors unknown".
struct Count(Option<usize>);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(1) => f.write_str("1 logical processor"),
            Some(n) => write!(f, "{n} logical processors"),
            None => f.write_str("logical processors unknown"),
        }
    }
}

/// A taken poller slot; dropping it (unwinding included) gives the slot back.
#[derive(Debug)]
#[must_use = "the slot is given back when it drops"]
pub(crate) struct PollerSlot<'a> {
    /// The policy whose count this slot holds; `None` for an uncounted slot.
    policy: Option<&'a Policy>,
}

impl Drop for PollerSlot<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.policy {
            // Relaxed: as in `poller_slot`.
            p.pollers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A spin's event-clock length is its nanoseconds on that clock.
    #[test]
    fn a_spins_ticks_span_its_nanoseconds() {
        let policy = Policy::new(&Config::default(), Some(16));
        let scale = sys::tick_scale();
        for spin in [policy.spin(Waiter::Serial), policy.spin(Waiter::Worker)] {
            let spanned = scale.span_ns(spin.ticks);
            assert!(
                spanned.abs_diff(spin.ns) <= spin.ns / 100 + 1,
                "{spin:?} spans {spanned} ns"
            );
        }
        assert_eq!(Spin::NONE.ticks, 0);
        let default = Spin::without_runtime();
        assert_eq!((default.ns, default.full), (DEFAULT_SPIN_US * US, true));
        assert!(scale.span_ns(default.ticks).abs_diff(default.ns) <= default.ns / 100);
    }

    #[test]
    fn counts_read_as_english() {
        assert_eq!(Count(Some(1)).to_string(), "1 logical processor");
        assert_eq!(Count(Some(4)).to_string(), "4 logical processors");
        assert_eq!(Count(None).to_string(), "logical processors unknown");
    }

    #[test]
    fn heirs_need_three_processors_and_a_spin() {
        let default = Config::default();
        for (n, heirs) in [
            (None, false),
            (Some(1), false),
            (Some(2), false),
            (Some(3), true),
        ] {
            let p = Policy::new(&default, n);
            for w in [Waiter::Serial, Waiter::Worker, Waiter::Host] {
                assert_eq!(p.wakes_heir(w), heirs, "{n:?} processors, {w:?}");
            }
        }
        let no_spin = Config {
            spin_us: 0,
            ..Config::default()
        };
        assert!(!Policy::new(&no_spin, Some(16)).wakes_heir(Waiter::Serial));
    }

    #[test]
    fn auto_decides_by_the_count_and_slots_come_back() {
        let config = Config {
            short_sleep: ShortSleep::Auto,
            ..Config::default()
        };
        let four = Policy::new(&config, Some(4));
        assert_eq!(four.short_route(Waiter::Worker), SleepRoute::Timer);
        assert_eq!(
            (four.spin(Waiter::Worker).ns, four.spin(Waiter::Worker).full),
            (20_000, true)
        );
        let sixteen = Policy::new(&config, Some(16));
        assert_eq!(sixteen.short_route(Waiter::Worker), SleepRoute::Yield);
        assert_eq!(
            (
                sixteen.spin(Waiter::Worker).ns,
                sixteen.spin(Waiter::Worker).full
            ),
            (5_000, false)
        );
        assert_eq!(sixteen.poller_cap(), 4);
        let slot = sixteen.poller_slot(Waiter::Worker);
        assert!(slot.is_some());
        assert_eq!(sixteen.pollers(), 1);
        drop(slot);
        assert_eq!(sixteen.pollers(), 0);
    }

    #[test]
    fn long_sleeps_and_waits_go_by_deadline_class() {
        let p = Policy::new(&Config::default(), Some(8));
        assert_eq!(
            p.sleep_route(Waiter::Worker, SHORT_SLEEP_NS),
            SleepRoute::Relaxed
        );
        assert_eq!(
            p.sleep_route(Waiter::Serial, SHORT_SLEEP_NS),
            SleepRoute::Precise
        );
        assert_eq!(p.sleep_route(Waiter::Host, u64::MAX), SleepRoute::Precise);
        assert_eq!(
            p.sleep_route(Waiter::Worker, SHORT_SLEEP_NS - 1),
            SleepRoute::Precise
        );
        assert_eq!(deadline_class(Waiter::Worker), DeadlineClass::Relaxed);
        assert_eq!(deadline_class(Waiter::Serial), DeadlineClass::Precise);
        assert_eq!(deadline_class(Waiter::Host), DeadlineClass::Precise);
    }

    #[test]
    fn routes_have_names() {
        assert_eq!(SleepRoute::Yield.name(), "yield");
        assert_eq!(SleepRoute::Timer.name(), "timer");
        assert_eq!(SleepRoute::Precise.name(), "precise");
        assert_eq!(SleepRoute::Relaxed.name(), "relaxed");
    }
}
