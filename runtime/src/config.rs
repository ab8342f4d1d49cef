//! The typed configuration and the rules of its switches (docs/switches.md lists every one).
//!
//! Invariant: a `Config` that [`Builder::resolve`](crate::Builder::resolve) (and so
//! `build`) returned is valid: every number lies in its switch's range, every name part is
//! trimmed and non-empty, and a pinned processor count is at least 1. Nothing downstream
//! re-checks or clamps it, except the one documented clamp (`spin_other_us <= spin_us`),
//! applied in [`crate::policy`].
//!
//! # Where a value comes from
//!
//! Each switch starts at its default ([`Config::default`]). A builder method sets it in code.
//! [`Builder::env`](crate::Builder::env) (or `env_from`) reads every `HOS_*` switch once, in
//! `resolve`, never later; an environment value applies only to switches the code did not
//! set, unless the host called [`Builder::env_overrides`](crate::Builder::env_overrides), in
//! which case it applies to every switch. An environment value that the code's value wins over
//! is still checked (a bad value is an error either way) and warned about at build, naming
//! both values ([`Switch::overridden`]). When the source can be listed (the process
//! environment, `env_vars`), a `HOS_*` name that is no switch is warned about at build with
//! the closest switch's name ([`unknown`]); the names hos's own tests read are not.
//!
//! # The rules, the same for every switch and for code
//!
//! | kind | rule |
//! | --- | --- |
//! | boolean | unset: the default; `0`, `false`, `off`, `no` or empty (trimmed, any case): off; `1`, `true`, `on`, `yes`: on; anything else: on, with a warning at build |
//! | number | trimmed, a decimal integer inside the switch's range, else an error: no silent default, no silent clamp |
//! | mode | `HOS_SHORT_SLEEP`: one of `yield`, `timer`, `reactor`, `auto` (trimmed, any case), else an error |
//! | name parts | comma separated; each part trimmed; empty parts ignored |

use crate::det::clock::Pacing;
use crate::det::selector::Spec;
use crate::machine::Calibration;
use std::fmt;
use std::path::PathBuf;

mod switch;
pub(crate) mod unknown;

pub(crate) use switch::{check, parts, text, Switch};

/// HOS_SPIN_US's default, in microseconds.
pub(crate) const DEFAULT_SPIN_US: u64 = 20;

/// HOS_IDLE_POLL_STRETCH_US's default, in microseconds (docs/design.md section 4 has the
/// measurement behind it).
pub(crate) const DEFAULT_IDLE_POLL_STRETCH_US: u64 = 1000;

/// HOS_VCORE_GRACE_US's default, in microseconds: 0, the strict bound. A grace of 100 us (the
/// best of 50, 100, 200 and 400) bought no fps or p99 beyond the spread between repeats in any
/// cell of the 16-core device's matrix at 2, 4, 6, 8 and 16 processors (docs/journal.md, "The
/// kick's grace"; docs/switches.md), so the bound Horizon keeps holds by default.
pub(crate) const DEFAULT_VCORE_GRACE_US: u64 = 0;

/// HOS_WAKE_SLICE_US's default, in microseconds (docs/switches.md has the measurement).
pub(crate) const DEFAULT_WAKE_SLICE_US: u64 = 300;

/// HOS_WAKE_SLICE_PRIORITY's default: 0x2C, a game's main thread's usual priority.
pub(crate) const DEFAULT_WAKE_SLICE_PRIORITY: u8 = 44;

/// HOS_DET_QUANTUM's default, in checkpoints.
pub(crate) const DEFAULT_DET_QUANTUM: u32 = 1000;

/// HOS_DET_WATCHDOG_MS's default, in milliseconds: far past any turn between two checkpoints
/// of instrumented code, short enough to name a stuck holder while someone still looks.
pub(crate) const DEFAULT_DET_WATCHDOG_MS: u64 = 2000;

/// How guest sleeps under 1 ms are served (docs/design.md section 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShortSleep {
    /// The sleeper yields in a loop until its deadline (at most the poller cap of non-serial
    /// guest threads at once; the rest take the timer).
    Yield,
    /// The sleeper sleeps on its own OS timer.
    Timer,
    /// Precise deadlines through the calibrated reactor, relaxed past the poller cap.
    Reactor,
    /// The reference host's count rule: timer with 6 processors or fewer, else yield.
    Auto,
}

/// Every switch of the runtime, typed. `Default` is the documented default of each.
///
/// A `Config` made by hand is checked when it goes through [`Builder::config`](crate::Builder::config) and
/// [`Builder::resolve`](crate::Builder::resolve); only a resolved one is promised valid.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// HOS_SHORT_SLEEP (default `Reactor`).
    pub short_sleep: ShortSleep,
    /// HOS_SHORT_SLEEP_TIMER: `None` follows `short_sleep`; `Some(true)` every short sleep on
    /// the timer; `Some(false)` every short sleep yields. Either `Some` turns the poller cap off.
    pub short_sleep_timer: Option<bool>,
    /// HOS_SHORT_SLEEP_POLLERS, 0..=1024: `None` is a quarter of the logical processors, at
    /// least 1 (1 when the count is unknown); `Some(0)` no cap.
    pub short_sleep_pollers: Option<usize>,
    /// HOS_SPIN_US, 0..=1_000_000: the spin of serial and host threads (and of everyone with 6
    /// processors or fewer), in microseconds (default 20).
    pub spin_us: u64,
    /// HOS_SPIN_OTHER_US, 0..=1_000_000: the spin of other guest threads; `None` is the default
    /// (5 us with more than 6 processors, else `spin_us`). Never more than `spin_us`.
    pub spin_other_us: Option<u64>,
    /// HOS_IDLE_POLL: an other guest thread's short sleep after a poll of hos objects that
    /// found nothing is served relaxed and promoted when an object becomes ready (default on;
    /// reactor mode only).
    pub idle_poll: bool,
    /// HOS_IDLE_POLL_STRETCH_US, 0..=1_000_000: how far past its deadline an idle-poll sleep
    /// may last while nothing it polled becomes ready (default 1000).
    pub idle_poll_stretch_us: u64,
    /// HOS_IDLE_POLL_COALESCE: idle-poll sleeps wake together, on shared ticks
    /// HOS_IDLE_POLL_STRETCH_US apart, the first at or after their deadline (default off).
    pub idle_poll_coalesce: bool,
    /// HOS_IDLE_POLL_DEFER: an idle poller worse in priority than the guest thread that readied
    /// what it polled is promoted when that thread next gives its core up or offers it, not
    /// at once (default on).
    pub idle_poll_defer: bool,
    /// HOS_IDLE_POLL_BLIND, 0..=1_000_000: this many short sleeps in a row with no other svc
    /// or nn::os call between them make the next ones idle polls of something hos cannot see,
    /// relaxed at their deadline (default 0: never).
    pub idle_poll_blind: u32,
    /// HOS_SERIAL: name parts that make a thread of role `Auto` serial (case-sensitive
    /// substrings; default `MainThread`, `Presentation`).
    pub serial: Vec<String>,
    /// HOS_CORES, 1..=8: virtual cores the game sees (default 6).
    pub cores: usize,
    /// HOS_VCORES: `false` turns the virtual-core semaphore off (default on).
    pub vcores: bool,
    /// HOS_VCORE_SLICE_US, 1..=1_000_000: time slice before an equal waiter may take a turn
    /// (default 2000).
    pub vcore_slice_us: u64,
    /// HOS_VCORE_ESCAPE_MS, 1..=3_600_000: a waiter past this takes a core anyway (default 2000).
    pub vcore_escape_ms: u64,
    /// HOS_VCORE_FIRST: name parts of threads of role `Auto` that rank first (default none).
    pub vcore_first: Vec<String>,
    /// HOS_VCORE_CLAIM: the waker of a guest thread blocked on an object claims its virtual
    /// core before the thread runs, so it outranks worse holders at once (default on).
    pub vcore_claim: bool,
    /// HOS_VCORE_CLAIM_DEFER: a claim that queues the woken thread (no free core it may take)
    /// withholds its wake until the core is handed to it, so that the thread that hands it
    /// over, whose processor is about to go idle, wakes it (default on; `vcore/claim.rs`).
    pub vcore_claim_defer: bool,
    /// HOS_VCORE_GRACE_US, 0..=1_000_000: a waiter whose kick a holder has not answered in
    /// this long takes the holder's core, and the holder waits at its next checkpoint
    /// (default 0: never, the strict bound).
    pub vcore_grace_us: u64,
    /// HOS_WAKE_SLICE_US, 0 or 100..=100_000: the OS scheduling slice asked for the guest
    /// threads of the frame's chain (priority HOS_WAKE_SLICE_PRIORITY or better, and serial
    /// threads), so that their wake-ups preempt worse threads' longer slices (default 300;
    /// 0: never ask; Linux 6.12 and later, `crate::policy::wake_slice_ns`).
    pub wake_slice_us: u64,
    /// HOS_WAKE_SLICE_PRIORITY, 0..=63: the worst guest priority given the wake slice
    /// (default 44).
    pub wake_slice_priority: u8,
    /// HOS_SLEEP_LOG: trace every guest sleep (default off).
    pub sleep_log: bool,
    /// HOS_TLS_TRACE: trace each thread's name, role, priority, ideal core and mask when it
    /// starts (default off).
    pub tls_trace: bool,
    /// HOS_TRACE: write the full trace (Chrome trace-event JSON) to this file at shutdown
    /// (default none: no full trace is collected).
    pub trace: Option<PathBuf>,
    /// HOS_FLIGHT: keep each thread's last events, dumped on an escape, an overlong wait or
    /// on request (default on: cheap enough to leave on; its cost is in BENCHMARKS.md).
    pub flight: bool,
    /// HOS_FLIGHT_DIR: where the flight recorder's dumps go (default: the system's temp
    /// folder).
    pub flight_dir: Option<PathBuf>,
    /// HOS_FLIGHT_WAIT_MS, 0..=3_600_000: dump when a guest wait lasts this long (default 0:
    /// never).
    pub flight_wait_ms: u64,
    /// HOS_LOG_STDERR: warnings and errors that no `tracing` subscriber (or C log sink) takes
    /// are written to stderr (default on). Process-wide: the newest runtime built decides.
    pub log_stderr: bool,
    /// HOS_DET: the deterministic mode's selector (docs/determinism.md): `None` (unset, empty
    /// or an off word) runs normally; `stable`, `random:SEED`, `pct:DEPTH:SEED[:STEPS]` or
    /// `chaos:SEED` runs one guest thread at a time over HOS_CORES logical cores (default
    /// off); `replay:PATH` replays the `.hosrec` there (its header must match this config);
    /// `guided:PREFIX:DROP:PATH` runs a schedule made of it (`det::guide`).
    pub det: Option<Spec>,
    /// HOS_DET_QUANTUM, 1..=1_000_000: a turn's length in checkpoints (default 1000).
    pub det_quantum: u32,
    /// HOS_DET_PACE: `paced` (virtual time never runs ahead of wall time) or `free` (idle
    /// virtual time is skipped; default `paced`).
    pub det_pace: Pacing,
    /// HOS_DET_WATCHDOG_MS, 0..=3_600_000: in the deterministic mode, report a token held
    /// this long in wall time without a checkpoint, naming its holder (default 2000; 0:
    /// never).
    pub det_watchdog_ms: u64,
    /// HOS_DET_RECORD: records the deterministic run to this `.hosrec` file, created or
    /// replaced, finished at shutdown (default none; ignored with the mode off).
    pub det_record: Option<PathBuf>,
    /// HOS_DET_RECORD_DECISIONS: the recording holds every decision too (default off: the
    /// seed replays the same build; the log replays across code changes).
    pub det_record_decisions: bool,
    /// HOS_DET_BUILD_ID: the host's build id (its guest's title and version, say), trimmed,
    /// folded into a recording's build hash so a replay on another build is refused naming
    /// both (default none; empty: none).
    pub det_build_id: Option<String>,
    /// Pinned calibration for reproducible runs; `None` measures at build.
    pub calibration: Option<Calibration>,
    /// Pinned logical processor count (`Some(None)`: unknown; `Some(Some(n))`, n >= 1); `None`
    /// counts the affinity mask at build.
    pub logical_processors: Option<Option<usize>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            short_sleep: ShortSleep::Reactor,
            short_sleep_timer: None,
            short_sleep_pollers: None,
            spin_us: DEFAULT_SPIN_US,
            spin_other_us: None,
            idle_poll: true,
            idle_poll_stretch_us: DEFAULT_IDLE_POLL_STRETCH_US,
            idle_poll_coalesce: false,
            idle_poll_defer: true,
            idle_poll_blind: 0,
            serial: vec!["MainThread".into(), "Presentation".into()],
            cores: 6,
            vcores: true,
            vcore_slice_us: 2000,
            vcore_escape_ms: 2000,
            vcore_first: Vec::new(),
            vcore_claim: true,
            vcore_claim_defer: true,
            vcore_grace_us: DEFAULT_VCORE_GRACE_US,
            wake_slice_us: DEFAULT_WAKE_SLICE_US,
            wake_slice_priority: DEFAULT_WAKE_SLICE_PRIORITY,
            sleep_log: false,
            tls_trace: false,
            trace: None,
            flight: true,
            flight_dir: None,
            flight_wait_ms: 0,
            log_stderr: true,
            det: None,
            det_quantum: DEFAULT_DET_QUANTUM,
            det_pace: Pacing::Paced,
            det_watchdog_ms: DEFAULT_DET_WATCHDOG_MS,
            det_record: None,
            det_record_decisions: false,
            det_build_id: None,
            calibration: None,
            logical_processors: None,
        }
    }
}

/// A switch or builder value that is not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The switch (`HOS_SPIN_US`) when the value came from the environment, else the builder
    /// method (`spin_us`) that set it.
    pub switch: &'static str,
    /// The value as given.
    pub value: String,
    /// What is accepted.
    pub accepted: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not accepted: expected {}",
            self.switch, self.value, self.accepted
        )
    }
}

impl std::error::Error for ConfigError {}
