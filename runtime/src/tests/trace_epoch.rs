//! A thread's wait phase across a stretch where no session kept events (`trace/recorder.rs`,
//! `EPOCH`): a wait begun while recording and ended while nothing was kept leaves no stale
//! phase behind, so the thread's next recorded wait has its own begin before its end. Whether
//! anything is kept is process-wide, so the test runs alone.

use super::common::alone;
use crate::trace::recorder::{Session, Settings};
use crate::trace::{self, Kind, WaitFor};

/// A session of its own that keeps a full trace.
fn collecting(id: u64) -> std::sync::Arc<Session> {
    Session::start(
        id,
        Settings {
            collect: true,
            ..Settings::default()
        },
    )
}

#[test]
fn a_wait_that_ended_unrecorded_leaves_the_next_recorded_wait_whole() {
    if !alone(
        "tests::trace_epoch::a_wait_that_ended_unrecorded_leaves_the_next_recorded_wait_whole",
    ) {
        return;
    }
    let first = collecting(u64::MAX - 11);
    // The kernel arbiter's order: the registration begins the wait, before its first poll.
    trace::blocked_before_wait(0x1000, "test object", 0);
    first.end();
    assert!(!trace::on(), "nothing is kept");
    // The wait goes on and ends while nothing is kept: none of its steps is recorded.
    trace::first_poll();
    trace::wait_end(false);
    let second = collecting(u64::MAX - 12);
    trace::first_poll();
    trace::wait_begin(WaitFor::Sleep);
    trace::wait_end(false);
    let snap = second.snapshot();
    second.end();
    let me = trace::thread_id();
    let events = &snap
        .threads
        .iter()
        .find(|t| t.tid == me)
        .expect("this thread's track")
        .events;
    let last: Vec<_> = events.iter().rev().take(2).map(|e| (e.kind, e.x)).collect();
    assert_eq!(
        last,
        [(Kind::WaitEnd, 0), (Kind::WaitBegin, WaitFor::Sleep as u64)],
        "the sleep's own begin comes before its end: {events:?}"
    );
}
