//! The kernel's svcs on guest words from C: locks and condition variables (svcArbitrateLock,
//! svcArbitrateUnlock, svcWaitProcessWideKeyAtomic, svcSignalProcessWideKey) and address
//! arbitration (svcWaitForAddress, svcSignalToAddress): what the SDK's own nn::os is made of,
//! for a host that runs the SDK's code as it is (docs/svc.md).
//!
//! Invariant: each call is hos's `svc` call of the same name, after the kernel's checks of
//! each word's address (InvalidAddress if misaligned, then InvalidCurrentMemory for NULL)
//! and of each raw type (InvalidEnumValue); like them, each is a checkpoint of the virtual
//! cores first, and a wait holds no virtual core.

use crate::boundary::{self, entry, Error};
use crate::object::hos_handle;
use crate::result::{hos_result, HOS_RESULT_INVALID_ENUM_VALUE};
use hos_rs::svc::{self, ArbitrationType, Handle, SignalType};

/// The bit of a mutex word that says threads may wait for it in the kernel (0x40000000, the
/// SDK's HandleWaitMask): a word is 0 (free), the owner's tag, or the tag with this bit.
pub const HOS_MUTEX_WAITERS: u32 = 1 << 30;

/// svcWaitForAddress type 0: waits if the word (signed) is less than the value.
pub const HOS_ARBITRATION_WAIT_IF_LESS_THAN: u32 = 0;
/// svcWaitForAddress type 1: decrements the word if it is less than the value, then waits.
pub const HOS_ARBITRATION_DECREMENT_AND_WAIT_IF_LESS_THAN: u32 = 1;
/// svcWaitForAddress type 2: waits if the word equals the value.
pub const HOS_ARBITRATION_WAIT_IF_EQUAL: u32 = 2;

/// svcSignalToAddress type 0: wakes; the word is not touched.
pub const HOS_SIGNAL: u32 = 0;
/// svcSignalToAddress type 1: if the word equals the value, increments it, then wakes.
pub const HOS_SIGNAL_AND_INCREMENT_IF_EQUAL: u32 = 1;
/// svcSignalToAddress type 2: if the word equals the value, writes value + 1 if nobody waits,
/// value - 1 if every waiter will be woken, else leaves it; then wakes.
pub const HOS_SIGNAL_AND_MODIFY_BY_WAITING_COUNT_IF_EQUAL: u32 = 2;

/// A raw type's error, naming it.
fn bad_type(what: &str, raw: u32, allowed: &str) -> Error {
    Error::new(
        HOS_RESULT_INVALID_ENUM_VALUE,
        format!("{what} is {raw}: expected {allowed}"),
    )
}

/// svcArbitrateLock: waits for the mutex word `*addr`, which the caller found held by the
/// thread `owner` (the word's tag) and marked with `HOS_MUTEX_WAITERS`, until an unlock hands
/// it over with the caller's `tag` written in it. Returns at once, with success, if the word
/// is no longer `owner | HOS_MUTEX_WAITERS` (the owner unlocked meanwhile): the caller reloads
/// the word and retries, as the SDK does. While it waits, `owner` runs at the caller's
/// priority if that is better. No timeout: the wait is for the owner. The word's tag is a
/// thread's real handle (`hos_svc_get_current_thread_handle`).
///
/// On a host thread: the wait ranks at priority 0, the best, and `owner` runs at 0 until it
/// hands the word over. A host thread has no handle: while the word holds a tag
/// that names no guest thread, a guest thread's ArbitrateLock on it answers InvalidHandle, so
/// a host thread that takes a guest mutex holds it only briefly and not while guests contend.
///
/// Errors: InvalidAddress for a misaligned `addr`, InvalidCurrentMemory for NULL;
/// InvalidHandle if the word matched but `owner` names no guest thread; InvalidState if the
/// owner ends (or detaches) and its handle is closed while the caller waits; Cancelled once
/// the runtime shuts down.
///
/// # Safety
/// `addr` is NULL, misaligned, or points to a `uint32_t` that stays valid during the call
/// and that other threads access only atomically.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_arbitrate_lock(
    owner: hos_handle,
    addr: *mut u32,
    tag: u32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let word = unsafe { boundary::word32(addr, "addr") }?;
        Ok(svc::arbitrate_lock(Handle(owner), word, tag)?)
    })
}

/// svcArbitrateUnlock: hands the mutex word `*addr` to the best thread waiting for it from
/// the caller (priority, then arrival), writing its tag (with `HOS_MUTEX_WAITERS` if others
/// still wait), or writes 0 if none waits. Like the kernel, it does not check that the caller
/// held the word.
///
/// On a host thread: it writes 0 (no thread waits from a host thread: a lock's owner, as a
/// guest thread's ArbitrateLock names it, is a guest thread).
///
/// Errors: InvalidAddress for a misaligned `addr`, InvalidCurrentMemory for NULL.
///
/// # Safety
/// As `hos_svc_arbitrate_lock`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_arbitrate_unlock(addr: *mut u32) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let word = unsafe { boundary::word32(addr, "addr") }?;
        Ok(svc::arbitrate_unlock(word)?)
    })
}

/// svcWaitProcessWideKeyAtomic: releases the mutex word `*mutex` as
/// `hos_svc_arbitrate_unlock` does, writes 1 to the condition-variable word `*key`, and waits
/// on `key` until a `hos_svc_signal_process_wide_key` gives the caller the mutex back (its
/// `tag` written in the word). `timeout_ns`: negative waits without limit, 0 only releases.
///
/// On a host thread: the release writes 0, as `hos_svc_arbitrate_unlock` does there; the wait
/// ranks at priority 0, the best, both on the key and for the mutex after.
///
/// Errors: InvalidAddress for a misaligned word, InvalidCurrentMemory for a NULL one (the
/// mutex untouched); TimedOut: the mutex is **not** held again, as on the console (the SDK
/// and libnx lock it again themselves); InvalidState if a signal found the mutex word naming
/// a thread that does not exist (not held); Cancelled once the runtime shuts down (not held).
///
/// # Safety
/// `mutex` and `key` are each NULL, misaligned, or point to a `uint32_t` as in
/// `hos_svc_arbitrate_lock`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_wait_process_wide_key_atomic(
    mutex: *mut u32,
    key: *mut u32,
    tag: u32,
    timeout_ns: i64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (mutex, key) = unsafe {
            (
                boundary::word32(mutex, "mutex")?,
                boundary::word32(key, "key")?,
            )
        };
        Ok(svc::wait_process_wide_key_atomic(
            mutex, key, tag, timeout_ns,
        )?)
    })
}

/// svcSignalProcessWideKey: wakes up to `count` threads waiting on the condition-variable
/// word `*key` (`count <= 0`: all), best priority first. Each takes its mutex if the mutex
/// word is free, or else sets `HOS_MUTEX_WAITERS` in it and waits for its owner's unlock.
/// Writes 0 to `*key` once nobody waits on it. The same from a host thread.
///
/// Errors: InvalidAddress for a misaligned `key`, InvalidCurrentMemory for NULL.
///
/// # Safety
/// As `hos_svc_arbitrate_lock`, for `key`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_signal_process_wide_key(key: *mut u32, count: i32) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let key = unsafe { boundary::word32(key, "key") }?;
        svc::signal_process_wide_key(key, count);
        Ok(())
    })
}

/// svcWaitForAddress, types 0..=2 (`HOS_ARBITRATION_*`): waits on the word `*addr` if its
/// value calls for it, until a `hos_svc_signal_to_address` on it wakes the caller.
/// `timeout_ns`: negative waits without limit, 0 checks (and decrements, for type 1) without
/// waiting. Type 3 (WaitIfEqual64) is `hos_svc_wait_for_address64`.
///
/// On a host thread (a host task waiting on a guest word): the wait ranks at priority 0, the
/// best, so a signal wakes it before any guest thread of a worse priority; a poll (`timeout_ns` 0) does not
/// make the thread's next sleep an idle poll.
///
/// Errors: InvalidAddress for a misaligned `addr`, InvalidCurrentMemory for NULL;
/// InvalidEnumValue for any other type (3 included); InvalidState if the word does not call
/// for a wait (types 0 and 1: it is not less than `value`; type 2: it is not `value`);
/// TimedOut (for type 1 the decrement stays done); Cancelled once the runtime shuts down.
///
/// # Safety
/// `addr` is NULL, misaligned, or points to an `int32_t` as in `hos_svc_arbitrate_lock`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_wait_for_address(
    addr: *mut i32,
    arbitration_type: u32,
    value: i32,
    timeout_ns: i64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller (an i32 is a u32's bits).
        let word = unsafe { boundary::word32(addr.cast::<u32>(), "addr") }?;
        let kind = ArbitrationType::try_from(arbitration_type)
            .map_err(|_| bad_type("arbitration_type", arbitration_type, "0..=2"))?;
        Ok(svc::wait_for_address(word, kind, value, timeout_ns)?)
    })
}

/// svcWaitForAddress type 3, WaitIfEqual64: waits on the 64-bit word `*addr` while it equals
/// `value`, as `hos_svc_wait_for_address` (on a host thread too). A
/// `hos_svc_signal_to_address` on the same address wakes it.
///
/// Errors: InvalidAddress for an `addr` not aligned to 8, InvalidCurrentMemory for NULL;
/// InvalidState if the word is not `value`; TimedOut; Cancelled once the runtime shuts down.
///
/// # Safety
/// `addr` is NULL, misaligned, or points to an `int64_t` as in `hos_svc_arbitrate_lock`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_wait_for_address64(
    addr: *mut i64,
    value: i64,
    timeout_ns: i64,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let word = unsafe { boundary::word64(addr, "addr") }?;
        Ok(svc::wait_for_address64(word, value, timeout_ns)?)
    })
}

/// svcSignalToAddress (`HOS_SIGNAL*` types): updates the word `*addr` as the type says, then
/// wakes up to `count` threads waiting on it (`count <= 0`: all), best priority first (host
/// threads rank at 0). Arithmetic wraps. The same from a host thread.
///
/// Errors: InvalidAddress for a misaligned `addr`, InvalidCurrentMemory for NULL;
/// InvalidEnumValue for a type outside 0..=2; InvalidState, with the word untouched and
/// nobody woken, if the type checks the word and it is not `value`.
///
/// # Safety
/// As `hos_svc_wait_for_address`.
#[no_mangle]
pub unsafe extern "C" fn hos_svc_signal_to_address(
    addr: *mut i32,
    signal_type: u32,
    value: i32,
    count: i32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller (an i32 is a u32's bits).
        let word = unsafe { boundary::word32(addr.cast::<u32>(), "addr") }?;
        let kind = SignalType::try_from(signal_type)
            .map_err(|_| bad_type("signal_type", signal_type, "0..=2"))?;
        Ok(svc::signal_to_address(word, kind, value, count)?)
    })
}
