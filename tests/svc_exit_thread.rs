//! svcExitThread: the guest thread ends at once, its join and a wait on its handle (nn::os
//! WaitThread, stratosphère's `WaitSynchronization(thread handle, -1)`) see it ended, what it
//! held is given back; on a thread that is no spawned guest thread it returns InvalidState.
//! And svcGetSystemTick: the 19.2 MHz counter.

mod common;

use common::rt;
use hos::svc::{self, ThreadExit};
use hos::ResultCode;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn exit_thread_ends_the_guest_thread_and_a_wait_on_its_handle_completes() {
    let after = Arc::new(AtomicBool::new(false));
    let a = after.clone();
    let m = hos::os::Mutex::new(false);
    let held = m.clone();
    let t = rt()
        .thread()
        .name("Exits")
        .spawn(move || {
            let _level = held.lock().map_err(|e| e.code()).unwrap();
            let _ = svc::exit_thread();
            a.store(true, SeqCst);
        })
        .unwrap();
    let share = t.handle_share();
    // stratosphère's WaitThread: WaitSynchronization on the thread's handle, no timeout.
    assert_eq!(svc::wait_synchronization(&[share.handle()], -1), Ok(0));
    let joined = t.join();
    assert!(joined.is_err_and(|e| e.is::<ThreadExit>()));
    assert!(!after.load(SeqCst), "nothing ran after the exit");
    let relocked = m.try_lock();
    assert!(
        matches!(relocked, Err(hos::os::LockError::Abandoned(_))),
        "its level was released as abandoned, as at any end"
    );
}

#[test]
fn exit_thread_is_invalid_state_on_other_threads() {
    assert_eq!(svc::exit_thread().err(), Some(ResultCode::INVALID_STATE));
    let attached = rt().thread().name("AttachedExit").attach().unwrap();
    assert_eq!(svc::exit_thread().err(), Some(ResultCode::INVALID_STATE));
    drop(attached);
}

#[test]
fn the_system_tick_is_19_2_mhz_of_the_monotonic_clock() {
    let d = Duration::from_millis(20);
    let before = Instant::now();
    let a = svc::get_system_tick();
    std::thread::sleep(d);
    let b = svc::get_system_tick();
    let spent = before.elapsed();
    let ticks = |d: Duration| d.as_nanos() as u64 * 192 / 10_000;
    assert!(b - a >= ticks(d), "{} ticks in at least {d:?}", b - a);
    assert!(
        b - a <= ticks(spent) + 1,
        "{} ticks in at most {spent:?}",
        b - a
    );
    let on_guest = rt().thread().spawn(svc::get_system_tick).unwrap();
    let c = on_guest.join().unwrap();
    assert!(c >= b, "one counter for every thread");
}
