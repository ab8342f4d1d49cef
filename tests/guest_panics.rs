//! Guests that panic give back everything they held, and the runtime keeps serving: a mutex
//! (the next locker is told it was abandoned), a virtual core, a waiter's place in the middle
//! of a wait (its notice passes on), and a condition variable's mutex abandoned while another
//! thread waits (that waiter, the next locker, is told).
//!
//! A poller slot is held only inside the runtime's own sleep code, which runs no guest code;
//! it is a guard, and `runtime/src/tests/policy_table.rs` (`slots_come_back_on_unwinding`)
//! unwinds through it.

use hos::os::{ClearMode, ConditionVariable, Event, LockError, MessageQueue, Mutex};
use hos::{Calibration, Runtime};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// A bound on every wait that a broken runtime would leave waiting: the test fails instead
/// of hanging.
const BOUND: Duration = Duration::from_secs(30);

fn runtime(cores: usize) -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        .vcores(cores)
        .vcore_escape_ms(60_000)
        .build()
        .expect("runtime")
}

/// The runtime still hands off: an event ping-pong between two guest threads (guests, not
/// the test's own thread: host threads wait on the newest runtime, which may be another
/// test's).
fn still_serves(rt: &Runtime) {
    let (ping, pong) = (
        Arc::new(Event::new(ClearMode::Auto)),
        Arc::new(Event::new(ClearMode::Auto)),
    );
    let side = |me: Arc<Event>, other: Arc<Event>, first: bool| {
        rt.thread()
            .spawn(move || {
                for _ in 0..100 {
                    if first {
                        other.signal();
                    }
                    me.wait_async().timeout(BOUND).block().expect("a hand-off");
                    if !first {
                        other.signal();
                    }
                }
            })
            .unwrap()
    };
    let echo = side(ping.clone(), pong.clone(), false);
    let caller = side(pong, ping, true);
    caller.join().expect("no panic");
    echo.join().expect("no panic");
    assert_eq!(rt.stats().vcores_held, 0, "a core leaked");
}

#[test]
fn a_panic_holding_a_mutex_abandons_it_and_the_next_locker_is_told_once() {
    let rt = runtime(6);
    let m = Mutex::new(false);
    let m2 = m.clone();
    let t = rt
        .thread()
        .spawn(move || {
            let _g = m2.lock().expect("free");
            panic!("guest code fails holding the mutex");
        })
        .unwrap();
    assert!(t.join().is_err());
    match m.lock() {
        Err(LockError::Abandoned(g)) => assert!(g.is_abandoned()),
        other => panic!("expected Abandoned, got {other:?}"),
    }
    assert!(matches!(m.lock(), Ok(g) if !g.is_abandoned()), "told once");
    still_serves(&rt);
    rt.shutdown();
}

#[test]
fn a_panic_holding_the_only_virtual_core_gives_it_back() {
    let rt = runtime(1);
    let t = rt
        .thread()
        .spawn(|| panic!("guest code fails while it runs on the only core"))
        .unwrap();
    assert!(t.join().is_err());
    assert_eq!(rt.stats().vcores_held, 0);
    let next = rt.thread().spawn(|| 7).unwrap();
    assert_eq!(next.join().expect("no panic"), 7);
    assert_eq!(rt.stats().vcore_escapes, 0, "the core was free");
    still_serves(&rt);
    rt.shutdown();
}

/// A message whose copy panics: a peek that wakes for it panics inside its wait.
#[derive(Debug)]
struct Brittle(u32);

impl Clone for Brittle {
    fn clone(&self) -> Self {
        panic!("copying message {} fails", self.0)
    }
}

#[test]
fn a_panic_in_the_middle_of_a_wait_passes_its_notice_on() {
    let rt = runtime(6);
    let q = Arc::new(MessageQueue::<Brittle>::new(4));
    let (registered, peeking) = mpsc::channel();
    let q1 = q.clone();
    let peeker = rt
        .thread()
        .name("Peeker")
        .spawn(move || {
            registered.send(()).unwrap();
            q1.peek().map(|m| m.0)
        })
        .unwrap();
    peeking.recv().unwrap();
    // Let the peeker register first: it is the one the send notifies.
    std::thread::sleep(Duration::from_millis(20));
    let q2 = q.clone();
    let receiver = rt
        .thread()
        .name("Receiver")
        .spawn(move || q2.receive_async().timeout(BOUND).block().map(|m| m.0))
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    q.send(Brittle(7)).map_err(|e| e.code).expect("room");
    assert!(peeker.join().is_err(), "the peek's copy panicked");
    assert_eq!(
        receiver.join().expect("no panic"),
        Ok(7),
        "the notice the peeker held passed on"
    );
    assert!(q.is_empty(), "delivered exactly once");
    still_serves(&rt);
    rt.shutdown();
}

#[test]
fn a_condition_variable_waiter_is_told_its_mutex_was_abandoned() {
    let rt = runtime(6);
    let (m, cv) = (Mutex::new(false), Arc::new(ConditionVariable::new()));
    let (in_wait, waiting) = mpsc::channel();
    let (m1, cv1) = (m.clone(), cv.clone());
    let waiter = rt
        .thread()
        .name("Waiter")
        .spawn(move || {
            let g = m1.lock().expect("free");
            in_wait.send(()).unwrap();
            let (g, r) = cv1.wait(g);
            (g.is_abandoned(), r)
        })
        .unwrap();
    waiting.recv().unwrap();
    let (m2, cv2) = (m.clone(), cv.clone());
    let failer = rt
        .thread()
        .name("Failer")
        .spawn(move || {
            // The waiter released the mutex in its wait.
            let _g = m2.lock().expect("released by the wait");
            cv2.signal();
            panic!("guest code fails holding the mutex it signalled under");
        })
        .unwrap();
    assert!(failer.join().is_err());
    assert_eq!(
        waiter.join().expect("no panic"),
        (true, Ok(())),
        "signalled, and told the mutex it took back was abandoned"
    );
    assert!(matches!(m.lock(), Ok(g) if !g.is_abandoned()), "told once");
    still_serves(&rt);
    rt.shutdown();
}
