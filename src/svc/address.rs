//! svcWaitForAddress (0x34) and svcSignalToAddress (0x35): waits on a guest word's value,
//! the kernel half of nn::os LightEvent, LightSemaphore and LightMessageQueue.
//!
//! Invariant: the check of the word, its update and the wake or the registration happen in
//! one arbiter operation, so a signal either finds a waiter registered or the waiter finds
//! the word changed (no lost wakeup). Waiters are woken best priority first, then in arrival
//! order, and never spuriously.

use super::arbiter::{waiting_caller, Arbiter};
use super::arbitration::{ArbitrationType, SignalType};
use crate::entry::entry;
use crate::os::{Limits, Timeout};
use crate::result::ResultCode;
use crate::sync::atomic::{AtomicU32, AtomicU64};

/// The kernel's checks of a guest word's address, for hosts (and the C ABI) that get it as a
/// raw address before they make it a reference: InvalidAddress if it is not aligned to
/// `align` (4 for a 32-bit word, 8 for WaitIfEqual64), then InvalidCurrentMemory for NULL
/// (the console's read of it faults). The svcs here take references, which pass both.
///
/// ```
/// use hos::{svc::check_word_address, ResultCode};
/// assert_eq!(check_word_address(0x1000, 4), Ok(()));
/// assert_eq!(check_word_address(0x1002, 4), Err(ResultCode::INVALID_ADDRESS));
/// assert_eq!(check_word_address(0x1004, 8), Err(ResultCode::INVALID_ADDRESS));
/// assert_eq!(check_word_address(0, 4), Err(ResultCode::INVALID_CURRENT_MEMORY));
/// ```
pub fn check_word_address(addr: usize, align: usize) -> Result<(), ResultCode> {
    if align == 0 || addr % align != 0 {
        return Err(ResultCode::INVALID_ADDRESS);
    }
    if addr == 0 {
        return Err(ResultCode::INVALID_CURRENT_MEMORY);
    }
    Ok(())
}

/// svcWaitForAddress (0x34), types 0..=2: waits on `addr` if its value calls for it, until a
/// [`signal_to_address`] on it wakes this thread. `timeout_ns`: negative waits without
/// limit, 0 checks (and decrements, for type 1) without waiting: a poll, which makes a guest
/// thread's next short sleep an idle poll of the word when it finds the word calling for a
/// wait (docs/design.md section 4).
///
/// # Errors
/// InvalidState if the word does not call for a wait (types 0 and 1: it is not less than
/// `value`, signed; type 2: it is not `value`); TimedOut at the timeout (for type 1 the
/// decrement stays done); Cancelled once the runtime shuts down.
///
/// # Blocking
/// Through the runtime's `block_on`; a guest thread holds no virtual core while it waits.
///
/// ```
/// use hos::svc::{self, ArbitrationType::*};
/// use std::sync::atomic::AtomicU32;
/// let word = AtomicU32::new(5);
/// assert_eq!(svc::wait_for_address(&word, WaitIfEqual, 4, 0), Err(hos::ResultCode::INVALID_STATE));
/// assert_eq!(svc::wait_for_address(&word, WaitIfEqual, 5, 0), Err(hos::ResultCode::TIMED_OUT));
/// assert_eq!(svc::wait_for_address(&word, DecrementAndWaitIfLessThan, 6, 0), Err(hos::ResultCode::TIMED_OUT));
/// assert_eq!(word.into_inner(), 4, "decremented, although it timed out");
/// ```
pub fn wait_for_address(
    addr: &AtomicU32,
    kind: ArbitrationType,
    value: i32,
    timeout_ns: i64,
) -> Result<(), ResultCode> {
    let me = waiting_caller()?;
    let timeout = Timeout::from_ns(timeout_ns);
    let at = addr as *const AtomicU32 as usize;
    let arbiter = Arbiter::global();
    if timeout == Timeout::Poll {
        return arbiter.poll_word(at, |t| t.wait_address(&me, addr, kind, value, true));
    }
    arbiter.block(
        "WaitForAddress",
        at,
        Limits::for_timeout(timeout),
        |t, _| t.wait_address(&me, addr, kind, value, false).map(Some),
    )
}

/// svcWaitForAddress (0x34) type 3, WaitIfEqual64 (firmware 19.0.0 and later): waits on the
/// 64-bit word `addr` while it equals `value`, as [`wait_for_address`]. A signal on the same
/// address wakes it.
///
/// # Errors
/// As [`wait_for_address`]: InvalidState if the word is not `value`.
///
/// # Blocking
/// As [`wait_for_address`].
pub fn wait_for_address64(addr: &AtomicU64, value: i64, timeout_ns: i64) -> Result<(), ResultCode> {
    let me = waiting_caller()?;
    let timeout = Timeout::from_ns(timeout_ns);
    let at = addr as *const AtomicU64 as usize;
    let arbiter = Arbiter::global();
    if timeout == Timeout::Poll {
        return arbiter.poll_word(at, |t| t.wait_address64(&me, addr, value, true));
    }
    arbiter.block(
        "WaitForAddress",
        at,
        Limits::for_timeout(timeout),
        |t, _| t.wait_address64(&me, addr, value, false).map(Some),
    )
}

/// svcSignalToAddress (0x35): updates `addr` as `kind` says, then wakes up to `count`
/// threads waiting on it (`count <= 0`: all), best priority first. With W threads waiting,
/// SignalAndModifyByWaitingCountIfEqual writes `value + 1` if W is 0, `value - 1` if every
/// waiter will be woken (`count <= 0`, or W <= `count`), else leaves `value`; arithmetic
/// wraps.
///
/// # Errors
/// InvalidState, with the word untouched and nobody woken, if the type checks the word and
/// it is not `value`.
///
/// ```
/// use hos::svc::{self, SignalType::*};
/// use std::sync::atomic::AtomicU32;
/// let word = AtomicU32::new(1);
/// assert_eq!(svc::signal_to_address(&word, SignalAndIncrementIfEqual, 0, 1), Err(hos::ResultCode::INVALID_STATE));
/// svc::signal_to_address(&word, SignalAndIncrementIfEqual, 1, 1)?;
/// svc::signal_to_address(&word, SignalAndModifyByWaitingCountIfEqual, 2, 1)?; // nobody waits: + 1
/// assert_eq!(word.into_inner(), 3);
/// # Ok::<(), hos::ResultCode>(())
/// ```
pub fn signal_to_address(
    addr: &AtomicU32,
    kind: SignalType,
    value: i32,
    count: i32,
) -> Result<(), ResultCode> {
    entry();
    let at = addr as *const AtomicU32 as usize;
    Arbiter::global().signal_word(at, told(count), |t, fx| {
        t.signal_address(addr, kind, value, count, fx)
    })
}

/// How many waiters a SignalToAddress of `count` tells: `count`, or every one (`usize::MAX`)
/// for `count <= 0`.
fn told(count: i32) -> usize {
    usize::try_from(count)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(usize::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::told;

    #[test]
    fn a_count_of_zero_or_less_tells_every_waiter() {
        for (count, want) in [
            (1, 1),
            (2, 2),
            (i32::MAX, i32::MAX as usize),
            (0, usize::MAX),
            (-1, usize::MAX),
            (i32::MIN, usize::MAX),
        ] {
            assert_eq!(told(count), want, "count {count}");
        }
    }
}
