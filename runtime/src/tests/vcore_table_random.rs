//! The virtual-core state machine under random operation sequences (proptest).
//!
//! Random operation sequences on a small table, with the kicks' grace off and on: the table
//! checks its own invariants after every operation (debug builds), and the harness checks
//! that the threads' view agrees with the table's and that nobody is left waiting once every
//! holder has left.

use crate::vcore::step::{Step, YieldKind};

use super::vcore_harness::*;

use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Acquire(u64),
    Poll(u64),
    Release(u64),
    Checkpoint(u64),
    Yield(u64, YieldKind),
    Advance(u64),
    Refresh(u64, u8, bool, u64),
    Abandon(u64),
}

const THREADS: u64 = 6;

fn op() -> impl Strategy<Value = Op> {
    let id = 0..THREADS;
    let kind = prop_oneof![
        Just(YieldKind::SamePriority),
        Just(YieldKind::Migrate),
        Just(YieldKind::Any)
    ];
    prop_oneof![
        4 => id.clone().prop_map(Op::Acquire),
        4 => id.clone().prop_map(Op::Poll),
        3 => id.clone().prop_map(Op::Release),
        4 => id.clone().prop_map(Op::Checkpoint),
        2 => (id.clone(), kind).prop_map(|(i, k)| Op::Yield(i, k)),
        3 => (0..3 * SLICE).prop_map(Op::Advance),
        1 => (id.clone(), 40..43u8, any::<bool>(), 1..8u64)
            .prop_map(|(i, p, f, m)| Op::Refresh(i, p, f, m)),
        1 => id.prop_map(Op::Abandon),
    ]
}

/// Applies `op` if it is valid for the thread's state (as the runtime would call it).
fn apply(h: &mut H, op: &Op) {
    let waiting = |h: &H, i: u64| h.keys.contains_key(&i);
    let running = |h: &H, i: u64| matches!(h.at(i), At::Slot(_) | At::Escaped | At::Revoked);
    match *op {
        Op::Acquire(i) if !waiting(h, i) && !running(h, i) => {
            h.acquire(i);
        }
        Op::Poll(i) if waiting(h, i) => {
            if let Some(Step::Held { slot, .. }) = h.poll(i) {
                assert_eq!(h.at(i), At::Slot(slot));
            }
        }
        Op::Release(i) if !waiting(h, i) => {
            let r = running(h, i);
            assert_eq!(h.release(i), r);
        }
        Op::Checkpoint(i) if !waiting(h, i) => {
            h.checkpoint(i);
        }
        Op::Yield(i, k) if !waiting(h, i) => {
            h.yield_core(i, k);
        }
        Op::Advance(ns) => h.advance(ns),
        Op::Refresh(i, p, f, m) => h.refresh(i, traits(p, f, m, Some(i as usize % 3))),
        Op::Abandon(i) if waiting(h, i) => h.abandon(i),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_and_nobody_is_left_waiting(
        ops in proptest::collection::vec(op(), 1..120),
        grace in prop_oneof![Just(0), 1..SLICE / 2],
    ) {
        let mut h = H::graced(3, SLICE, 50 * MS, grace);
        for i in 0..THREADS {
            h.thread(i, 40 + (i % 3) as u8, i == 0, 0b111 >> (i % 2), Some(i as usize % 3));
        }
        for op in &ops {
            apply(&mut h, op);
            let held = (0..3).filter(|&s| h.t.holder(s).is_some()).count();
            prop_assert!(held <= 3);
            if grace == 0 {
                prop_assert!(h.revoked.is_empty(), "a slot taken with the grace off");
            }
        }
        // Every running thread leaves; every waiter then gets a core in turn.
        for _ in 0..=THREADS {
            for i in 0..THREADS {
                if h.keys.contains_key(&i) {
                    h.poll(i);
                }
                if !h.keys.contains_key(&i) {
                    h.release(i);
                }
            }
        }
        for i in 0..THREADS {
            prop_assert_eq!(h.at(i), At::Off, "thread {} left behind", i);
        }
        prop_assert_eq!(h.t.free_mask(), 0b111);
    }
}
