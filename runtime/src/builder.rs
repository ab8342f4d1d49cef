//! The builder that starts a runtime: every switch has a method, `.env()` reads the `HOS_*`
//! switches (docs/switches.md lists every one), `build()` checks them and starts the runtime.
//!
//! Invariant: a value set in code wins over the environment unless the host asked
//! otherwise ([`Builder::env_overrides`]), and a bad value, from code or the environment, is
//! a [`ConfigError`] naming the method or the variable before anything starts. What the
//! environment says that is not an error (a name that is no switch, a boolean that is no
//! boolean word, a value the code's wins over) is warned about by `build`, once each, before
//! the runtime starts; an HOS_TRACE file that cannot be opened for writing is a
//! [`BuildError::Trace`]. The parsing and checking rules live in [`crate::config`]; this file
//! only applies them in order.

use crate::build_error::BuildError;
use crate::config::unknown::unknown;
use crate::config::{check, parts, Config, ConfigError, ShortSleep, Switch};
use crate::context::set_default;
use crate::det::clock::Pacing;
use crate::det::selector::Spec;
use crate::machine::Calibration;
use crate::report::set_stderr;
use crate::runtime::Runtime;
use crate::spawn;
use crate::watchdog;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// A host function from a variable's name to its value, `None` if unset.
type Lookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where the environment is read from.
enum EnvSource {
    /// The process environment, listed when the configuration is resolved.
    Process,
    /// Name and value pairs the host gave (`env_vars`); a later pair wins over an earlier one.
    Vars(Vec<(String, String)>),
    /// A host function from a variable's name to its value (`env_from`): asked for each
    /// switch, never listed, so a name that is no switch cannot be seen.
    From(Lookup),
}

impl EnvSource {
    /// Every pair, if the source can be listed. A name or value of the process environment
    /// that is not UTF-8 is read lossily (so a boolean is on and a number is an error naming
    /// it), never taken for unset.
    fn list(&self) -> Option<Vec<(String, String)>> {
        match self {
            EnvSource::Process => Some(
                std::env::vars_os()
                    .map(|(n, v)| {
                        (
                            n.to_string_lossy().into_owned(),
                            v.to_string_lossy().into_owned(),
                        )
                    })
                    .collect(),
            ),
            EnvSource::Vars(pairs) => Some(pairs.clone()),
            EnvSource::From(_) => None,
        }
    }
}

/// A configuration resolved, with the warnings `build` gives for it.
struct Settled {
    config: Config,
    warnings: Vec<String>,
}

/// Builds a runtime. `R` is what `build` returns: the runtime itself, or a host-facing
/// wrapper made from it (the `hos` crate's `Runtime`).
///
/// Every switch has a method; a value set in code wins over the environment unless the host
/// calls [`Builder::env_overrides`]. Values are checked in [`Builder::resolve`], which `build`
/// calls: a bad one is a [`ConfigError`] naming the method (or the `HOS_*` variable).
///
/// ```
/// use hos_runtime::{Builder, ShortSleep};
///
/// let builder: Builder = Builder::new();
/// let config = builder
///     .env_from(|name| (name == "HOS_CORES").then(|| "4".to_string()))
///     .short_sleep(ShortSleep::Timer)
///     .spin_us(30)
///     .resolve()?;
/// assert_eq!((config.cores, config.spin_us), (4, 30));
///
/// let builder: Builder = Builder::new();
/// let err = builder.vcores(9).resolve().unwrap_err();
/// assert_eq!((err.switch, err.value.as_str()), ("vcores", "9"));
/// # Ok::<(), hos_runtime::ConfigError>(())
/// ```
pub struct Builder<R = Runtime> {
    config: Config,
    /// Switches set in code, one [`Switch::bit`] each.
    in_code: u64,
    env: Option<EnvSource>,
    env_overrides: bool,
    out: PhantomData<fn() -> R>,
}

impl<R: From<Runtime>> Default for Builder<R> {
    fn default() -> Self {
        Builder {
            config: Config::default(),
            in_code: 0,
            env: None,
            env_overrides: false,
            out: PhantomData,
        }
    }
}

impl<R: From<Runtime>> Builder<R> {
    /// A builder with every switch at its default and the environment not read.
    pub fn new() -> Self {
        Self::default()
    }

    fn in_code(mut self, switch: Switch) -> Self {
        self.in_code |= switch.bit();
        self
    }

    /// Replaces the whole configuration; every switch counts as set in code.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self.in_code = !0;
        self
    }

    /// Reads every `HOS_*` switch from the process environment when the runtime is built
    /// (in [`Builder::resolve`]), never later. Values set in code win unless
    /// [`Builder::env_overrides`] is called too. A bad value makes `build` fail; `build` warns
    /// about a `HOS_*` variable that is no switch (naming the closest one), a boolean that is
    /// no boolean word, and a value the code's wins over.
    pub fn env(mut self) -> Self {
        self.env = Some(EnvSource::Process);
        self
    }

    /// Like [`Builder::env`], from `source` (a variable's name to its value, `None` if unset)
    /// instead of the process environment: for tests (setting process variables while tests
    /// run in parallel is unsound) and for hosts that keep switches elsewhere. A function
    /// cannot be listed, so a name that is no switch goes unseen (`env_vars` sees it). The
    /// last of `env`, `env_from` and `env_vars` chooses the source.
    pub fn env_from(
        mut self,
        source: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.env = Some(EnvSource::From(Box::new(source)));
        self
    }

    /// Like [`Builder::env`], from these name and value pairs instead of the process
    /// environment (a later pair wins over an earlier one): for hosts that keep switches in
    /// their own settings. Like the process environment they are listed, so `build` warns
    /// about a `HOS_*` name among them that is no switch. The last of `env`, `env_from` and
    /// `env_vars` chooses the source.
    pub fn env_vars<N: Into<String>, V: Into<String>>(
        mut self,
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        let pairs = pairs.into_iter().map(|(n, v)| (n.into(), v.into()));
        self.env = Some(EnvSource::Vars(pairs.collect()));
        self
    }

    /// Lets the environment override values set in code too (the user's switches win over the
    /// host's). Reads the process environment unless `env_from` or `env_vars` chose another
    /// source.
    pub fn env_overrides(mut self) -> Self {
        self.env_overrides = true;
        if self.env.is_none() {
            self.env = Some(EnvSource::Process);
        }
        self
    }

    /// HOS_SHORT_SLEEP: the short-sleep mode (default `Reactor`).
    pub fn short_sleep(mut self, mode: ShortSleep) -> Self {
        self.config.short_sleep = mode;
        self.in_code(Switch::ShortSleep)
    }

    /// HOS_SHORT_SLEEP_TIMER: `Some(true)` puts every short sleep on the timer, `Some(false)`
    /// makes every short sleep yield, `None` follows the mode. Either `Some` turns the poller
    /// cap off.
    pub fn short_sleep_timer(mut self, all: Option<bool>) -> Self {
        self.config.short_sleep_timer = all;
        self.in_code(Switch::ShortSleepTimer)
    }

    /// HOS_SHORT_SLEEP_POLLERS: the poller cap, 0..=1024 (`Some(0)`: no cap; `None`: a
    /// quarter of the logical processors, at least 1).
    pub fn short_sleep_pollers(mut self, cap: Option<usize>) -> Self {
        self.config.short_sleep_pollers = cap;
        self.in_code(Switch::ShortSleepPollers)
    }

    /// HOS_SPIN_US: the spin of serial and host threads before a wait parks, 0..=1_000_000
    /// microseconds (default 20).
    pub fn spin_us(mut self, us: u64) -> Self {
        self.config.spin_us = us;
        self.in_code(Switch::SpinUs)
    }

    /// HOS_SPIN_OTHER_US: the spin of other guest threads, 0..=1_000_000 microseconds
    /// (default 5 with more than 6 processors, else the serial spin). Setting it applies it on
    /// every machine. Clamped to `spin_us`, the one documented clamp.
    pub fn spin_other_us(mut self, us: u64) -> Self {
        self.config.spin_other_us = Some(us);
        self.in_code(Switch::SpinOtherUs)
    }

    /// HOS_IDLE_POLL: `false` serves idle pollers' sleeps like any other (default on; it
    /// applies in reactor mode only).
    pub fn idle_poll(mut self, on: bool) -> Self {
        self.config.idle_poll = on;
        self.in_code(Switch::IdlePoll)
    }

    /// HOS_IDLE_POLL_STRETCH_US: how far past its deadline an idle poller's sleep may last
    /// while nothing it polled becomes ready, 0..=1_000_000 microseconds (default 1000).
    pub fn idle_poll_stretch_us(mut self, us: u64) -> Self {
        self.config.idle_poll_stretch_us = us;
        self.in_code(Switch::IdlePollStretchUs)
    }

    /// HOS_IDLE_POLL_COALESCE: idle pollers wake together on shared ticks
    /// HOS_IDLE_POLL_STRETCH_US apart, the first at or after their deadline (default off).
    pub fn idle_poll_coalesce(mut self, on: bool) -> Self {
        self.config.idle_poll_coalesce = on;
        self.in_code(Switch::IdlePollCoalesce)
    }

    /// HOS_IDLE_POLL_DEFER: an idle poller worse in priority than the guest thread that
    /// readied what it polled is promoted when that thread next gives its core up or offers
    /// it (a wait, a sleep, a yield, a wait for a core, its exit), not at once (default on).
    pub fn idle_poll_defer(mut self, on: bool) -> Self {
        self.config.idle_poll_defer = on;
        self.in_code(Switch::IdlePollDefer)
    }

    /// HOS_IDLE_POLL_BLIND: after this many short sleeps in a row with no other svc or nn::os
    /// call between them, a guest thread's short sleeps are relaxed as an idle poll of
    /// something hos cannot see, 0..=1_000_000 (default 0: never).
    pub fn idle_poll_blind(mut self, sleeps: u32) -> Self {
        self.config.idle_poll_blind = sleeps;
        self.in_code(Switch::IdlePollBlind)
    }

    /// HOS_SERIAL: the name parts of serial threads among those of role `Auto` (case-sensitive
    /// substrings; trimmed, empty parts dropped). Replaces the default `MainThread`,
    /// `Presentation`.
    pub fn serial<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.config.serial = parts(names);
        self.in_code(Switch::Serial)
    }

    /// HOS_CORES: the number of virtual cores the game sees, 1..=8 (default 6).
    pub fn vcores(mut self, n: usize) -> Self {
        self.config.cores = n;
        self.in_code(Switch::Cores)
    }

    /// HOS_VCORES: `false` turns the virtual-core semaphore off (default on).
    pub fn vcores_enabled(mut self, on: bool) -> Self {
        self.config.vcores = on;
        self.in_code(Switch::Vcores)
    }

    /// HOS_VCORE_CLAIM: `false` lets a woken guest thread ask for its virtual core only once
    /// it runs, as before claims (default on: the waker claims it; `vcore/claim.rs`).
    pub fn vcore_claim(mut self, on: bool) -> Self {
        self.config.vcore_claim = on;
        self.in_code(Switch::VcoreClaim)
    }

    /// HOS_VCORE_CLAIM_DEFER: `true` makes a claim that queues the woken thread (no free core
    /// it may take) wake it only when its core is handed to it, from the thread that hands it
    /// over (default on; `false` wakes it at once, to queue; `vcore/claim.rs`,
    /// docs/switches.md).
    pub fn vcore_claim_defer(mut self, on: bool) -> Self {
        self.config.vcore_claim_defer = on;
        self.in_code(Switch::VcoreClaimDefer)
    }

    /// HOS_VCORE_GRACE_US: 0..=1_000_000 microseconds after which a waiter whose kick a holder
    /// has not answered takes the holder's core; the holder runs on until its next checkpoint,
    /// where it waits for a core again (default 100; 0: never; docs/switches.md says why).
    pub fn vcore_grace_us(mut self, us: u64) -> Self {
        self.config.vcore_grace_us = us;
        self.in_code(Switch::VcoreGraceUs)
    }

    /// HOS_WAKE_SLICE_US: 0 or 100..=100_000 microseconds, the OS scheduling slice asked for
    /// guest threads of priority [`wake_slice_priority`](Self::wake_slice_priority) or better
    /// and serial threads, so that their wake-ups preempt worse threads (default 300; 0: never
    /// ask; Linux 6.12 and later; docs/switches.md says why).
    pub fn wake_slice_us(mut self, us: u64) -> Self {
        self.config.wake_slice_us = us;
        self.in_code(Switch::WakeSliceUs)
    }

    /// HOS_WAKE_SLICE_PRIORITY: 0..=63, the worst guest priority given the wake slice
    /// (default 44, a game's main thread's usual priority).
    pub fn wake_slice_priority(mut self, priority: u8) -> Self {
        self.config.wake_slice_priority = priority;
        self.in_code(Switch::WakeSlicePriority)
    }

    /// HOS_VCORE_SLICE_US: the time slice, 1..=1_000_000 microseconds (default 2000).
    pub fn vcore_slice_us(mut self, us: u64) -> Self {
        self.config.vcore_slice_us = us;
        self.in_code(Switch::VcoreSliceUs)
    }

    /// HOS_VCORE_ESCAPE_MS: the wait after which a waiter takes a core anyway,
    /// 1..=3_600_000 milliseconds (default 2000).
    pub fn vcore_escape_ms(mut self, ms: u64) -> Self {
        self.config.vcore_escape_ms = ms;
        self.in_code(Switch::VcoreEscapeMs)
    }

    /// HOS_VCORE_FIRST: the name parts of threads of role `Auto` that rank first on the
    /// virtual cores (case-sensitive substrings; trimmed, empty parts dropped; default none);
    /// role `SerialFirst` ranks a thread first whatever its name.
    pub fn vcore_first<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.config.vcore_first = parts(names);
        self.in_code(Switch::VcoreFirst)
    }

    /// HOS_SLEEP_LOG: trace every guest sleep (default off).
    pub fn sleep_log(mut self, on: bool) -> Self {
        self.config.sleep_log = on;
        self.in_code(Switch::SleepLog)
    }

    /// HOS_TLS_TRACE: trace each guest thread's name, role, priority, ideal core and mask when
    /// it starts (default off).
    pub fn tls_trace(mut self, on: bool) -> Self {
        self.config.tls_trace = on;
        self.in_code(Switch::TlsTrace)
    }

    /// HOS_TRACE: collect the full trace and write it (Chrome trace-event JSON, which
    /// ui.perfetto.dev opens) to `path` at shutdown; `Runtime::write_trace` writes it on
    /// request too. `build` opens the file for writing first (creating it, keeping what it
    /// holds): a path that cannot be written is a [`BuildError::Trace`].
    pub fn trace(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.config.trace = Some(path.into());
        self.in_code(Switch::Trace)
    }

    /// HOS_FLIGHT: keep each thread's last events, dumped on an escape, an overlong wait or
    /// on request; the wait tree then knows what each thread waits on (default on).
    pub fn flight(mut self, on: bool) -> Self {
        self.config.flight = on;
        self.in_code(Switch::Flight)
    }

    /// HOS_FLIGHT_DIR: where the flight recorder's dumps go (default: the temp folder).
    pub fn flight_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.config.flight_dir = Some(dir.into());
        self.in_code(Switch::FlightDir)
    }

    /// HOS_FLIGHT_WAIT_MS: dump the flight recorder when a guest wait lasts this long,
    /// 0..=3_600_000 milliseconds (default 0: never).
    pub fn flight_wait_ms(mut self, ms: u64) -> Self {
        self.config.flight_wait_ms = ms;
        self.in_code(Switch::FlightWaitMs)
    }

    /// HOS_DET: runs the guest threads deterministically with `selector`, one at a time over
    /// HOS_CORES logical cores (docs/determinism.md); `None` runs normally (the default).
    /// `Spec::Replay(path)` replays that recording, `Spec::Guided` runs a schedule made of
    /// one (its first decisions, chosen deviations dropped, then `stable`): `build` reads it
    /// and fails ([`BuildError::Replay`]) on a file it cannot read, a header that does not
    /// match, or a guide it cannot follow.
    pub fn det(mut self, selector: Option<Spec>) -> Self {
        self.config.det = selector;
        self.in_code(Switch::Det)
    }

    /// HOS_DET_QUANTUM: a deterministic turn's length, 1..=1_000_000 checkpoints (default
    /// 1000).
    pub fn det_quantum(mut self, checkpoints: u32) -> Self {
        self.config.det_quantum = checkpoints;
        self.in_code(Switch::DetQuantum)
    }

    /// HOS_DET_PACE: `Pacing::Paced` keeps virtual time behind wall time (playable, the
    /// default); `Pacing::Free` skips idle virtual time.
    pub fn det_pace(mut self, pacing: Pacing) -> Self {
        self.config.det_pace = pacing;
        self.in_code(Switch::DetPace)
    }

    /// HOS_DET_WATCHDOG_MS: in the deterministic mode, report a token held this long in wall
    /// time without a checkpoint, naming its holder, 0..=3_600_000 ms (default 2000; 0:
    /// never).
    pub fn det_watchdog_ms(mut self, ms: u64) -> Self {
        self.config.det_watchdog_ms = ms;
        self.in_code(Switch::DetWatchdogMs)
    }

    /// HOS_DET_RECORD: records the deterministic run to the `.hosrec` file at `path` (created
    /// or replaced at build, finished at shutdown); `None` records nothing (the default).
    pub fn det_record(mut self, path: Option<PathBuf>) -> Self {
        self.config.det_record = path;
        self.in_code(Switch::DetRecord)
    }

    /// HOS_DET_RECORD_DECISIONS: the recording holds every decision too, a few bytes per pick
    /// that differs from `stable` (default off).
    pub fn det_record_decisions(mut self, on: bool) -> Self {
        self.config.det_record_decisions = on;
        self.in_code(Switch::DetRecordDecisions)
    }

    /// HOS_DET_BUILD_ID: the host's build id (its guest's title and version, or a hash of
    /// its binary), folded into a recording's build hash: a replay on another build is
    /// refused naming both ids. `None` (the default) or an empty id: none.
    pub fn det_build_id(mut self, id: Option<String>) -> Self {
        self.config.det_build_id = id.as_deref().and_then(crate::config::text);
        self.in_code(Switch::DetBuildId)
    }

    /// HOS_LOG_STDERR: `false` keeps hos's warnings and errors off stderr when no `tracing`
    /// subscriber (or C log sink) takes them (default on: they are written to stderr, each
    /// line starting `hos: `). Process-wide: the newest runtime built decides.
    pub fn log_stderr(mut self, on: bool) -> Self {
        self.config.log_stderr = on;
        self.in_code(Switch::LogStderr)
    }

    /// Pins the calibration instead of measuring it at build (reproducible runs).
    pub fn calibration(mut self, calibration: Calibration) -> Self {
        self.config.calibration = Some(calibration);
        self
    }

    /// Pins the logical processor count the policy decides with (`None`: unknown) instead of
    /// counting the affinity mask at build: for tests and reproducible runs. At least 1.
    pub fn logical_processors(mut self, n: Option<usize>) -> Self {
        self.config.logical_processors = Some(n);
        self
    }

    /// Reads the environment (if asked), applies it by the precedence above and checks every
    /// value: the configuration `build` would start with. It warns about nothing: `build`
    /// does.
    ///
    /// # Errors
    /// The first value, in the order of docs/switches.md, that its switch does not accept.
    pub fn resolve(self) -> Result<Config, ConfigError> {
        self.settle().map(|s| s.config)
    }

    /// [`Builder::resolve`], with the warnings for what the environment said.
    fn settle(self) -> Result<Settled, ConfigError> {
        let mut config = self.config;
        let mut warnings = Vec::new();
        if let Some(env) = &self.env {
            let listed = env.list();
            let read = |name: &str| match (&listed, env) {
                (Some(pairs), _) => pairs
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|p| p.1.clone()),
                (None, EnvSource::From(f)) => f(name),
                (None, _) => None,
            };
            for switch in Switch::ALL {
                let Some(raw) = read(switch.env()) else {
                    continue;
                };
                if self.in_code & switch.bit() != 0 && !self.env_overrides {
                    switch.apply(&mut Config::default(), &raw)?;
                    warnings.push(switch.overridden(&config, &raw));
                } else {
                    warnings.extend(switch.apply(&mut config, &raw)?);
                }
            }
            // A name given twice is told once, with the value that counts (the later).
            let pairs = listed.as_deref().unwrap_or_default();
            let last = pairs
                .iter()
                .enumerate()
                .filter(|(i, (n, _))| pairs[i + 1..].iter().all(|(m, _)| m != n));
            warnings.extend(last.filter_map(|(_, (n, v))| unknown(n, v)));
        }
        config.serial = parts(config.serial);
        config.vcore_first = parts(config.vcore_first);
        check(&config)?;
        // The Windows simulation's switches are the OS layer's, read at its first use.
        #[cfg(all(target_os = "linux", hos_winsim, not(hos_force_fallback), not(loom)))]
        if let Some((switch, value, accepted)) = crate::sys::switch_error() {
            return Err(ConfigError {
                switch,
                value,
                accepted,
            });
        }
        Ok(Settled { config, warnings })
    }

    /// Resolves the configuration and starts the runtime (its reactor thread); it becomes the
    /// default runtime of threads that are no guest thread of any runtime (the newest one
    /// still running is).
    ///
    /// Before it starts anything it sets HOS_LOG_STDERR for the process and warns, once
    /// each, about a `HOS_*` name that is no switch, a boolean that is no boolean word and an
    /// environment value the code's wins over (to the `tracing` subscriber, else stderr).
    ///
    /// # Errors
    /// [`BuildError::Config`] as [`Builder::resolve`]; [`BuildError::Trace`] if the HOS_TRACE
    /// file cannot be opened for writing; [`BuildError::Thread`] if the OS refuses the reactor
    /// thread or the watchdog's (`watchdog.rs`); [`BuildError::Calibration`] if the boot
    /// calibration cannot measure. Nothing is left running then.
    pub fn build(self) -> Result<R, BuildError> {
        let Settled { config, warnings } = self.settle()?;
        set_stderr(config.log_stderr);
        for w in &warnings {
            crate::warn!("{w}");
        }
        if let Some(path) = &config.trace {
            open_trace(path)?;
        }
        let rt = Runtime::start(config)?;
        // Refused, the runtime drops here: its reactor stops, nothing is left running.
        watchdog::start(&rt, spawn::os).map_err(|error| BuildError::Thread {
            name: watchdog::NAME,
            error,
        })?;
        set_default(&rt);
        Ok(R::from(rt))
    }
}

/// Opens the HOS_TRACE file for writing, creating it and keeping what it holds (the trace is
/// written at shutdown), so that a path that cannot be written fails the build, not the
/// shutdown.
fn open_trace(path: &Path) -> Result<(), BuildError> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map(drop)
        .map_err(|error| BuildError::Trace {
            path: path.to_path_buf(),
            error,
        })
}
