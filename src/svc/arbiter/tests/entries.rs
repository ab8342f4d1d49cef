//! The threads' entries in the table (`table/mod.rs`, its invariants): an entry stays, idle,
//! between a thread's waits and follows its priority; the slot of its last wait says which
//! wait is its current one only while that slot holds a wait of the thread; idle entries are
//! swept at the bound, and a forgotten thread's goes at once.

use super::*;

/// A thread whose wait ended keeps an idle entry, which follows the thread's priority: a
/// later wait ranks by the priority set meanwhile (not the caller's stale one), and nothing
/// is lent or re-ranked for it while it is idle.
#[test]
fn an_idle_entry_follows_the_priority_set_while_idle() {
    let mut h = Harness::new(&[(1, 40), (2, 30)]);
    let w = word(0);
    let first = h.wait_address(1, &w, 0);
    assert_eq!(h.t.party(1), Some(&1), "busy: what the caller gave");
    let mut fx = Effects::default();
    h.t.signal_address(&w, SignalType::Signal, 0, 1, &mut fx)
        .unwrap();
    assert_eq!(h.poll(&first), Some(Ok(())));
    assert_eq!((h.t.party(1), h.t.effective(1)), (None, None), "idle");
    h.t.set_base(1, 20, &mut h.fx);
    h.t.check();
    assert!(h.fx.lend.is_empty(), "an idle thread lends nothing");
    let b = h.wait_address(2, &w, 0);
    let a = h.wait_address(1, &w, 0);
    assert_eq!(
        h.t.effective(1),
        Some(20),
        "ranked by the priority set while idle"
    );
    h.t.signal_address(&w, SignalType::Signal, 0, 1, &mut fx)
        .unwrap();
    assert_eq!((h.poll(&a), h.poll(&b)), (Some(Ok(())), None));
}

/// A wait's end leaves its slot in its thread's entry (`Info::wait`), and the next wait
/// takes that slot (the slab reuses the last freed): another thread's wait there is not the
/// first thread's, which stays idle, and a change of its priority re-ranks nothing.
#[test]
fn a_slot_an_ended_wait_left_to_another_thread_is_not_its_wait() {
    let mut h = Harness::new(&[(1, 40), (2, 30), (3, 50)]);
    let w = word(0);
    let first = h.wait_address(1, &w, 0);
    let mut fx = Effects::default();
    h.t.signal_address(&w, SignalType::Signal, 0, 1, &mut fx)
        .unwrap();
    assert_eq!(h.poll(&first), Some(Ok(())));
    let second = h.wait_address(2, &w, 0);
    let third = h.wait_address(3, &w, 0);
    assert_eq!((h.t.party(1), h.t.effective(1)), (None, None), "idle");
    h.t.set_base(1, 60, &mut h.fx);
    h.t.check();
    assert!(h.fx.lend.is_empty(), "an idle thread lends nothing");
    h.t.signal_address(&w, SignalType::Signal, 0, 1, &mut fx)
        .unwrap();
    assert_eq!(
        (h.poll(&second), h.poll(&third)),
        (Some(Ok(())), None),
        "thread 2's wait still ranked at 30"
    );
}

/// Idle entries are swept once a new thread comes to the bound (`Table::check` asserts it
/// after every step), and a forgotten thread's idle entry goes at once.
#[test]
fn idle_entries_are_bounded_and_a_forgotten_thread_leaves_none() {
    let n = 3 * 1024;
    let threads: Vec<(u32, u8)> = (1..=n).map(|id| (id, 44)).collect();
    let mut h = Harness::new(&threads);
    let w = word(0);
    for id in 1..=n {
        let k = h.wait_address(id, &w, 0);
        assert_eq!(
            h.cancel(&k, ResultCode::TIMED_OUT),
            Err(ResultCode::TIMED_OUT)
        );
    }
    h.t.forget(n, &mut h.fx);
    h.t.set_base(n, 10, &mut h.fx);
    let k = h.wait_address(n, &w, 0);
    assert_eq!(
        h.t.effective(n),
        Some(44),
        "made afresh at the caller's priority"
    );
    assert_eq!(
        h.cancel(&k, ResultCode::TIMED_OUT),
        Err(ResultCode::TIMED_OUT)
    );
}
