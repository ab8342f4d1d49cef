//! `hos_runtime`: boot from a config, bounded shutdown, free, host sleep.
//!
//! Invariant: a `hos_runtime` owns one clone of an hos `Runtime` and the report of its last
//! shutdown. The OS threads of the guest threads spawned through it wait in the [`reaper`]
//! under its tag until they are reaped, at the latest by its shutdown (which joined them, or
//! detached and reported them if bounded). Guest threads hold clones of their own, so freeing
//! it while detached stragglers still run is memory-safe: their waits return Cancelled.

use crate::boundary::{self, entry, Error, Out, TextOut};
use crate::config::hos_config;
use crate::reaper::{self, RuntimeTag};
use crate::result::HOS_RESULT_TIMED_OUT;
use crate::result::{hos_result, HOS_RESULT_INVALID_STATE, HOS_RESULT_INVALID_VALUE};
use hos_rs::internal::lock;
use hos_rs::{BuildError, Runtime, ShutdownReport};
use std::ffi::c_char;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A running runtime (opaque). Made by `hos_runtime_new`, freed by `hos_runtime_free`; any
/// thread may use it in between.
#[derive(Debug)]
pub struct hos_runtime {
    pub(crate) rt: Runtime,
    /// What its last shutdown did; `None` before the first.
    report: Mutex<Option<ShutdownReport>>,
    shut_down: AtomicBool,
}

impl hos_runtime {
    /// Its tag in the [`reaper`].
    pub(crate) fn tag(&self) -> RuntimeTag {
        self as *const hos_runtime as RuntimeTag
    }

    /// Shuts down, joining guest threads for at most `timeout` (`None`: all of them), and
    /// keeps the report.
    pub(crate) fn shutdown(&self, timeout: Option<Duration>) -> ShutdownReport {
        // Relaxed: a flag read by `hos_runtime_free` on the same object after this returned.
        self.shut_down.store(true, Ordering::Relaxed);
        // A timeout past what an `Instant` holds is none: the shutdown waits for every thread.
        let report = self.rt.shutdown_timeout(timeout.unwrap_or(Duration::MAX));
        // Every OS thread was joined or detached by the runtime's shutdown.
        reaper::forget(self.tag());
        *lock(&self.report) = Some(report.clone());
        report
    }

    /// The report of its last shutdown.
    pub(crate) fn report(&self) -> Option<ShutdownReport> {
        lock(&self.report).clone()
    }
}

/// A runtime that did not build, as a result code: InvalidValue for a switch, InvalidState
/// for the rest (a trace or recording file, a replay's file or header, a thread).
pub(crate) fn build_error(e: BuildError) -> Error {
    match e {
        BuildError::Config(e) => Error::new(HOS_RESULT_INVALID_VALUE, e.to_string()),
        e => Error::new(HOS_RESULT_INVALID_STATE, e.to_string()),
    }
}

impl From<Runtime> for hos_runtime {
    /// The C handle of a runtime just built.
    fn from(rt: Runtime) -> hos_runtime {
        hos_runtime {
            rt,
            report: Mutex::default(),
            shut_down: AtomicBool::new(false),
        }
    }
}

/// The body of every call that gives a text of `rt` into the caller's buffer, snprintf-style
/// ([`TextOut`]): checks the runtime, then the buffer, then writes what `text` makes of it.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `buf`, `size` and `len` as
/// [`TextOut::new`] asks.
pub(crate) unsafe fn text_call(
    rt: *const hos_runtime,
    buf: *mut c_char,
    size: usize,
    len: *mut usize,
    text: impl FnOnce(&hos_runtime) -> boundary::Result<String>,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, out) = unsafe {
            (
                boundary::arg(rt, "rt")?,
                TextOut::new(buf, size, len, "buf")?,
            )
        };
        out.write(&text(rt)?);
        Ok(())
    })
}

/// Starts a runtime: counts the processors, calibrates (a few tens of milliseconds) and starts
/// the reactor thread. `cfg` NULL: every switch at its default (the environment is not read;
/// `hos_config_read_env` reads it). The config may be freed afterwards.
///
/// Errors: InvalidPointer for a NULL `out`; InvalidValue for switches that do not go
/// together; InvalidState if the HOS_TRACE file cannot be opened for writing, the OS refuses a
/// thread the runtime needs or the calibration cannot measure the machine
/// (`hos_last_error_message` says which, naming the path and the OS's error). Nothing is left
/// running. Before it starts, it warns (to the log sink, else stderr) about a config value
/// read from the environment that is no switch, and a boolean that is no boolean word.
///
/// # Safety
/// `cfg` is NULL or from `hos_config_new`; `out` is NULL or points to a writable
/// `hos_runtime *`.
#[no_mangle]
pub unsafe extern "C" fn hos_runtime_new(
    cfg: *const hos_config,
    out: *mut *mut hos_runtime,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        let builder = match cfg.is_null() {
            true => Runtime::builder(),
            // SAFETY: forwarded from the caller (a live config).
            false => unsafe { boundary::arg(cfg, "cfg") }?.builder(),
        };
        let rt = builder.build().map_err(build_error)?;
        out.write(Box::into_raw(Box::new(hos_runtime::from(rt))));
        Ok(())
    })
}

/// Shuts the runtime down: every wait in progress or to come returns Cancelled, every sleep
/// ends, the reactor stops, and guest threads are joined: all of them for a negative
/// `timeout_ns`, else those that return within `timeout_ns`. A thread still running then (it
/// never reaches a wait or a checkpoint), or an attached thread that has not detached, is
/// detached from the runtime and named, with what it was doing, in `hos_last_error_message`
/// and in a warning to the log sink; the call returns TimedOut and the runtime is safe to free
/// either way. The calling thread is never waited for. `hos_runtime_shutdown_report` reads
/// what it did afterwards.
///
/// Errors: InvalidPointer for a NULL `rt`; TimedOut as above.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed.
#[no_mangle]
pub unsafe extern "C" fn hos_runtime_shutdown(rt: *mut hos_runtime, timeout_ns: i64) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let rt = unsafe { boundary::arg(rt, "rt") }?;
        let report = rt.shutdown(boundary::timeout(timeout_ns));
        if report.is_clean() {
            return Ok(());
        }
        // The shutdown itself logged the report as a warning.
        Err(Error::new(HOS_RESULT_TIMED_OUT, report.to_string()))
    })
}

/// Frees the runtime; NULL is ignored. If it was not shut down, it is shut down first without
/// waiting for guest threads (those still running are detached and their waits return
/// Cancelled): call `hos_runtime_shutdown` before to wait for them.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed before and not used after.
#[no_mangle]
pub unsafe extern "C" fn hos_runtime_free(rt: *mut hos_runtime) {
    boundary::entry_or((), || {
        if rt.is_null() {
            return;
        }
        // SAFETY: made by Box::into_raw in hos_runtime_new; freed once (caller's promise).
        let rt = unsafe { Box::from_raw(rt) };
        // Relaxed: see `hos_runtime::shutdown`.
        if !rt.shut_down.load(Ordering::Relaxed) {
            rt.shutdown(Some(Duration::ZERO));
        }
    });
}

/// Sleeps the calling thread `ns` nanoseconds as a host sleep (frame limiter, audio): always
/// precise, whatever thread calls it. `ns <= 0` returns at once, as does any sleep once the
/// runtime has shut down.
///
/// Errors: InvalidPointer for a NULL `rt`.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed.
#[no_mangle]
pub unsafe extern "C" fn hos_host_sleep(rt: *const hos_runtime, ns: i64) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let rt = unsafe { boundary::arg(rt, "rt") }?;
        if let Ok(ns @ 1..) = u64::try_from(ns) {
            rt.rt.host_sleep(Duration::from_nanos(ns));
        }
        Ok(())
    })
}

/// The number of virtual cores the runtime has (HOS_CORES, 1..=8), for building core masks:
/// `(1 << n) - 1` allows every one.
///
/// Errors: InvalidPointer for a NULL `rt` or a NULL or misaligned `out`.
///
/// # Safety
/// `rt` is NULL or from `hos_runtime_new`, not freed; `out` is NULL or points to a writable
/// `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_runtime_cores(rt: *const hos_runtime, out: *mut u32) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (rt, out) = unsafe { (boundary::arg(rt, "rt")?, Out::new(out, "out")?) };
        // HOS_CORES is at most 8.
        out.write(rt.rt.config().cores as u32);
        Ok(())
    })
}
