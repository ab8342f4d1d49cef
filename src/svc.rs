//! Supervisor calls a guest thread makes: sleeps and yields, thread priority and cores,
//! waits on handles and their cancel, kernel events, and the synchronization svcs on guest
//! memory (locks, condition variables, address arbitration) that the SDK's own nn::os is
//! made of. `docs/svc.md` lists each svc, its number, and where hos differs from the console.
//!
//! Invariant: no call here panics on any argument; bad input is answered with a Horizon
//! result code, or, where the svc returns nothing (svcSleepThread), counted and traced. Every
//! call is a checkpoint of the virtual cores first.
//!
//! | file | svcs |
//! | --- | --- |
//! | `svc.rs` | sleeps, priorities, cores, WaitSynchronization |
//! | `handle.rs` | [`Handle`], the name every file here passes around |
//! | `handles.rs` | the handle table: CreateHandle (hos's own), CloseHandle, a handle's object |
//! | `lock.rs` | ArbitrateLock/Unlock, WaitProcessWideKeyAtomic/SignalProcessWideKey |
//! | `address.rs` | WaitForAddress/SignalToAddress |
//! | `arbitration.rs` | what those take: [`ArbitrationType`], [`SignalType`], [`WAITERS`] |
//! | `arbiter/` | the one table those six wait in, and how its waiters block |
//! | `event.rs` | CreateEvent, SignalEvent, ClearEvent, ResetSignal |
//! | `cancel.rs` | CancelSynchronization |
//! | `info.rs` | the current thread's handle, GetThreadId, GetCurrentProcessorNumber, GetInfo |
//! | `tick.rs` | GetSystemTick, and the one nanoseconds-to-ticks conversion |
//! | `timeout.rs` | the one conversion of a svc's timeout in nanoseconds |
//! | `exit.rs` | ExitThread |
//! | `activity.rs` | SetThreadActivity: pause and resume one guest thread, or all of them |

mod activity;
mod address;
pub(crate) mod arbiter;
mod arbitration;
pub(crate) mod cancel;
mod event;
pub(crate) mod exit;
pub(crate) mod handle;
pub(crate) mod handles;
mod info;
mod lock;
mod tick;
pub(crate) mod timeout;

pub use crate::entry::checkpoint;
pub use activity::{set_thread_activity, ThreadActivity};
pub use address::{check_word_address, signal_to_address, wait_for_address, wait_for_address64};
pub use arbitration::{ArbitrationType, SignalType, WAITERS};
pub use cancel::cancel_synchronization;
pub use event::{clear_event, create_event, reset_signal, signal_event};
pub use exit::{exit_thread, ThreadExit};
pub use handle::Handle;
pub use handles::{
    close_handle, create_handle, handle_object, with_handle_object, HandleObject, HostObject,
    MAX_HANDLES,
};
pub use info::{
    current_thread_handle, get_current_processor_number, get_info, get_thread_id,
    INFO_TYPE_RANDOM_ENTROPY, INFO_TYPE_THREAD_TICK_COUNT,
};
pub use lock::{
    arbitrate_lock, arbitrate_unlock, signal_process_wide_key, wait_process_wide_key_atomic,
};
pub use tick::{get_system_tick, TICKS_PER_SECOND};
pub use timeout::timeout_from_ns;

use crate::entry::entry;
use crate::os::{wait_any, wait_any_async, Waitable, MAX_WAIT_OBJECTS};
use crate::result::ResultCode;
use handles::thread_of;
use hos_runtime::internal::{
    block_on, runtime, sleep_current, sys, with_guest, Stripe, Wait, YieldKind,
};
use std::time::Duration;

/// svcSleepThread (0x0B): sleeps `ns` nanoseconds. `0`, `-1` and `-2` are yields (to the same
/// priority; with migration; to any thread), served on the virtual cores for a guest thread;
/// any other negative value returns at once and is counted as bad input.
///
/// # Blocking
/// Through the runtime's sleep paths; a guest thread holds no virtual core while it sleeps.
pub fn sleep_thread(ns: i64) {
    entry();
    let Some(rt) = runtime() else {
        match ns {
            1.. => std::thread::sleep(Duration::from_nanos(ns as u64)),
            _ => std::thread::yield_now(),
        }
        return;
    };
    let kind = match ns {
        1.. => {
            sleep_current(ns as u64);
            return;
        }
        0 => YieldKind::SamePriority,
        -1 => YieldKind::Migrate,
        -2 => YieldKind::Any,
        _ => {
            Stripe::bump(&rt.counters().bad_sleeps);
            tracing::debug!(ns, "svcSleepThread with a negative length: returns at once");
            return;
        }
    };
    Stripe::bump(&rt.counters().yields);
    // A yield that kept its virtual core (nobody to hand it to, or no virtual cores) gives
    // the processor to another ready thread instead.
    let handed = with_guest(|rt, t| rt.yield_core(t, kind));
    if handed != Some(true) {
        sys::yield_now();
    }
}

/// svcGetThreadPriority (0x0C).
///
/// # Errors
/// InvalidHandle for a handle that names no thread.
pub fn get_thread_priority(h: Handle) -> Result<u8, ResultCode> {
    entry();
    Ok(thread_of(h)?.running_priority())
}

/// svcSetThreadPriority (0x0D).
///
/// # Errors
/// InvalidHandle for a handle that names no thread; InvalidPriority outside 0..=63.
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// use hos::svc::{self, Handle};
/// let t = rt.thread().spawn(|| {
///     assert_eq!(svc::set_thread_priority(Handle::CURRENT_THREAD, 64), Err(hos::ResultCode::INVALID_PRIORITY));
///     svc::set_thread_priority(Handle::CURRENT_THREAD, 10)?;
///     svc::get_thread_priority(Handle::CURRENT_THREAD)
/// })?;
/// assert_eq!(t.join().ok(), Some(Ok(10)));
/// # rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_thread_priority(h: Handle, priority: i32) -> Result<(), ResultCode> {
    entry();
    thread_of(h)?.set_priority(priority)
}

/// svcGetThreadCoreMask (0x0E): (ideal core, core mask).
///
/// # Errors
/// InvalidHandle for a handle that names no thread.
pub fn get_thread_core_mask(h: Handle) -> Result<(i32, u64), ResultCode> {
    entry();
    let t = thread_of(h)?;
    Ok((t.ideal_core(), t.core_mask()))
}

/// svcSetThreadCoreMask (0x0F): `ideal` -3 keeps the current ideal core, -2 takes the
/// process's default, -1 keeps it if the mask allows it.
///
/// # Errors
/// InvalidHandle for a handle that names no thread; InvalidCoreId for a mask of 0, a core
/// past the runtime's cores or an ideal core that is no core; InvalidCombination for an
/// ideal core outside the mask.
pub fn set_thread_core_mask(h: Handle, ideal: i32, mask: u64) -> Result<(), ResultCode> {
    entry();
    thread_of(h)?.set_core_mask(ideal, mask)
}

/// svcWaitSynchronization (0x18): waits until one of `handles` is ready and returns its
/// index (the lowest, if several are). `timeout_ns`: negative waits without limit, 0 polls.
/// No handles: waits for the timeout or a cancel. A guest thread's wait ends with Cancelled
/// at [`cancel_synchronization`] (or at once, if one came while it was in no wait: a poll
/// leaves that for the next wait).
///
/// # Errors
/// OutOfRange for more than 64 handles; InvalidHandle for one that is not open, is a
/// pseudo-handle, or names an event's writable side; TimedOut; Cancelled at a cancel or once
/// the runtime shuts down.
///
/// # Blocking
/// As [`crate::os::wait_any()`].
pub fn wait_synchronization(handles: &[Handle], timeout_ns: i64) -> Result<usize, ResultCode> {
    entry();
    if handles.len() > MAX_WAIT_OBJECTS {
        return Err(ResultCode::OUT_OF_RANGE);
    }
    // One handle, the common case: lent by the calling thread's cache of lookups.
    if let [h] = handles {
        return handles::with_object(*h, |o| {
            let w = o.as_waitable().ok_or(ResultCode::INVALID_HANDLE)?;
            wait_for(&[w], timeout_ns)
        })?;
    }
    let objects = handles
        .iter()
        .map(|h| handles::get_object(*h))
        .collect::<Result<Vec<_>, _>>()?;
    let waitables = objects
        .iter()
        .map(|o| o.as_waitable().ok_or(ResultCode::INVALID_HANDLE))
        .collect::<Result<Vec<_>, _>>()?;
    wait_for(&waitables, timeout_ns)
}

/// [`wait_synchronization`] once its handles are looked up.
fn wait_for(waitables: &[&dyn Waitable], timeout_ns: i64) -> Result<usize, ResultCode> {
    let timeout = timeout_from_ns(timeout_ns);
    let thread = crate::thread::current();
    let Some(thread) = thread.filter(|_| timeout_ns != 0) else {
        return wait_any(waitables, timeout);
    };
    let mut wait = wait_any_async(waitables);
    if let Some(d) = timeout {
        wait = wait.timeout(d);
    }
    let wait = cancel::Cancellable::new(wait, thread.cancel_state());
    block_on(wait, Wait::objects())
}
