//! What a guest thread asks the kernel about threads and its process: its own handle, thread
//! ids (svcGetThreadId, 0x25), the core it runs on (svcGetCurrentProcessorNumber, 0x10),
//! thread CPU ticks and the process's random entropy (svcGetInfo, 0x29, ThreadTickCount and
//! RandomEntropy).
//!
//! Invariant: nothing here blocks or changes state; a bad handle or info type is answered
//! with its result code.

use super::handle::Handle;
use super::handles::thread_of;
use crate::entry::entry;
use crate::result::ResultCode;

/// svcGetInfo's ThreadTickCount info type (25; firmware 13.0.0 and later).
pub const INFO_TYPE_THREAD_TICK_COUNT: u32 = 25;

/// svcGetInfo's RandomEntropy info type (11): one of the process's four random words.
pub const INFO_TYPE_RANDOM_ENTROPY: u32 = 11;

/// The calling guest thread's real handle: the value the SDK keeps in its thread-local
/// storage and writes into the mutex words it locks (a host puts it there when the guest
/// thread starts). [`Handle::INVALID`] (0) on any other thread.
///
/// A guest thread's handle is made when it is spawned or attached
/// ([`crate::thread::Thread::handle`]) and closed once the thread has ended (or detached) and
/// its last [`crate::thread::HandleShare`] is gone (its `JoinHandle` joined or dropped, say):
/// then the lock waiters still registered against it end with InvalidState, as when the
/// console destroys a thread object.
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// use hos::svc::{self, Handle};
/// let t = rt.thread().spawn(svc::current_thread_handle)?;
/// let handle = t.thread().handle();
/// assert_eq!(t.join().ok(), Some(handle));
/// assert_eq!(svc::current_thread_handle(), Handle::INVALID, "not a guest thread");
/// # rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn current_thread_handle() -> Handle {
    crate::thread::with_current(crate::thread::Thread::handle).unwrap_or(Handle::INVALID)
}

/// svcGetThreadId (0x25): the id of the thread `h` names (the pseudo-handle included).
///
/// # Errors
/// InvalidHandle for a handle that names no thread.
pub fn get_thread_id(h: Handle) -> Result<u64, ResultCode> {
    entry();
    Ok(thread_of(h)?.id())
}

/// svcGetCurrentProcessorNumber (0x10): the virtual core the calling guest thread holds; its
/// ideal core while it holds none (the virtual cores off, or running past them by escape);
/// 0 on any other thread.
pub fn get_current_processor_number() -> i32 {
    entry();
    crate::thread::with_current(crate::thread::Thread::current_core).unwrap_or(0)
}

/// svcGetInfo (0x29). hos answers two info types:
///
/// - [`INFO_TYPE_THREAD_TICK_COUNT`]: the CPU time of the thread `h` names (the pseudo-handle
///   included) in 19.2 MHz ticks, all of it for `subtype` `u64::MAX`; for a core id 0..=63,
///   all of it if `h` is the calling thread and that is the core it holds now (hos does not
///   split a thread's time by core), else 0.
/// - [`INFO_TYPE_RANDOM_ENTROPY`]: word `subtype` (0..=3) of the calling thread's runtime's
///   random entropy (`Runtime::entropy`: in the deterministic mode drawn from the run's
///   recorded seed, so a replay's guest sees the same), `h` being [`Handle::INVALID`], as
///   mesosphère checks them.
///
/// # Errors
/// InvalidEnumValue for any other info type (the console knows more; hos none of them);
/// InvalidCombination for a subtype that is neither `u64::MAX` nor 0..=63 (tick count) or
/// over 3 (entropy); InvalidHandle for a handle that names no thread (tick count) or is not
/// [`Handle::INVALID`] (entropy); InvalidState for entropy asked with no runtime.
pub fn get_info(info_type: u32, h: Handle, subtype: u64) -> Result<u64, ResultCode> {
    entry();
    if info_type == INFO_TYPE_RANDOM_ENTROPY {
        return random_entropy(h, subtype);
    }
    if info_type != INFO_TYPE_THREAD_TICK_COUNT {
        return Err(ResultCode::INVALID_ENUM_VALUE);
    }
    if subtype != u64::MAX && subtype >= 64 {
        return Err(ResultCode::INVALID_COMBINATION);
    }
    let t = thread_of(h)?;
    let me = crate::thread::with_current(|c| c.handle() == t.handle()) == Some(true);
    let on_core = subtype == u64::MAX || (me && i64::from(t.current_core()) == subtype as i64);
    if !on_core {
        return Ok(0);
    }
    Ok(super::tick::ticks_in(t.cpu_time().total().as_nanos()))
}

/// svcGetInfo's RandomEntropy: word `subtype` of the calling thread's runtime's entropy.
fn random_entropy(h: Handle, subtype: u64) -> Result<u64, ResultCode> {
    if h != Handle::INVALID {
        return Err(ResultCode::INVALID_HANDLE);
    }
    let word = usize::try_from(subtype).ok().filter(|&i| i < 4);
    let word = word.ok_or(ResultCode::INVALID_COMBINATION)?;
    let rt = hos_runtime::internal::runtime().ok_or(ResultCode::INVALID_STATE)?;
    Ok(rt.entropy()[word])
}
