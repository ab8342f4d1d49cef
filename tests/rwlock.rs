//! hos::os::ReaderWriterLock as nn::os's: writers alone and readers together under a stress
//! from guest threads at mixed priorities, writers first, the writer's recursion and reads,
//! bad releases answered with InvalidState, a writer that gives up letting readers through,
//! and a shutdown that ends the waits.

mod common;
mod sdk;
mod until;

use common::rt;
use hos::os::ReaderWriterLock;
use hos::ResultCode;
use sdk::{join_within, PRIORITIES};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};
use until::until;

const LIMIT: Duration = Duration::from_secs(60);

/// Whether a guest state shows a thread waiting on `on`.
fn waits_on(name: &str, on: &str) -> bool {
    rt().guest_states().iter().any(|g| {
        &*g.name == name && matches!(g.doing, hos::Doing::Waiting { on: o, .. } if o == on)
    })
}

#[test]
fn writers_are_alone_and_readers_together() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 300;
    let lock = Arc::new(ReaderWriterLock::new());
    let (readers, writers) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let most_readers = Arc::new(AtomicUsize::new(0));
    let handles = (0..THREADS)
        .map(|i| {
            let (lock, readers, writers) = (lock.clone(), readers.clone(), writers.clone());
            let most = most_readers.clone();
            rt().thread()
                .name(format!("RwStress{i}"))
                .priority(PRIORITIES[i % PRIORITIES.len()])
                .spawn(move || {
                    for r in 0..ROUNDS {
                        if (r + i) % 4 == 0 {
                            lock.acquire_write().unwrap();
                            assert_eq!(writers.fetch_add(1, SeqCst), 0, "two writers");
                            assert_eq!(readers.load(SeqCst), 0, "a reader beside a writer");
                            std::hint::spin_loop();
                            writers.fetch_sub(1, SeqCst);
                            lock.release_write().unwrap();
                        } else {
                            lock.acquire_read().unwrap();
                            let n = readers.fetch_add(1, SeqCst) + 1;
                            most.fetch_max(n, SeqCst);
                            assert_eq!(writers.load(SeqCst), 0, "a writer beside a reader");
                            std::thread::yield_now();
                            readers.fetch_sub(1, SeqCst);
                            lock.release_read().unwrap();
                        }
                    }
                })
                .unwrap()
        })
        .collect();
    join_within(handles, LIMIT);
    assert!(
        !lock.is_read_lock_held() && lock.try_acquire_write(),
        "left free"
    );
    lock.release_write().unwrap();
}

#[test]
fn a_waiting_writer_goes_before_readers_that_come_after_it() {
    let lock = Arc::new(ReaderWriterLock::new());
    lock.acquire_read().unwrap();
    let order = Arc::new(AtomicU32::new(0));
    let (l, o) = (lock.clone(), order.clone());
    let writer = rt()
        .thread()
        .name("PreferredWriter")
        .spawn(move || {
            l.acquire_write().unwrap();
            let at = o.fetch_add(1, SeqCst);
            l.release_write().unwrap();
            at
        })
        .unwrap();
    until("the writer waits", || {
        waits_on("PreferredWriter", "reader-writer lock (write)")
    });
    let other = std::thread::scope(|s| s.spawn(|| lock.try_acquire_read()).join().unwrap());
    assert!(!other, "a new reader waits behind a waiting writer");
    let (l, o) = (lock.clone(), order.clone());
    let reader = rt()
        .thread()
        .name("LateReader")
        .spawn(move || {
            l.acquire_read().unwrap();
            let at = o.fetch_add(1, SeqCst);
            l.release_read().unwrap();
            at
        })
        .unwrap();
    until("the reader waits", || {
        waits_on("LateReader", "reader-writer lock (read)")
    });
    lock.release_read().unwrap();
    let got = join_within(vec![writer, reader], LIMIT);
    assert_eq!(got, [0, 1], "the writer first, then the reader");
}

#[test]
fn the_writer_locks_again_and_reads() {
    let lock = ReaderWriterLock::new();
    assert!(!lock.is_lock_owner());
    lock.acquire_write().unwrap();
    assert!(lock.try_acquire_write(), "recursive");
    lock.acquire_read().unwrap();
    assert!(lock.is_read_lock_held() && lock.is_write_lock_held_by_current_thread());
    lock.release_write().unwrap();
    lock.release_write().unwrap();
    assert!(!lock.is_write_lock_held_by_current_thread());
    assert!(lock.is_lock_owner(), "it still reads: it keeps the lock");
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(!lock.try_acquire_read(), "nobody else reads meanwhile");
            assert!(!lock.try_acquire_write());
            assert_eq!(
                lock.release_read(),
                Err(ResultCode::INVALID_STATE),
                "its reads"
            );
            assert_eq!(lock.release_write(), Err(ResultCode::INVALID_STATE));
        });
    });
    lock.release_read().unwrap();
    assert!(!lock.is_lock_owner() && !lock.is_read_lock_held());
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(lock.try_acquire_write());
            lock.release_write().unwrap();
        });
    });
}

#[test]
fn bad_releases_are_invalid_state() {
    let lock = ReaderWriterLock::new();
    assert_eq!(lock.release_read(), Err(ResultCode::INVALID_STATE));
    assert_eq!(lock.release_write(), Err(ResultCode::INVALID_STATE));
    lock.acquire_read().unwrap();
    assert_eq!(
        lock.release_write(),
        Err(ResultCode::INVALID_STATE),
        "a reader"
    );
    lock.release_read().unwrap();
    assert_eq!(lock.release_read(), Err(ResultCode::INVALID_STATE));
    assert!(lock.try_acquire_write(), "nothing was left behind");
    lock.release_write().unwrap();
}

#[test]
fn a_writer_that_times_out_lets_the_readers_it_held_back_in() {
    let lock = Arc::new(ReaderWriterLock::new());
    lock.acquire_read().unwrap();
    let l = lock.clone();
    let writer = rt()
        .thread()
        .name("GivingUpWriter")
        .spawn(move || l.acquire_write_timeout(Duration::from_millis(50)))
        .unwrap();
    until("the writer waits", || {
        waits_on("GivingUpWriter", "reader-writer lock (write)")
    });
    let l = lock.clone();
    let reader = rt()
        .thread()
        .name("HeldBackReader")
        .spawn(move || {
            l.acquire_read().unwrap();
            l.release_read()
        })
        .unwrap();
    // The reader gets in once the writer gave up, while this thread still reads.
    let got = join_within(vec![writer], LIMIT);
    assert_eq!(got, [Err(ResultCode::TIMED_OUT)]);
    assert_eq!(join_within(vec![reader], LIMIT), [Ok(())]);
    lock.release_read().unwrap();
}

#[test]
fn a_shutdown_ends_the_waits() {
    let own = hos::Runtime::builder()
        .calibration(hos::Calibration::default())
        .build()
        .unwrap();
    let lock = Arc::new(ReaderWriterLock::new());
    lock.acquire_write().unwrap();
    let (l, m) = (lock.clone(), lock.clone());
    let writer = own.thread().spawn(move || l.acquire_write()).unwrap();
    let reader = own.thread().spawn(move || m.acquire_read()).unwrap();
    let start = Instant::now();
    while own
        .guest_states()
        .iter()
        .filter(|g| matches!(g.doing, hos::Doing::Waiting { .. }))
        .count()
        < 2
    {
        assert!(start.elapsed() < LIMIT, "the waits began");
        std::thread::sleep(Duration::from_micros(100));
    }
    own.shutdown();
    assert_eq!(writer.join().ok(), Some(Err(ResultCode::CANCELLED)));
    assert_eq!(reader.join().ok(), Some(Err(ResultCode::CANCELLED)));
    lock.release_write().unwrap();
    assert!(!lock.is_read_lock_held() && !lock.is_lock_owner());
}
