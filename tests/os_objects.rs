//! Guest semantics of the nn::os objects and guest threads. No timing asserts: a timeout
//! only ever bounds a wait that must fail, so a slow machine makes the test slower, not red.

use hos::os::{
    wait_any, ClearMode, ConditionVariable, Event, LockError, MessageQueue, Mutex, Semaphore,
    TimerEvent, Waitable,
};
use hos::ResultCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::rt;

const SHORT: Duration = Duration::from_millis(20);

/// Whether the OS layer reads CPU clocks (the std-only fallback reports zero).
const OS_CPU_CLOCK: bool = cfg!(all(target_os = "linux", not(hos_force_fallback)));

#[test]
fn auto_event_lets_one_waiter_through_manual_lets_all() {
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let passed = Arc::new(AtomicUsize::new(0));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (ev, passed) = (ev.clone(), passed.clone());
            rt().thread()
                .spawn(move || {
                    if ev.wait_timeout(Duration::from_millis(300)).is_ok() {
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .unwrap()
        })
        .collect();
    ev.signal();
    for w in waiters {
        w.join().unwrap();
    }
    assert!(passed.load(Ordering::Relaxed) <= 1);
    assert_eq!(
        passed.load(Ordering::Relaxed) + usize::from(ev.try_wait()),
        1,
        "one signal, one pass"
    );

    let ev = Arc::new(Event::new(ClearMode::Manual));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let ev = ev.clone();
            rt().thread().spawn(move || ev.wait()).unwrap()
        })
        .collect();
    ev.signal();
    for w in waiters {
        assert_eq!(w.join().unwrap(), Ok(()));
    }
    assert!(ev.is_signalled() && ev.try_wait() && ev.try_wait());
    ev.clear();
    assert!(!ev.try_wait());
    assert_eq!(ev.wait_timeout(SHORT), Err(ResultCode::TIMED_OUT));
}

#[test]
fn event_wakes_a_parked_guest_and_a_host_thread() {
    for _ in 0..50 {
        let ev = Arc::new(Event::new(ClearMode::Auto));
        let passed = Arc::new(AtomicUsize::new(0));
        let (e2, p2) = (ev.clone(), passed.clone());
        let guest = rt()
            .thread()
            .spawn(move || {
                let r = e2.wait();
                p2.fetch_add(1, Ordering::Release);
                r
            })
            .unwrap();
        let (e3, p3) = (ev.clone(), passed.clone());
        let host = std::thread::spawn(move || {
            let r = e3.wait();
            p3.fetch_add(1, Ordering::Release);
            r
        });
        // One signal lets one through; the second goes out once the first has passed, so
        // it cannot merge into a signal nobody has taken yet.
        ev.signal();
        while passed.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        ev.signal();
        assert_eq!(
            (guest.join().unwrap(), host.join().unwrap()),
            (Ok(()), Ok(()))
        );
    }
}

#[test]
fn mutex_excludes_recurses_and_refuses_a_second_plain_lock() {
    let m = Arc::new(Mutex::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (m, counter) = (m.clone(), counter.clone());
            rt().thread()
                .spawn(move || {
                    for _ in 0..2000 {
                        let _g = m.lock().map_err(|e| e.code()).unwrap();
                        // A load and a store, not an RMW: a second holder would lose counts.
                        let v = counter.load(Ordering::Relaxed);
                        counter.store(v + 1, Ordering::Relaxed);
                    }
                })
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(counter.load(Ordering::Relaxed), 8000);

    let g = m.lock().map_err(|e| e.code()).unwrap();
    assert!(matches!(
        m.lock(),
        Err(LockError::Failed(ResultCode::INVALID_STATE))
    ));
    let m2 = m.clone();
    let other = rt()
        .thread()
        .spawn(move || m2.try_lock().map(drop).map_err(|e| e.code()));
    assert_eq!(other.unwrap().join().unwrap(), Err(ResultCode::TIMED_OUT));
    drop(g);

    let r = Mutex::new(true);
    let (a, b) = (r.lock().ok().unwrap(), r.lock().ok().unwrap());
    drop(a);
    assert!(r.is_locked_by_current_thread());
    drop(b);
    assert!(!r.is_locked_by_current_thread());
}

#[test]
fn a_panicking_owner_abandons_the_mutex_and_the_next_locker_is_told() {
    let m = Arc::new(Mutex::new(false));
    let m2 = m.clone();
    let t = rt()
        .thread()
        .spawn(move || {
            let _g = m2.lock().ok().unwrap();
            panic!("guest code failed holding the mutex");
        })
        .unwrap();
    assert!(t.join().is_err(), "join reports the panic");
    match m.lock() {
        Err(LockError::Abandoned(g)) => drop(g),
        other => panic!("expected Abandoned, got {other:?}"),
    }
    assert!(m.lock().is_ok(), "told once");

    // A level held without a guard is abandoned when its thread ends.
    let m3 = m.clone();
    let t = rt()
        .thread()
        .spawn(move || {
            m3.lock().ok().unwrap().leak();
            assert!(m3.is_locked_by_current_thread());
        })
        .unwrap();
    t.join().unwrap();
    assert!(matches!(m.lock(), Err(LockError::Abandoned(_))));
    // unlock() only releases a level this thread leaked.
    assert_eq!(m.unlock(), Err(ResultCode::INVALID_STATE));
    m.lock().ok().unwrap().leak();
    assert_eq!(m.unlock(), Ok(()));
    assert!(m.try_lock().is_ok());
}

#[test]
fn condition_variable_signal_broadcast_and_timeout() {
    let m = Arc::new(Mutex::new(false));
    let cv = Arc::new(ConditionVariable::new());
    let ready = Arc::new(AtomicUsize::new(0));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (m, cv, ready) = (m.clone(), cv.clone(), ready.clone());
            rt().thread()
                .spawn(move || {
                    let mut g = m.lock().ok().unwrap();
                    while ready.load(Ordering::Relaxed) == 0 {
                        let (g2, r) = cv.wait(g);
                        assert_eq!(r, Ok(()));
                        g = g2;
                    }
                    assert!(m.is_locked_by_current_thread());
                })
                .unwrap()
        })
        .collect();
    {
        let _g = m.lock().ok().unwrap();
        ready.store(1, Ordering::Relaxed);
        cv.broadcast();
    }
    for w in waiters {
        w.join().unwrap();
    }

    // signal: a producer hands items to a consumer one at a time.
    let items = Arc::new(AtomicUsize::new(0));
    let (m2, cv2, items2) = (m.clone(), cv.clone(), items.clone());
    let consumer = rt()
        .thread()
        .spawn(move || {
            for _ in 0..100 {
                let mut g = m2.lock().ok().unwrap();
                while items2.load(Ordering::Relaxed) == 0 {
                    g = cv2.wait(g).0;
                }
                items2.fetch_sub(1, Ordering::Relaxed);
            }
        })
        .unwrap();
    for _ in 0..100 {
        let _g = m.lock().ok().unwrap();
        items.fetch_add(1, Ordering::Relaxed);
        cv.signal();
    }
    consumer.join().unwrap();

    let m3 = m.clone();
    let t = rt()
        .thread()
        .spawn(move || {
            let g = m3.lock().ok().unwrap();
            let (g, r) = ConditionVariable::new().wait_timeout(g, SHORT);
            (r, m3.is_locked_by_current_thread(), drop(g))
        })
        .unwrap();
    assert_eq!(t.join().unwrap(), (Err(ResultCode::TIMED_OUT), true, ()));
}

#[test]
fn semaphore_counts_and_release_wakes_as_many() {
    let s = Arc::new(Semaphore::new(0, 8));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let s = s.clone();
            rt().thread().spawn(move || s.acquire()).unwrap()
        })
        .collect();
    s.release(3).unwrap();
    for w in waiters {
        assert_eq!(w.join().unwrap(), Ok(()));
    }
    assert_eq!(s.count(), 0);
    assert_eq!(s.acquire_timeout(SHORT), Err(ResultCode::TIMED_OUT));
    assert_eq!(s.release(9), Err(ResultCode::OUT_OF_RANGE));
    assert_eq!(s.count(), 0, "a refused release releases nothing");
    s.release(8).unwrap();
    assert_eq!(s.count(), 8);
}

#[test]
fn full_queue_blocks_its_sender_and_keeps_every_message_in_order() {
    let q = Arc::new(MessageQueue::<u64>::new(2));
    let q2 = q.clone();
    let sender = rt()
        .thread()
        .spawn(move || {
            for i in 0..500 {
                q2.send(i).unwrap();
            }
        })
        .unwrap();
    for i in 0..500 {
        assert_eq!(q.receive(), Ok(i));
    }
    sender.join().unwrap();

    q.send(1).unwrap();
    q.send(2).unwrap();
    let e = q.send_timeout(3, SHORT).unwrap_err();
    assert_eq!((e.value, e.code), (3, ResultCode::TIMED_OUT));
    assert_eq!(q.try_jam(0).unwrap_err().value, 0);
    assert_eq!(q.len(), 2, "a timed-out send consumed nothing");
    assert_eq!(q.receive(), Ok(1));
    q.jam(0).unwrap();
    assert_eq!(q.try_peek(), Some(0));
    assert_eq!(q.peek_timeout(SHORT), Ok(0));
    assert_eq!(q.try_receive(), Some(0));
    assert_eq!(q.receive_timeout(SHORT), Ok(2));
    assert_eq!(q.receive_timeout(SHORT), Err(ResultCode::TIMED_OUT));
    assert_eq!(q.peek_timeout(SHORT), Err(ResultCode::TIMED_OUT));
    assert!(q.is_empty());
    assert_eq!(q.capacity(), 2);
}

#[test]
fn a_peek_does_not_swallow_a_receivers_wakeup() {
    for _ in 0..50 {
        let q = Arc::new(MessageQueue::<u32>::new(4));
        let (q1, q2) = (q.clone(), q.clone());
        let peeker = rt().thread().spawn(move || q1.peek()).unwrap();
        let receiver = rt().thread().spawn(move || q2.receive()).unwrap();
        std::thread::sleep(Duration::from_micros(100));
        q.send(7).unwrap();
        // Whoever is told first, the receiver gets the message (a peek passes its notice on).
        assert_eq!(receiver.join().unwrap(), Ok(7));
        q.send(8).unwrap();
        let peeked = peeker.join().unwrap();
        assert!(peeked == Ok(7) || peeked == Ok(8), "{peeked:?}");
    }
}

#[test]
fn timer_events_one_shot_periodic_and_stop() {
    let _ = rt();
    let t = TimerEvent::new(ClearMode::Auto);
    t.start_one_shot(Duration::from_micros(300)).unwrap();
    assert_eq!(t.wait(), Ok(()));
    assert_eq!(
        t.wait_timeout(SHORT),
        Err(ResultCode::TIMED_OUT),
        "one shot"
    );

    let p = Arc::new(TimerEvent::new(ClearMode::Auto));
    p.start_periodic(Duration::ZERO, Duration::from_micros(500))
        .unwrap();
    let p2 = p.clone();
    let waiter = rt()
        .thread()
        .spawn(move || (0..5).map(|_| p2.wait()).collect::<Vec<_>>())
        .unwrap();
    assert!(waiter.join().unwrap().iter().all(Result::is_ok));
    p.stop();
    p.clear();
    assert_eq!(
        p.wait_timeout(Duration::from_millis(5)),
        Err(ResultCode::TIMED_OUT),
        "stopped"
    );

    let manual = TimerEvent::new(ClearMode::Manual);
    manual.start_one_shot(Duration::ZERO).unwrap();
    assert_eq!(manual.wait(), Ok(()));
    assert!(manual.try_wait() && manual.try_wait(), "stays signalled");
    assert_eq!(
        manual.start_periodic(Duration::ZERO, Duration::ZERO),
        Err(ResultCode::OUT_OF_RANGE)
    );
}

#[test]
fn wait_any_returns_the_ready_index_and_takes_one_signal() {
    let a = Arc::new(Event::new(ClearMode::Auto));
    let b = Arc::new(Event::new(ClearMode::Auto));
    let q = Arc::new(MessageQueue::<u8>::new(1));
    let s = Arc::new(Semaphore::new(0, 1));
    let (a2, b2, q2, s2) = (a.clone(), b.clone(), q.clone(), s.clone());
    let waiter = rt()
        .thread()
        .spawn(move || {
            let objects: [&dyn Waitable; 4] = [&*a2, &*b2, &*q2, &*s2];
            let first = wait_any(&objects, None);
            let second = wait_any(&objects, None);
            let third = wait_any(&objects, None);
            (first, second, third)
        })
        .unwrap();
    std::thread::sleep(Duration::from_micros(200));
    b.signal();
    q.send(1).unwrap();
    s.release(1).unwrap();
    let (first, second, third) = waiter.join().unwrap();
    assert_eq!(first, Ok(1));
    // The queue stays ready (its message is not taken), so it wins again over the semaphore.
    assert_eq!((second, third), (Ok(2), Ok(2)));
    assert!(!b.try_wait(), "b's signal was taken");
    assert_eq!(q.try_receive(), Some(1));
    assert_eq!(s.count(), 1);
    let objects: [&dyn Waitable; 2] = [&*a, &*s];
    assert_eq!(wait_any(&objects, Some(SHORT)), Ok(1));
    assert_eq!(wait_any(&objects, Some(SHORT)), Err(ResultCode::TIMED_OUT));
    assert_eq!(wait_any(&[], Some(SHORT)), Err(ResultCode::TIMED_OUT));

    // A guest thread is ready once it has ended.
    let t = rt().thread().spawn(|| 5).unwrap();
    let objects: [&dyn Waitable; 1] = [t.thread()];
    assert_eq!(wait_any(&objects, None), Ok(0));
    assert!(t.thread().is_finished());
    assert_eq!(t.join().unwrap(), 5);
}

#[test]
fn guest_threads_names_roles_priorities_cores_and_cpu() {
    let t = rt()
        .thread()
        .name("Worker")
        .priority(44)
        .core_mask(0b110)
        .ideal_core(-2)
        .spawn(|| {
            let me = hos::thread::current().expect("a guest thread");
            let before = (me.name(), me.is_serial(), me.ideal_core());
            me.set_name("MainThread");
            let after = (me.name(), me.is_serial());
            assert_eq!(
                me.set_core_mask(-3, 0b100),
                Err(ResultCode::INVALID_COMBINATION)
            );
            me.set_core_mask(2, 0b100).unwrap();
            me.set_core_mask(-3, 0b110).unwrap();
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(30) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
            if OS_CPU_CLOCK {
                assert!(me.cpu_time().total() > Duration::ZERO);
                assert!(hos::thread::cpu_time().total() > Duration::ZERO);
            }
            (before, after, me.ideal_core(), me.priority())
        })
        .unwrap();
    let other = t.thread().clone();
    let (before, after, ideal, prio) = t.join().unwrap();
    assert_eq!(before, ("Worker".into(), false, 1));
    assert_eq!(after, ("MainThread".into(), true));
    assert_eq!((ideal, prio), (2, 44));
    assert_eq!(other.name().as_ref(), "MainThread");
    assert!(
        hos::thread::current().is_none(),
        "the test thread is no guest"
    );

    // Another thread's CPU time, through its handle, while it runs.
    let stop = Arc::new(Event::new(ClearMode::Manual));
    let s2 = stop.clone();
    let busy = rt()
        .thread()
        .spawn(move || {
            let mut x = 0u64;
            while !s2.try_wait() {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        })
        .unwrap();
    // The record is bound to its OS thread (id and clock) once the thread runs.
    while busy.thread().os_id().is_none() {
        std::thread::sleep(Duration::from_millis(1));
    }
    while OS_CPU_CLOCK && busy.thread().cpu_time().total() == Duration::ZERO {
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.signal();
    busy.join().unwrap();
}

#[test]
fn join_gives_the_value_or_the_panic_and_releases_the_core() {
    let ok = rt().thread().spawn(|| 41 + 1).unwrap();
    assert_eq!(ok.join().unwrap(), 42);
    let bad = rt().thread().spawn(|| -> u8 { panic!("boom") }).unwrap();
    let err = bad.join().unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
}

#[test]
fn sleep_thread_yields_are_counted_and_bad_lengths_return() {
    let before = rt().stats();
    rt().thread()
        .spawn(|| {
            for ns in [0, -1, -2] {
                hos::svc::sleep_thread(ns);
            }
            hos::svc::sleep_thread(-7);
            hos::svc::sleep_thread(i64::MIN);
            hos::svc::sleep_thread(1_000);
        })
        .unwrap()
        .join()
        .unwrap();
    let after = rt().stats();
    assert!(after.yields >= before.yields + 3);
    assert!(after.bad_sleeps >= before.bad_sleeps + 2);
}
