//! Lock heirs from the SDK's side (docs/svc.md, "Lock heirs"): a condition-variable waiter
//! that a signal moves first onto a held mutex is woken ahead of its hand-off and spins for
//! it, and its runtime's stats say whether the spin saw the hand-off come (`heir_caught`) or
//! ran out first and parked again (`heir_missed`). libnx's Mutex and CondVar (`tests/sdk/`)
//! between two guest threads; the processor count is pinned, since it decides whether heirs
//! are woken at all (3 or more). The C side: `capi/tests/c/svc_words.c`.

mod sdk;

use hos::{Calibration, Config, Runtime, Stats};
use sdk::libnx::{CondVar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// One hand-off to a heir: a consumer waits on a condition variable; a producer, once the
/// consumer's wait has released the mutex, signals it (the consumer moves onto the held
/// mutex, its heir), holds the mutex for `hold`, and unlocks (the hand-off). On a runtime that
/// sees `processors` and whose threads spin `spin_us`; the runtime's stats after.
fn one_hand_off(processors: usize, spin_us: u64, hold: Duration) -> Stats {
    let rt = Runtime::builder()
        .config(Config {
            spin_us,
            spin_other_us: Some(spin_us),
            ..Config::default()
        })
        .calibration(Calibration::default())
        .logical_processors(Some(processors))
        .build()
        .expect("runtime");
    let (m, cv) = (Arc::new(Mutex::new()), Arc::new(CondVar::new()));
    let ready = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let consumer = {
        let (m, cv, ready, started) = (m.clone(), cv.clone(), ready.clone(), started.clone());
        rt.thread().name("HeirConsumer").spawn(move || {
            m.lock();
            started.store(true, SeqCst);
            while !ready.load(SeqCst) {
                cv.wait(&m).expect("signalled");
            }
            assert!(m.is_locked_by_current_thread(), "handed the mutex");
            m.unlock();
        })
    }
    .expect("spawned");
    while !started.load(SeqCst) {
        std::thread::yield_now();
    }
    let producer = {
        let (m, cv, ready) = (m.clone(), cv.clone(), ready.clone());
        rt.thread().name("HeirProducer").spawn(move || {
            // Free only once the consumer's wait released it: the consumer is in the queue.
            m.lock();
            ready.store(true, SeqCst);
            cv.wake_one();
            std::thread::sleep(hold);
            m.unlock();
        })
    }
    .expect("spawned");
    producer.join().expect("the producer ran");
    consumer.join().expect("the consumer ran");
    let stats = rt.stats();
    rt.shutdown();
    stats
}

#[test]
fn a_heir_that_spins_past_the_owners_hold_is_caught() {
    let s = one_hand_off(16, 1_000_000, Duration::from_millis(5));
    assert_eq!((s.heir_caught, s.heir_missed), (1, 0));
    assert!(
        s.to_string().contains("lock heirs caught 1, missed 0"),
        "{s}"
    );
}

#[test]
fn a_heir_whose_spin_runs_out_first_is_missed() {
    let s = one_hand_off(16, 5, Duration::from_millis(50));
    assert_eq!((s.heir_caught, s.heir_missed), (0, 1));
}

#[test]
fn two_processors_wake_no_heir() {
    let s = one_hand_off(2, 1_000_000, Duration::from_millis(5));
    assert_eq!((s.heir_caught, s.heir_missed), (0, 0));
}
