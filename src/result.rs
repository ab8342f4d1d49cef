//! Horizon result codes: module 1 (the kernel), value = 1 | description << 9.

use std::fmt;

/// A Horizon result code.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResultCode(pub u32);

impl ResultCode {
    const fn kernel(description: u32) -> Self {
        ResultCode(1 | description << 9)
    }
    /// 0: success.
    pub const SUCCESS: ResultCode = ResultCode(0);
    /// 0x7601: the thread is being terminated.
    pub const TERMINATION_REQUESTED: ResultCode = ResultCode::kernel(59);
    /// 0xCC01: a guest address that is not aligned for its word.
    pub const INVALID_ADDRESS: ResultCode = ResultCode::kernel(102);
    /// 0xD201: the handle table is full.
    pub const OUT_OF_HANDLES: ResultCode = ResultCode::kernel(105);
    /// 0xD401: a guest address that cannot be read or written (NULL).
    pub const INVALID_CURRENT_MEMORY: ResultCode = ResultCode::kernel(106);
    /// 0xE001: a priority outside 0..=63.
    pub const INVALID_PRIORITY: ResultCode = ResultCode::kernel(112);
    /// 0xE201: a core id or mask the process may not use.
    pub const INVALID_CORE_ID: ResultCode = ResultCode::kernel(113);
    /// 0xE401: an unknown or closed handle.
    pub const INVALID_HANDLE: ResultCode = ResultCode::kernel(114);
    /// 0xE801: arguments that do not go together.
    pub const INVALID_COMBINATION: ResultCode = ResultCode::kernel(116);
    /// 0xEA01: the wait timed out.
    pub const TIMED_OUT: ResultCode = ResultCode::kernel(117);
    /// 0xEC01: the wait was cancelled.
    pub const CANCELLED: ResultCode = ResultCode::kernel(118);
    /// 0xEE01: a count out of range (more than 64 objects in one wait).
    pub const OUT_OF_RANGE: ResultCode = ResultCode::kernel(119);
    /// 0xF001: a type or kind argument outside its enumeration.
    pub const INVALID_ENUM_VALUE: ResultCode = ResultCode::kernel(120);
    /// 0xF401: the object is busy (svcSetThreadActivity on the calling thread itself).
    pub const BUSY: ResultCode = ResultCode::kernel(122);
    /// 0xFA01: the object is in the wrong state.
    pub const INVALID_STATE: ResultCode = ResultCode::kernel(125);

    /// The module (1 for the kernel).
    pub const fn module(self) -> u32 {
        self.0 & 0x1ff
    }

    /// The description.
    pub const fn description(self) -> u32 {
        (self.0 >> 9) & 0x1fff
    }

    /// Whether it is success.
    pub const fn is_success(self) -> bool {
        self.0 == 0
    }

    /// Its Horizon name (`"TimedOut"`), for the codes hos returns; `None` for any other.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            ResultCode::SUCCESS => "Success",
            ResultCode::TERMINATION_REQUESTED => "TerminationRequested",
            ResultCode::INVALID_ADDRESS => "InvalidAddress",
            ResultCode::OUT_OF_HANDLES => "OutOfHandles",
            ResultCode::INVALID_CURRENT_MEMORY => "InvalidCurrentMemory",
            ResultCode::INVALID_PRIORITY => "InvalidPriority",
            ResultCode::INVALID_CORE_ID => "InvalidCoreId",
            ResultCode::INVALID_HANDLE => "InvalidHandle",
            ResultCode::INVALID_COMBINATION => "InvalidCombination",
            ResultCode::TIMED_OUT => "TimedOut",
            ResultCode::CANCELLED => "Cancelled",
            ResultCode::OUT_OF_RANGE => "OutOfRange",
            ResultCode::INVALID_ENUM_VALUE => "InvalidEnumValue",
            ResultCode::BUSY => "Busy",
            ResultCode::INVALID_STATE => "InvalidState",
            _ => return None,
        })
    }
}

impl fmt::Debug for ResultCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}(0x{:04X})", self.0),
            None => write!(f, "ResultCode(0x{:04X})", self.0),
        }
    }
}

impl fmt::Display for ResultCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for ResultCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_horizons() {
        assert_eq!(ResultCode::INVALID_ADDRESS.0, 0xCC01);
        assert_eq!(ResultCode::OUT_OF_HANDLES.0, 0xD201);
        assert_eq!(ResultCode::INVALID_CURRENT_MEMORY.0, 0xD401);
        assert_eq!(ResultCode::INVALID_ENUM_VALUE.0, 0xF001);
        assert_eq!(ResultCode::INVALID_PRIORITY.0, 0xE001);
        assert_eq!(ResultCode::INVALID_CORE_ID.0, 0xE201);
        assert_eq!(ResultCode::INVALID_HANDLE.0, 0xE401);
        assert_eq!(ResultCode::INVALID_COMBINATION.0, 0xE801);
        assert_eq!(ResultCode::TIMED_OUT.0, 0xEA01);
        assert_eq!(ResultCode::CANCELLED.0, 0xEC01);
        assert_eq!(ResultCode::OUT_OF_RANGE.0, 0xEE01);
        assert_eq!(ResultCode::INVALID_STATE.0, 0xFA01);
        assert_eq!(ResultCode::BUSY.0, 0xF401);
        assert_eq!(ResultCode::TERMINATION_REQUESTED.0, 0x7601);
        assert_eq!(ResultCode::TIMED_OUT.module(), 1);
        assert_eq!(format!("{}", ResultCode::TIMED_OUT), "TimedOut(0xEA01)");
    }
}
