//! Lock heirs from the SDK's side (docs/svc.md, "Lock heirs"): a condition-variable waiter
//! that a signal moves first onto a held mutex is woken ahead of its hand-off and spins for
//! it, and its runtime's stats say whether its spin saw the hand-off come (`heir_caught`), ran
//! out first and parked again (`heir_missed`), or the hand-off came before the OS ran it
//! (`heir_late`). libnx's Mutex and CondVar (`tests/sdk/`)
//! between two guest threads; the processor count is pinned, since it decides whether heirs
//! are woken at all (3 or more). The C side: `capi/tests/c/svc_words.c`.

mod sdk;

use hos::{Calibration, Config, Runtime, Stats};
use sdk::libnx::{CondVar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// How long the producer holds the mutex after its signal.
#[derive(Clone, Copy)]
enum Hold {
    /// This long.
    For(Duration),
    /// Until the runtime's stats count a heir that missed (its spin gave up), or 10 s: whatever
    /// the machine's load, the hand-off comes after the miss.
    UntilMissed,
}

/// One hand-off to a heir: a consumer waits on a condition variable; a producer, once the
/// consumer's wait has released the mutex, signals it (the consumer moves onto the held
/// mutex, its heir), holds the mutex (`hold`), and unlocks (the hand-off). On a runtime that
/// sees `processors` and whose threads spin `spin_us`; the runtime's stats after.
fn one_hand_off(processors: usize, spin_us: u64, hold: Hold) -> Stats {
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
        let (m, cv, ready, rt2) = (m.clone(), cv.clone(), ready.clone(), rt.clone());
        rt.thread().name("HeirProducer").spawn(move || {
            // Free only once the consumer's wait released it: the consumer is in the queue.
            m.lock();
            ready.store(true, SeqCst);
            cv.wake_one();
            match hold {
                Hold::For(d) => std::thread::sleep(d),
                Hold::UntilMissed => {
                    let t0 = std::time::Instant::now();
                    while rt2.stats().heir_missed == 0 && t0.elapsed() < Duration::from_secs(10) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
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

/// A heir that spins (here for a second) past the owner's hold sees the hand-off come: caught,
/// or late on a machine so loaded that the OS ran it only after the hand-off (5 ms), never
/// missed; counted once either way.
#[test]
fn a_heir_that_spins_past_the_owners_hold_is_caught() {
    let s = one_hand_off(16, 1_000_000, Hold::For(Duration::from_millis(5)));
    assert_eq!((s.heir_caught + s.heir_late, s.heir_missed), (1, 0));
    let line = format!(
        "lock heirs caught {}, missed 0, late {}",
        s.heir_caught, s.heir_late
    );
    assert!(s.to_string().contains(&line), "{s}");
}

#[test]
fn a_heir_whose_spin_runs_out_first_is_missed() {
    let s = one_hand_off(16, 5, Hold::UntilMissed);
    assert_eq!((s.heir_caught, s.heir_missed, s.heir_late), (0, 1, 0));
}

#[test]
fn two_processors_wake_no_heir() {
    let s = one_hand_off(2, 1_000_000, Hold::For(Duration::from_millis(5)));
    assert_eq!((s.heir_caught, s.heir_missed, s.heir_late), (0, 0, 0));
}
