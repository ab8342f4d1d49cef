//! The blocking layer's future (`Waiting`, `mod.rs`): dropped while its wait is pending (a
//! panic unwinding through `block_on`), it takes the wait out of the table, so that nothing
//! signals a wait nobody polls, and the table gives back the word a condition-variable wait
//! lent it (`lent.rs` relies on it for its safety).

// The condition-variable case lends the table a word as `lent.rs` does (its one unsafe call).
#![allow(unsafe_code)]

use super::super::lent::GuestWord;
use super::super::{Arbiter, Caller, Limit, Waiting};
use super::*;
use std::future::Future;
use std::pin::Pin;
use std::task::Context;

/// No deadline, no shutdown.
struct Unlimited;

impl Limit for Unlimited {
    fn check(&mut self, _: &Waker) -> Option<ResultCode> {
        None
    }
}

fn me() -> Caller {
    Party {
        id: 7,
        priority: 44,
        r: None,
        early: false,
    }
}

/// Polls the wait of `key` once as `block` does (pending: nothing ends it), then drops it.
fn polled_then_dropped(arb: &Arbiter, key: WaitKey) {
    let waker = Waker::from(Arc::new(Noop));
    let mut wait = Waiting {
        arbiter: arb,
        key: Some(key),
        registered: waker.clone(),
        limit: Unlimited,
    };
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut wait).poll(&mut cx).is_pending());
    drop(wait);
}

#[test]
fn a_dropped_address_wait_leaves_its_queue() {
    let arb = Arbiter::new();
    let w = AtomicU32::new(5);
    let key = arb
        .run(|t, _| t.wait_address(&me(), &w, ArbitrationType::WaitIfEqual, 5, false))
        .expect("waits");
    let addr = &w as *const AtomicU32 as usize;
    assert_eq!(arb.run(|t, _| t.address_waiters(addr)), 1);
    polled_then_dropped(&arb, key);
    assert_eq!(arb.run(|t, _| t.address_waiters(addr)), 0, "dropped, gone");
}

#[test]
fn a_dropped_condvar_wait_leaves_its_queue_and_the_census() {
    let arb = Arbiter::new();
    let (mutex, key) = (AtomicU32::new(7), AtomicU32::new(0));
    let key_addr = &key as *const AtomicU32 as usize;
    let wait = arb
        .run(|t, fx| {
            // SAFETY: the wait leaves the table (the test's point) before `mutex` goes.
            let m = unsafe { GuestWord::lend(&mutex) };
            t.wait_condvar(&me(), m, &key, 7, false, fx)
        })
        .expect("waits");
    assert_eq!(mutex.load(Ordering::SeqCst), 0, "released as it waited");
    assert!(arb.census.may_wait(key_addr));
    polled_then_dropped(&arb, wait);
    assert!(!arb.census.may_wait(key_addr), "dropped, uncounted");
    // A signal finds nobody to hand the mutex to: the word stays free.
    arb.signal_key(&key, 1, |_| None);
    assert_eq!(mutex.load(Ordering::SeqCst), 0);
}
