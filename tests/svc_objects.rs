//! Kernel events, svcCancelSynchronization's sticky cancel, and guest threads' real handles.

mod common;

use common::rt;
use hos::svc::{self, ArbitrationType, Handle, WAITERS};
use hos::ResultCode;
use std::sync::atomic::AtomicU32;

#[test]
fn a_kernel_event_wakes_every_waiter_and_stays_signalled_until_cleared() {
    let (w, r) = svc::create_event().unwrap();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            rt().thread()
                .spawn(move || svc::wait_synchronization(&[r], -1))
                .unwrap()
        })
        .collect();
    svc::signal_event(w).unwrap();
    svc::signal_event(w).unwrap();
    for t in waiters {
        assert_eq!(t.join().unwrap(), Ok(0));
    }
    assert_eq!(
        svc::wait_synchronization(&[r], 0),
        Ok(0),
        "a wait consumes nothing"
    );
    svc::clear_event(r).unwrap();
    assert_eq!(
        svc::wait_synchronization(&[r], 0),
        Err(ResultCode::TIMED_OUT)
    );
    svc::clear_event(w).unwrap();
    svc::close_handle(w).unwrap();
    assert_eq!(svc::signal_event(w), Err(ResultCode::INVALID_HANDLE));
    svc::close_handle(r).unwrap();
}

#[test]
fn a_cancel_is_sticky_until_a_wait_would_block() {
    let t = rt()
        .thread()
        .spawn(|| {
            let me = Handle::CURRENT_THREAD;
            let (w, r) = svc::create_event().unwrap();
            svc::cancel_synchronization(me).unwrap();
            // A poll, a ready object, an arbiter wait and a sleep neither end on it nor take it.
            let poll = svc::wait_synchronization(&[r], 0);
            svc::signal_event(w).unwrap();
            let ready = svc::wait_synchronization(&[r], -1);
            svc::clear_event(w).unwrap();
            let word = AtomicU32::new(0);
            let arbiter = svc::wait_for_address(&word, ArbitrationType::WaitIfEqual, 0, 50_000);
            svc::sleep_thread(10_000);
            let cancelled = svc::wait_synchronization(&[r], -1);
            let consumed = svc::wait_synchronization(&[r], 50_000);
            svc::close_handle(w).unwrap();
            svc::close_handle(r).unwrap();
            [poll, ready, arbiter.map(|()| 0), cancelled, consumed]
        })
        .unwrap();
    let [poll, ready, arbiter, cancelled, consumed] = t.join().unwrap();
    assert_eq!(poll, Err(ResultCode::TIMED_OUT));
    assert_eq!(ready, Ok(0));
    assert_eq!(
        arbiter,
        Err(ResultCode::TIMED_OUT),
        "arbiter waits are not cancellable"
    );
    assert_eq!(
        cancelled,
        Err(ResultCode::CANCELLED),
        "the first wait that would block"
    );
    assert_eq!(consumed, Err(ResultCode::TIMED_OUT), "taken by that wait");
}

#[test]
fn a_cancel_ends_a_blocked_wait_or_the_next_one() {
    for _ in 0..50 {
        let t = rt()
            .thread()
            .spawn(|| svc::wait_synchronization(&[], -1))
            .unwrap();
        svc::cancel_synchronization(t.thread().handle()).unwrap();
        assert_eq!(t.join().unwrap(), Err(ResultCode::CANCELLED));
    }
}

#[test]
fn a_guest_thread_has_a_real_handle_while_it_lives() {
    let threads: Vec<_> = (0..8)
        .map(|_| rt().thread().spawn(svc::current_thread_handle).unwrap())
        .collect();
    let mut seen = Vec::new();
    for t in threads {
        let h = t.thread().handle();
        assert_ne!(h, Handle::INVALID);
        assert_eq!(h.0 & (WAITERS | 0x8000_0000), 0, "{h:?} fits a mutex word");
        assert_eq!(svc::get_thread_id(h), Ok(t.thread().id()));
        assert!(!seen.contains(&h), "{h:?} twice");
        seen.push(h);
        assert_eq!(t.join().unwrap(), h, "the thread sees its own handle");
        assert_eq!(
            svc::get_thread_id(h),
            Err(ResultCode::INVALID_HANDLE),
            "closed once joined"
        );
    }
    assert_eq!(
        svc::current_thread_handle(),
        Handle::INVALID,
        "a host thread has none"
    );
}

#[test]
fn a_guest_thread_runs_on_a_virtual_core_it_may_use() {
    let cores = rt().config().cores as i32;
    let t = rt()
        .thread()
        .core_mask(0b10)
        .ideal_core(1)
        .spawn(svc::get_current_processor_number)
        .unwrap();
    assert_eq!(t.join().unwrap(), 1);
    let t = rt()
        .thread()
        .spawn(svc::get_current_processor_number)
        .unwrap();
    assert!((0..cores).contains(&t.join().unwrap()));
}
