//! Stratosphère's nn::os primitives on Horizon (Atmosphere-NX/Atmosphere
//! `libraries/libstratosphere/source/os/impl/`): `os_internal_critical_section_impl`,
//! `os_internal_condition_variable_impl` and `os_internal_light_event_impl` (`.os.horizon`).

use super::libnx;
use super::me;
use hos::svc::{self, ArbitrationType, SignalType};
use hos::ResultCode;
use std::sync::atomic::{fence, AtomicU32, Ordering::*};
use std::time::Instant;

/// `InternalCriticalSection`: since 2020 stratosphère's Horizon build calls libnx's
/// `mutexLock`, `mutexTryLock` and `mutexUnlock` on its tag word.
#[derive(Debug, Default)]
pub(crate) struct InternalCriticalSection(pub libnx::Mutex);

impl InternalCriticalSection {
    pub(crate) fn enter(&self) {
        self.0.lock();
    }

    pub(crate) fn try_enter(&self) -> bool {
        self.0.try_lock()
    }

    pub(crate) fn leave(&self) {
        self.0.unlock();
    }

    pub(crate) fn is_locked_by_current_thread(&self) -> bool {
        self.0.is_locked_by_current_thread()
    }
}

/// `ConditionVariableStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Success,
    TimedOut,
}

/// `InternalConditionVariable` (its `value` word, 0 at start).
#[derive(Debug, Default)]
pub(crate) struct InternalConditionVariable(pub AtomicU32);

impl InternalConditionVariable {
    pub(crate) fn signal(&self) {
        svc::signal_process_wide_key(&self.0, 1);
    }

    pub(crate) fn broadcast(&self) {
        svc::signal_process_wide_key(&self.0, -1);
    }

    /// `Wait`: aborts on any error.
    pub(crate) fn wait(&self, cs: &InternalCriticalSection) {
        let r = svc::wait_process_wide_key_atomic(&cs.0 .0, &self.0, me(), -1);
        assert_eq!(r, Ok(()), "R_ABORT_UNLESS");
    }

    /// `TimedWait` until `deadline`: no time left is TimedOut without a svc (the lock kept);
    /// a timed-out svc takes the lock again here.
    pub(crate) fn timed_wait(&self, cs: &InternalCriticalSection, deadline: Instant) -> Status {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Status::TimedOut;
        }
        let ns = left.as_nanos().min(i64::MAX as u128) as i64;
        match svc::wait_process_wide_key_atomic(&cs.0 .0, &self.0, me(), ns) {
            Ok(()) => Status::Success,
            Err(ResultCode::TIMED_OUT) => {
                cs.enter();
                Status::TimedOut
            }
            Err(e) => panic!("R_END_TRY_CATCH_WITH_ABORT_UNLESS: {e}"),
        }
    }
}

const NOT_SIGNALED_AND_NO_WAITER: i32 = 0;
const NOT_SIGNALED_AND_WAITER: i32 = 1;
const SIGNALED: i32 = 2;

/// `InternalLightEventImpl`: `m_state`, a `std::atomic<s32>` the kernel arbitrates on.
#[derive(Debug, Default)]
pub(crate) struct InternalLightEvent(pub AtomicU32);

fn cas(state: &AtomicU32, expected: i32, desired: i32) -> bool {
    // std::atomic::compare_exchange_strong: seq_cst.
    state
        .compare_exchange(expected as u32, desired as u32, SeqCst, SeqCst)
        .is_ok()
}

/// `SvcSignalToAddressFor{Auto,Manual}Clear`: false on InvalidState, abort on anything else.
fn signal_to_address(state: &AtomicU32, kind: SignalType, count: i32) -> bool {
    match svc::signal_to_address(state, kind, NOT_SIGNALED_AND_WAITER, count) {
        Ok(()) => true,
        Err(ResultCode::INVALID_STATE) => false,
        Err(e) => panic!("R_END_TRY_CATCH_WITH_ABORT_UNLESS: {e}"),
    }
}

/// `SvcWaitForAddressIfEqual`: `Ok(true)` signalled, `Ok(false)` InvalidState,
/// `Err(())` TimedOut; abort on anything else.
fn wait_for_address(state: &AtomicU32, timeout_ns: i64) -> Result<bool, ()> {
    let kind = ArbitrationType::WaitIfEqual;
    match svc::wait_for_address(state, kind, NOT_SIGNALED_AND_WAITER, timeout_ns) {
        Ok(()) => Ok(true),
        Err(ResultCode::INVALID_STATE) => Ok(false),
        Err(ResultCode::TIMED_OUT) => Err(()),
        Err(e) => panic!("R_END_TRY_CATCH_WITH_ABORT_UNLESS: {e}"),
    }
}

fn left_ns(deadline: Instant) -> i64 {
    let left = deadline.saturating_duration_since(Instant::now());
    left.as_nanos().min(i64::MAX as u128) as i64
}

impl InternalLightEvent {
    pub(crate) fn new(signaled: bool) -> Self {
        let s = if signaled {
            SIGNALED
        } else {
            NOT_SIGNALED_AND_NO_WAITER
        };
        InternalLightEvent(AtomicU32::new(s as u32))
    }

    fn state(&self, order: std::sync::atomic::Ordering) -> i32 {
        self.0.load(order) as i32
    }

    pub(crate) fn signal_with_auto_clear(&self) {
        loop {
            fence(SeqCst);
            match self.state(Relaxed) {
                NOT_SIGNALED_AND_NO_WAITER => {
                    if cas(&self.0, NOT_SIGNALED_AND_NO_WAITER, SIGNALED) {
                        return;
                    }
                }
                NOT_SIGNALED_AND_WAITER => {
                    let kind = SignalType::SignalAndModifyByWaitingCountIfEqual;
                    if signal_to_address(&self.0, kind, 1) {
                        return;
                    }
                }
                SIGNALED => return,
                s => unreachable!("light event state {s}"),
            }
        }
    }

    pub(crate) fn signal_with_manual_clear(&self) {
        loop {
            fence(SeqCst);
            match self.state(Relaxed) {
                NOT_SIGNALED_AND_NO_WAITER => {
                    if cas(&self.0, NOT_SIGNALED_AND_NO_WAITER, SIGNALED) {
                        return;
                    }
                }
                NOT_SIGNALED_AND_WAITER => {
                    if signal_to_address(&self.0, SignalType::SignalAndIncrementIfEqual, -1) {
                        return;
                    }
                }
                SIGNALED => return,
                s => unreachable!("light event state {s}"),
            }
        }
    }

    pub(crate) fn clear(&self) {
        fence(Acquire);
        cas(&self.0, SIGNALED, NOT_SIGNALED_AND_NO_WAITER);
        fence(Release);
    }

    pub(crate) fn wait_with_auto_clear(&self) {
        loop {
            let state = self.state(Acquire);
            match state {
                NOT_SIGNALED_AND_NO_WAITER | NOT_SIGNALED_AND_WAITER => {
                    if !self.mark_waiter(state) {
                        continue;
                    }
                    if wait_for_address(&self.0, -1) == Ok(true) {
                        break;
                    }
                }
                SIGNALED => {
                    if cas(&self.0, SIGNALED, NOT_SIGNALED_AND_NO_WAITER) {
                        break;
                    }
                }
                s => unreachable!("light event state {s}"),
            }
        }
        fence(SeqCst);
    }

    pub(crate) fn wait_with_manual_clear(&self) {
        loop {
            let state = self.state(Acquire);
            match state {
                NOT_SIGNALED_AND_NO_WAITER | NOT_SIGNALED_AND_WAITER => {
                    if !self.mark_waiter(state) {
                        continue;
                    }
                    let _ = wait_for_address(&self.0, -1);
                    break;
                }
                SIGNALED => break,
                s => unreachable!("light event state {s}"),
            }
        }
        fence(SeqCst);
    }

    pub(crate) fn try_wait_with_auto_clear(&self) -> bool {
        let got = cas(&self.0, SIGNALED, NOT_SIGNALED_AND_NO_WAITER);
        fence(SeqCst);
        got
    }

    pub(crate) fn try_wait_with_manual_clear(&self) -> bool {
        let got = self.state(Acquire) == SIGNALED;
        fence(SeqCst);
        got
    }

    pub(crate) fn timed_wait_with_auto_clear(&self, deadline: Instant) -> bool {
        let got = loop {
            let state = self.state(Acquire);
            match state {
                NOT_SIGNALED_AND_NO_WAITER | NOT_SIGNALED_AND_WAITER => {
                    if !self.mark_waiter(state) {
                        continue;
                    }
                    match wait_for_address(&self.0, left_ns(deadline)) {
                        Ok(true) => break true,
                        Ok(false) => {}
                        Err(()) => break false,
                    }
                }
                SIGNALED => {
                    if cas(&self.0, SIGNALED, NOT_SIGNALED_AND_NO_WAITER) {
                        break true;
                    }
                }
                s => unreachable!("light event state {s}"),
            }
        };
        fence(SeqCst);
        got
    }

    pub(crate) fn timed_wait_with_manual_clear(&self, deadline: Instant) -> bool {
        let got = loop {
            let state = self.state(Acquire);
            match state {
                NOT_SIGNALED_AND_NO_WAITER | NOT_SIGNALED_AND_WAITER => {
                    if !self.mark_waiter(state) {
                        continue;
                    }
                    break wait_for_address(&self.0, left_ns(deadline)).is_ok();
                }
                SIGNALED => break true,
                s => unreachable!("light event state {s}"),
            }
        };
        fence(SeqCst);
        got
    }

    /// The `NotSignaledAndNoWaiter` case (the loaded `state`): its CAS to
    /// `NotSignaledAndWaiter` before it falls through to the wait; `false` if that failed
    /// (the switch runs again). The `NotSignaledAndWaiter` case has nothing to mark.
    fn mark_waiter(&self, state: i32) -> bool {
        state == NOT_SIGNALED_AND_WAITER || cas(&self.0, state, NOT_SIGNALED_AND_WAITER)
    }
}
