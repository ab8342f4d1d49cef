//! The wait bracket ([`Away`]): each wait marks its thread and gives its core back once, a
//! sleep through the reactor included (its reactor wait is inside the sleep's bracket).

use crate::block_on::{block_on_with, Away, Wait, WaitPolicy};
use crate::parker::with_parker;
use crate::policy::Spin;
use crate::stats::Stripe;
use std::cell::RefCell;
use std::future::poll_fn;
use std::task::Poll;

/// A policy that holds a core and writes down every call of the bracket.
#[derive(Default)]
struct Counting {
    calls: RefCell<Vec<String>>,
    holds: std::cell::Cell<bool>,
}

impl Counting {
    fn holding() -> Self {
        let c = Counting::default();
        c.holds.set(true);
        c
    }

    fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }
}

impl WaitPolicy for Counting {
    fn spin(&self) -> Spin {
        Spin::NONE
    }

    fn counters(&self) -> Option<&Stripe> {
        None
    }

    fn release_core(&self, claimable: bool) -> bool {
        self.calls.borrow_mut().push(format!("release {claimable}"));
        self.holds.replace(false)
    }

    fn unclaim_core(&self) {}

    fn acquire_core(&self) {
        self.calls.borrow_mut().push("acquire".into());
        self.holds.set(true);
    }

    fn mark(&self, on: Option<&'static str>) {
        self.calls.borrow_mut().push(format!("mark {on:?}"));
    }
}

/// Blocks on a future that is pending once (it wakes itself) under `policy`.
fn wait_once(policy: &Counting, wait: Wait<'_>) {
    let mut first = true;
    let fut = poll_fn(|cx| {
        if std::mem::take(&mut first) {
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    });
    with_parker(|p, w| block_on_with(p, w, fut, wait, || None, || policy));
}

#[test]
fn a_sleep_through_the_reactor_gives_its_core_back_once() {
    let policy = Counting::holding();
    let away = Away::begin(&policy, Wait::sleep());
    wait_once(&policy, Wait::sleep());
    assert!(away.end(), "the sleep gave a core back");
    assert_eq!(
        policy.calls(),
        [
            "mark Some(\"sleep\")",
            "release false",
            "mark None",
            "acquire"
        ],
        "the reactor wait inside the sleep bracketed it again"
    );
}

#[test]
fn a_wait_on_an_object_brackets_itself_and_a_core_wait_gives_nothing_back() {
    let gate = crate::spin_gate::SpinGate::default();
    let policy = Counting::holding();
    wait_once(&policy, Wait::object("test object", &gate));
    assert_eq!(
        policy.calls(),
        [
            "mark Some(\"test object\")",
            "release true",
            "mark None",
            "acquire"
        ]
    );
    let policy = Counting::default();
    wait_once(&policy, Wait::vcore());
    assert_eq!(policy.calls(), ["mark Some(\"virtual core\")", "mark None"]);
}
