//! A periodic timer event with a period shorter than the reactor can serve (1 ns) neither
//! blocks the call that starts it nor stalls the reactor: it fires once a reactor pass, the
//! periods in between are counted as missed, and every other deadline is still served.
//!
//! Its own binary: a 1 ns timer keeps the reactor busy while it runs, which other tests'
//! timing need not share. Bounds are liveness bounds (a stalled reactor never ends the wait),
//! far above what a healthy run takes.

use hos::os::{ClearMode, Event, TimerEvent};
use hos::{Calibration, ResultCode, Runtime};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIVENESS: Duration = Duration::from_secs(5);

#[test]
fn a_one_nanosecond_period_blocks_no_caller_and_stalls_no_deadline() {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let tick = Duration::from_nanos(1);
    // Started from a guest thread, due at once and after 1 ms: each call returns.
    let (tx, started) = mpsc::channel();
    let starter = rt
        .thread()
        .spawn(move || {
            let now = Arc::new(TimerEvent::new(ClearMode::Auto));
            let later = Arc::new(TimerEvent::new(ClearMode::Auto));
            let r = (
                now.start_periodic(Duration::ZERO, tick),
                later.start_periodic(Duration::from_millis(1), tick),
            );
            tx.send((now, later)).unwrap();
            r
        })
        .unwrap();
    let (now, later) = started
        .recv_timeout(LIVENESS)
        .expect("start_periodic returned");
    assert_eq!(starter.join().unwrap(), (Ok(()), Ok(())));

    // Both tick, again and again, from another guest thread.
    let (n, l) = (now.clone(), later.clone());
    let ticks = rt
        .thread()
        .spawn(move || {
            (0..50)
                .map(|_| [n.wait(), l.wait()])
                .all(|r| r == [Ok(()), Ok(())])
        })
        .unwrap();
    assert!(ticks.join().unwrap());

    // Meanwhile another deadline is served: a 2 ms timed wait ends, never early.
    let waiter = rt
        .thread()
        .spawn(|| {
            let start = Instant::now();
            let r = Event::new(ClearMode::Auto)
                .wait_async()
                .timeout(Duration::from_millis(2))
                .block();
            (r, start.elapsed())
        })
        .unwrap();
    let (r, took) = waiter.join().unwrap();
    assert_eq!(r, Err(ResultCode::TIMED_OUT));
    assert!(took >= Duration::from_millis(2), "early: {took:?}");
    assert!(took < LIVENESS, "the reactor stalled: {took:?}");
    assert!(
        now.missed_ticks() > 0 && later.missed_ticks() > 0,
        "periods merged"
    );

    now.stop();
    later.stop();
    now.clear();
    assert_eq!(
        now.wait_timeout(Duration::from_millis(5)),
        Err(ResultCode::TIMED_OUT),
        "stopped"
    );
    rt.shutdown();
}
