//! Loom models of the nn::os objects: run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_os`.
//!
//! Under loom the objects' atomics and state mutexes, hos-runtime's parker word and the
//! per-thread parker are loom's; the futex is a yield and a spin is one step, so each model
//! runs the real wait path: poll, register, spin, park, wake, poll again.
#![cfg(loom)]

use hos::os::{ClearMode, Event, MessageQueue, Mutex, Semaphore};
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A signal racing a wait's registration is never lost, and an auto event is left clear.
#[test]
fn event_signal_wait_race() {
    loom::model(|| {
        let ev = Arc::new(Event::new(ClearMode::Auto));
        let e2 = ev.clone();
        let t = loom::thread::spawn(move || e2.signal());
        assert_eq!(ev.wait(), Ok(()));
        t.join().unwrap();
        assert!(!ev.try_wait(), "one signal, one pass");
    });
}

/// The locked path (no fast path): the waiter spins one step, parks, and the release that
/// races any of those phases wakes it.
#[test]
fn spin_to_park_transition() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(0, 1));
        let s2 = s.clone();
        let t = loom::thread::spawn(move || s2.release(1).unwrap());
        assert_eq!(s.acquire(), Ok(()));
        t.join().unwrap();
        assert_eq!(s.count(), 0);
    });
}

/// A sender blocked on a full queue is woken by the receive, and order is kept.
#[test]
fn queue_send_receive_at_capacity() {
    loom::model(|| {
        let q = Arc::new(MessageQueue::<u8>::new(1));
        let q2 = q.clone();
        let t = loom::thread::spawn(move || {
            q2.send(1).unwrap();
            q2.send(2).unwrap();
        });
        assert_eq!(q.receive(), Ok(1));
        assert_eq!(q.receive(), Ok(2));
        t.join().unwrap();
    });
}

/// The mutex hands off between two threads; never two holders.
#[test]
fn mutex_handoff() {
    loom::model(|| {
        let m = Arc::new(Mutex::new(false));
        let n = Arc::new(AtomicUsize::new(0));
        let (m2, n2) = (m.clone(), n.clone());
        let bump = move |m: &Mutex, n: &AtomicUsize| {
            let _g = m.lock().ok().unwrap();
            // A load and a store: a second holder would lose one.
            let v = n.load(Ordering::Relaxed);
            n.store(v + 1, Ordering::Relaxed);
        };
        let t = loom::thread::spawn(move || bump(&m2, &n2));
        bump(&m, &n);
        t.join().unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 2);
    });
}
