//! Async host tasks (tokio) and guest threads on the same objects, both ways, without
//! blocking the executor.

use hos::os::{ClearMode, Event, MessageQueue};
use hos::{Calibration, ResultCode, Runtime};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn tokio_tasks_and_guest_threads_hand_off_both_ways() {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // 1. A task awaits a guest event and a queue fed by two guest threads.
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let q = Arc::new(MessageQueue::<u64>::new(4));
    let task = tokio.spawn({
        let (ev, q) = (ev.clone(), q.clone());
        async move {
            ev.wait_async().await?;
            let mut sum = 0;
            for _ in 0..200 {
                sum += q.receive_async().await?;
            }
            Ok::<u64, ResultCode>(sum)
        }
    });
    let senders: Vec<_> = (0..2u64)
        .map(|k| {
            let (ev, q) = (ev.clone(), q.clone());
            rt.thread()
                .spawn(move || {
                    if k == 0 {
                        ev.signal();
                    }
                    for i in 0..100 {
                        q.send(k * 1000 + i).unwrap();
                    }
                })
                .unwrap()
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let expected: u64 = (0..100).sum::<u64>() * 2 + 100 * 1000;
    assert_eq!(tokio.block_on(task).unwrap(), Ok(expected));

    // 2. The reverse: guest threads block on objects tokio tasks signal and fill (a full
    //    queue makes the async sender wait, without blocking its worker).
    let go = Arc::new(Event::new(ClearMode::Manual));
    let back = Arc::new(MessageQueue::<u64>::new(1));
    let guest = rt
        .thread()
        .spawn({
            let (go, back) = (go.clone(), back.clone());
            move || {
                go.wait()?;
                (0..50).map(|_| back.receive()).sum::<Result<u64, _>>()
            }
        })
        .unwrap();
    let feeder = tokio.spawn({
        let (go, back) = (go.clone(), back.clone());
        async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            go.signal();
            for i in 0..50 {
                back.send_async(i).await.map_err(|e| e.code)?;
            }
            Ok::<(), ResultCode>(())
        }
    });
    assert_eq!(guest.join().unwrap(), Ok((0..50).sum()));
    assert_eq!(tokio.block_on(feeder).unwrap(), Ok(()));

    // 3. A timed-out await consumes nothing and never blocks the executor: another task on the
    //    same single worker keeps running meanwhile; a select! that drops a wait leaves no
    //    waiter behind to swallow the next signal.
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let ev2 = Arc::new(Event::new(ClearMode::Auto));
    let (timed, dropped) = single.block_on({
        let (ticks, ev2) = (ticks.clone(), ev2.clone());
        async move {
            let ticker = tokio::spawn({
                let ticks = ticks.clone();
                async move {
                    for _ in 0..5 {
                        ticks.fetch_add(1, Ordering::Relaxed);
                        tokio::task::yield_now().await;
                    }
                }
            });
            let timed = ev2.wait_async().timeout(Duration::from_millis(5)).await;
            ticker.await.unwrap();
            let dropped = tokio::select! {
                r = ev2.wait_async() => Some(r),
                () = tokio::time::sleep(Duration::from_millis(1)) => None,
            };
            (timed, dropped)
        }
    });
    assert_eq!(timed, Err(ResultCode::TIMED_OUT));
    assert_eq!(dropped, None);
    assert_eq!(
        ticks.load(Ordering::Relaxed),
        5,
        "the executor kept running"
    );
    ev2.signal();
    let ev3 = ev2.clone();
    let g = rt.thread().spawn(move || ev3.wait()).unwrap();
    assert_eq!(
        g.join().unwrap(),
        Ok(()),
        "the signal went to the live waiter"
    );
    rt.shutdown();
}
