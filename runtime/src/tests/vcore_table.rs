//! The virtual-core state machine driven step by step with an injected clock: one test (or
//! more) per rule of docs/design.md section 8, yields included.

use crate::stats::KickReason;
use crate::vcore::step::{Flag, Step, YieldKind};
use crate::vcore::table::Table;

use super::vcore_harness::*;

#[test]
fn free_slots_go_at_once_ideal_core_first() {
    let mut h = H::new(4);
    h.thread(1, 44, false, ALL, Some(2));
    h.thread(2, 44, false, ALL, Some(2));
    h.thread(3, 44, false, 0b1000, None);
    assert_eq!(h.acquire(1), h.held(2));
    assert_eq!(h.acquire(2), h.held(0), "ideal taken: the lowest free");
    assert_eq!(h.acquire(3), h.held(3), "the only allowed core");
    assert_eq!(h.waits, 0);
    assert_eq!(h.t.free_mask(), 0b0010);
    assert!(h.release(1));
    assert!(!h.release(1), "released twice");
    assert_eq!(h.t.free_mask(), 0b0110);
}

#[test]
fn a_full_table_queues_and_a_release_hands_over() {
    let mut h = H::new(2);
    h.fill(44);
    h.thread(1, 44, false, ALL, None);
    let Step::Queued(_) = h.acquire(1) else {
        panic!("no free slot: it must wait")
    };
    assert_eq!(h.waits, 1);
    assert_eq!(h.poll(1), None);
    assert_eq!(h.at(1), At::Waiting);
    h.advance(10 * US);
    assert!(h.release(101));
    assert_eq!(h.wakes(1), 1, "the grant wakes the waiter");
    assert_eq!(h.at(1), At::Slot(1), "the slot is its before it polls");
    assert_eq!(h.poll(1), Some(h.held(1)));
}

#[test]
fn masks_limit_what_a_waiter_takes() {
    let mut h = H::new(3);
    h.fill(44);
    h.thread(1, 10, false, 0b100, None);
    h.thread(2, 50, false, 0b011, None);
    h.acquire(2);
    h.acquire(1);
    // Slot 0 frees: thread 1 ranks first but may not take it.
    h.release(100);
    assert_eq!(h.at(2), At::Slot(0));
    assert_eq!(h.at(1), At::Waiting);
    // Thread 1 kicked the holder of its one allowed core, not a worse one elsewhere.
    assert_eq!(h.t.kick(2), Some(KickReason::Priority));
    assert_eq!(h.t.kick(1), None);
}

#[test]
fn rank_is_priority_then_first_then_wait_time() {
    let mut h = H::new(1);
    h.fill(0);
    // Arrival order: 1, 2, 3, 4, 5.
    h.thread(1, 44, false, ALL, None);
    h.thread(2, 30, false, ALL, None);
    h.thread(3, 44, true, ALL, None);
    h.thread(4, 44, false, ALL, None);
    h.thread(5, 30, true, ALL, None);
    h.thread(6, 29, false, ALL, None);
    for id in 1..=6 {
        h.acquire(id);
        h.advance(US);
    }
    // 6: strictly better by priority wins over a first thread; 5 before 2: first at equal
    // priority; then 2; 3 first at 44; then 1 before 4: FIFO.
    assert_eq!(h.t.queue(), vec![6, 5, 2, 3, 1, 4]);
    let mut got = Vec::new();
    let mut holder = 100;
    for _ in 0..6 {
        h.release(holder);
        holder = h.t.holder(0).unwrap().0.id;
        got.push(holder);
    }
    assert_eq!(got, vec![6, 5, 2, 3, 1, 4]);
}

#[test]
fn a_waiter_kicks_the_worst_holder_it_outranks() {
    let mut h = H::new(3);
    for (id, p) in [(100, 20), (101, 40), (102, 30)] {
        h.thread(id, p, false, ALL, None);
        h.acquire(id);
    }
    h.thread(1, 25, false, ALL, None);
    h.acquire(1);
    assert_eq!(h.t.kick(1), Some(KickReason::Priority), "the worst: 40");
    assert_eq!(h.t.kick(0), None);
    assert_eq!(h.t.kick(2), None);
    assert_eq!(h.kicked_slots, 0b010, "the kick is traced on its slot");
    assert_eq!(h.t.flag(1), Flag::Kick);
    assert_eq!(h.kicked(KickReason::Priority), 1);
    // The kicked holder keeps running until its checkpoint.
    assert_eq!(h.at(101), At::Slot(1));
    h.advance(5 * US);
    let Step::Queued(_) = h.checkpoint(101) else {
        panic!("kicked: gives up at its checkpoint")
    };
    assert_eq!(h.poll(1), Some(h.held(1)));
    // The kicked thread waits by its rank and outranks nobody: no new kick.
    assert_eq!(h.at(101), At::Waiting);
    assert_eq!(h.kicked(KickReason::Priority), 1);
    assert_eq!(h.t.flag(1), Flag::Waiter, "a worse waiter is allowed on it");
}

#[test]
fn equal_waiters_do_not_kick_and_two_waiters_kick_two_holders() {
    let mut h = H::new(3);
    h.fill(40);
    h.thread(1, 40, false, ALL, None);
    h.acquire(1);
    assert_eq!(h.kicks, [0; 3], "equal priority: no kick, only a turn");
    assert!((0..3).all(|s| h.t.flag(s) == Flag::Turn));
    for (id, p) in [(2, 10), (3, 11), (4, 12)] {
        h.thread(id, p, false, ALL, None);
        h.acquire(id);
        assert_eq!(h.kicked(KickReason::Priority), id as u32 - 1);
    }
    let kicked = (0..3).filter(|&s| h.t.kick(s).is_some()).count();
    assert_eq!(kicked, 3, "each better waiter claims its own holder");
}

#[test]
fn a_kick_nobody_claims_any_more_is_dropped() {
    let mut h = H::new(2);
    h.fill(40);
    h.thread(1, 10, false, ALL, Some(1));
    h.acquire(1);
    assert_eq!(
        h.t.kick(1),
        Some(KickReason::Priority),
        "its ideal core among equals"
    );
    // Slot 0 frees by a release: the waiter takes it, and the kick on slot 1 is stale.
    h.release(100);
    assert_eq!(h.at(1), At::Slot(0));
    assert_eq!(h.checkpoint(101), Step::Kept);
    assert_eq!(h.t.kick(1), None);
    assert_eq!(h.t.flag(1), Flag::Idle);
}

#[test]
fn first_threads_kick_equal_priority_holders_only() {
    let mut h = H::new(2);
    for (id, p) in [(100, 44), (101, 43)] {
        h.thread(id, p, false, ALL, None);
        h.acquire(id);
    }
    h.thread(1, 44, true, ALL, None);
    h.acquire(1);
    assert_eq!(h.t.kick(0), Some(KickReason::First));
    assert_eq!(h.t.kick(1), None, "43 is strictly better than a first 44");
    assert_eq!(h.kicked(KickReason::First), 1);
    h.checkpoint(100);
    assert_eq!(h.poll(1), Some(h.held(0)));
    // A strictly better thread still preempts the first thread.
    h.thread(2, 20, false, ALL, None);
    h.acquire(2);
    assert_eq!(h.t.kick(0), Some(KickReason::Priority));
}

#[test]
fn a_slice_turn_goes_to_a_waiter_as_good_after_the_slice() {
    let mut h = H::new(1);
    h.fill(44);
    h.thread(1, 44, false, ALL, None);
    h.thread(2, 50, false, ALL, None);
    h.acquire(2);
    assert_eq!(h.t.flag(0), Flag::Waiter);
    h.advance(SLICE * 3);
    assert_eq!(h.checkpoint(100), Step::Kept, "a worse waiter gets no turn");
    h.acquire(1);
    assert_eq!(h.t.flag(0), Flag::Turn);
    let Step::Queued(_) = h.checkpoint(100) else {
        panic!("slice over with an equal waiter: a turn")
    };
    assert_eq!(h.kicked(KickReason::Slice), 1);
    assert_eq!(h.poll(1), Some(h.held(0)));
    assert_eq!(
        h.t.queue(),
        vec![100, 2],
        "the turn's giver waits before the worse one"
    );
    h.advance(SLICE - 1);
    assert_eq!(
        h.checkpoint(1),
        Step::Kept,
        "the slice counts from the acquire"
    );
    h.advance(1);
    let Step::Queued(_) = h.checkpoint(1) else {
        panic!("a second slice over")
    };
    assert_eq!(h.poll(100), Some(h.held(0)));
    assert_eq!(h.kicked(KickReason::Slice), 2);
    assert_eq!(h.kicks[0] + h.kicks[2], 0);
}

#[test]
fn a_first_holder_gives_equal_priority_waiters_their_turn() {
    let mut h = H::new(1);
    h.thread(1, 44, true, ALL, None);
    h.acquire(1);
    h.thread(2, 44, false, ALL, None);
    h.acquire(2);
    assert_eq!(h.kicks, [0; 3]);
    assert_eq!(h.t.flag(0), Flag::Turn, "turns follow guest priority");
    h.advance(SLICE);
    let Step::Queued(_) = h.checkpoint(1) else {
        panic!("the first thread's slice is over")
    };
    assert_eq!(h.poll(2), Some(h.held(0)));
    // After a turn the first thread ranks by priority: it does not kick the job back.
    assert_eq!(h.kicks, [0, 1, 0]);
    assert_eq!(h.t.kick(0), None);
    for _ in 0..10 {
        h.advance(SLICE / 20);
        assert_eq!(h.checkpoint(2), Step::Kept, "the job runs its whole turn");
    }
    h.advance(SLICE);
    h.checkpoint(2);
    assert_eq!(h.poll(1), Some(h.held(0)));
    // Holding again, it ranks first again: the job waits without a turn... until a slice.
    assert_eq!(h.t.flag(0), Flag::Turn);
}

/// The livelock of the first HOS_VCORE_FIRST version: a first thread that waits for a job
/// pinned to its own core by yielding took the core straight back at each yield (it ranked
/// first again and kicked the job), so the job ran one checkpoint a round trip.
#[test]
fn a_first_thread_yielding_for_a_pinned_job_lets_it_run_its_turn() {
    let mut h = H::new(2);
    h.thread(1, 44, true, 0b01, Some(0));
    h.thread(2, 44, false, 0b01, Some(0));
    h.thread(3, 44, false, 0b10, Some(1));
    h.acquire(1);
    h.acquire(3);
    h.acquire(2);
    assert_eq!(h.kicks, [0; 3]);
    // The first thread polls for the job's result by yielding.
    let Step::Queued(_) = h.yield_core(1, YieldKind::SamePriority) else {
        panic!("a same-priority waiter is allowed on this core: hand it over")
    };
    assert_eq!(h.poll(2), Some(h.held(0)));
    assert_eq!(h.poll(1), None);
    assert_eq!(
        h.t.kick(0),
        None,
        "no kick back: the yielder ranks by priority"
    );
    let mut checkpoints = 0;
    for _ in 0..100 {
        h.advance(SLICE / 100);
        if h.checkpoint(2) != Step::Kept {
            break;
        }
        checkpoints += 1;
    }
    assert!(
        checkpoints >= 99,
        "the job ran {checkpoints} checkpoints of its turn"
    );
    assert_eq!(h.kicks, [0, 1, 0], "the job gave one slice turn, no kick");
    assert_eq!(
        h.poll(1),
        Some(h.held(0)),
        "the yielder comes back on its core"
    );
    assert_eq!(h.at(3), At::Slot(1), "the other core was never touched");
}

#[test]
fn yield_zero_hands_to_the_longest_equal_waiter_and_waits_for_the_same_core() {
    let mut h = H::new(2);
    h.fill(44);
    h.thread(1, 44, false, ALL, None);
    h.thread(2, 44, false, ALL, None);
    h.thread(3, 10, false, 0b10, None);
    h.acquire(1);
    h.advance(US);
    h.acquire(2);
    assert_eq!(
        h.yield_core(999, YieldKind::Any),
        Step::Kept,
        "a thread without a slot keeps going"
    );
    let Step::Queued(_) = h.yield_core(100, YieldKind::SamePriority) else {
        panic!("equal waiters: hand over")
    };
    assert_eq!(
        h.at(1),
        At::Slot(0),
        "the longest waiter of the same priority"
    );
    assert_eq!(h.at(100), At::Waiting);
    // It waits for its own core only: slot 1 frees, thread 2 takes it, not thread 100.
    h.release(101);
    assert_eq!(h.at(2), At::Slot(1));
    assert_eq!(h.at(100), At::Waiting);
    // Thread 3 (better) kicks slot 1 (its only core); 100 waits only for slot 0.
    h.acquire(3);
    assert_eq!(h.t.kick(1), Some(KickReason::Priority));
    h.release(1);
    assert_eq!(h.poll(100), Some(h.held(0)));
}

#[test]
fn after_yield_zero_only_its_own_core_will_do_until_its_mask_forbids_it() {
    let mut h = H::new(2);
    h.fill(44);
    h.thread(1, 44, false, ALL, None);
    h.acquire(1);
    let Step::Queued(_) = h.yield_core(101, YieldKind::SamePriority) else {
        panic!("an equal waiter: hand over")
    };
    assert_eq!(h.at(1), At::Slot(1));
    h.release(100);
    assert_eq!(
        h.at(101),
        At::Waiting,
        "core 0 is free, but it waits for core 1"
    );
    assert_eq!(h.t.free_mask(), 0b01);
    // Its mask changes to exclude core 1: it may take any core its mask allows.
    h.refresh(101, traits(44, false, 0b01, None));
    assert_eq!(h.at(101), At::Slot(0));
}

#[test]
fn yield_zero_without_an_equal_waiter_keeps_the_core() {
    let mut h = H::new(1);
    h.fill(44);
    h.thread(1, 45, false, ALL, None);
    h.acquire(1);
    assert_eq!(h.yield_core(100, YieldKind::SamePriority), Step::Kept);
    assert_eq!(h.yield_core(100, YieldKind::Migrate), Step::Kept);
    assert_eq!(h.at(100), At::Slot(0));
    // An equal waiter whose mask does not allow the core is no target either.
    let mut h = H::new(2);
    h.fill(44);
    h.thread(1, 44, false, 0b10, None);
    h.acquire(1);
    assert_eq!(h.yield_core(100, YieldKind::SamePriority), Step::Kept);
    let Step::Queued(_) = h.yield_core(101, YieldKind::SamePriority) else {
        panic!("the equal waiter is allowed on core 1")
    };
    assert_eq!(h.at(1), At::Slot(1));
}

#[test]
fn yield_minus_one_comes_back_on_any_core() {
    let mut h = H::new(2);
    h.fill(44);
    h.thread(1, 44, false, ALL, None);
    h.acquire(1);
    let Step::Queued(_) = h.yield_core(100, YieldKind::Migrate) else {
        panic!("an equal waiter: hand over")
    };
    assert_eq!(h.at(1), At::Slot(0));
    h.release(101);
    assert_eq!(h.poll(100), Some(h.held(1)), "whichever core frees first");
}

#[test]
fn yield_minus_two_hands_to_any_waiter_then_waits_by_rank() {
    let mut h = H::new(1);
    h.fill(20);
    h.thread(1, 50, false, ALL, None);
    h.thread(2, 40, false, ALL, None);
    h.acquire(1);
    h.acquire(2);
    assert_eq!(h.yield_core(100, YieldKind::SamePriority), Step::Kept);
    let Step::Queued(_) = h.yield_core(100, YieldKind::Any) else {
        panic!("-2 hands over whatever the priority")
    };
    assert_eq!(h.at(2), At::Slot(0), "the best waiter");
    // The yielder waits by its own rank: it outranks the new holder and kicks it.
    assert_eq!(h.t.kick(0), Some(KickReason::Priority));
    assert_eq!(h.poll(2), Some(h.held(0)));
    h.checkpoint(2);
    assert_eq!(h.poll(100), Some(h.held(0)));
    assert_eq!(h.t.queue(), vec![2, 1]);
    // Nobody at all waiting: -2 keeps it.
    let mut h = H::new(1);
    h.fill(20);
    assert_eq!(h.yield_core(100, YieldKind::Any), Step::Kept);
}

#[test]
fn a_kicked_thread_that_yields_gives_up_as_at_a_checkpoint() {
    let mut h = H::new(1);
    h.fill(40);
    h.thread(1, 10, false, ALL, None);
    h.acquire(1);
    let Step::Queued(_) = h.yield_core(100, YieldKind::SamePriority) else {
        panic!("kicked")
    };
    assert_eq!(h.poll(1), Some(h.held(0)));
}

#[test]
fn a_waiter_escapes_by_itself_and_takes_a_free_core_later() {
    let mut h = H::with(1, SLICE, 5 * MS);
    h.fill(44);
    h.thread(1, 44, false, ALL, None);
    h.acquire(1);
    h.advance(5 * MS - 1);
    assert_eq!(h.poll(1), None);
    h.advance(1);
    assert_eq!(h.poll(1), Some(Step::Escaped), "no release needed");
    assert_eq!(h.escapes, 1);
    assert_eq!(h.at(1), At::Escaped);
    assert_eq!(
        h.at(100),
        At::Slot(0),
        "two threads run on one core: documented"
    );
    assert_eq!(h.t.flag(0), Flag::Idle, "the escaped thread asks no turn");
    assert_eq!(h.checkpoint(1), Step::Kept, "no free core: keeps running");
    h.release(100);
    assert_eq!(h.checkpoint(1), h.held(0), "a free core: takes it");
    assert_eq!(h.at(1), At::Slot(0));
    // An escaped thread's release reports it held something, and leaves.
    h.thread(2, 44, false, ALL, None);
    h.acquire(2);
    h.advance(5 * MS);
    assert_eq!(h.poll(2), Some(Step::Escaped));
    assert_eq!(h.yield_core(2, YieldKind::Any), Step::Kept);
    assert!(h.release(2));
    assert_eq!(h.at(2), At::Off);
}

#[test]
fn shutdown_cancels_waiters_and_later_acquires() {
    let mut h = H::new(1);
    h.fill(44);
    h.thread(1, 10, false, ALL, None);
    h.acquire(1);
    assert_eq!(h.poll(1), None, "keeps its waker");
    assert_eq!(h.t.flag(0), Flag::Kick);
    assert!(!h.t.is_shut_down());
    h.shutdown();
    assert!(h.t.is_shut_down());
    assert_eq!(h.wakes(1), 1);
    assert_eq!(h.poll(1), Some(Step::Cancelled));
    assert_eq!(h.t.flag(0), Flag::Idle, "kicks dropped");
    assert_eq!(h.checkpoint(100), Step::Kept);
    h.thread(2, 10, false, ALL, None);
    assert_eq!(h.acquire(2), Step::Cancelled);
    assert!(h.release(100), "holders still give their cores back");
    assert_eq!(h.acquire(2), Step::Cancelled, "even with a free core");
}

#[test]
fn shutdown_asks_no_holder_to_move_not_even_one_its_mask_forbids() {
    // Found by the C boundary's fuzzer: a thread attached, its mask changed to exclude its
    // core, then the runtime shut down; the flags went Idle while the rule still read Kick.
    let mut h = H::new(2);
    h.fill(40);
    h.refresh(101, traits(40, false, 0b01, None));
    assert_eq!(h.t.flag(1), Flag::Kick, "asked to leave core 1");
    h.shutdown();
    assert_eq!(h.t.flag(1), Flag::Idle, "a shut-down table moves nobody");
    // A mask changed after the shutdown asks nobody to move either.
    h.refresh(100, traits(40, false, 0b10, None));
    assert_eq!(h.t.flag(0), Flag::Idle);
    assert!(
        h.release(101) && h.release(100),
        "holders still give their cores back"
    );
}

#[test]
fn an_abandoned_wait_gives_back_a_slot_granted_to_it() {
    let mut h = H::new(1);
    h.fill(44);
    h.thread(1, 44, false, ALL, None);
    h.thread(2, 44, false, ALL, None);
    h.thread(3, 44, false, ALL, None);
    h.acquire(1);
    h.acquire(2);
    h.acquire(3);
    h.abandon(3);
    assert_eq!(h.t.queue(), vec![1, 2]);
    h.release(100);
    assert_eq!(h.at(1), At::Slot(0));
    h.abandon(1);
    assert_eq!(h.at(2), At::Slot(0), "the granted slot went on");
    assert_eq!(h.poll(2), Some(h.held(0)));
}

#[test]
fn refresh_reranks_waiters_and_moves_holders() {
    let mut h = H::new(2);
    h.fill(40);
    h.thread(1, 50, false, ALL, None);
    h.thread(2, 50, false, ALL, None);
    h.acquire(1);
    h.acquire(2);
    assert_eq!(h.kicks, [0; 3]);
    h.refresh(2, traits(10, false, ALL, None));
    assert_eq!(h.t.queue(), vec![2, 1]);
    assert_eq!(h.kicked(KickReason::Priority), 1);
    // A holder whose new mask excludes its core is asked to leave, not kicked.
    h.refresh(101, traits(40, false, 0b01, None));
    assert_eq!(h.t.flag(1), Flag::Kick);
    assert_eq!(h.kicked(KickReason::Priority), 1);
    let Step::Queued(_) = h.checkpoint(101) else {
        panic!("its mask no longer allows core 1")
    };
    assert_eq!(h.at(2), At::Slot(1));
    // A kick that nobody claims any more (thread 2 got slot 1) is dropped at the checkpoint.
    assert_eq!(h.t.kick(0), Some(KickReason::Priority));
    assert_eq!(h.checkpoint(100), Step::Kept);
    assert_eq!(h.t.kick(0), None);
    // A rename that makes a waiter first lets it kick an equal holder; one that makes the
    // holder first too takes it back.
    h.refresh(101, traits(40, true, 0b01, None));
    assert_eq!(h.t.kick(0), Some(KickReason::First));
    h.refresh(100, traits(40, true, ALL, None));
    assert_eq!(
        h.checkpoint(100),
        Step::Kept,
        "equal first threads: no claim"
    );
    // Escaped threads are refreshed in place.
    let mut h = H::with(1, SLICE, MS);
    h.fill(40);
    h.thread(1, 40, false, ALL, None);
    h.acquire(1);
    h.advance(MS);
    assert_eq!(h.poll(1), Some(Step::Escaped));
    h.refresh(1, traits(30, false, ALL, None));
    assert_eq!(h.at(1), At::Escaped);
    // An escaped thread's new mask decides which free core it may take.
    let mut h = H::with(2, SLICE, MS);
    h.fill(40);
    h.thread(1, 40, false, ALL, None);
    h.acquire(1);
    h.advance(MS);
    assert_eq!(h.poll(1), Some(Step::Escaped));
    h.refresh(1, traits(40, false, 0b10, None));
    h.release(100);
    assert_eq!(
        h.checkpoint(1),
        Step::Kept,
        "core 0 is free but not allowed any more"
    );
    h.release(101);
    assert_eq!(h.checkpoint(1), h.held(1));
}

#[test]
fn flags_tell_the_holder_what_it_is_asked() {
    let mut h = H::new(1);
    h.fill(40);
    assert_eq!(h.t.flag(0), Flag::Idle);
    h.thread(1, 41, false, ALL, None);
    h.acquire(1);
    assert_eq!(h.t.flag(0), Flag::Waiter);
    h.thread(2, 40, false, ALL, None);
    h.acquire(2);
    assert_eq!(h.t.flag(0), Flag::Turn);
    h.thread(3, 39, false, ALL, None);
    h.acquire(3);
    assert_eq!(h.t.flag(0), Flag::Kick);
    for f in [Flag::Idle, Flag::Waiter, Flag::Turn, Flag::Kick] {
        assert_eq!(Flag::from_u8(f.as_u8()), f);
    }
}

#[test]
#[should_panic(expected = "impossible vcore flag 4")]
fn an_impossible_flag_panics_with_its_value() {
    Flag::from_u8(4);
}

#[test]
#[should_panic(expected = "expected 1..=8")]
fn a_table_of_nine_cores_is_refused() {
    Table::new(9, SLICE, ESCAPE, 0);
}
