//! RuntimeBuilder: the builder of a [`Runtime`], as hos's own type, so that hos's docs show its
//! methods (a type alias of hos-runtime's generic builder shows none).
//!
//! Invariant: every method forwards to hos-runtime's `Builder<Runtime>` and decides nothing;
//! the parsing, precedence and checks stay there (`runtime/src/builder.rs`, `config.rs`). The
//! test below fails when that builder gains a public method this one does not forward.

use crate::runtime::Runtime;
use hos_runtime::det::{clock::Pacing, selector::Spec};
use hos_runtime::{BuildError, Calibration, Config, ConfigError, ShortSleep};
use std::path::PathBuf;

/// Builds a [`Runtime`]: every switch has a method; [`RuntimeBuilder::env`] reads the `HOS_*`
/// switches (docs/switches.md lists every one).
///
/// A value set in code wins over the environment unless the host calls
/// [`RuntimeBuilder::env_overrides`]. Values are checked in [`RuntimeBuilder::resolve`], which
/// `build` calls: a bad one is a [`ConfigError`] naming the method (or the `HOS_*` variable).
///
/// ```
/// use hos::{RuntimeBuilder, ShortSleep};
///
/// let config = RuntimeBuilder::new()
///     .env_from(|name| (name == "HOS_CORES").then(|| "4".to_string()))
///     .short_sleep(ShortSleep::Timer)
///     .spin_us(30)
///     .resolve()?;
/// assert_eq!((config.cores, config.spin_us), (4, 30));
///
/// let err = RuntimeBuilder::new().vcores(9).resolve().unwrap_err();
/// assert_eq!((err.switch, err.value.as_str()), ("vcores", "9"));
///
/// let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
#[must_use = "a builder does nothing until `build`"]
pub struct RuntimeBuilder(hos_runtime::Builder<Runtime>);

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeBuilder")
    }
}

/// Forwards each listed switch method to hos-runtime's builder (with its doc).
macro_rules! forward {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*);)*) => {
        impl RuntimeBuilder {
            $(
                $(#[$doc])*
                pub fn $name(self, $($arg: $ty),*) -> Self {
                    RuntimeBuilder(self.0.$name($($arg),*))
                }
            )*
        }
    };
}

impl Runtime {
    /// A builder with every switch at its default.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }
}

impl RuntimeBuilder {
    /// A builder with every switch at its default and the environment not read.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the environment (if asked), applies it by the precedence above and checks every
    /// value: the configuration `build` would start with.
    ///
    /// # Errors
    /// The first value, in the order of docs/switches.md, that its switch does not accept.
    pub fn resolve(self) -> Result<Config, ConfigError> {
        self.0.resolve()
    }

    /// Resolves the configuration and starts the runtime (its reactor thread); it becomes the
    /// default runtime of threads that are no guest thread of any runtime (the newest one
    /// still running is).
    ///
    /// # Errors
    /// [`BuildError::Config`] as [`RuntimeBuilder::resolve`]; [`BuildError::Thread`] if the OS
    /// refuses the reactor thread; [`BuildError::Calibration`] if the boot calibration cannot
    /// measure. Nothing is left running then.
    pub fn build(self) -> Result<Runtime, BuildError> {
        self.0.build()
    }
}

forward! {
    /// Replaces the whole configuration; every switch counts as set in code.
    config(config: Config);

    /// Reads every `HOS_*` switch from the process environment when the runtime is built
    /// (in [`RuntimeBuilder::resolve`]), never later. Values set in code win unless
    /// [`RuntimeBuilder::env_overrides`] is called too. A bad value makes `build` fail.
    env();

    /// Like [`RuntimeBuilder::env`], from `source` (a variable's name to its value, `None` if
    /// unset) instead of the process environment: for tests (setting process variables while
    /// tests run in parallel is unsound) and for hosts that keep switches elsewhere. The last
    /// of `env`, `env_from` and `env_vars` chooses the source.
    env_from(source: impl Fn(&str) -> Option<String> + Send + Sync + 'static);

    /// Like [`RuntimeBuilder::env`], from these name and value pairs instead of the process
    /// environment (a later pair wins over an earlier one): for hosts that keep switches in
    /// their own settings. Like the process environment they are listed, so `build` warns
    /// about a `HOS_*` name among them that is no switch.
    env_vars(pairs: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>);

    /// Lets the environment override values set in code too (the user's switches win over the
    /// host's). Reads the process environment unless `env_from` chose another source.
    env_overrides();

    /// HOS_SHORT_SLEEP: the short-sleep mode (default `Reactor`).
    short_sleep(mode: ShortSleep);

    /// HOS_SHORT_SLEEP_TIMER: `Some(true)` puts every short sleep on the timer, `Some(false)`
    /// makes every short sleep yield, `None` follows the mode. Either `Some` turns the poller
    /// cap off.
    short_sleep_timer(all: Option<bool>);

    /// HOS_SHORT_SLEEP_POLLERS: the poller cap, 0..=1024 (`Some(0)`: no cap; `None`: a
    /// quarter of the logical processors, at least 1).
    short_sleep_pollers(cap: Option<usize>);

    /// HOS_SPIN_US: the spin of serial and host threads before a wait parks, 0..=1_000_000
    /// microseconds (default 20).
    spin_us(us: u64);

    /// HOS_SPIN_OTHER_US: the spin of other guest threads, 0..=1_000_000 microseconds
    /// (default 5 with more than 6 processors, else the serial spin). Setting it applies it on
    /// every machine. Clamped to `spin_us`, the one documented clamp.
    spin_other_us(us: u64);

    /// HOS_IDLE_POLL: `false` serves idle pollers' sleeps like any other (default on; it
    /// applies in reactor mode only).
    idle_poll(on: bool);

    /// HOS_IDLE_POLL_STRETCH_US: how far past its deadline an idle poller's sleep may last
    /// while nothing it polled becomes ready, 0..=1_000_000 microseconds (default 1000).
    idle_poll_stretch_us(us: u64);

    /// HOS_IDLE_POLL_COALESCE: idle pollers wake together on shared ticks
    /// HOS_IDLE_POLL_STRETCH_US apart, the first at or after their deadline (default off).
    idle_poll_coalesce(on: bool);

    /// HOS_IDLE_POLL_DEFER: an idle poller worse in priority than the guest thread that
    /// readied what it polled is promoted when that thread next gives its core up or offers
    /// it (a wait, a sleep, a yield, a wait for a core, its exit), not at once (default on).
    idle_poll_defer(on: bool);

    /// HOS_IDLE_POLL_BLIND: after this many short sleeps in a row with no other svc or nn::os
    /// call between them, a guest thread's short sleeps are relaxed as an idle poll of
    /// something hos cannot see, 0..=1_000_000 (default 0: never).
    idle_poll_blind(sleeps: u32);

    /// HOS_SERIAL: the name parts of serial threads (case-sensitive substrings; trimmed, empty
    /// parts dropped). Replaces the default `MainThread`, `Presentation`.
    serial(names: impl IntoIterator<Item = impl AsRef<str>>);

    /// HOS_CORES: the number of virtual cores the game sees, 1..=8 (default 6).
    vcores(n: usize);

    /// HOS_VCORES: `false` turns the virtual-core semaphore off (default on).
    vcores_enabled(on: bool);

    /// HOS_VCORE_CLAIM: `false` lets a woken guest thread ask for its virtual core only once
    /// it runs, as before claims (default on: the waker claims it).
    vcore_claim(on: bool);

    /// HOS_VCORE_CLAIM_DEFER: `true` makes a claim that queues the woken thread (no free core
    /// it may take) wake it only when its core is handed to it, from the thread that hands it
    /// over (default on).
    vcore_claim_defer(on: bool);

    /// HOS_VCORE_GRACE_US: 0..=1_000_000 microseconds after which a waiter whose kick a holder
    /// has not answered takes the holder's core; the holder runs on until its next checkpoint,
    /// where it waits for a core again (default 100; 0: never; docs/switches.md says why).
    vcore_grace_us(us: u64);

    /// HOS_WAKE_SLICE_US: 0 or 100..=100_000 microseconds, the OS scheduling slice asked for
    /// guest threads of priority [`wake_slice_priority`](Self::wake_slice_priority) or better
    /// and serial threads, so that their wake-ups preempt worse threads (default 300; 0: never
    /// ask; Linux 6.12 and later; docs/switches.md says why).
    wake_slice_us(us: u64);

    /// HOS_WAKE_SLICE_PRIORITY: 0..=63, the worst guest priority given the wake slice
    /// (default 44, a game's main thread's usual priority).
    wake_slice_priority(priority: u8);

    /// HOS_VCORE_SLICE_US: the time slice, 1..=1_000_000 microseconds (default 2000).
    vcore_slice_us(us: u64);

    /// HOS_VCORE_ESCAPE_MS: the wait after which a waiter takes a core anyway,
    /// 1..=3_600_000 milliseconds (default 2000).
    vcore_escape_ms(ms: u64);

    /// HOS_VCORE_FIRST: the name parts of threads that rank first on the virtual cores
    /// (case-sensitive substrings; trimmed, empty parts dropped; default none).
    vcore_first(names: impl IntoIterator<Item = impl AsRef<str>>);

    /// HOS_SLEEP_LOG: trace every guest sleep (default off).
    sleep_log(on: bool);

    /// HOS_TLS_TRACE: trace each guest thread's name, priority, ideal core and mask when it
    /// starts (default off).
    tls_trace(on: bool);

    /// HOS_TRACE: collect the full trace and write it (Chrome trace-event JSON, which
    /// ui.perfetto.dev opens) to `path` at shutdown; [`Runtime::write_trace`] writes it on
    /// request too.
    trace(path: impl Into<PathBuf>);

    /// HOS_FLIGHT: keep each thread's last events, dumped on an escape, an overlong wait or
    /// on request; the wait tree then knows what each thread waits on (default on).
    flight(on: bool);

    /// HOS_FLIGHT_DIR: where the flight recorder's dumps go (default: the temp folder).
    flight_dir(dir: impl Into<PathBuf>);

    /// HOS_LOG_STDERR: `false` keeps hos's warnings and errors off stderr when no `tracing`
    /// subscriber (or C log sink) takes them (default on: each line starts `hos: `).
    /// Process-wide: the newest runtime built decides.
    log_stderr(on: bool);

    /// HOS_FLIGHT_WAIT_MS: dump the flight recorder when a guest wait lasts this long,
    /// 0..=3_600_000 milliseconds (default 0: never).
    flight_wait_ms(ms: u64);

    /// HOS_DET: runs the guest threads deterministically with `selector`, one at a time over
    /// HOS_CORES logical cores (docs/determinism.md); `None` runs normally (the default).
    /// `Spec::Replay` replays a recording and `Spec::Guided` runs a schedule made of one:
    /// `build` reads the file and fails on one it cannot read or that does not match.
    det(selector: Option<Spec>);

    /// HOS_DET_QUANTUM: a deterministic turn's length, 1..=1_000_000 checkpoints (default
    /// 1000).
    det_quantum(checkpoints: u32);

    /// HOS_DET_PACE: `Pacing::Paced` keeps virtual time behind wall time (playable, the
    /// default); `Pacing::Free` skips idle virtual time.
    det_pace(pacing: Pacing);

    /// HOS_DET_WATCHDOG_MS: in the deterministic mode, report a token held this long in wall
    /// time without a checkpoint, naming its holder (`Runtime::det_softlock`, the log),
    /// 0..=3_600_000 ms (default 2000; 0: never).
    det_watchdog_ms(ms: u64);

    /// HOS_DET_RECORD: records the deterministic run to the `.hosrec` file at `path` (created
    /// or replaced at build, finished at shutdown); `None` records nothing (the default).
    det_record(path: Option<PathBuf>);

    /// HOS_DET_RECORD_DECISIONS: the recording holds every decision too (default off).
    det_record_decisions(on: bool);

    /// HOS_DET_BUILD_ID: the host's build id (its guest's title and version, say), folded
    /// into a recording's build hash: a replay on another build is refused naming both ids.
    /// `None` (the default) or empty: none.
    det_build_id(id: Option<String>);

    /// Pins the calibration instead of measuring it at build (reproducible runs).
    calibration(calibration: Calibration);

    /// Pins the logical processor count the policy decides with (`None`: unknown) instead of
    /// counting the affinity mask at build: for tests and reproducible runs. At least 1.
    logical_processors(n: Option<usize>);
}

#[cfg(test)]
mod tests {
    /// Every public method of hos-runtime's builder has its forward here (a switch added
    /// there and not here fails this test).
    #[test]
    fn every_builder_method_is_forwarded() {
        let theirs = include_str!("../runtime/src/builder.rs");
        let ours = include_str!("builder.rs");
        let names: Vec<&str> = theirs
            .lines()
            .filter_map(|l| l.strip_prefix("    pub fn "))
            .map(|l| l.split(['(', '<']).next().unwrap_or(l))
            .collect();
        assert!(names.len() > 30, "found only {names:?}");
        let missing: Vec<_> = names
            .into_iter()
            .filter(|n| {
                !ours.contains(&format!("\n    {n}(")) && !ours.contains(&format!("pub fn {n}("))
            })
            .collect();
        assert!(missing.is_empty(), "not forwarded: {missing:?}");
    }
}
