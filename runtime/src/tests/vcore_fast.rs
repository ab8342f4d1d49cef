//! The fast path (`vcore/fast.rs`) with real threads: while nobody waits every slot is lent and
//! a take or a give leaves it so; a waiter takes the lent slots back (the fast holder becomes
//! the table's, ranked and kicked) and they are lent again once nobody waits; the gauge and the
//! wait tree see fast holders; a fast step-away leaves the thread claimable, and a thread that
//! came home is not claimed for. The races themselves are the loom models' (`loom_vcore.rs`).

use super::vcore_runtime::{rig, rig_of, thread, until};
use crate::config::Config;
use crate::policy::Spin;
use crate::role::Role;
use crate::thread::{ThreadRecord, ThreadSpec};
use crate::vcore::{Occupant, Place};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn nobody_waiting_every_slot_stays_lent_through_a_take_and_a_give() {
    let r = rig(4, 2000, 5_000);
    let t = thread(1, 44, 0b1100, false);
    assert_eq!(r.v.lent(), 0b1111, "lent from the start");
    assert!(r.v.acquire(&*t, Spin::without_runtime()).is_none());
    // Its ideal core (the mask's lowest), taken without the lock: still lent, held in its cell.
    assert_eq!(t.seat().slot(), Some(2));
    assert_eq!(r.v.lent(), 0b1111);
    assert_eq!(r.v.held(), 1, "the gauge counts a fast holder");
    assert!(r.v.release(&*t));
    assert_eq!(t.seat().slot(), None);
    assert_eq!((r.v.lent(), r.v.held()), (0b1111, 0));
    assert!(!r.v.release(&*t), "a second release gives nothing");
    // Its mask full: the next free allowed core, still without the lock.
    let u = thread(2, 44, 0b1100, false);
    r.v.acquire(&*t, Spin::without_runtime());
    r.v.acquire(&*u, Spin::without_runtime());
    assert_eq!((t.seat().slot(), u.seat().slot()), (Some(2), Some(3)));
    assert_eq!((r.v.lent(), r.v.held()), (0b1111, 2));
    assert!(r.v.release(&*t) && r.v.release(&*u));
    assert_eq!(r.stats.snapshot().vcore_waits, 0);
}

#[test]
fn a_fast_take_keeps_to_the_mask_whatever_the_ideal_core() {
    let r = rig(2, 2000, 5_000);
    let spec = ThreadSpec {
        name: "T1".into(),
        priority: 44,
        core_mask: 0b10,
        ideal_core: 0,
        role: Role::Auto,
    };
    let t = Arc::new(ThreadRecord::new(1, &spec, false, false));
    r.v.acquire(&*t, Spin::without_runtime());
    assert_eq!(
        t.seat().slot(),
        Some(1),
        "its ideal core is outside its mask"
    );
    assert!(r.v.release(&*t));
}

#[test]
fn a_waiter_takes_the_lent_slots_back_kicks_the_fast_holder_and_they_are_lent_again() {
    let r = rig(1, 2000, 5_000);
    let holder = thread(1, 44, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    assert!(!holder.seat().is_asked());
    let better = thread(2, 10, 1, false);
    let ran = Arc::new(AtomicBool::new(false));
    let h = {
        let (v, better, ran) = (r.v.clone(), better.clone(), ran.clone());
        std::thread::spawn(move || {
            v.acquire(&*better, Spin::without_runtime());
            ran.store(true, Ordering::SeqCst);
            assert_eq!(better.seat().slot(), Some(0));
            assert!(v.release(&*better));
        })
    };
    until(|| r.stats.snapshot().vcore_waits, 1);
    // The table took the core back with its holder, and kicked it: nothing is lent.
    assert_eq!(r.v.lent(), 0);
    assert!(
        holder.seat().is_asked(),
        "the kick reached the fast holder's word"
    );
    assert!(!ran.load(Ordering::SeqCst));
    r.v.checkpoint(&*holder, Spin::without_runtime());
    // It gave the core up, waited behind the better thread, and holds it again.
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(holder.seat().slot(), Some(0));
    h.join().unwrap();
    assert_eq!(r.v.lent(), 1, "nobody waits: lent again, with its holder");
    assert!(r.v.release(&*holder));
    assert_eq!((r.v.lent(), r.v.held()), (1, 0));
}

#[test]
fn a_fast_holder_keeps_the_stamp_of_its_take() {
    let r = rig(2, 2000, 5_000);
    let t = thread(1, 44, 0b11, false);
    let before = crate::sys::now();
    r.v.acquire(&*t, Spin::without_runtime());
    let after = crate::sys::now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let since = |v: &crate::vcore::Vcores| match &v.view(std::slice::from_ref(&t))[..] {
        [Place::Holds { slot: 0, since }] => *since,
        other => panic!("a fast holder seen as {other:?}"),
    };
    // Stamped at the take, not at the table's first look 20 ms later (a millisecond for the
    // error of the map from stamps to ns).
    let first = since(&r.v);
    assert!(
        first + 1_000_000 >= before && first <= after + 1_000_000,
        "stamped {first}, taken between {before} and {after}"
    );
    // Lent again after the view and taken back at this one: the same stamp.
    assert_eq!(r.v.lent(), 0b11);
    let again = since(&r.v);
    assert!(
        again.abs_diff(first) < 1_000_000,
        "stamped {first} then {again}"
    );
    assert!(r.v.release(&*t));
}

#[test]
fn a_fast_step_away_is_claimable_and_a_thread_back_home_is_not() {
    let r = rig_of(&Config {
        cores: 1,
        vcore_escape_ms: 5_000,
        ..Config::default()
    });
    let t = thread(1, 44, 1, false);
    r.v.acquire(&*t, Spin::without_runtime());
    assert!(r.v.step_away(&*t));
    assert_eq!(
        (r.v.lent(), r.v.held()),
        (1, 0),
        "given back without the lock"
    );
    // A waker claims the free core for it: it takes the lent core's cell for the thread,
    // without the lock; the thread takes what it was granted, without the lock.
    r.v.claim(&*t);
    assert_eq!((r.v.lent(), r.v.held()), (1, 1));
    r.v.acquire(&*t, Spin::without_runtime());
    assert_eq!(t.seat().slot(), Some(0));
    assert_eq!(r.v.lent(), 1, "the claim taken: still lent");
    assert!(r.v.release(&*t));
    // Away again, then home by a fast take: a late claim finds it home and claims nothing.
    r.v.acquire(&*t, Spin::without_runtime());
    assert!(r.v.step_away(&*t));
    r.v.acquire(&*t, Spin::without_runtime());
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 1);
    assert!(r.v.release(&*t));
    assert_eq!(r.v.held(), 0, "a claim made for a thread at home");
    // Away, then an unwound wait's exit: home without the lock, nothing claimable.
    r.v.acquire(&*t, Spin::without_runtime());
    assert!(r.v.step_away(&*t));
    assert!(!r.v.release(&*t));
    r.v.claim(&*t);
    assert_eq!(r.v.held(), 0);
}

#[test]
fn a_re_rank_takes_a_fast_holder_back_and_a_new_mask_moves_it() {
    let r = rig(2, 2000, 5_000);
    let t = thread(1, 44, 0b01, false);
    r.v.acquire(&*t, Spin::without_runtime());
    t.set_affinity(1, 0b10);
    r.v.refresh(&*t);
    // Its core is no longer allowed: asked to leave, so the table keeps the slots.
    assert_eq!(r.v.lent(), 0);
    assert!(t.seat().is_asked());
    r.v.checkpoint(&*t, Spin::without_runtime());
    assert_eq!(t.seat().slot(), Some(1));
    assert_eq!(r.v.lent(), 0b11);
    assert!(r.v.release(&*t));
}
