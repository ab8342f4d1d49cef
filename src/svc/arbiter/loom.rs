//! Loom models of the arbiter: its table, lock and blocking layer with loom's atomics, lock
//! and parkers; run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p hos --release --lib`.
//!
//! Each model has its own [`Arbiter`] (not the process's) and names its threads by hand; the
//! lock model runs libnx's mutex algorithm (as `tests/sdk/libnx.rs` ports it) against it.

use super::{Arbiter, Caller, Limit, Party};
use crate::result::ResultCode;
use crate::svc::arbitration::{ArbitrationType, SignalType, WAITERS};
use crate::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use crate::sync::Mutex;
use std::sync::Arc;
use std::task::Waker;

fn party(id: u32) -> Caller {
    Party {
        id,
        priority: 44,
        r: None,
        early: true,
    }
}

/// The model's handle table: threads 1 and 2.
fn resolve(h: u32) -> Option<Caller> {
    (h == 1 || h == 2).then(|| party(h))
}

fn addr(w: &AtomicU32) -> usize {
    w as *const AtomicU32 as usize
}

/// A wait without deadline or shutdown.
struct Unlimited;

impl Limit for Unlimited {
    fn check(&mut self, _: &Waker) -> Option<ResultCode> {
        None
    }
}

/// libnx's `mutexLock` for thread `me`.
fn lock(arb: &Arbiter, word: &AtomicU32, me: u32) {
    let mut v = word.load(SeqCst);
    loop {
        if v == 0 {
            match word.compare_exchange(0, me, SeqCst, SeqCst) {
                Ok(_) => return,
                Err(now) => {
                    v = now;
                    continue;
                }
            }
        }
        if v & WAITERS == 0 {
            if let Err(now) = word.compare_exchange(v, v | WAITERS, SeqCst, SeqCst) {
                v = now;
                continue;
            }
        }
        let owner = v & !WAITERS;
        let mut queued = false;
        let r = arb.block("ArbitrateLock", addr(word), Unlimited, |t, fx| {
            let r = t.lock(&party(me), owner, word, me, resolve, fx);
            queued = matches!(r, Ok(Some(_)));
            r
        });
        assert_eq!(r, Ok(()));
        v = word.load(SeqCst);
        // A wait ends only by a hand-off, which wrote this thread's tag before waking it.
        assert!(
            !queued || v & !WAITERS == me,
            "woken without the lock: {v:#x}"
        );
        if v & !WAITERS == me {
            return;
        }
    }
}

/// libnx's `mutexUnlock` for thread `me`.
fn unlock(arb: &Arbiter, word: &AtomicU32, me: u32) {
    let v = match word.compare_exchange(me, 0, SeqCst, SeqCst) {
        Ok(_) => return,
        Err(v) => v,
    };
    assert_eq!(v, me | WAITERS, "unlocked by its owner");
    arb.run(|t, fx| t.unlock(me, word, fx));
}

/// Two threads take one libnx mutex through the arbiter: never two holders, the word free
/// and the table empty at the end, whichever way the hand-off goes (fast path, a lock that
/// finds the word changed, a parked waiter handed the lock).
#[test]
fn loom_lock_hand_off() {
    loom::model(|| {
        let arb = Arc::new(Arbiter::new());
        let word = Arc::new(AtomicU32::new(0));
        let inside = Arc::new(AtomicU32::new(0));
        let run = |arb: &Arbiter, word: &AtomicU32, inside: &AtomicU32, me: u32| {
            lock(arb, word, me);
            assert_eq!(inside.fetch_add(1, SeqCst), 0, "two holders");
            inside.fetch_sub(1, SeqCst);
            unlock(arb, word, me);
        };
        let (a2, w2, i2) = (arb.clone(), word.clone(), inside.clone());
        let t = loom::thread::spawn(move || run(&a2, &w2, &i2, 2));
        run(&arb, &word, &inside, 1);
        t.join().unwrap();
        assert_eq!(word.load(SeqCst), 0);
        arb.run(|t, _| t.check());
    });
}

/// A deadline a model thread fires: the reactor's timer, by hand.
#[derive(Clone)]
struct Expiry(Arc<(AtomicBool, Mutex<Option<Waker>>)>);

impl Expiry {
    fn fire(&self) {
        let waker = {
            let mut w = self.0 .1.lock().unwrap();
            self.0 .0.store(true, SeqCst);
            w.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl Limit for Expiry {
    fn check(&mut self, waker: &Waker) -> Option<ResultCode> {
        let mut w = self.0 .1.lock().unwrap();
        if self.0 .0.load(SeqCst) {
            return Some(ResultCode::TIMED_OUT);
        }
        *w = Some(waker.clone());
        None
    }
}

/// A signal races a waiter's timeout on one address. The signal's count of waiters and the
/// waiter's result always agree: woken (success) exactly when the signal counted it
/// (SignalAndModifyByWaitingCountIfEqual wrote value - 1); timed out, or too late to wait
/// (InvalidState), exactly when it did not (value + 1). And no wait is left in the table.
#[test]
fn loom_signal_versus_timeout_on_one_address() {
    loom::model(|| {
        let arb = Arc::new(Arbiter::new());
        let word = Arc::new(AtomicU32::new(0));
        let expiry = Expiry(Arc::new((AtomicBool::new(false), Mutex::new(None))));
        let timer = {
            let expiry = expiry.clone();
            loom::thread::spawn(move || expiry.fire())
        };
        let signaller = {
            let (arb, word) = (arb.clone(), word.clone());
            loom::thread::spawn(move || {
                let kind = SignalType::SignalAndModifyByWaitingCountIfEqual;
                arb.run(|t, fx| t.signal_address(&word, kind, 0, 1, fx).map(drop))
            })
        };
        let waited = arb.block("WaitForAddress", addr(&word), expiry, |t, _| {
            let kind = ArbitrationType::WaitIfEqual;
            t.wait_address(&party(1), &word, kind, 0, false).map(Some)
        });
        timer.join().unwrap();
        assert_eq!(signaller.join().unwrap(), Ok(()));
        let after = word.load(SeqCst) as i32;
        match waited {
            Ok(()) => assert_eq!(after, -1, "woken but not counted"),
            Err(ResultCode::TIMED_OUT) | Err(ResultCode::INVALID_STATE) => {
                assert_eq!(after, 1, "counted but not woken: {waited:?}")
            }
            Err(e) => panic!("{e}"),
        }
        assert_eq!(arb.run(|t, _| t.address_waiters(addr(&word))), 0);
        arb.run(|t, _| t.check());
    });
}

/// libnx's condition-variable wait for thread `me`, which holds `mutex`, until `ready`: the
/// SDK's loop.
fn wait_until(arb: &Arbiter, mutex: &AtomicU32, key: &AtomicU32, me: u32, ready: &AtomicU32) {
    while ready.load(SeqCst) == 0 {
        let r = arb.wait_condvar(&party(me), mutex, key, me, false, Unlimited);
        assert_eq!(r, Ok(()), "a wait without limit ends only by its signal");
        assert_eq!(mutex.load(SeqCst) & !WAITERS, me, "woken without the mutex");
    }
}

/// Yields until `word` holds `v`.
fn until(word: &AtomicU32, v: u32) {
    while word.load(SeqCst) != v {
        loom::thread::yield_now();
    }
}

/// Thread 1 holds the mutex and waits on the condition variable; thread 2 takes the mutex,
/// zeroes the key word (the kernel never reads it), signals and unlocks. The signal's check
/// without the lock (the census) must find the waiter, whose registration released the mutex
/// to the signaller: no wakeup is lost (loom fails a model whose waiter never wakes), and
/// nothing is left in the table. `queued`: the signaller is queued on the mutex (its WAITERS
/// bit set) before the waiter waits, so it gets the mutex by the registration's hand-off;
/// else it takes the mutex once the registration left it free.
///
/// Each side waits for the other's step with loads, not against it with a race of the
/// kernel's store and the guest's compare-and-swap on the mutex word: loom 0.7 lets a plain
/// store fall between the two halves of a read-modify-write (tokio-rs/loom#254), which no
/// hardware does.
fn condvar_model(queued: bool) {
    loom::model(move || {
        let arb = Arc::new(Arbiter::new());
        let mutex = Arc::new(AtomicU32::new(1));
        let key = Arc::new(AtomicU32::new(0));
        let ready = Arc::new(AtomicU32::new(0));
        let signaller = {
            let (arb, mutex, key, ready) = (arb.clone(), mutex.clone(), key.clone(), ready.clone());
            loom::thread::spawn(move || {
                if queued {
                    assert!(mutex
                        .compare_exchange(1, 1 | WAITERS, SeqCst, SeqCst)
                        .is_ok());
                } else {
                    until(&mutex, 0);
                }
                lock(&arb, &mutex, 2);
                ready.store(1, SeqCst);
                key.store(0, SeqCst);
                arb.signal_key(&key, 1, resolve);
                unlock(&arb, &mutex, 2);
            })
        };
        if queued {
            until(&mutex, 1 | WAITERS);
        }
        wait_until(&arb, &mutex, &key, 1, &ready);
        unlock(&arb, &mutex, 1);
        signaller.join().unwrap();
        assert_eq!(mutex.load(SeqCst), 0);
        arb.run(|t, _| t.check());
    });
}

#[test]
fn loom_condvar_signal_without_the_lock_finds_a_waiter_that_freed_the_mutex() {
    condvar_model(false);
}

#[test]
fn loom_condvar_signal_without_the_lock_finds_a_waiter_that_handed_the_mutex_over() {
    condvar_model(true);
}
