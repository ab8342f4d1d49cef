//! Timer events (nn::os `TimerEventType`): `hos_timer_event_*`. A timer event is an event
//! too: `hos_event_wait`, `hos_event_signal` and `hos_event_clear` take its handle.

use crate::boundary::{entry, Error, Out, Result};
use crate::object::{self, hos_handle, Object};
use crate::result::{hos_result, HOS_RESULT_OUT_OF_RANGE};
use hos_rs::os::{ClearMode, TimerEvent};
use std::time::Duration;

fn timer(o: &Object) -> Option<&TimerEvent> {
    match o {
        Object::TimerEvent(t) => Some(t),
        _ => None,
    }
}

/// `ns` as a duration; a negative one is OutOfRange, naming `what`.
fn length(ns: i64, what: &str) -> Result<Duration> {
    u64::try_from(ns).map(Duration::from_nanos).map_err(|_| {
        Error::new(
            HOS_RESULT_OUT_OF_RANGE,
            format!("{what} is {ns} ns, negative"),
        )
    })
}

/// Creates a stopped, cleared timer event (`auto_clear` as `hos_event_create`'s).
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_timer_event_create(
    auto_clear: i32,
    out: *mut hos_handle,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        let clear = match auto_clear {
            0 => ClearMode::Manual,
            _ => ClearMode::Auto,
        };
        object::create(Object::TimerEvent(TimerEvent::new(clear)), out)
    })
}

/// Signals the timer event once, `after_ns` from now (replacing what was armed); the
/// deadline is served by the runtime's reactor.
///
/// Errors: InvalidHandle; OutOfRange for a negative `after_ns`; InvalidState with no runtime
/// running; Cancelled once the runtime shut down.
#[no_mangle]
pub extern "C" fn hos_timer_event_start_one_shot(timer: hos_handle, after_ns: i64) -> hos_result {
    entry(|| {
        let after = length(after_ns, "after_ns")?;
        object::with(timer, "timer event", self::timer, |t| {
            Ok(t.start_one_shot(after)?)
        })
    })
}

/// Signals the timer event `first_ns` from now, then every `period_ns` (replacing what was
/// armed). Periods missed while the reactor was late merge into one signal.
///
/// Errors: InvalidHandle; OutOfRange for a negative `first_ns` or a `period_ns` of 0 or
/// less; InvalidState with no runtime running; Cancelled once the runtime shut down.
#[no_mangle]
pub extern "C" fn hos_timer_event_start_periodic(
    timer: hos_handle,
    first_ns: i64,
    period_ns: i64,
) -> hos_result {
    entry(|| {
        let first = length(first_ns, "first_ns")?;
        let period = length(period_ns, "period_ns")?;
        object::with(timer, "timer event", self::timer, |t| {
            Ok(t.start_periodic(first, period)?)
        })
    })
}

/// Stops the timer event; a signal already given stays.
///
/// Errors: InvalidHandle.
#[no_mangle]
pub extern "C" fn hos_timer_event_stop(timer: hos_handle) -> hos_result {
    entry(|| {
        object::with(timer, "timer event", self::timer, |t| {
            t.stop();
            Ok(())
        })
    })
}
