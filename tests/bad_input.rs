//! Each bad input answers with its Horizon result code, and nothing panics.

use hos::os::{wait_any, ClearMode, Event, Semaphore, Waitable};
use hos::svc::{self, Handle};
use hos::ResultCode;
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::rt;

#[test]
fn priority_64_is_invalid_priority_e001() {
    assert_eq!(ResultCode::INVALID_PRIORITY.0, 0xE001);
    for p in [64, -1, i32::MAX, i32::MIN] {
        let spawned = rt().thread().priority(p).spawn(|| ());
        assert_eq!(spawned.err(), Some(ResultCode::INVALID_PRIORITY), "{p}");
    }
    let t = rt()
        .thread()
        .spawn(|| {
            let me = Handle::CURRENT_THREAD;
            let bad = svc::set_thread_priority(me, 64);
            let kept = svc::get_thread_priority(me);
            (bad, kept, svc::set_thread_priority(me, 63))
        })
        .unwrap();
    assert_eq!(
        t.join().unwrap(),
        (Err(ResultCode::INVALID_PRIORITY), Ok(0x2C), Ok(()))
    );
}

#[test]
fn mask_0_or_past_the_cores_is_invalid_core_id_e201() {
    assert_eq!(ResultCode::INVALID_CORE_ID.0, 0xE201);
    let cores = rt().config().cores;
    for mask in [0, 1 << cores, u64::MAX] {
        let spawned = rt().thread().core_mask(mask).spawn(|| ());
        assert_eq!(
            spawned.err(),
            Some(ResultCode::INVALID_CORE_ID),
            "{mask:#x}"
        );
    }
    assert_eq!(
        rt().thread().ideal_core(cores as i32).spawn(|| ()).err(),
        Some(ResultCode::INVALID_CORE_ID)
    );
    let t = rt()
        .thread()
        .spawn(move || {
            let me = Handle::CURRENT_THREAD;
            [
                svc::set_thread_core_mask(me, -3, 0),
                svc::set_thread_core_mask(me, -3, 1 << cores),
                svc::set_thread_core_mask(me, 99, 0b1),
                svc::set_thread_core_mask(me, 1, 0b1),
            ]
        })
        .unwrap();
    assert_eq!(
        t.join().unwrap(),
        [
            Err(ResultCode::INVALID_CORE_ID),
            Err(ResultCode::INVALID_CORE_ID),
            Err(ResultCode::INVALID_CORE_ID),
            Err(ResultCode::INVALID_COMBINATION),
        ]
    );
}

#[test]
fn sixty_five_objects_are_out_of_range_ee01() {
    assert_eq!(ResultCode::OUT_OF_RANGE.0, 0xEE01);
    let events: Vec<Event> = (0..65).map(|_| Event::new(ClearMode::Auto)).collect();
    events[0].signal();
    let objects: Vec<&dyn Waitable> = events.iter().map(|e| e as &dyn Waitable).collect();
    assert_eq!(wait_any(&objects, None), Err(ResultCode::OUT_OF_RANGE));
    assert!(events[0].try_wait(), "nothing was consumed");
    assert_eq!(
        wait_any(&objects[..64], Some(Duration::ZERO)),
        Err(ResultCode::TIMED_OUT)
    );
    let handles = vec![Handle(1); 65];
    assert_eq!(
        svc::wait_synchronization(&handles, 0),
        Err(ResultCode::OUT_OF_RANGE)
    );
}

#[test]
fn unknown_closed_or_wrong_handles_are_invalid_handle_e401() {
    assert_eq!(ResultCode::INVALID_HANDLE.0, 0xE401);
    let ev = Arc::new(Event::new(ClearMode::Manual));
    let h = svc::create_handle(ev.clone()).unwrap();
    svc::close_handle(h).unwrap();
    for bad in [h, Handle(0), Handle(u32::MAX), Handle(0x7FFF)] {
        assert_eq!(
            svc::wait_synchronization(&[bad], 0),
            Err(ResultCode::INVALID_HANDLE),
            "{bad:?}"
        );
        assert_eq!(svc::close_handle(bad), Err(ResultCode::INVALID_HANDLE));
    }
    // A handle reused for another object does not revive the closed one.
    let h2 = svc::create_handle(ev.clone()).unwrap();
    assert_ne!(h, h2);
    assert_eq!(
        svc::get_thread_priority(h2),
        Err(ResultCode::INVALID_HANDLE),
        "not a thread"
    );
    // The current-thread pseudo-handle names nothing on a host thread.
    assert_eq!(
        svc::get_thread_priority(Handle::CURRENT_THREAD),
        Err(ResultCode::INVALID_HANDLE)
    );
    svc::close_handle(h2).unwrap();
}

#[test]
fn a_timeout_is_timed_out_ea01_and_consumes_nothing() {
    assert_eq!(ResultCode::TIMED_OUT.0, 0xEA01);
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let d = Duration::from_millis(2);
    let t = rt()
        .thread()
        .spawn({
            let ev = ev.clone();
            move || {
                let h = svc::create_handle(ev.clone()).unwrap();
                let r = [
                    ev.wait_async().timeout(d).block(),
                    svc::wait_synchronization(&[h], 2_000_000).map(drop),
                    svc::wait_synchronization(&[h], 0).map(drop),
                    svc::wait_synchronization(&[], 2_000_000).map(drop),
                    Semaphore::new(0, 1).acquire_timeout(d),
                ];
                svc::close_handle(h).unwrap();
                r
            }
        })
        .unwrap();
    assert!(t
        .join()
        .unwrap()
        .iter()
        .all(|r| *r == Err(ResultCode::TIMED_OUT)));
    assert_eq!(ev.wait_timeout(d), Err(ResultCode::TIMED_OUT));
}

#[test]
fn bad_sleep_lengths_and_bad_core_masks_never_panic() {
    let t = rt()
        .thread()
        .spawn(|| {
            for ns in [i64::MIN, -3, -1_000_000] {
                svc::sleep_thread(ns);
            }
            for (ideal, mask) in [(i32::MIN, u64::MAX), (i32::MAX, 0), (-4, 1), (63, 1 << 63)] {
                assert!(svc::set_thread_core_mask(Handle::CURRENT_THREAD, ideal, mask).is_err());
            }
        })
        .unwrap();
    t.join().unwrap();
}

#[test]
fn any_queue_capacity_is_accepted_without_a_panic() {
    for capacity in [0, 1, usize::MAX / 2, usize::MAX] {
        let q = hos::os::MessageQueue::<u64>::new(capacity);
        assert_eq!(q.capacity(), capacity.max(1));
        assert!(q.try_send(1).is_ok());
        assert_eq!(q.try_receive(), Some(1));
    }
}

#[test]
fn a_guest_thread_the_os_refuses_is_invalid_state_and_the_runtime_serves_on() {
    // No OS gives a thread a stack as large as the address space.
    let refused = rt().thread().stack_size(usize::MAX).spawn(|| ());
    assert_eq!(refused.err(), Some(ResultCode::INVALID_STATE));
    let ok = rt().thread().stack_size(256 * 1024).spawn(|| 7).unwrap();
    assert_eq!(ok.join().unwrap(), 7);
}
