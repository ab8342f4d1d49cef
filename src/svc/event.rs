//! Kernel events: svcCreateEvent (0x45), svcSignalEvent (0x11), svcClearEvent (0x12) and
//! svcResetSignal (0x17), what nn::os SystemEvent and InterProcessEvent are made of.
//!
//! Invariant: a kernel event is one manual-clear [`Event`] named by two handles: the
//! writable side signals and clears it, the readable side is waited on (a wait never
//! consumes it), cleared, and reset. A signal wakes every waiter.

use super::handle::Handle;
use super::handles::{self, HandleObject};
use crate::entry::entry;
use crate::os::{ClearMode, Event};
use crate::result::ResultCode;
use std::sync::Arc;

/// svcCreateEvent (0x45): a new event, not signalled, as (writable handle, readable handle).
///
/// # Errors
/// OutOfHandles if the handle table cannot take both.
///
/// ```
/// use hos::svc;
/// let (write, read) = svc::create_event()?;
/// svc::signal_event(write)?;
/// assert_eq!(svc::wait_synchronization(&[read], 0), Ok(0));
/// assert_eq!(svc::wait_synchronization(&[read], 0), Ok(0), "a wait consumes nothing");
/// svc::reset_signal(read)?;
/// assert_eq!(svc::reset_signal(read), Err(hos::ResultCode::INVALID_STATE));
/// svc::close_handle(write)?;
/// svc::close_handle(read)?;
/// # Ok::<(), hos::ResultCode>(())
/// ```
pub fn create_event() -> Result<(Handle, Handle), ResultCode> {
    entry();
    let event = Arc::new(Event::new(ClearMode::Manual));
    let write = handles::insert(HandleObject::WritableEvent(event.clone()))?;
    match handles::insert(HandleObject::ReadableEvent(event)) {
        Ok(read) => Ok((write, read)),
        Err(code) => {
            let _ = handles::close(write);
            Err(code)
        }
    }
}

/// svcSignalEvent (0x11): signals the event of writable handle `h`, waking every waiter; it
/// stays signalled until cleared or reset.
///
/// # Errors
/// InvalidHandle unless `h` is an event's writable side.
pub fn signal_event(h: Handle) -> Result<(), ResultCode> {
    entry();
    handles::with_object(h, |o| match o {
        HandleObject::WritableEvent(e) => {
            e.signal();
            Ok(())
        }
        _ => Err(ResultCode::INVALID_HANDLE),
    })?
}

/// svcClearEvent (0x12): clears the event of either side's handle `h`, signalled or not.
///
/// # Errors
/// InvalidHandle unless `h` is an event's writable or readable side.
pub fn clear_event(h: Handle) -> Result<(), ResultCode> {
    entry();
    handles::with_object(h, |o| match o {
        HandleObject::WritableEvent(e) | HandleObject::ReadableEvent(e) => {
            e.clear();
            Ok(())
        }
        _ => Err(ResultCode::INVALID_HANDLE),
    })?
}

/// svcResetSignal (0x17): clears the event of readable handle `h` if it is signalled; how the
/// SDK's auto-clear system events learn that another thread took the signal first.
///
/// # Errors
/// InvalidState if it was not signalled; InvalidHandle unless `h` is an event's readable
/// side (the console also takes a process handle, which hos has none of).
pub fn reset_signal(h: Handle) -> Result<(), ResultCode> {
    entry();
    handles::with_object(h, |o| match o {
        HandleObject::ReadableEvent(e) if e.reset() => Ok(()),
        HandleObject::ReadableEvent(_) => Err(ResultCode::INVALID_STATE),
        _ => Err(ResultCode::INVALID_HANDLE),
    })?
}
