//! Each result code the kernel's synchronization svcs answer bad input or a bad state with,
//! triggered through the public svcs; nothing panics and no waiter is left behind.

mod common;

use common::rt;
use hos::svc::{self, ArbitrationType, Handle, SignalType, WAITERS};
use hos::ResultCode;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A closed handle: made and closed at once.
fn closed_handle() -> Handle {
    let (w, r) = svc::create_event().unwrap();
    svc::close_handle(w).unwrap();
    svc::close_handle(r).unwrap();
    w
}

#[test]
fn invalid_handle_e401() {
    let (w, r) = svc::create_event().unwrap();
    let garbage = [
        Handle::INVALID,
        closed_handle(),
        Handle(0x7FFF),
        Handle(0xFFFF_FFFF),
        Handle(r.0 | WAITERS),
    ];
    let e = Some(ResultCode::INVALID_HANDLE);
    for h in garbage {
        assert_eq!(svc::signal_event(h).err(), e, "{h:?}");
        assert_eq!(svc::clear_event(h).err(), e, "{h:?}");
        assert_eq!(svc::reset_signal(h).err(), e, "{h:?}");
        assert_eq!(svc::wait_synchronization(&[h], 0).err(), e, "{h:?}");
        assert_eq!(svc::get_thread_id(h).err(), e, "{h:?}");
        assert_eq!(svc::cancel_synchronization(h).err(), e, "{h:?}");
        let ty = svc::INFO_TYPE_THREAD_TICK_COUNT;
        assert_eq!(svc::get_info(ty, h, u64::MAX).err(), e, "{h:?}");
        // ArbitrateLock looks the owner up only once the word is owner | WAITERS.
        let word = AtomicU32::new(h.0 | WAITERS);
        assert_eq!(svc::arbitrate_lock(h, &word, 1).err(), e, "{h:?}");
        assert_eq!(word.load(SeqCst), h.0 | WAITERS, "untouched");
    }
    // The wrong side or kind of object.
    assert_eq!(
        svc::signal_event(r).err(),
        e,
        "a readable side cannot be signalled"
    );
    assert_eq!(
        svc::reset_signal(w).err(),
        e,
        "a writable side cannot be reset"
    );
    let waited = svc::wait_synchronization(&[w], 0).err();
    assert_eq!(waited, e, "a writable side cannot be waited on");
    assert_eq!(svc::get_thread_id(r).err(), e, "an event is no thread");
    assert_eq!(
        svc::cancel_synchronization(w).err(),
        e,
        "an event is no thread"
    );
    let word = AtomicU32::new(r.0 | WAITERS);
    assert_eq!(
        svc::arbitrate_lock(r, &word, 1).err(),
        e,
        "an event owns no lock"
    );
    // The pseudo-handle: a thread for the thread svcs, nothing for a wait or a lock owner.
    let t = rt()
        .thread()
        .spawn(|| {
            let me = Handle::CURRENT_THREAD;
            let word = AtomicU32::new(me.0 | WAITERS);
            (
                svc::get_thread_id(me).is_ok(),
                svc::wait_synchronization(&[me], 0).err(),
                svc::arbitrate_lock(me, &word, 1).err(),
            )
        })
        .unwrap();
    assert_eq!(t.join().unwrap(), (true, e, e));
    let outside = svc::get_thread_id(Handle::CURRENT_THREAD).err();
    assert_eq!(outside, e, "no guest thread here");
    svc::close_handle(w).unwrap();
    svc::close_handle(r).unwrap();
}

#[test]
fn a_mismatched_word_is_not_an_error_for_a_lock() {
    // The owner unlocked between the caller's mark and its svc: success, reload and retry.
    let word = AtomicU32::new(0);
    assert_eq!(svc::arbitrate_lock(Handle(0x1234), &word, 1), Ok(()));
    word.store(0x1234, SeqCst);
    assert_eq!(
        svc::arbitrate_lock(Handle(0x1234), &word, 1),
        Ok(()),
        "no WAITERS bit"
    );
}

#[test]
fn invalid_enum_value_f001() {
    assert_eq!(ResultCode::INVALID_ENUM_VALUE.0, 0xF001);
    assert_eq!(
        ArbitrationType::try_from(3),
        Err(ResultCode::INVALID_ENUM_VALUE)
    );
    assert_eq!(SignalType::try_from(3), Err(ResultCode::INVALID_ENUM_VALUE));
    let t = rt().thread().spawn(|| {
        let me = Handle::CURRENT_THREAD;
        [0, 24, 26, 0xF000_0002, u32::MAX].map(|ty| svc::get_info(ty, me, u64::MAX))
    });
    for r in t.unwrap().join().unwrap() {
        assert_eq!(r, Err(ResultCode::INVALID_ENUM_VALUE));
    }
}

/// A thread's CPU time in 19.2 MHz ticks, as GetInfo counts it.
fn ticks(t: hos::CpuTime) -> u64 {
    (t.total().as_nanos() * 192 / 10_000) as u64
}

#[test]
fn invalid_combination_e801_before_the_handle() {
    let t = rt().thread().spawn(|| {
        let ty = svc::INFO_TYPE_THREAD_TICK_COUNT;
        let me = Handle::CURRENT_THREAD;
        let bad = [64, 1000, u64::MAX - 1].map(|sub| svc::get_info(ty, me, sub));
        let order = svc::get_info(ty, Handle::INVALID, 64);
        // A svc is a checkpoint, where a thread may change cores: read again until the core
        // stayed the same around the reads (bounded).
        for _ in 0..1_000 {
            let core = svc::get_current_processor_number() as u64;
            // Within the thread's own CPU time read around it (zero where the OS layer has no
            // per-thread clock, as the std fallback).
            let before = ticks(hos::thread::cpu_time());
            let (all, here) = (svc::get_info(ty, me, u64::MAX), svc::get_info(ty, me, core));
            let after = ticks(hos::thread::cpu_time());
            let elsewhere = svc::get_info(ty, me, (core + 1) % 64);
            if svc::get_current_processor_number() as u64 != core {
                continue;
            }
            let within =
                |t: Result<u64, ResultCode>| t.is_ok_and(|t| (before..=after).contains(&t));
            return (bad, order, within(all), within(here), elsewhere);
        }
        panic!("the thread changed cores at every try");
    });
    let (bad, order, all, here, elsewhere) = t.unwrap().join().unwrap();
    let e = Err(ResultCode::INVALID_COMBINATION);
    assert_eq!(bad, [e, e, e]);
    assert_eq!(order, e, "the subtype is checked before the handle");
    assert_eq!((all, here, elsewhere), (true, true, Ok(0)));
}

#[test]
fn invalid_state_fa01() {
    let (w, r) = svc::create_event().unwrap();
    assert_eq!(
        svc::reset_signal(r),
        Err(ResultCode::INVALID_STATE),
        "not signalled"
    );
    svc::signal_event(w).unwrap();
    svc::reset_signal(r).unwrap();
    assert_eq!(
        svc::reset_signal(r),
        Err(ResultCode::INVALID_STATE),
        "taken already"
    );
    svc::close_handle(w).unwrap();
    svc::close_handle(r).unwrap();
    let word = AtomicU32::new(5);
    let s = Err(ResultCode::INVALID_STATE);
    assert_eq!(
        svc::wait_for_address(&word, ArbitrationType::WaitIfEqual, 4, -1),
        s
    );
    assert_eq!(
        svc::wait_for_address(&word, ArbitrationType::WaitIfLessThan, 5, -1),
        s
    );
    assert_eq!(
        svc::signal_to_address(&word, SignalType::SignalAndIncrementIfEqual, 4, 1),
        s
    );
    let modify = SignalType::SignalAndModifyByWaitingCountIfEqual;
    assert_eq!(svc::signal_to_address(&word, modify, 4, 1), s);
    assert_eq!(word.load(SeqCst), 5, "untouched");
}

#[test]
fn a_signal_into_a_mutex_naming_no_thread_is_invalid_state_and_not_held() {
    let (mutex, key) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (m, k) = (mutex.clone(), key.clone());
    let waiter = rt()
        .thread()
        .spawn(move || {
            let me = svc::current_thread_handle().0;
            m.store(me, SeqCst);
            svc::wait_process_wide_key_atomic(&m, &k, me, -1)
        })
        .unwrap();
    // The key reads 1 once the waiter is queued (the same arbiter operation).
    let end = Instant::now() + Duration::from_secs(60);
    while key.load(SeqCst) != 1 {
        assert!(Instant::now() < end, "never queued");
        std::thread::yield_now();
    }
    mutex.store(0x7777, SeqCst);
    svc::signal_process_wide_key(&key, 1);
    assert_eq!(waiter.join().unwrap(), Err(ResultCode::INVALID_STATE));
    assert_eq!(
        mutex.load(SeqCst),
        0x7777 | WAITERS,
        "marked before the lookup"
    );
    assert_eq!(key.load(SeqCst), 0, "nobody left on the key");
}

/// The kernel never reads a condition-variable key: a guest that zeroed it while a thread
/// waits there still has its signal wake that thread (the lock-free check of a signal with
/// nobody to wake counts the waits themselves, not the key), and the signal that takes the
/// last waiter writes 0.
#[test]
fn a_signal_wakes_a_condvar_waiter_although_the_guest_zeroed_the_key() {
    let (mutex, key) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (m, k) = (mutex.clone(), key.clone());
    let waiter = rt()
        .thread()
        .spawn(move || {
            let me = svc::current_thread_handle().0;
            m.store(me, SeqCst);
            // Bounded: a lost signal fails as TimedOut instead of hanging the test.
            let r = svc::wait_process_wide_key_atomic(&m, &k, me, 60_000_000_000);
            (r, me)
        })
        .unwrap();
    // The key reads 1 once the waiter is queued (the same arbiter operation).
    let end = Instant::now() + Duration::from_secs(60);
    while key.load(SeqCst) != 1 {
        assert!(Instant::now() < end, "never queued");
        std::thread::yield_now();
    }
    key.store(0, SeqCst);
    svc::signal_process_wide_key(&key, 1);
    let (r, me) = waiter.join().unwrap();
    assert_eq!(r, Ok(()), "woken by the signal, holding the mutex");
    assert_eq!(mutex.load(SeqCst), me, "the free mutex was taken for it");
    assert_eq!(key.load(SeqCst), 0, "nobody left on the key");
}

/// A key left at 1 by a wait that timed out (nobody waits now) is written 0 by the next
/// signal, as the kernel's signal that finds nobody does; the signal after finds it 0.
#[test]
fn a_signal_with_nobody_waiting_clears_a_stale_key() {
    let t = rt().thread().spawn(|| {
        let me = svc::current_thread_handle().0;
        let (mutex, key) = (AtomicU32::new(me), AtomicU32::new(0));
        let timed = svc::wait_process_wide_key_atomic(&mutex, &key, me, 100_000);
        let stale = key.load(SeqCst);
        svc::signal_process_wide_key(&key, 1);
        let cleared = key.load(SeqCst);
        svc::signal_process_wide_key(&key, -1);
        (timed, stale, cleared, key.load(SeqCst), mutex.load(SeqCst))
    });
    let to = Err(ResultCode::TIMED_OUT);
    assert_eq!(t.unwrap().join().unwrap(), (to, 1, 0, 0, 0));
}

#[test]
fn timed_out_ea01_and_a_zero_timeout_condvar_wait_releases() {
    let t = rt().thread().spawn(|| {
        let me = svc::current_thread_handle().0;
        let (mutex, key) = (AtomicU32::new(me), AtomicU32::new(0));
        let poll = svc::wait_process_wide_key_atomic(&mutex, &key, me, 0);
        let released = mutex.load(SeqCst);
        mutex.store(me, SeqCst);
        let timed = svc::wait_process_wide_key_atomic(&mutex, &key, me, 100_000);
        (poll, released, timed, mutex.load(SeqCst), key.load(SeqCst))
    });
    let to = Err(ResultCode::TIMED_OUT);
    // Released at once and not held again: the console's behaviour.
    assert_eq!(t.unwrap().join().unwrap(), (to, 0, to, 0, 1));
    let t = rt().thread().spawn(|| {
        let word = AtomicU32::new(0);
        let w64 = std::sync::atomic::AtomicU64::new(9);
        (
            svc::wait_for_address(&word, ArbitrationType::WaitIfEqual, 0, 100_000),
            svc::wait_for_address64(&w64, 9, 100_000),
        )
    });
    assert_eq!(t.unwrap().join().unwrap(), (to, to));
}
