//! A bounded randomized stress with a fixed seed: 10^5 hand-offs among 32 guest threads
//! through queues (send and jam), a shared mutex and events. A lost wakeup shows as a hang,
//! which the watchdog turns into a failure; the run stops by itself either way.

use hos::os::{ClearMode, Event, MessageQueue, Mutex};
use hos::{Calibration, Runtime};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const THREADS: usize = 32;
const TOKENS: u64 = 4;
const HANDOFFS: u64 = 100_000;
const STOP: u64 = u64::MAX;

/// xorshift64*: a fixed-seed generator, no dependency.
fn next(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[test]
fn hundred_thousand_handoffs_among_32_threads() {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    // Room for every token and the stop: a send never blocks forever on a cycle of full boxes.
    let inboxes: Arc<Vec<MessageQueue<u64>>> = Arc::new(
        (0..THREADS)
            .map(|_| MessageQueue::new(TOKENS as usize + 1))
            .collect(),
    );
    let lock = Arc::new(Mutex::new(false));
    let hops = Arc::new(AtomicU64::new(0));
    let guarded = Arc::new(AtomicU64::new(0));
    let done = Arc::new(Event::new(ClearMode::Manual));
    let workers: Vec<_> = (0..THREADS)
        .map(|me| {
            let (inboxes, lock, hops, guarded, done) = (
                inboxes.clone(),
                lock.clone(),
                hops.clone(),
                guarded.clone(),
                done.clone(),
            );
            rt.thread()
                .name(format!("StressWorker{me}"))
                .priority(20 + (me % 8) as i32)
                .spawn(move || {
                    let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (me as u64 + 1);
                    loop {
                        let token = inboxes[me].receive().expect("not cancelled");
                        if token == STOP {
                            return;
                        }
                        {
                            let _g = lock.lock().map_err(|e| e.code()).expect("never abandoned");
                            let v = guarded.load(Ordering::Relaxed);
                            guarded.store(v + 1, Ordering::Relaxed);
                        }
                        let n = hops.fetch_add(1, Ordering::AcqRel) + 1;
                        if n == HANDOFFS {
                            done.signal();
                        }
                        if n >= HANDOFFS {
                            continue;
                        }
                        let r = next(&mut seed);
                        let mut to = (r % THREADS as u64) as usize;
                        if to == me {
                            to = (to + 1) % THREADS;
                        }
                        let sent = if r & (1 << 40) == 0 {
                            inboxes[to].send(token)
                        } else {
                            inboxes[to].jam(token)
                        };
                        sent.expect("room for every token");
                    }
                })
                .unwrap()
        })
        .collect();
    for t in 0..TOKENS {
        inboxes[t as usize].send(t).unwrap();
    }
    let finished = done.wait_async().timeout(Duration::from_secs(120)).block();
    for inbox in inboxes.iter() {
        inbox.jam(STOP).unwrap();
    }
    assert_eq!(
        finished,
        Ok(()),
        "lost wakeup: {} hand-offs",
        hops.load(Ordering::Relaxed)
    );
    for w in workers {
        w.join().unwrap();
    }
    let n = hops.load(Ordering::Relaxed);
    assert!(n >= HANDOFFS, "{n}");
    assert_eq!(
        guarded.load(Ordering::Relaxed),
        n,
        "the mutex let two holders in"
    );
    rt.shutdown();
}
