//! Loom models of an idle poller against the object it polled (docs/design.md section 4): a
//! readiness is never lost between the poll and the sleep, and a promotion that races the
//! sleep's own timer wakes the sleeper once, on or after its deadline.
//!
//! The relaxed timer of an idle poll is the sleeper's own timed park (its OS timer alone), so
//! "the timer fires" is that park timing out; under loom each thread's clock moves 5 us a
//! reading, so every interleaving of the promotion with the expiry is explored.
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p hos-runtime --release --lib`

#![cfg(loom)]

use crate::calibration::spin_until;
use crate::parker::with_parker;
use crate::pollers::{wait, PollSite, Woke};
use crate::sys;
use std::sync::Arc;

/// The object's side of one readiness for one poller: the generation under the object's
/// lock, the promotion after it.
fn ready(site: &PollSite) -> usize {
    if site.ready(1) {
        site.promote(1, None)
    } else {
        0
    }
}

/// One idle-poll sleep of the calling thread, linked to `site` as of `seen`, finished as the
/// sleep path finishes it (a promotion before the deadline spins the rest, the precise path's
/// last stretch); returns how it woke and asserts it never ends early.
fn sleep(site: &Arc<PollSite>, seen: u64, deadline: u64, wake_at: u64) -> Woke {
    let parker = with_parker(|p, _| p.clone());
    let woke = wait(
        &[(site.clone(), seen)],
        None,
        &parker,
        [deadline, wake_at],
        || false,
        || {},
    );
    if let Woke::Promoted { early: true, .. } = woke {
        spin_until(deadline);
    }
    let now = sys::now();
    assert!(
        now >= deadline,
        "woke {} ns early ({woke:?})",
        deadline - now
    );
    assert_eq!(site.linked(), 0, "left linked after {woke:?}");
    woke
}

#[test]
fn a_readiness_is_never_lost() {
    // No timer at all (an endless stretch): only the promotion can end the sleep, whether the
    // object became ready before the sleeper linked itself or after. A lost one never ends.
    loom::model(|| {
        let site = Arc::new(PollSite::new());
        let seen = site.gen();
        let s = site.clone();
        let object = loom::thread::spawn(move || ready(&s));
        let woke = sleep(&site, seen, sys::now() + 10_000, u64::MAX);
        assert!(matches!(woke, Woke::Promoted { .. }), "{woke:?}");
        object.join().unwrap();
    });
}

#[test]
fn a_promotion_racing_the_timer_wakes_once_on_time() {
    loom::model(|| {
        let site = Arc::new(PollSite::new());
        let seen = site.gen();
        let s = site.clone();
        let object = loom::thread::spawn(move || ready(&s));
        let deadline = sys::now() + 10_000;
        let woke = sleep(&site, seen, deadline, deadline + 10_000);
        let promoted = object.join().unwrap();
        // The object's side took the sleeper out at most once, and a promotion it delivered
        // before the sleep ended is the one the sleep woke to.
        assert!(promoted <= 1);
        if promoted == 1 && woke == Woke::Tick {
            // It came after the timer: the sleep had ended, the token is only left over.
            assert!(
                with_parker(|p, _| p.try_take()),
                "a promotion without its token"
            );
        }
    });
}
