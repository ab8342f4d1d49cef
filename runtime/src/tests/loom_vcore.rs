//! Loom models of the virtual cores' hand-offs: a release against a waiter that registers, a
//! release against two, a kick against the holder's checkpoint, shutdown against a waiter, a
//! waker's claim against the thread's own acquire (and its giving back). Each checks that no two
//! threads hold the one core at once and that no wake is lost (a lost wake leaves a thread
//! parked for ever, which loom reports).
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p hos-runtime --release --lib`
#![cfg(loom)]

use crate::config::Config;
use crate::policy::Spin;
use crate::stats::Counters;
use crate::thread::{ThreadRecord, ThreadSpec};
use crate::vcore::{Occupant, Vcores};
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The waits' spin: none (a spin is wall-clock time, which a model cannot replay; the vcore
/// wait skips it under loom anyway).
const SPIN: Spin = Spin::NONE;

/// Runs `f` under loom with at most two preemptions unless LOOM_MAX_PREEMPTIONS says.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.check(f);
}

/// One core, an escape time no model reaches, and two thread records.
fn setup(p1: u8, p2: u8) -> (Arc<Vcores>, Arc<ThreadRecord>, Arc<ThreadRecord>) {
    let config = Config {
        cores: 1,
        vcore_escape_ms: 3_600_000,
        ..Config::default()
    };
    let vcores = Arc::new(Vcores::new(&config, Arc::new(Counters::default())));
    let rec = |id, priority| {
        let spec = ThreadSpec {
            name: format!("T{id}"),
            priority,
            core_mask: 1,
            ideal_core: 0,
        };
        Arc::new(ThreadRecord::new(id, &spec, false, false))
    };
    (vcores, rec(1, p1), rec(2, p2))
}

/// Counts holders of the one core; panics at two.
#[derive(Default)]
struct Holders(AtomicUsize);

impl Holders {
    fn enter(&self, t: &ThreadRecord) {
        assert_eq!(t.seat().slot(), Some(0), "{} runs without the core", t.id());
        // SeqCst: the count is the model's check, not the runtime's; keep it simple.
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(n, 0, "two threads hold the one core");
    }

    fn leave(&self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A model thread that waits for a core, holds it for one step (counted) and releases it.
fn spawn_waiter(
    vcores: &Arc<Vcores>,
    holders: &Arc<Holders>,
    t: Arc<ThreadRecord>,
) -> loom::thread::JoinHandle<()> {
    let (vcores, holders) = (vcores.clone(), holders.clone());
    loom::thread::spawn(move || {
        vcores.acquire(&*t, SPIN);
        holders.enter(&t);
        holders.leave();
        assert!(vcores.release(&*t));
    })
}

#[test]
fn a_release_hands_the_core_to_a_waiter_that_registers_meanwhile() {
    model(|| {
        let (vcores, t1, t2) = setup(44, 44);
        let holders = Arc::new(Holders::default());
        vcores.acquire(&*t1, SPIN);
        holders.enter(&t1);
        let th = spawn_waiter(&vcores, &holders, t2);
        holders.leave();
        assert!(vcores.release(&*t1));
        th.join().unwrap();
        assert_eq!(t1.seat().slot(), None);
    });
}

#[test]
fn a_kick_hands_the_core_over_at_the_holders_checkpoint() {
    model(|| {
        let (vcores, t1, t2) = setup(44, 10);
        let holders = Arc::new(Holders::default());
        vcores.acquire(&*t1, SPIN);
        holders.enter(&t1);
        let th = spawn_waiter(&vcores, &holders, t2);
        // Gives the core up here if the kick is there, and comes back after the better thread.
        holders.leave();
        vcores.checkpoint(&*t1, SPIN);
        holders.enter(&t1);
        holders.leave();
        assert!(vcores.release(&*t1));
        th.join().unwrap();
    });
}

#[test]
fn a_chain_of_hand_offs_never_doubles_a_holder() {
    model(|| {
        let (vcores, t1, t2) = setup(44, 44);
        let t3 = {
            let spec = ThreadSpec {
                name: "T3".into(),
                priority: 44,
                core_mask: 1,
                ideal_core: 0,
            };
            Arc::new(ThreadRecord::new(3, &spec, false, false))
        };
        let holders = Arc::new(Holders::default());
        vcores.acquire(&*t1, SPIN);
        holders.enter(&t1);
        let ths: Vec<_> = [t2, t3]
            .into_iter()
            .map(|t| spawn_waiter(&vcores, &holders, t))
            .collect();
        holders.leave();
        assert!(vcores.release(&*t1));
        for th in ths {
            th.join().unwrap();
        }
    });
}

#[test]
fn shutdown_ends_a_wait() {
    model(|| {
        let (vcores, t1, t2) = setup(44, 44);
        vcores.acquire(&*t1, SPIN);
        let th = {
            let vcores = vcores.clone();
            loom::thread::spawn(move || {
                vcores.acquire(&*t2, SPIN);
                // Granted before the shutdown, or none at all.
                if t2.seat().holds() {
                    assert!(vcores.release(&*t2));
                }
            })
        };
        vcores.shutdown();
        th.join().unwrap();
        assert!(vcores.release(&*t1));
    });
}

#[test]
fn a_wakers_claim_races_the_thread_taking_its_core_itself() {
    // The owner stepped away into an object wait; a waker claims its core while the owner
    // (woken by another wake, or spinning) takes one itself, or first gives back what a
    // spurious wake claimed. Whatever the order: one holder, and nothing left claimed.
    for spurious in [false, true] {
        model(move || {
            let (vcores, t1, t2) = setup(10, 44);
            let holders = Arc::new(Holders::default());
            vcores.acquire(&*t1, SPIN);
            assert!(vcores.step_away(&*t1));
            vcores.acquire(&*t2, SPIN);
            let waker = {
                let (vcores, t1) = (vcores.clone(), t1.clone());
                loom::thread::spawn(move || vcores.claim(&*t1))
            };
            let holder = {
                let (vcores, holders, t2) = (vcores.clone(), holders.clone(), t2.clone());
                loom::thread::spawn(move || {
                    holders.enter(&t2);
                    holders.leave();
                    // Kicked by the claim or not: give the core up at a checkpoint, or leave.
                    vcores.checkpoint(&*t2, SPIN);
                    if t2.seat().slot() == Some(0) {
                        holders.enter(&t2);
                        holders.leave();
                    }
                    vcores.release(&*t2);
                })
            };
            if spurious {
                vcores.unclaim(&*t1);
            }
            vcores.acquire(&*t1, SPIN);
            holders.enter(&t1);
            holders.leave();
            assert!(vcores.release(&*t1));
            waker.join().unwrap();
            holder.join().unwrap();
            assert_eq!(vcores.held(), 0, "a claim outlived its wait");
        });
    }
}
