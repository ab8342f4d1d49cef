//! `hos_config`: the runtime's switches by their environment names, set one by one from C
//! and validated as they are set, and the builder's two pins that no variable sets (the
//! logical processor count and the calibration).
//!
//! Invariant: every switch a `hos_config` holds is a switch of hos with a value its switch
//! accepts on its own; besides them it holds only the `HOS_*` variables that
//! `hos_config_read_env` found and that are no switch, and the pins, each given to the
//! builder as the Rust host gives it (so its checks at build are the builder's: a pinned
//! figure past its range fails `hos_runtime_new`). A runtime is built from the switches and
//! variables as from an environment that holds exactly these (`RuntimeBuilder::env_vars`),
//! so a switch not set keeps its default, the process environment is read only by
//! `hos_config_read_env`, and `hos_runtime_new` warns as the Rust `.env()` build does: about
//! a `HOS_*` name that is no switch (naming the closest), a boolean that is no boolean word.
//! Values that only fail together (none today) fail at `hos_runtime_new`.

use crate::boundary::{self, entry, Error, Out, Result, Versioned};
use crate::result::{hos_result, HOS_RESULT_INVALID_VALUE, HOS_RESULT_UNKNOWN_KEY};
use hos_rs::internal::lock;
use hos_rs::{Calibration, PrecisePath, Runtime, RuntimeBuilder};
use std::collections::BTreeMap;
use std::ffi::c_char;
use std::mem::size_of;
use std::sync::{Arc, Mutex, OnceLock};

/// A set of switches to boot a runtime with (opaque). Made by `hos_config_new`, freed by
/// `hos_config_free`; not shared between threads while it is changed.
#[derive(Debug, Default)]
pub struct hos_config {
    switches: BTreeMap<&'static str, String>,
    /// The `HOS_*` variables (any case) of the last `hos_config_read_env` that are no switch:
    /// the build warns about those that hos's own tests do not read.
    others: BTreeMap<String, String>,
    /// The pinned logical processor count (`hos_config_logical_processors`), if any:
    /// `Some(None)` unknown.
    processors: Option<Option<usize>>,
    /// The pinned calibration (`hos_config_calibration`), if any.
    calibration: Option<Calibration>,
}

/// A calibration to pin with `hos_config_calibration`: what a runtime otherwise measures at
/// build. Set `size` to `sizeof(hos_calibration)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hos_calibration {
    /// Set by the caller: `sizeof(hos_calibration)`.
    pub size: u32,
    /// 1: serial and host threads' short precise sleeps go through the reactor; 0: their own
    /// timer.
    pub precise_reactor: u32,
    /// How late the slack-1 OS timer ends (the reactor wakes this early before a precise
    /// deadline; from 1.5 ms the timer counts as coarse).
    pub timer_lateness_ns: u64,
    /// How early a job worker's precise sleep arms its own timer; 0: `timer_lateness_ns`.
    pub timer_margin_ns: u64,
    /// How early an unseen poller's precise sleep arms its own timer; 0: `timer_margin_ns`.
    pub poller_margin_ns: u64,
    /// How long a parked thread takes to run after its wake.
    pub wake_latency_ns: u64,
}

// SAFETY: repr(C), a u32 size first, integers only (zero is valid).
unsafe impl Versioned for hos_calibration {
    const FIRST_SIZE: usize = size_of::<hos_calibration>();
}

impl hos_config {
    /// A builder reading these switches (and the other names) in place of the environment.
    pub(crate) fn builder(&self) -> RuntimeBuilder {
        let others = self.others.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let switches = self.switches.iter().map(|(n, v)| (*n, v.as_str()));
        let mut b = Runtime::builder().env_vars(others.chain(switches));
        if let Some(n) = self.processors {
            b = b.logical_processors(n);
        }
        if let Some(c) = self.calibration {
            b = b.calibration(c);
        }
        b
    }
}

/// Every switch's name, in the order the builder reads them. Learned from the builder itself,
/// which asks its environment source for each one, so the list cannot drift from hos's.
fn switch_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let _ = Runtime::builder()
            .env_from(move |name| {
                let mut seen = lock(&seen);
                seen.push(name.to_string());
                None
            })
            .resolve();
        let asked = lock(&asked);
        // Leaked once per process: a dozen short names.
        asked
            .iter()
            .map(|n| &*Box::leak(n.clone().into_boxed_str()))
            .collect()
    })
}

/// The switch named `key`, if there is one.
fn switch(key: &str) -> Result<&'static str> {
    switch_names()
        .iter()
        .copied()
        .find(|n| *n == key)
        .ok_or_else(|| {
            let known = switch_names().join(", ");
            Error::new(
                HOS_RESULT_UNKNOWN_KEY,
                format!("{key:?} is no switch of hos (they are: {known})"),
            )
        })
}

/// Checks `value` by `key`'s own rule, as if the environment held it alone.
fn check(key: &'static str, value: &str) -> Result<()> {
    let value = value.to_string();
    Runtime::builder()
        .env_from(move |name| (name == key).then(|| value.clone()))
        .resolve()
        .map(drop)
        .map_err(|e| Error::new(HOS_RESULT_INVALID_VALUE, e.to_string()))
}

/// Makes an empty config: every switch at its default.
///
/// Errors: InvalidPointer for a NULL `out`.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_config *`.
#[no_mangle]
pub unsafe extern "C" fn hos_config_new(out: *mut *mut hos_config) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        out.write(Box::into_raw(Box::default()));
        Ok(())
    })
}

/// Sets the switch `key` (its environment name, e.g. "HOS_CORES") to `value`, written as the
/// environment would give it ("4"); a NULL `value` unsets it (back to its default). A later
/// set, or `hos_config_read_env`, replaces an earlier one. docs/switches.md lists every switch.
///
/// Errors: InvalidPointer for a NULL `cfg` or `key`; InvalidUtf8; UnknownKey for a key that
/// is no switch; InvalidValue for a value the switch does not accept (the config is left as
/// it was; `hos_last_error_message` says what is accepted).
///
/// # Safety
/// `cfg` is NULL or from `hos_config_new`; `key` and `value` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn hos_config_set(
    cfg: *mut hos_config,
    key: *const c_char,
    value: *const c_char,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller (a live config, strings).
        let (cfg, key, value) = unsafe {
            (
                boundary::arg_mut(cfg, "cfg")?,
                boundary::req_str(key, "key")?,
                boundary::opt_str(value, "value")?,
            )
        };
        let key = switch(key)?;
        match value {
            None => {
                cfg.switches.remove(key);
            }
            Some(v) => {
                check(key, v)?;
                cfg.switches.insert(key, v.to_string());
            }
        }
        Ok(())
    })
}

/// Reads every `HOS_*` switch set in the process environment into `cfg`, replacing what was
/// set for those switches. The other `HOS_*` variables are kept too: `hos_runtime_new` warns
/// about a name that is no switch, with the closest switch's name (to the log sink, else
/// stderr).
///
/// Errors: InvalidPointer for a NULL `cfg`; InvalidValue for the first variable its switch
/// does not accept (then nothing is read).
///
/// # Safety
/// `cfg` is NULL or from `hos_config_new`.
#[no_mangle]
pub unsafe extern "C" fn hos_config_read_env(cfg: *mut hos_config) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let cfg = unsafe { boundary::arg_mut(cfg, "cfg") }?;
        let mut read = Vec::new();
        let mut others = BTreeMap::new();
        for (name, v) in std::env::vars_os() {
            // As the builder reads the environment: a name or value that is not UTF-8 is read
            // lossily, so that its switch's rule refuses it by name.
            let (name, v) = (name.to_string_lossy(), v.to_string_lossy().into_owned());
            match switch_names().iter().find(|n| **n == name) {
                Some(&name) => {
                    check(name, &v)?;
                    read.push((name, v));
                }
                // Kept for the build, which decides which of them to warn about.
                None if name.to_ascii_uppercase().starts_with("HOS_") => {
                    others.insert(name.into_owned(), v);
                }
                None => {}
            }
        }
        cfg.switches.extend(read);
        cfg.others = others;
        Ok(())
    })
}

/// Decides as if the process had `n` logical processors (0: as if the count were unknown)
/// instead of counting its affinity mask at `hos_runtime_new`: for tests and for reproducing
/// another machine's decisions (the poller cap, the spins, the lock heirs); to make the
/// machine itself smaller, run under `taskset`. A later call replaces an earlier one. No
/// environment variable sets it (the Rust builder's `logical_processors`).
///
/// Errors: InvalidPointer for a NULL `cfg`.
///
/// # Safety
/// `cfg` is NULL or from `hos_config_new`.
#[no_mangle]
pub unsafe extern "C" fn hos_config_logical_processors(cfg: *mut hos_config, n: u32) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller (a live config).
        let cfg = unsafe { boundary::arg_mut(cfg, "cfg") }?;
        cfg.processors = Some((n != 0).then_some(n as usize));
        Ok(())
    })
}

/// Pins the calibration to `*cal` instead of measuring it at `hos_runtime_new` (a few tens of
/// milliseconds), so two runs decide the same way; NULL `cal` measures again (the default).
/// The pinned figures are never updated while the runtime runs. A later call replaces an
/// earlier one. No environment variable sets it (the Rust builder's `calibration`).
///
/// Errors: InvalidPointer for a NULL `cfg` or a misaligned `cal`; InvalidSize for a `size`
/// below the first version's; InvalidValue for a `precise_reactor` other than 0 or 1.
/// `hos_runtime_new` refuses (InvalidValue, naming the field) a figure above 2000000 ns,
/// what the tracked estimates keep at most.
///
/// # Safety
/// `cfg` is NULL or from `hos_config_new`; `cal` is NULL or points to a readable
/// `hos_calibration` of its `size`.
#[no_mangle]
pub unsafe extern "C" fn hos_config_calibration(
    cfg: *mut hos_config,
    cal: *const hos_calibration,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller (a live config).
        let cfg = unsafe { boundary::arg_mut(cfg, "cfg") }?;
        if cal.is_null() {
            cfg.calibration = None;
            return Ok(());
        }
        // SAFETY: forwarded from the caller (a readable struct of its size).
        let c = unsafe { boundary::read_sized(cal, "cal") }?;
        let precise = match c.precise_reactor {
            0 => PrecisePath::OwnTimer,
            1 => PrecisePath::Reactor,
            other => {
                return Err(Error::new(
                    HOS_RESULT_INVALID_VALUE,
                    format!("cal->precise_reactor is {other}: expected 0 or 1"),
                ))
            }
        };
        cfg.calibration = Some(Calibration {
            timer_lateness_ns: c.timer_lateness_ns,
            timer_margin_ns: c.timer_margin_ns,
            poller_margin_ns: c.poller_margin_ns,
            wake_latency_ns: c.wake_latency_ns,
            precise,
            ..Calibration::default()
        });
        Ok(())
    })
}

/// Frees a config; NULL is ignored. A runtime built from it does not need it any more.
///
/// # Safety
/// `cfg` is NULL or from `hos_config_new`, not freed before and not used after.
#[no_mangle]
pub unsafe extern "C" fn hos_config_free(cfg: *mut hos_config) {
    boundary::entry_or((), || {
        if !cfg.is_null() {
            // SAFETY: made by Box::into_raw in hos_config_new; freed once (caller's promise).
            drop(unsafe { Box::from_raw(cfg) });
        }
    });
}
