//! The vocabulary of arbitration on guest words, shared by the svcs that take it
//! (`address.rs`, `lock.rs`) and the arbiter's table that acts on it: what a wait checks,
//! what a signal does, and the waiters bit of a mutex word.
//!
//! Invariant: each type's values are the svc's raw argument values (`repr(u32)`); any other
//! raw value is InvalidEnumValue, never a panic. A leaf: it knows result codes only.

use crate::result::ResultCode;

/// What svcWaitForAddress checks before it waits (types 0..=2; type 3, WaitIfEqual64, is
/// [`wait_for_address64`](crate::svc::wait_for_address64)).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArbitrationType {
    /// Waits if the word (signed) is less than the value.
    WaitIfLessThan = 0,
    /// Decrements the word if it is less than the value, and then waits (if it was).
    DecrementAndWaitIfLessThan = 1,
    /// Waits if the word equals the value.
    WaitIfEqual = 2,
}

/// What svcSignalToAddress does to the word before it wakes.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalType {
    /// Wakes; the word is not touched.
    Signal = 0,
    /// If the word equals the value, increments it, then wakes.
    SignalAndIncrementIfEqual = 1,
    /// If the word equals the value, sets it by the number of waiters (see
    /// [`signal_to_address`](crate::svc::signal_to_address)), then wakes.
    SignalAndModifyByWaitingCountIfEqual = 2,
}

impl TryFrom<u32> for ArbitrationType {
    type Error = ResultCode;

    /// The type a raw svc argument names; InvalidEnumValue for any other value (3, the
    /// 64-bit wait, included: it is [`wait_for_address64`](crate::svc::wait_for_address64)).
    ///
    /// ```
    /// use hos::svc::ArbitrationType;
    /// assert_eq!(ArbitrationType::try_from(2), Ok(ArbitrationType::WaitIfEqual));
    /// assert_eq!(ArbitrationType::try_from(7), Err(hos::ResultCode::INVALID_ENUM_VALUE));
    /// ```
    fn try_from(v: u32) -> Result<Self, ResultCode> {
        match v {
            0 => Ok(ArbitrationType::WaitIfLessThan),
            1 => Ok(ArbitrationType::DecrementAndWaitIfLessThan),
            2 => Ok(ArbitrationType::WaitIfEqual),
            _ => Err(ResultCode::INVALID_ENUM_VALUE),
        }
    }
}

impl TryFrom<u32> for SignalType {
    type Error = ResultCode;

    /// The type a raw svc argument names; InvalidEnumValue for any other value.
    ///
    /// ```
    /// use hos::svc::SignalType;
    /// assert_eq!(SignalType::try_from(1), Ok(SignalType::SignalAndIncrementIfEqual));
    /// assert_eq!(SignalType::try_from(3), Err(hos::ResultCode::INVALID_ENUM_VALUE));
    /// ```
    fn try_from(v: u32) -> Result<Self, ResultCode> {
        match v {
            0 => Ok(SignalType::Signal),
            1 => Ok(SignalType::SignalAndIncrementIfEqual),
            2 => Ok(SignalType::SignalAndModifyByWaitingCountIfEqual),
            _ => Err(ResultCode::INVALID_ENUM_VALUE),
        }
    }
}

/// The bit of a mutex word that says waiters may be in the kernel (HandleWaitMask).
pub const WAITERS: u32 = 0x4000_0000;
