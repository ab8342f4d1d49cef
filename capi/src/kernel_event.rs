//! Kernel events from C: svcCreateEvent, svcSignalEvent, svcClearEvent, svcResetSignal, what
//! the SDK's SystemEvent and InterProcessEvent are made of (`hos_event_*` is nn::os's Event).
//!
//! Invariant: each call is hos's `svc` call of the same name; an event is one manual-clear
//! event named by two handles, a writable one (signal, clear) and a readable one (waited on
//! with `hos_svc_wait_synchronization`, which consumes nothing; clear, reset). Each side's
//! handle is closed with `hos_svc_close_handle`; the event lives while either is open.

use crate::boundary::{entry, Out};
use crate::object::hos_handle;
use crate::result::hos_result;
use hos_rs::svc::{self, Handle};

/// svcCreateEvent: a new event, not signalled; its writable handle into `*write`, its
/// readable handle into `*read`.
///
/// Errors: InvalidPointer for a NULL or misaligned `write` or `read`; OutOfHandles if the
/// handle table cannot take both (then neither is made).
///
/// # Safety
/// `write` and `read` are each NULL or point to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_create_event(
    write: *mut hos_handle,
    read: *mut hos_handle,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (write, read) = unsafe { (Out::new(write, "write")?, Out::new(read, "read")?) };
        let (w, r) = svc::create_event()?;
        write.write(w.0);
        read.write(r.0);
        Ok(())
    })
}

/// svcSignalEvent: signals the event of the writable handle `event`, waking every waiter; it
/// stays signalled until cleared or reset. The same from a host thread (a device's thread
/// signalling a guest's system event); these three calls never wait.
///
/// Errors: InvalidHandle unless `event` is an event's writable side.
#[no_mangle]
pub extern "C" fn hos_svc_signal_event(event: hos_handle) -> hos_result {
    entry(|| Ok(svc::signal_event(Handle(event))?))
}

/// svcClearEvent: clears the event of either side's handle, signalled or not.
///
/// Errors: InvalidHandle unless `event` is an event's writable or readable side.
#[no_mangle]
pub extern "C" fn hos_svc_clear_event(event: hos_handle) -> hos_result {
    entry(|| Ok(svc::clear_event(Handle(event))?))
}

/// svcResetSignal: clears the event of the readable handle `event` if it is signalled; how an
/// auto-clear system event learns that another thread took the signal first.
///
/// Errors: InvalidState if it was not signalled; InvalidHandle unless `event` is an event's
/// readable side.
#[no_mangle]
pub extern "C" fn hos_svc_reset_signal(event: hos_handle) -> hos_result {
    entry(|| Ok(svc::reset_signal(Handle(event))?))
}
