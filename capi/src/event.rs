//! Events (nn::os `EventType`): `hos_event_*`. These calls take a timer event's handle too.

use crate::boundary::{self, entry, Out};
use crate::object::{self, hos_handle, Object};
use crate::result::hos_result;
use hos_rs::os::{ClearMode, Event};

/// The event `h` names: an event's, or a timer event's.
fn event(o: &Object) -> Option<&Event> {
    match o {
        Object::Event(e) => Some(e),
        Object::TimerEvent(t) => Some(t),
        _ => None,
    }
}

/// Creates a cleared event: `auto_clear` non-zero, a successful wait clears it (one signal
/// lets one waiter through); 0, it stays signalled until `hos_event_clear`.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_event_create(auto_clear: i32, out: *mut hos_handle) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        let clear = match auto_clear {
            0 => ClearMode::Manual,
            _ => ClearMode::Auto,
        };
        object::create(Object::Event(Event::new(clear)), out)
    })
}

/// Signals the event (or timer event): an auto-clear one lets one waiter through, a
/// manual-clear one every waiter until it is cleared.
///
/// Errors: InvalidHandle.
#[no_mangle]
pub extern "C" fn hos_event_signal(event: hos_handle) -> hos_result {
    entry(|| {
        object::with(event, "event", self::event, |e| {
            e.signal();
            Ok(())
        })
    })
}

/// Clears the event (or timer event).
///
/// Errors: InvalidHandle.
#[no_mangle]
pub extern "C" fn hos_event_clear(event: hos_handle) -> hos_result {
    entry(|| {
        object::with(event, "event", self::event, |e| {
            e.clear();
            Ok(())
        })
    })
}

/// Waits until the event (or timer event) is signalled, and clears it if auto-clear.
/// `timeout_ns`: negative waits without limit, 0 polls. A guest thread gives its virtual core
/// back while it waits; a host thread has none (see "Host threads" at the top of hos.h).
///
/// Errors: InvalidHandle; TimedOut (nothing consumed); Cancelled once the runtime shuts down;
/// InvalidState for a positive timeout with no runtime alive to time it.
#[no_mangle]
pub extern "C" fn hos_event_wait(event: hos_handle, timeout_ns: i64) -> hos_result {
    entry(|| {
        object::with(event, "event", self::event, |e| {
            let wait = e.wait_async();
            let out = match boundary::timeout(timeout_ns) {
                None => wait.block(),
                Some(d) => wait.timeout(d).block(),
            };
            Ok(out?)
        })
    })
}
