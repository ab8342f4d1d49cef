//! `hos_result`: what every call that can fail returns, its names, and the detail of the last
//! failure on the calling thread.
//!
//! Invariant: a code is one of the `HOS_RESULT_*` constants below: Horizon's kernel codes
//! (module 1: value = 1 | description << 9) where the Rust API returns them or Horizon has the
//! meaning (InvalidPointer, InvalidSize), and codes of module 511 for what only the boundary
//! can go wrong with (a caught panic, a config key or value, a string that is not UTF-8, an
//! abandoned mutex, a file not written). Module 511 is outside the modules Horizon's own
//! software uses, as libnx's 345-348 are for its own codes.

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};

/// A result code: 0 (`HOS_RESULT_SUCCESS`) or a Horizon result code (`module | description << 9`).
pub type hos_result = u32;

/// Success.
pub const HOS_RESULT_SUCCESS: hos_result = 0;
/// 0x7601: the thread is being terminated.
pub const HOS_RESULT_TERMINATION_REQUESTED: hos_result = 0x7601;
/// 0xCA01: a struct whose `size` is smaller than its first version.
pub const HOS_RESULT_INVALID_SIZE: hos_result = 0xCA01;
/// 0xCC01: a guest word's address that is misaligned for its width (4, or 8 for a 64-bit
/// word).
pub const HOS_RESULT_INVALID_ADDRESS: hos_result = 0xCC01;
/// 0xD201: the handle table is full (1024 handles in the process).
pub const HOS_RESULT_OUT_OF_HANDLES: hos_result = 0xD201;
/// 0xD401: a guest word's address that is NULL (the console's read of it faults).
pub const HOS_RESULT_INVALID_CURRENT_MEMORY: hos_result = 0xD401;
/// 0xE001: a priority outside 0..=63.
pub const HOS_RESULT_INVALID_PRIORITY: hos_result = 0xE001;
/// 0xE201: a core id or core mask the runtime does not have (a mask of 0 included).
pub const HOS_RESULT_INVALID_CORE_ID: hos_result = 0xE201;
/// 0xE401: a handle that is not open, or names an object of another kind.
pub const HOS_RESULT_INVALID_HANDLE: hos_result = 0xE401;
/// 0xE601: a required pointer that is NULL, or a pointer misaligned for its type.
pub const HOS_RESULT_INVALID_POINTER: hos_result = 0xE601;
/// 0xE801: arguments that do not go together (an ideal core outside the mask).
pub const HOS_RESULT_INVALID_COMBINATION: hos_result = 0xE801;
/// 0xEA01: the wait timed out (nothing was consumed).
pub const HOS_RESULT_TIMED_OUT: hos_result = 0xEA01;
/// 0xEC01: the wait was cancelled: the runtime shut down.
pub const HOS_RESULT_CANCELLED: hos_result = 0xEC01;
/// 0xEE01: a count out of range (more than 64 handles, a queue capacity of 0, a semaphore
/// count past its maximum).
pub const HOS_RESULT_OUT_OF_RANGE: hos_result = 0xEE01;
/// 0xF001: a raw type or kind outside its enumeration (an arbitration or signal type, an
/// info type).
pub const HOS_RESULT_INVALID_ENUM_VALUE: hos_result = 0xF001;
/// 0xFA01: the object is in the wrong state (unlocking a mutex the thread does not hold).
pub const HOS_RESULT_INVALID_STATE: hos_result = 0xFA01;
/// 0x3FF (module 511, description 1): hos panicked inside the call, a bug in hos. The call
/// did not complete; the runtime stays usable. `hos_last_error_message` has the panic message.
pub const HOS_RESULT_INTERNAL_ERROR: hos_result = 0x3FF;
/// 0x5FF (module 511, description 2): a config key that is no switch.
pub const HOS_RESULT_UNKNOWN_KEY: hos_result = 0x5FF;
/// 0x7FF (module 511, description 3): a config value its switch does not accept;
/// `hos_last_error_message` names the switch, the value and what is accepted.
pub const HOS_RESULT_INVALID_VALUE: hos_result = 0x7FF;
/// 0x9FF (module 511, description 4): a string that is not UTF-8.
pub const HOS_RESULT_INVALID_UTF8: hos_result = 0x9FF;
/// 0xBFF (module 511, description 5): the mutex is locked by the caller now, but its last
/// owner ended holding it (what it guards may be half-changed), as POSIX's EOWNERDEAD.
pub const HOS_RESULT_ABANDONED: hos_result = 0xBFF;

/// 0xDFF (module 511, description 6): the OS refused a file hos was asked to write (a trace,
/// a flight dump); `hos_last_error_message` names the path and the OS's error.
pub const HOS_RESULT_IO_ERROR: hos_result = 0xDFF;

/// Every code and its name.
const NAMES: [(hos_result, &CStr); 23] = [
    (HOS_RESULT_SUCCESS, c"Success"),
    (HOS_RESULT_TERMINATION_REQUESTED, c"TerminationRequested"),
    (HOS_RESULT_INVALID_SIZE, c"InvalidSize"),
    (HOS_RESULT_INVALID_ADDRESS, c"InvalidAddress"),
    (HOS_RESULT_OUT_OF_HANDLES, c"OutOfHandles"),
    (HOS_RESULT_INVALID_CURRENT_MEMORY, c"InvalidCurrentMemory"),
    (HOS_RESULT_INVALID_PRIORITY, c"InvalidPriority"),
    (HOS_RESULT_INVALID_CORE_ID, c"InvalidCoreId"),
    (HOS_RESULT_INVALID_HANDLE, c"InvalidHandle"),
    (HOS_RESULT_INVALID_POINTER, c"InvalidPointer"),
    (HOS_RESULT_INVALID_COMBINATION, c"InvalidCombination"),
    (HOS_RESULT_TIMED_OUT, c"TimedOut"),
    (HOS_RESULT_CANCELLED, c"Cancelled"),
    (HOS_RESULT_OUT_OF_RANGE, c"OutOfRange"),
    (HOS_RESULT_INVALID_ENUM_VALUE, c"InvalidEnumValue"),
    (HOS_RESULT_INVALID_STATE, c"InvalidState"),
    (HOS_RESULT_INTERNAL_ERROR, c"InternalError"),
    (HOS_RESULT_UNKNOWN_KEY, c"UnknownKey"),
    (HOS_RESULT_INVALID_VALUE, c"InvalidValue"),
    (HOS_RESULT_INVALID_UTF8, c"InvalidUtf8"),
    (HOS_RESULT_ABANDONED, c"Abandoned"),
    (HOS_RESULT_IO_ERROR, c"IoError"),
    // A code no call returns; named for hosts that print any value.
    (u32::MAX, c"Unknown"),
];

/// The name of `r` ("TimedOut", "InvalidHandle"), or "Unknown": a static string, never NULL.
#[no_mangle]
pub extern "C" fn hos_result_name(r: hos_result) -> *const c_char {
    name(r).as_ptr()
}

/// The name of `r` as a C string.
pub(crate) fn name(r: hos_result) -> &'static CStr {
    NAMES
        .iter()
        .find(|(code, _)| *code == r)
        .map_or(c"Unknown", |(_, n)| n)
}

std::thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Keeps `message` as the calling thread's last error.
pub(crate) fn set_last(message: &str) {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // A thread being torn down has no slot left; its message is dropped.
    let _ = LAST.try_with(|l| *l.borrow_mut() = message);
}

/// The detail of the last call that failed on the calling thread ("HOS_SPIN_US=\"fast\" is
/// not accepted: expected microseconds, an integer in 0..=1000000"), or "" if none failed.
/// Valid until the next call that fails on this thread; never NULL. Calls that succeed leave
/// it as it is.
#[no_mangle]
pub extern "C" fn hos_last_error_message() -> *const c_char {
    // The CString's buffer stays put until the next `set_last` on this thread replaces it.
    LAST.try_with(|l| l.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}
