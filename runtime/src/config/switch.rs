//! The switches of docs/switches.md: each one's environment name, builder method and range,
//! and the rules that turn a raw value into a field of [`Config`] (the table in `config.rs`).
//!
//! Invariant: every switch has one name, one builder method and one rule; a raw value is
//! applied only if its rule accepts it, else it is a [`ConfigError`] naming the switch and the
//! value, never a silent default or clamp; [`check`] holds code-set values to the same ranges.

use super::{Config, ConfigError, ShortSleep};
use crate::det::clock::Pacing;
use crate::det::selector::Spec;
use std::path::PathBuf;

/// The switches of docs/switches.md, each with its environment name and builder method.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Switch {
    ShortSleep,
    ShortSleepTimer,
    ShortSleepPollers,
    SpinUs,
    SpinOtherUs,
    IdlePoll,
    IdlePollStretchUs,
    IdlePollCoalesce,
    IdlePollDefer,
    IdlePollBlind,
    Serial,
    Cores,
    Vcores,
    VcoreSliceUs,
    VcoreEscapeMs,
    VcoreFirst,
    VcoreClaim,
    VcoreClaimDefer,
    VcoreGraceUs,
    WakeSliceUs,
    WakeSlicePriority,
    SleepLog,
    TlsTrace,
    Trace,
    Flight,
    FlightDir,
    FlightWaitMs,
    LogStderr,
    Det,
    DetQuantum,
    DetPace,
    DetWatchdogMs,
    DetRecord,
    DetRecordDecisions,
    DetBuildId,
}

impl Switch {
    /// Every switch, in the order they are read.
    pub(crate) const ALL: [Switch; 35] = [
        Switch::ShortSleep,
        Switch::ShortSleepTimer,
        Switch::ShortSleepPollers,
        Switch::SpinUs,
        Switch::SpinOtherUs,
        Switch::IdlePoll,
        Switch::IdlePollStretchUs,
        Switch::IdlePollCoalesce,
        Switch::IdlePollDefer,
        Switch::IdlePollBlind,
        Switch::Serial,
        Switch::Cores,
        Switch::Vcores,
        Switch::VcoreSliceUs,
        Switch::VcoreEscapeMs,
        Switch::VcoreFirst,
        Switch::VcoreClaim,
        Switch::VcoreClaimDefer,
        Switch::VcoreGraceUs,
        Switch::WakeSliceUs,
        Switch::WakeSlicePriority,
        Switch::SleepLog,
        Switch::TlsTrace,
        Switch::Trace,
        Switch::Flight,
        Switch::FlightDir,
        Switch::FlightWaitMs,
        Switch::LogStderr,
        Switch::Det,
        Switch::DetQuantum,
        Switch::DetPace,
        Switch::DetWatchdogMs,
        Switch::DetRecord,
        Switch::DetRecordDecisions,
        Switch::DetBuildId,
    ];

    /// The environment variable.
    pub(crate) fn env(self) -> &'static str {
        match self {
            Switch::ShortSleep => "HOS_SHORT_SLEEP",
            Switch::ShortSleepTimer => "HOS_SHORT_SLEEP_TIMER",
            Switch::ShortSleepPollers => "HOS_SHORT_SLEEP_POLLERS",
            Switch::SpinUs => "HOS_SPIN_US",
            Switch::SpinOtherUs => "HOS_SPIN_OTHER_US",
            Switch::IdlePoll => "HOS_IDLE_POLL",
            Switch::IdlePollStretchUs => "HOS_IDLE_POLL_STRETCH_US",
            Switch::IdlePollCoalesce => "HOS_IDLE_POLL_COALESCE",
            Switch::IdlePollDefer => "HOS_IDLE_POLL_DEFER",
            Switch::IdlePollBlind => "HOS_IDLE_POLL_BLIND",
            Switch::Serial => "HOS_SERIAL",
            Switch::Cores => "HOS_CORES",
            Switch::Vcores => "HOS_VCORES",
            Switch::VcoreSliceUs => "HOS_VCORE_SLICE_US",
            Switch::VcoreEscapeMs => "HOS_VCORE_ESCAPE_MS",
            Switch::VcoreFirst => "HOS_VCORE_FIRST",
            Switch::VcoreClaim => "HOS_VCORE_CLAIM",
            Switch::VcoreClaimDefer => "HOS_VCORE_CLAIM_DEFER",
            Switch::VcoreGraceUs => "HOS_VCORE_GRACE_US",
            Switch::WakeSliceUs => "HOS_WAKE_SLICE_US",
            Switch::WakeSlicePriority => "HOS_WAKE_SLICE_PRIORITY",
            Switch::SleepLog => "HOS_SLEEP_LOG",
            Switch::TlsTrace => "HOS_TLS_TRACE",
            Switch::Trace => "HOS_TRACE",
            Switch::Flight => "HOS_FLIGHT",
            Switch::FlightDir => "HOS_FLIGHT_DIR",
            Switch::FlightWaitMs => "HOS_FLIGHT_WAIT_MS",
            Switch::LogStderr => "HOS_LOG_STDERR",
            Switch::Det => "HOS_DET",
            Switch::DetQuantum => "HOS_DET_QUANTUM",
            Switch::DetPace => "HOS_DET_PACE",
            Switch::DetWatchdogMs => "HOS_DET_WATCHDOG_MS",
            Switch::DetRecord => "HOS_DET_RECORD",
            Switch::DetRecordDecisions => "HOS_DET_RECORD_DECISIONS",
            Switch::DetBuildId => "HOS_DET_BUILD_ID",
        }
    }

    /// This switch's bit in [`Builder`](crate::Builder)'s set-in-code mask.
    pub(crate) fn bit(self) -> u64 {
        1 << self as u64
    }

    /// Parses `raw` by this switch's rule into `config`; the error names the variable. A
    /// boolean that is no boolean word is on, as the reference host reads it, and gives the
    /// warning returned.
    pub(crate) fn apply(
        self,
        config: &mut Config,
        raw: &str,
    ) -> Result<Option<String>, ConfigError> {
        let name = self.env();
        let mut odd = false;
        let mut flag = |raw: &str| {
            let on = switch_on(raw);
            odd |= on.is_none();
            on.unwrap_or(true)
        };
        match self {
            Switch::ShortSleep => config.short_sleep = parse_mode(name, raw)?,
            Switch::ShortSleepTimer => config.short_sleep_timer = Some(flag(raw)),
            Switch::ShortSleepPollers => {
                config.short_sleep_pollers = Some(POLLERS.parse(name, raw)? as usize);
            }
            Switch::SpinUs => config.spin_us = SPIN.parse(name, raw)?,
            Switch::SpinOtherUs => config.spin_other_us = Some(SPIN.parse(name, raw)?),
            Switch::IdlePoll => config.idle_poll = flag(raw),
            Switch::IdlePollStretchUs => config.idle_poll_stretch_us = STRETCH.parse(name, raw)?,
            Switch::IdlePollCoalesce => config.idle_poll_coalesce = flag(raw),
            Switch::IdlePollDefer => config.idle_poll_defer = flag(raw),
            Switch::IdlePollBlind => config.idle_poll_blind = BLIND.parse(name, raw)? as u32,
            Switch::Serial => config.serial = parts(raw.split(',')),
            Switch::Cores => config.cores = CORES.parse(name, raw)? as usize,
            Switch::Vcores => config.vcores = flag(raw),
            Switch::VcoreSliceUs => config.vcore_slice_us = SLICE.parse(name, raw)?,
            Switch::VcoreEscapeMs => config.vcore_escape_ms = ESCAPE.parse(name, raw)?,
            Switch::VcoreFirst => config.vcore_first = parts(raw.split(',')),
            Switch::VcoreClaim => config.vcore_claim = flag(raw),
            Switch::VcoreClaimDefer => config.vcore_claim_defer = flag(raw),
            Switch::VcoreGraceUs => config.vcore_grace_us = GRACE.parse(name, raw)?,
            Switch::WakeSliceUs => config.wake_slice_us = WAKE_SLICE.parse(name, raw)?,
            Switch::WakeSlicePriority => {
                config.wake_slice_priority = PRIORITY.parse(name, raw)? as u8;
            }
            Switch::SleepLog => config.sleep_log = flag(raw),
            Switch::TlsTrace => config.tls_trace = flag(raw),
            Switch::Trace => config.trace = path(raw),
            Switch::Flight => config.flight = flag(raw),
            Switch::FlightDir => config.flight_dir = path(raw),
            Switch::FlightWaitMs => config.flight_wait_ms = WAIT_BOUND.parse(name, raw)?,
            Switch::LogStderr => config.log_stderr = flag(raw),
            Switch::Det => config.det = parse_det(name, raw)?,
            Switch::DetQuantum => config.det_quantum = QUANTUM.parse(name, raw)? as u32,
            Switch::DetPace => config.det_pace = parse_pace(name, raw)?,
            Switch::DetWatchdogMs => config.det_watchdog_ms = WAIT_BOUND.parse(name, raw)?,
            Switch::DetRecord => config.det_record = path(raw),
            Switch::DetRecordDecisions => config.det_record_decisions = flag(raw),
            Switch::DetBuildId => config.det_build_id = text(raw),
        }
        Ok(odd.then(|| {
            format!(
                "{name}={raw} is no boolean word: taken as on (off: {} or empty; on: {})",
                OFF_WORDS.join(", "),
                ON_WORDS.join(", ")
            )
        }))
    }

    /// This switch's value in `config`, as a warning shows it.
    fn shown(self, c: &Config) -> String {
        match self {
            Switch::ShortSleep => format!("{:?}", c.short_sleep),
            Switch::ShortSleepTimer => format!("{:?}", c.short_sleep_timer),
            Switch::ShortSleepPollers => format!("{:?}", c.short_sleep_pollers),
            Switch::SpinUs => c.spin_us.to_string(),
            Switch::SpinOtherUs => format!("{:?}", c.spin_other_us),
            Switch::IdlePoll => c.idle_poll.to_string(),
            Switch::IdlePollStretchUs => c.idle_poll_stretch_us.to_string(),
            Switch::IdlePollCoalesce => c.idle_poll_coalesce.to_string(),
            Switch::IdlePollDefer => c.idle_poll_defer.to_string(),
            Switch::IdlePollBlind => c.idle_poll_blind.to_string(),
            Switch::Serial => format!("{:?}", c.serial),
            Switch::Cores => c.cores.to_string(),
            Switch::Vcores => c.vcores.to_string(),
            Switch::VcoreSliceUs => c.vcore_slice_us.to_string(),
            Switch::VcoreEscapeMs => c.vcore_escape_ms.to_string(),
            Switch::VcoreFirst => format!("{:?}", c.vcore_first),
            Switch::VcoreClaim => c.vcore_claim.to_string(),
            Switch::VcoreClaimDefer => c.vcore_claim_defer.to_string(),
            Switch::VcoreGraceUs => c.vcore_grace_us.to_string(),
            Switch::WakeSliceUs => c.wake_slice_us.to_string(),
            Switch::WakeSlicePriority => c.wake_slice_priority.to_string(),
            Switch::SleepLog => c.sleep_log.to_string(),
            Switch::TlsTrace => c.tls_trace.to_string(),
            Switch::Trace => format!("{:?}", c.trace),
            Switch::Flight => c.flight.to_string(),
            Switch::FlightDir => format!("{:?}", c.flight_dir),
            Switch::FlightWaitMs => c.flight_wait_ms.to_string(),
            Switch::LogStderr => c.log_stderr.to_string(),
            Switch::Det => c.det.as_ref().map_or("off".into(), Spec::to_string),
            Switch::DetQuantum => c.det_quantum.to_string(),
            Switch::DetPace => format!("{:?}", c.det_pace),
            Switch::DetWatchdogMs => c.det_watchdog_ms.to_string(),
            Switch::DetRecord => format!("{:?}", c.det_record),
            Switch::DetRecordDecisions => c.det_record_decisions.to_string(),
            Switch::DetBuildId => format!("{:?}", c.det_build_id),
        }
    }

    /// The warning for an environment value `raw` that the value set in code (in `config`)
    /// wins over.
    pub(crate) fn overridden(self, config: &Config, raw: &str) -> String {
        format!(
            "{}={raw} ignored: the host set it in code to {} (env_overrides() lets the \
             environment win)",
            self.env(),
            self.shown(config)
        )
    }
}

/// The accepted values of a numeric switch, inclusive.
struct Range {
    min: u64,
    max: u64,
    /// Whether 0 is accepted too, below `min` (it turns the switch off).
    zero_off: bool,
    accepted: &'static str,
}

const POLLERS: Range = Range {
    min: 0,
    max: 1024,
    zero_off: false,
    accepted: "an integer in 0..=1024 (0: no cap)",
};
const SPIN: Range = Range {
    min: 0,
    max: 1_000_000,
    zero_off: false,
    accepted: "microseconds, an integer in 0..=1000000",
};
const STRETCH: Range = Range {
    min: 0,
    max: 1_000_000,
    zero_off: false,
    accepted: "microseconds, an integer in 0..=1000000",
};
const BLIND: Range = Range {
    min: 0,
    max: 1_000_000,
    zero_off: false,
    accepted: "sleeps in a row, an integer in 0..=1000000 (0: never)",
};
const CORES: Range = Range {
    min: 1,
    max: 8,
    zero_off: false,
    accepted: "an integer in 1..=8",
};
const SLICE: Range = Range {
    min: 1,
    max: 1_000_000,
    zero_off: false,
    accepted: "microseconds, an integer in 1..=1000000",
};
const ESCAPE: Range = Range {
    min: 1,
    max: 3_600_000,
    zero_off: false,
    accepted: "milliseconds, an integer in 1..=3600000",
};
const GRACE: Range = Range {
    min: 0,
    max: 1_000_000,
    zero_off: false,
    accepted: "microseconds, an integer in 0..=1000000 (0: never)",
};
const WAKE_SLICE: Range = Range {
    min: 100,
    max: 100_000,
    zero_off: true,
    accepted: "microseconds, 0 (off) or an integer in 100..=100000 (Linux's bounds for a slice)",
};
const PRIORITY: Range = Range {
    min: 0,
    max: 63,
    zero_off: false,
    accepted: "a Horizon priority, an integer in 0..=63",
};

const WAIT_BOUND: Range = Range {
    min: 0,
    max: 3_600_000,
    zero_off: false,
    accepted: "milliseconds, an integer in 0..=3600000 (0: never)",
};

const QUANTUM: Range = Range {
    min: 1,
    max: 1_000_000,
    zero_off: false,
    accepted: "checkpoints, an integer in 1..=1000000",
};

/// What HOS_DET accepts.
const DET_ACCEPTED: &str = "off (unset, empty or an off word), stable, random:SEED, \
    pct:DEPTH:SEED[:STEPS] (DEPTH and STEPS at least 1), chaos:SEED, replay:PATH (a .hosrec \
    file) or guided:PREFIX:DROP:PATH (DROP `-` or decisions separated by commas), numbers \
    decimal or 0x hex";

impl Range {
    /// `value` if it lies in the range, else the error naming `switch`.
    fn check(&self, switch: &'static str, value: u64) -> Result<u64, ConfigError> {
        let off = self.zero_off && value == 0;
        if !off && (value < self.min || value > self.max) {
            return Err(self.error(switch, value.to_string()));
        }
        Ok(value)
    }

    /// The trimmed decimal integer in `raw`, if it lies in the range.
    fn parse(&self, switch: &'static str, raw: &str) -> Result<u64, ConfigError> {
        let value = raw
            .trim()
            .parse::<u64>()
            .map_err(|_| self.error(switch, raw.to_string()))?;
        self.check(switch, value)
            .map_err(|_| self.error(switch, raw.to_string()))
    }

    fn error(&self, switch: &'static str, value: String) -> ConfigError {
        ConfigError {
            switch,
            value,
            accepted: self.accepted,
        }
    }
}

/// The boolean words that are off (and empty); trimmed, any case.
const OFF_WORDS: [&str; 4] = ["0", "false", "off", "no"];
/// The boolean words that are on; trimmed, any case.
const ON_WORDS: [&str; 4] = ["1", "true", "on", "yes"];

/// The boolean rule: an off word or empty is `Some(false)`, an on word `Some(true)`, anything
/// else `None` (which the reference host takes as on).
fn switch_on(raw: &str) -> Option<bool> {
    let v = raw.trim();
    let is = |words: &[&str]| words.iter().any(|w| v.eq_ignore_ascii_case(w));
    if v.is_empty() || is(&OFF_WORDS) {
        Some(false)
    } else {
        is(&ON_WORDS).then_some(true)
    }
}

/// The path rule: the value as given; empty (trimmed) is none.
fn path(raw: &str) -> Option<PathBuf> {
    (!raw.trim().is_empty()).then(|| PathBuf::from(raw))
}

/// A free text switch: trimmed; empty is unset.
pub(crate) fn text(raw: &str) -> Option<String> {
    Some(raw.trim().to_string()).filter(|t| !t.is_empty())
}

/// HOS_SHORT_SLEEP's rule: one of the four modes, trimmed, any case.
fn parse_mode(switch: &'static str, raw: &str) -> Result<ShortSleep, ConfigError> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "yield" => Ok(ShortSleep::Yield),
        "timer" => Ok(ShortSleep::Timer),
        "reactor" => Ok(ShortSleep::Reactor),
        "auto" => Ok(ShortSleep::Auto),
        _ => Err(ConfigError {
            switch,
            value: raw.to_string(),
            accepted: "one of yield, timer, reactor, auto",
        }),
    }
}

/// HOS_DET's rule: off (empty or an off word), else a selector `det::selector` parses
/// (trimmed, any case for the name); a replay's file is read when the runtime is built.
fn parse_det(switch: &'static str, raw: &str) -> Result<Option<Spec>, ConfigError> {
    if switch_on(raw) == Some(false) {
        return Ok(None);
    }
    let error = || ConfigError {
        switch,
        value: raw.to_string(),
        accepted: DET_ACCEPTED,
    };
    match raw.trim().parse::<Spec>() {
        Err(_) => Err(error()),
        Ok(spec) => Ok(Some(spec)),
    }
}

/// HOS_DET_PACE's rule: `paced` or `free`, trimmed, any case.
fn parse_pace(switch: &'static str, raw: &str) -> Result<Pacing, ConfigError> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "paced" => Ok(Pacing::Paced),
        "free" => Ok(Pacing::Free),
        _ => Err(ConfigError {
            switch,
            value: raw.to_string(),
            accepted: "one of paced, free",
        }),
    }
}

/// The name-part rule: each part trimmed, empty parts dropped.
pub(crate) fn parts<S: AsRef<str>>(raw: impl IntoIterator<Item = S>) -> Vec<String> {
    raw.into_iter()
        .map(|p| p.as_ref().trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// A pinned calibration's timer and wake figures: what a measured one keeps at most.
const PINNED_NS: Range = Range {
    min: 0,
    max: crate::machine::MAX_ESTIMATE_NS,
    zero_off: false,
    accepted: "0..=2000000 (nanoseconds: what the tracked estimates keep at most)",
};

/// Checks every number of `config` against its range; errors name the builder method.
pub(crate) fn check(config: &Config) -> Result<(), ConfigError> {
    if let Some(n) = config.short_sleep_pollers {
        POLLERS.check("short_sleep_pollers", n as u64)?;
    }
    SPIN.check("spin_us", config.spin_us)?;
    if let Some(us) = config.spin_other_us {
        SPIN.check("spin_other_us", us)?;
    }
    STRETCH.check("idle_poll_stretch_us", config.idle_poll_stretch_us)?;
    BLIND.check("idle_poll_blind", u64::from(config.idle_poll_blind))?;
    CORES.check("vcores", config.cores as u64)?;
    SLICE.check("vcore_slice_us", config.vcore_slice_us)?;
    ESCAPE.check("vcore_escape_ms", config.vcore_escape_ms)?;
    GRACE.check("vcore_grace_us", config.vcore_grace_us)?;
    WAKE_SLICE.check("wake_slice_us", config.wake_slice_us)?;
    PRIORITY.check("wake_slice_priority", u64::from(config.wake_slice_priority))?;
    WAIT_BOUND.check("flight_wait_ms", config.flight_wait_ms)?;
    QUANTUM.check("det_quantum", u64::from(config.det_quantum))?;
    WAIT_BOUND.check("det_watchdog_ms", config.det_watchdog_ms)?;
    if let Some(c) = &config.calibration {
        PINNED_NS.check("calibration.timer_lateness_ns", c.timer_lateness_ns)?;
        PINNED_NS.check("calibration.timer_margin_ns", c.timer_margin_ns)?;
        PINNED_NS.check("calibration.poller_margin_ns", c.poller_margin_ns)?;
        PINNED_NS.check("calibration.wake_latency_ns", c.wake_latency_ns)?;
    }
    if let Some(spec) = &config.det {
        let refused = match spec {
            Spec::Pct { depth, steps, .. } => *depth == 0 || *steps == 0,
            _ => false,
        };
        if refused {
            return Err(ConfigError {
                switch: "det",
                value: spec.to_string(),
                accepted: DET_ACCEPTED,
            });
        }
    }
    if config.logical_processors == Some(Some(0)) {
        return Err(ConfigError {
            switch: "logical_processors",
            value: "Some(0)".to_string(),
            accepted: "None (unknown) or Some(n) with n >= 1",
        });
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_switch_has_its_own_bit_and_name() {
        let mut bits = 0;
        let mut names = std::collections::HashSet::new();
        for s in Switch::ALL {
            assert_eq!(bits & s.bit(), 0, "{s:?} shares a bit");
            bits |= s.bit();
            assert!(names.insert(s.env()), "{s:?} shares a name");
            assert!(s.env().starts_with("HOS_"));
        }
        assert_eq!(bits.count_ones() as usize, Switch::ALL.len());
    }

    #[test]
    fn booleans_outside_the_words_are_on_and_told() {
        let mut c = Config::default();
        for (raw, on) in [("0", false), (" OFF ", false), ("", false), ("Yes", true)] {
            assert_eq!(Switch::Flight.apply(&mut c, raw), Ok(None), "{raw:?}");
            assert_eq!(c.flight, on, "{raw:?}");
        }
        c.flight = false;
        let told = Switch::Flight.apply(&mut c, "garbage").unwrap().unwrap();
        assert!(c.flight, "the reference host's rule: on");
        assert!(told.contains("HOS_FLIGHT=garbage") && told.contains("off: 0, false, off, no"));
        assert_eq!(Switch::SpinUs.apply(&mut c, "7"), Ok(None));
    }

    #[test]
    fn ranges_take_their_bounds_and_refuse_past_them() {
        for r in [
            &POLLERS,
            &SPIN,
            &STRETCH,
            &BLIND,
            &CORES,
            &SLICE,
            &ESCAPE,
            &GRACE,
            &WAIT_BOUND,
            &QUANTUM,
            &PINNED_NS,
        ] {
            assert_eq!(r.check("x", r.min), Ok(r.min));
            assert_eq!(r.check("x", r.max), Ok(r.max));
            assert!(r.check("x", r.max + 1).is_err());
            if r.min > 0 {
                assert!(r.check("x", r.min - 1).is_err());
            }
            assert_eq!(r.parse("x", &format!(" {} ", r.max)), Ok(r.max));
        }
    }
}
