//! The runtime handle: config, policy, calibration, reactor, virtual cores, counters, threads.
//!
//! Invariant: a `Runtime` is a cheap clone of one shared state; the reactor thread runs from
//! `start` until `shutdown`, and after `shutdown` every wait ends (Cancelled) and no new
//! deadline is served.

use crate::build_error::BuildError;
use crate::calibration::Tracker;
use crate::config::Config;
use crate::machine::Calibration;
use crate::parker::{with_parker, WakeHook};
use crate::pause::PAUSED;
use crate::policy::Policy;
use crate::pollers::Ticks;
use crate::reactor::{DeadlineClass, Reactor};
use crate::role::Role;
use crate::spawn::{self, Spawn};
use crate::stats::{Bound, Counters, LastSeen, Live, Stats, Stripe, ThreadStats};
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::{lock, Mutex};
use crate::sys;
use crate::thread::{Activity, ThreadRecord, ThreadSpec};
use crate::token::{DetStats, Token};
use crate::trace::recorder::{Session, Settings};
use crate::trace::{Kind, WaitFor};
use crate::vcore::{Occupant, Vcores, YieldKind};
use std::sync::Arc;
use std::sync::Weak;
use std::time::Duration;

/// Aligned to a cache line, so that the handles' count sits on a line of its own: a host
/// thread's wait takes a handle (its default runtime), and those takes and drops move no
/// line that every thread reads (the configuration, the policy).
#[repr(align(64))]
struct Inner {
    config: Config,
    policy: Policy,
    counters: Arc<Counters>,
    tracker: Arc<Tracker>,
    reactor: Reactor,
    /// Shared with the threads' wake hooks, which claim on it without a handle on the runtime
    /// (`Runtime::claim_hook`).
    vcores: Arc<Vcores>,
    /// The deterministic mode's token (HOS_DET); `None`: the mode is off.
    token: Option<Token>,
    /// The guest's random entropy (`entropy.rs`).
    entropy: [u64; 4],
    ticks: Ticks,
    threads: Mutex<Vec<Weak<ThreadRecord>>>,
    next_id: AtomicU64,
    shut_down: AtomicBool,
    /// What the trace records for this runtime (docs/design.md section 17).
    session: Arc<Session>,
    /// Whether the HOS_TRACE file was written.
    traced: AtomicBool,
    /// The threads' figures and the reactor's CPU as the shutdown began.
    last: LastSeen,
}

impl Drop for Inner {
    /// The last handle is gone, so nothing can wait on this runtime any more: its reactor
    /// stops (a shutdown already stopped it: then this does nothing), instead of idling on
    /// its thread until the process ends.
    fn drop(&mut self) {
        // Acquire: as `is_shut_down`; a shutdown's stop of the reactor is seen.
        if !self.shut_down.load(Ordering::Acquire) {
            self.reactor.shutdown();
        }
    }
}

/// Runtime ids, for the trace's sessions. Std's atomic, not the loom shim's: an identity,
/// never a synchronisation point.
static NEXT_RUNTIME: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The kick word of every guest thread in the deterministic mode: always set, so that each
/// of its checkpoints reaches the token (`Runtime::checkpoint_kicked`) while the fast path
/// of a thread in the normal mode stays one load. Std's atomic, as every kick word.
static DET_KICK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

/// A handle to a runtime that does not keep it alive (the process's default runtime).
#[derive(Clone, Debug)]
pub(crate) struct WeakRuntime(Weak<Inner>);

/// Bumped whenever the runtime that host threads wait on may change otherwise than by the
/// death of the one they had (a runtime built, a runtime shut down), so that a host thread
/// may keep its answer until then (`context.rs`). Std's atomic, not the loom seam's: a
/// static, read by host threads' lookups, which no model runs.
static DEFAULTS_GEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A runtime was built or shut down: host threads look their runtime up again.
pub(crate) fn defaults_changed() {
    // Release: a host thread that reads the new count (Acquire) and looks up sees the change.
    DEFAULTS_GEN.fetch_add(1, std::sync::atomic::Ordering::Release);
}

/// The count [`defaults_changed`] bumps.
pub(crate) fn defaults_generation() -> u64 {
    // Acquire: pairs with `defaults_changed`.
    DEFAULTS_GEN.load(std::sync::atomic::Ordering::Acquire)
}

impl WeakRuntime {
    /// The runtime, if it is still alive.
    pub(crate) fn upgrade(&self) -> Option<Runtime> {
        self.0.upgrade().map(|inner| Runtime { inner })
    }

    /// Whether the runtime is still alive, without a handle on it: so a caller under a lock
    /// never drops the last handle there (that stops the reactor and joins its thread).
    pub(crate) fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// A running hos runtime. Clone it freely: every clone is the same runtime.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .field("calibration", &self.inner.tracker.get())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts a runtime from a validated config: counts the processors, calibrates (unless
    /// pinned) and starts the reactor thread.
    ///
    /// # Errors
    /// The reactor thread or the calibration's helper refused by the OS, or a calibration
    /// that could not measure; nothing is left running then.
    pub(crate) fn start(config: Config) -> Result<Runtime, BuildError> {
        Self::start_with(config, spawn::os)
    }

    /// [`Runtime::start`], starting its threads through `spawn` (tests play a refusing OS).
    pub(crate) fn start_with(config: Config, spawn: Spawn) -> Result<Runtime, BuildError> {
        let processors = config
            .logical_processors
            .unwrap_or_else(sys::logical_processors);
        let policy = Policy::new(&config, processors);
        let counters = Arc::new(Counters::default());
        let tracker = Arc::new(Tracker::new(
            config.calibration.unwrap_or_default(),
            config.calibration.is_some(),
        ));
        let reactor = Reactor::start(
            tracker.clone(),
            counters.clone(),
            config.calibration.is_none(),
            spawn,
        )?;
        let vcores = Arc::new(Vcores::new(&config, counters.clone()));
        let det = crate::det_run::token(&config)?;
        let entropy = det
            .as_ref()
            .map_or_else(crate::entropy::from_os, |d| d.entropy);
        let token = det.map(|d| d.token);
        // Relaxed: a unique id.
        let id = NEXT_RUNTIME.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let session = Session::start(
            id,
            Settings {
                flight: config.flight,
                collect: config.trace.is_some(),
                dir: config.flight_dir.clone().unwrap_or_else(std::env::temp_dir),
            },
        );
        let c = tracker.get();
        tracing::info!(
            os = sys::KIND,
            processors = ?processors,
            timer_lateness_ns = c.timer_lateness_ns,
            wake_latency_ns = c.wake_latency_ns,
            precise = ?c.precise,
            "hos runtime started"
        );
        let rt = Runtime {
            inner: Arc::new(Inner {
                config,
                policy,
                counters,
                tracker,
                reactor,
                vcores,
                token,
                entropy,
                ticks: Ticks::default(),
                threads: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(1),
                shut_down: AtomicBool::new(false),
                session,
                traced: AtomicBool::new(false),
                last: LastSeen::new(),
            }),
        };
        rt.hook_softlocks();
        Ok(rt)
    }

    /// Whether two handles are the same runtime.
    pub fn same(&self, other: &Runtime) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A handle that does not keep the runtime alive.
    pub(crate) fn downgrade(&self) -> WeakRuntime {
        WeakRuntime(Arc::downgrade(&self.inner))
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The decisions made from it.
    pub(crate) fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// Live calibration estimates.
    pub(crate) fn tracker(&self) -> &Tracker {
        &self.inner.tracker
    }

    /// The calibration in force now.
    pub fn calibration(&self) -> Calibration {
        self.inner.tracker.get()
    }

    /// The reactor.
    pub fn reactor(&self) -> &Reactor {
        &self.inner.reactor
    }

    /// The shared ticks of idle pollers.
    pub(crate) fn ticks(&self) -> &Ticks {
        &self.inner.ticks
    }

    /// The calling thread's stripe of the live counters, for its counts (the runtime's own
    /// parts count there; hosts read [`Runtime::stats`]).
    pub fn counters(&self) -> &Stripe {
        self.inner.counters.here()
    }

    /// Registers a guest thread; whether it is serial and first is what its role makes of its
    /// name (`Role::flags`).
    pub fn register_thread(&self, spec: &ThreadSpec) -> Arc<ThreadRecord> {
        // Relaxed: a unique id, no ordering.
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let flags = spec.role.flags(&spec.name, &self.inner.config);
        let rec = Arc::new(ThreadRecord::new(id, spec, flags.serial, flags.first));
        if let Some(token) = &self.inner.token {
            let core = token.core_of(spec.ideal_core, spec.core_mask);
            token.enroll(id, core, spec.priority);
        }
        let mut threads = lock(&self.inner.threads);
        threads.retain(|w| w.strong_count() > 0);
        threads.push(Arc::downgrade(&rec));
        rec
    }

    /// Renames a guest thread; under [`Role::Auto`] the new name decides whether it is serial
    /// and first (an explicit role stays as it is), and a new rank re-ranks it on the virtual
    /// cores at once.
    pub fn rename_thread(&self, rec: &ThreadRecord, name: &str) {
        self.retitle(rec, Some(name), None);
    }

    /// Declares a guest thread's role; what it makes of the thread's name applies at once: its
    /// rank on the virtual cores, its wake slice, and its next waits and sleeps.
    pub fn set_role(&self, rec: &ThreadRecord, role: Role) {
        self.retitle(rec, None, Some(role));
    }

    /// Renames or re-roles `rec` (`Role::flags` decides) and applies what changed.
    fn retitle(&self, rec: &ThreadRecord, name: Option<&str>, role: Option<Role>) {
        let config = &self.inner.config;
        rec.retitle(name, role, |name, role| role.flags(name, config));
        if name.is_some() {
            self.trace_retitle(rec, Kind::Rename);
        }
        self.inner.vcores.refresh(rec);
        self.ask_wake_slice(rec);
    }

    /// Sets a guest thread's Horizon priority (validated by the caller) and re-ranks it on
    /// the virtual cores at once, waiting or holding.
    pub fn set_priority(&self, rec: &ThreadRecord, priority: u8) {
        rec.set_priority(priority);
        if let Some(token) = &self.inner.token {
            token.set_priority(rec.id(), rec.running_priority());
        }
        self.trace_retitle(rec, Kind::Priority);
        self.inner.vcores.refresh(rec);
        self.ask_wake_slice(rec);
    }

    /// Asks the OS for guest thread `rec`'s wake slice as its own priority and role now name
    /// it (`Policy::wake_slice_ns`), if that changed; counts what the OS did with each
    /// non-default ask, and logs the first it took and the first it did not.
    pub(crate) fn ask_wake_slice(&self, rec: &ThreadRecord) {
        let policy = self.policy();
        let Some((ns, took)) = rec.ask_wake_slice(|p, serial| policy.wake_slice_ns(p, serial))
        else {
            return;
        };
        if ns == 0 {
            return;
        }
        let c = &self.inner.counters;
        let counter = if took {
            &c.wake_slices
        } else {
            &c.wake_slices_ignored
        };
        // Relaxed: a counter; the first increment only picks the one log line.
        if counter.fetch_add(1, Ordering::Relaxed) == 0 {
            if took {
                tracing::info!("wake slice: the OS took {ns} ns for {}", rec.name());
            } else {
                tracing::info!(
                    "wake slice: the OS ignored {ns} ns for {} (custom slices need Linux 6.12 or later and a SCHED_OTHER or SCHED_BATCH thread); it keeps the OS default",
                    rec.name()
                );
            }
        }
    }

    /// Lends a guest thread a better priority (`Some`: a thread waiting for a lock it holds
    /// has it), or takes it back (`None`), and re-ranks it on the virtual cores at once: it
    /// runs at the better of its own and the lent one (priority inheritance).
    pub fn lend_priority(&self, rec: &ThreadRecord, lent: Option<u8>) {
        rec.set_lent_priority(lent);
        if let Some(token) = &self.inner.token {
            token.set_priority(rec.id(), rec.running_priority());
        }
        crate::trace::lent(self.session().id(), rec.id(), lent);
        self.inner.vcores.refresh(rec);
    }

    /// Sets a guest thread's ideal core and core mask (validated by the caller) and re-places
    /// it on the virtual cores at once.
    pub fn set_affinity(&self, rec: &ThreadRecord, ideal_core: i32, core_mask: u64) {
        rec.set_affinity(ideal_core, core_mask);
        self.trace_retitle(rec, Kind::Affinity);
        self.inner.vcores.refresh(rec);
    }

    /// Every live guest thread.
    pub fn threads(&self) -> Vec<Arc<ThreadRecord>> {
        let threads = lock(&self.inner.threads);
        threads.iter().filter_map(Weak::upgrade).collect()
    }

    /// Takes a virtual core for the calling guest thread `rec` (see `Vcores::acquire`).
    ///
    /// # Blocking
    /// Until a core is granted, the runtime shuts down, or the escape time passes.
    pub fn acquire_core(&self, rec: &ThreadRecord) {
        // In the deterministic mode the token stands for every core (`token.rs`).
        if let Some(token) = &self.inner.token {
            return token.take_turn(rec.id());
        }
        if self.inner.config.vcore_claim_defer {
            rec.end_deferral();
        }
        let escape = self.inner.vcores.acquire(rec, self.spin_of(rec));
        self.log_escape(rec, escape);
        self.pause_point(rec);
    }

    /// Gives the calling guest thread `rec`'s virtual core back; `true` if it held one. In
    /// the deterministic mode the thread keeps the token (`false`): it gives it up only when
    /// it waits, yields, ends its quantum or ends ([`Runtime::end_thread`]).
    pub fn release_core(&self, rec: &ThreadRecord) -> bool {
        if self.inner.token.is_some() {
            return false;
        }
        self.inner.vcores.release(rec)
    }

    /// Guest thread `rec`'s OS thread was started (by its spawner, or it is the caller, an
    /// attached thread): in the deterministic mode it becomes ready for its first turn, which
    /// it waits for in [`Runtime::acquire_core`]; nothing otherwise.
    pub fn start_thread(&self, rec: &ThreadRecord) {
        if let Some(token) = &self.inner.token {
            token.started(rec.id());
        }
    }

    /// Guest thread `rec` ends (the last thing it does as a guest thread, or a thread that
    /// never started): in the deterministic mode it leaves the schedule and the token goes
    /// on; nothing otherwise.
    pub fn end_thread(&self, rec: &ThreadRecord) {
        if let Some(token) = &self.inner.token {
            token.exit(rec.id());
        }
    }

    /// Guest thread `rec`'s kick word, which its checkpoints' fast path (and a C host's
    /// generated code) reads: its seat's, or in the deterministic mode a word always set, so
    /// every checkpoint counts in the token's quantum.
    pub fn kick_word(&self, rec: &ThreadRecord) -> &'static std::sync::atomic::AtomicU32 {
        match self.inner.token {
            Some(_) => &DET_KICK,
            None => rec.seat().kick_word(),
        }
    }

    /// The deterministic mode's token, if the mode is on.
    pub(crate) fn token(&self) -> Option<&Token> {
        self.inner.token.as_ref()
    }

    /// The guest's random entropy, svcGetInfo(RandomEntropy)'s four words, fixed at build:
    /// in the deterministic mode drawn from the run's entropy seed (the selector's, or the
    /// replayed recording's), so a replay's guest sees the same; else from the OS.
    pub fn entropy(&self) -> [u64; 4] {
        self.inner.entropy
    }

    /// The deterministic mode's figures (decisions, their hash, the virtual time); `None`
    /// when the mode is off.
    pub fn det_stats(&self) -> Option<DetStats> {
        self.inner.token.as_ref().map(Token::stats)
    }

    /// Gives the calling guest thread `rec`'s virtual core back for a wait that claims (on an
    /// object, an idle poll: `Wait::claims`):
    /// while it waits, whoever wakes it claims a core for it (see `vcore/claim.rs`). `true`
    /// if it held one.
    pub(crate) fn step_away(&self, rec: &ThreadRecord) -> bool {
        self.inner.vcores.step_away(rec)
    }

    /// The calling guest thread `rec`'s wait goes on after a wake: a core claimed for it
    /// goes back.
    pub(crate) fn unclaim_core(&self, rec: &ThreadRecord) {
        if self.inner.config.vcore_claim_defer {
            rec.end_deferral();
        }
        self.inner.vcores.unclaim(rec);
    }

    /// The wake hook of guest thread `rec`'s parker: it claims `rec`'s core on this
    /// runtime's virtual cores while `rec` is alive (weak, so a parked thread does not keep
    /// its record alive, nor the runtime: the hook holds the cores alone). No runtime handle
    /// is made for a claim, so a wake moves no count the runtime's threads share; one is, to
    /// reach the reactor, only for a claim that defers the wake: that claim gets a relaxed
    /// timer at the time the claim names, which wakes the thread then if nothing did (its
    /// escape); the thread cancels it when it takes a core or gives the claim back. A timer
    /// kept after the thread took its core (the thread ran between the claim and this keep)
    /// fires at the latest then, a spurious wake that every wait polls through, or is
    /// cancelled at the thread's next core.
    pub(crate) fn claim_hook(&self, rec: &Arc<ThreadRecord>) -> WakeHook {
        let (vcores, rt, rec) = (
            Arc::clone(&self.inner.vcores),
            self.downgrade(),
            Arc::downgrade(rec),
        );
        Arc::new(move || {
            let Some(rec) = rec.upgrade() else {
                return false;
            };
            let Some(until) = vcores.claim(&*rec) else {
                return false;
            };
            // Set when the claim deferred (it deferred with this waker). The runtime is alive
            // while `rec` waits (its thread holds it), so the upgrade fails only for a thread
            // that stopped waiting meanwhile: its wake is given, a spurious one.
            let (Some(waker), Some(rt)) = (rec.waker(), rt.upgrade()) else {
                return false;
            };
            let mut timer = rt.reactor().timer(until, DeadlineClass::Relaxed);
            timer.register(&waker);
            rec.defer(timer);
            true
        })
    }

    /// A checkpoint of the calling guest thread `rec`: where a kicked thread gives its virtual
    /// core up (see `Vcores::checkpoint`).
    ///
    /// # Blocking
    /// Only when it gives its core up, until it has one again.
    #[inline]
    pub fn checkpoint(&self, rec: &ThreadRecord) {
        // The fast path of generated code's loop heads: one load when nothing is asked.
        if rec.seat().is_asked() {
            self.checkpoint_asked(rec);
        }
    }

    /// A checkpoint of the calling guest thread `rec` whose kick word is set (`context.rs`):
    /// in the deterministic mode (whose threads' word is always set) a step of the token's
    /// quantum, else [`Runtime::checkpoint`].
    ///
    /// # Blocking
    /// As [`Runtime::checkpoint`], or at the quantum's end until its next turn.
    pub(crate) fn checkpoint_kicked(&self, rec: &ThreadRecord) {
        match &self.inner.token {
            Some(token) => {
                self.det_pause_point(rec, token);
                token.checkpoint(rec.id());
            }
            None => self.checkpoint(rec),
        }
    }

    /// A pause point of the calling guest thread `rec` in the deterministic mode: if a pause
    /// is asked of it, it gives the token up (a yield's decision), shows waiting on
    /// [`PAUSED`], and goes on once resumed and picked (`Token::set_paused`). One load when
    /// none is asked.
    ///
    /// # Blocking
    /// While it is paused, and then until its turn.
    fn det_pause_point(&self, rec: &ThreadRecord, token: &Token) {
        if !rec.seat().pause_asked() {
            return;
        }
        crate::trace::wait_begin(WaitFor::Object);
        crate::trace::blocked(rec.pause() as *const _ as usize, PAUSED, 0);
        rec.mark_wait(Some(PAUSED));
        token.yield_turn(rec.id(), YieldKind::SamePriority);
        rec.mark_wait(None);
        crate::trace::wait_end(false);
    }

    #[cold]
    fn checkpoint_asked(&self, rec: &ThreadRecord) {
        let escape = self.inner.vcores.checkpoint(rec, self.spin_of(rec));
        self.log_escape(rec, escape);
        self.pause_point(rec);
    }

    /// A pause point of the calling guest thread `rec` (`pause.rs`): if a pause is asked of
    /// it, it gives its core back and parks until the pause is lifted or the runtime shuts
    /// down, then takes a core again. One load when none is asked.
    ///
    /// # Blocking
    /// While it is paused, and then until it has a core again.
    #[inline]
    pub fn pause_point(&self, rec: &ThreadRecord) {
        if rec.seat().pause_asked() {
            self.paused(rec);
        }
    }

    #[cold]
    fn paused(&self, rec: &ThreadRecord) {
        loop {
            let held = self.inner.vcores.release(rec);
            // The trace's wait tree shows it waiting on "pause".
            crate::trace::wait_begin(WaitFor::Object);
            crate::trace::blocked(rec.pause() as *const _ as usize, PAUSED, 0);
            // Notes the stop for the asker (`ThreadRecord::set_activity`).
            rec.mark_wait(Some(PAUSED));
            while rec.pause().is_asked() && !self.is_shut_down() {
                // Lifted between the check and the park: the lift's unpark left the token.
                with_parker(|p, _| p.park(None));
            }
            if self.is_shut_down() {
                // Asked after the shutdown lifted every pause: no later pause point stops.
                rec.pause().lift(rec.seat());
            }
            rec.mark_wait(None);
            crate::trace::wait_end(false);
            if !held {
                return;
            }
            let escape = self.inner.vcores.acquire(rec, self.spin_of(rec));
            self.log_escape(rec, escape);
            // Asked again while it waited for the core: it gives the core back at once.
            if !rec.seat().pause_asked() || self.is_shut_down() {
                return;
            }
        }
    }

    /// Asks guest thread `rec` to pause at its next pause point (`pause.rs`); `false` if a
    /// pause is asked of it already.
    pub fn ask_pause(&self, rec: &ThreadRecord) -> bool {
        // In the deterministic mode the token first: the holder's pause point then gives the
        // token to the others only.
        if let Some(token) = &self.inner.token {
            if !rec.pause().is_asked() {
                token.set_paused(rec.id(), true);
            }
        }
        rec.pause().ask(rec.seat())
    }

    /// Lifts the pause asked of guest thread `rec` and wakes it (in the deterministic mode,
    /// makes it a candidate again); `false` if none was asked.
    pub fn lift_pause(&self, rec: &ThreadRecord) -> bool {
        let lifted = rec.pause().lift(rec.seat());
        if lifted {
            // In the deterministic mode it waits for its turn, not on its parker: an unpark
            // there would wake its wait (a decision the run did not make).
            match &self.inner.token {
                Some(token) => token.set_paused(rec.id(), false),
                None => rec.unpark(),
            }
        }
        lifted
    }

    /// Whether a pause is asked of guest thread `rec` (it may not have stopped yet).
    pub fn is_pause_asked(&self, rec: &ThreadRecord) -> bool {
        rec.pause().is_asked()
    }

    /// Waits until guest thread `rec`, asked to pause, has stopped: parked at a pause point,
    /// in a runtime wait (it meets a pause point before its guest code runs again), or ended;
    /// or until its pause is lifted or the runtime shuts down (`true` in each case), or
    /// `deadline` (a `sys::now()` value; `None`: no limit) passes (`false`). A guest caller
    /// gives its virtual core back first (`release_core`): it only waits here.
    ///
    /// # Blocking
    /// Until one of the above.
    pub fn wait_paused(&self, rec: &ThreadRecord, deadline: Option<u64>) -> bool {
        let token = self.inner.token.as_ref();
        let stopped = || {
            // SeqCst: pairs with the thread's fence after the end of a wait, between the
            // pause bit set before this and the activity read after it (`pause.rs`).
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            self.is_shut_down()
                || matches!(rec.activity(), Activity::Waiting { .. } | Activity::Ended)
                || token.is_some_and(|t| t.is_paused_out(rec.id()))
        };
        // Look again every millisecond: a thread's wait may begin unseen by its own look at
        // the pause bit, and a holder that gives the token up tells no asker.
        loop {
            let look = sys::now().saturating_add(1_000_000);
            if rec
                .pause()
                .wait_stopped(stopped, Some(deadline.map_or(look, |d| d.min(look))))
            {
                return true;
            }
            if deadline.is_some_and(|d| sys::now() >= d) {
                return false;
            }
        }
    }

    /// A yield of the calling guest thread `rec` on the virtual cores; `true` if it handed its
    /// core over (else the caller yields the OS thread).
    ///
    /// # Blocking
    /// When it hands its core over, until it has one again.
    pub fn yield_core(&self, rec: &ThreadRecord, kind: YieldKind) -> bool {
        // A yield offers the core: the pollers this thread promoted are woken first.
        crate::pollers::flush_deferred();
        // Every kind of yield is a decision in the deterministic mode (a pause point too),
        // which follows the kind within the thread's core (`token/yielding.rs`).
        if let Some(token) = &self.inner.token {
            self.det_pause_point(rec, token);
            token.yield_turn(rec.id(), kind);
            return true;
        }
        let y = self.inner.vcores.yield_core(rec, kind, self.spin_of(rec));
        crate::trace::yielded(kind as u8, y.handed);
        self.log_escape(rec, y.escape);
        self.pause_point(rec);
        y.handed
    }

    /// The spin of `rec`'s waits, by its role.
    fn spin_of(&self, rec: &ThreadRecord) -> crate::policy::Spin {
        self.inner.policy.spin(rec.waiter())
    }

    /// The trace's session of this runtime.
    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.inner.session
    }

    /// Whether the HOS_TRACE file is still to be written (`true` once, for the caller that
    /// writes it).
    pub(crate) fn take_trace_file(&self) -> bool {
        // AcqRel: one caller writes it.
        !self.inner.traced.swap(true, Ordering::AcqRel)
    }

    /// The virtual cores.
    pub(crate) fn vcores(&self) -> &Vcores {
        &self.inner.vcores
    }

    /// Counters, calibration, process and per-thread CPU. After a shutdown, the threads and
    /// the reactor's CPU as it began (see [`Stats`]).
    pub fn stats(&self) -> Stats {
        let mut s = self.inner.counters.snapshot();
        s.calibration = self.calibration();
        s.vcore_bound = bound(&self.inner.config);
        s.process_cpu = sys::process_cpu();
        s.vcores_held = self.inner.vcores.held();
        let live = self.inner.last.get().unwrap_or_else(|| self.live());
        s.reactor_cpu = live.reactor_cpu;
        s.threads = live.threads;
        s
    }

    /// What only the live threads can tell: the reactor's CPU, each guest thread's figures.
    fn live(&self) -> Live {
        Live {
            reactor_cpu: self.inner.reactor.cpu(),
            threads: self
                .threads()
                .iter()
                .map(|t| ThreadStats {
                    name: t.name().to_string(),
                    priority: t.priority(),
                    serial: t.is_serial(),
                    cpu: t.cpu(),
                    sleeps: t.sleeps(),
                    vcore_wait: Duration::from_nanos(t.vcore_wait_ns()),
                })
                .collect(),
        }
    }

    /// Whether `shutdown` was called.
    pub fn is_shut_down(&self) -> bool {
        // Acquire: pairs with shutdown's Release, so a waiter that sees it sees the rest.
        self.inner.shut_down.load(Ordering::Acquire)
    }

    /// Shuts down: every wait ends (Cancelled), the reactor stops. Idempotent. Guest threads
    /// are joined by their owners (the `hos` crate's `Runtime::shutdown` joins them).
    pub fn shutdown(&self) {
        // First, while every thread still runs: what `stats` reads from then on.
        self.inner.last.keep(|| self.live());
        // The deterministic mode ends before any guest can see the shutdown (a wait that
        // returns Cancelled), so a recording ends where the host stopped the run, not a few
        // decisions later in a race with the flag. Idempotent, as the flag's swap is.
        if let Some(token) = &self.inner.token {
            token.stop();
        }
        if self.inner.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        defaults_changed();
        crate::chaos::point();
        self.inner.reactor.shutdown();
        crate::chaos::point();
        self.inner.vcores.shutdown();
        for t in self.threads() {
            t.unpark();
            // Every pause ends (its asker's wait too): a shut-down runtime pauses nothing.
            t.pause().lift(t.seat());
        }
    }
}

/// The bound a config has the virtual cores keep.
fn bound(config: &Config) -> Bound {
    match (config.vcores, config.vcore_grace_us) {
        (false, _) => Bound::Off,
        (true, 0) => Bound::Strict,
        (true, us) => Bound::Relaxed {
            grace: Duration::from_micros(us),
        },
    }
}
