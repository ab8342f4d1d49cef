//! hos::os::Barrier as nn::os's: rounds kept under a stress from guest threads at mixed
//! priorities, the arrival of a waiter that gives up taken back, the zero timeout, and a
//! shutdown that ends the waits.

mod common;
mod sdk;

use common::rt;
use hos::os::Barrier;
use hos::ResultCode;
use sdk::{join_within, PRIORITIES};
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn nobody_passes_a_round_before_every_thread_arrived_in_it() {
    const THREADS: usize = 6;
    const ROUNDS: usize = 200;
    let barrier = Arc::new(Barrier::new(THREADS as u32));
    let arrived = Arc::new(AtomicUsize::new(0));
    let handles = (0..THREADS)
        .map(|i| {
            let (b, arrived) = (barrier.clone(), arrived.clone());
            rt().thread()
                .name(format!("BarrierStress{i}"))
                .priority(PRIORITIES[i % PRIORITIES.len()])
                .spawn(move || {
                    for round in 0..ROUNDS {
                        arrived.fetch_add(1, SeqCst);
                        b.wait().unwrap();
                        let seen = arrived.load(SeqCst);
                        assert!(
                            seen >= (round + 1) * THREADS,
                            "round {round}: {seen} arrived"
                        );
                        // Nobody arrives for the round after next before this thread has.
                        assert!(
                            seen <= (round + 2) * THREADS,
                            "round {round}: {seen} arrived"
                        );
                    }
                })
                .unwrap()
        })
        .collect();
    join_within(handles, LIMIT);
    assert_eq!(arrived.load(SeqCst), THREADS * ROUNDS);
}

#[test]
fn a_waiter_that_times_out_takes_its_arrival_back() {
    let b = Arc::new(Barrier::new(2));
    // On a guest thread of this test's runtime: a host thread's wait would end Cancelled when
    // the newest runtime, another test's, shuts down.
    let c = b.clone();
    let timed = rt()
        .thread()
        .spawn(move || {
            let d = Duration::from_millis(20);
            // Were the first arrival still counted, the second would end the round.
            [c.wait_timeout(d), c.wait_timeout(d)]
        })
        .unwrap();
    let timeout = Err(ResultCode::TIMED_OUT);
    assert_eq!(join_within(vec![timed], LIMIT), [[timeout, timeout]]);
    let c = b.clone();
    let other = rt().thread().spawn(move || c.wait()).unwrap();
    assert_eq!(b.wait(), Ok(()));
    assert_eq!(join_within(vec![other], LIMIT), [Ok(())]);
}

#[test]
fn a_zero_timeout_only_ends_a_round() {
    assert_eq!(Barrier::new(1).wait_timeout(Duration::ZERO), Ok(()));
    let b = Arc::new(Barrier::new(2));
    assert_eq!(b.wait_timeout(Duration::ZERO), Err(ResultCode::TIMED_OUT));
    let c = b.clone();
    let other = rt().thread().spawn(move || c.wait()).unwrap();
    let start = Instant::now();
    // The other thread's arrival makes this one the last.
    while b.wait_timeout(Duration::ZERO).is_err() {
        assert!(start.elapsed() < LIMIT, "the other thread arrived");
        std::thread::sleep(Duration::from_micros(100));
    }
    assert_eq!(join_within(vec![other], LIMIT), [Ok(())]);
    assert_eq!(Barrier::new(0).count(), 1, "a count of 0 is taken as 1");
}

#[test]
fn a_shutdown_ends_the_waits() {
    let own = hos::Runtime::builder()
        .calibration(hos::Calibration::default())
        .build()
        .unwrap();
    let b = Arc::new(Barrier::new(3));
    let c = b.clone();
    let waiter = own.thread().spawn(move || c.wait()).unwrap();
    let start = Instant::now();
    while !own
        .guest_states()
        .iter()
        .any(|g| matches!(g.doing, hos::Doing::Waiting { on: "barrier", .. }))
    {
        assert!(start.elapsed() < LIMIT, "the wait began");
        std::thread::sleep(Duration::from_micros(100));
    }
    own.shutdown();
    assert_eq!(waiter.join().ok(), Some(Err(ResultCode::CANCELLED)));
}
