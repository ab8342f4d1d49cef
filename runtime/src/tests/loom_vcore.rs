//! Loom models of the virtual cores' hand-offs: a release against a waiter that registers, a
//! release against two, a kick against the holder's checkpoint, shutdown against a waiter, a
//! waker's claim against the thread's own acquire (and its giving back), a revocation after a
//! kick's grace against the holder's own checkpoint; and the fast path (`vcore/fast.rs`): a
//! give without the lock against a waiter taking the lent slots back, takes and gives on two
//! cores by three threads, the slots lent again while a thread takes one, a fast step-away
//! against a waker's claim, a waker's claim without the lock against the thread and a
//! take-back; a deferred claim wake (HOS_VCORE_CLAIM_DEFER) against the woken
//! thread's own wake-up and park. Each checks that no two threads hold one core at once (but for a
//! revoked holder before its next checkpoint) and that no wake is lost (a lost wake leaves a
//! thread parked for ever, which loom reports).
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p hos-runtime --release --lib`
#![cfg(loom)]

use crate::config::Config;
use crate::policy::Spin;
use crate::role::Role;
use crate::stats::Counters;
use crate::thread::{ThreadRecord, ThreadSpec};
use crate::vcore::{kick_is_set, Occupant, Place, Vcores};
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
    setup_graced(p1, p2, 0)
}

/// [`setup`] with a kicks' grace of `grace_us` (0: none).
fn setup_graced(
    p1: u8,
    p2: u8,
    grace_us: u64,
) -> (Arc<Vcores>, Arc<ThreadRecord>, Arc<ThreadRecord>) {
    setup_of(
        p1,
        p2,
        Config {
            vcore_grace_us: grace_us,
            ..Config::default()
        },
    )
}

/// [`setup`] on `config`'s switches (one core and the escape time set here).
fn setup_of(p1: u8, p2: u8, config: Config) -> (Arc<Vcores>, Arc<ThreadRecord>, Arc<ThreadRecord>) {
    let config = Config {
        cores: 1,
        vcore_escape_ms: 3_600_000,
        ..config
    };
    let vcores = Arc::new(Vcores::new(&config, Arc::new(Counters::default())));
    let rec = |id, priority| {
        let spec = ThreadSpec {
            name: format!("T{id}"),
            priority,
            core_mask: 1,
            ideal_core: 0,
            role: Role::Auto,
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
                role: Role::Auto,
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
            assert!(t1.seat().is_home(), "a claim left on a thread that ran");
        });
    }
}

/// Counts `t` in as a holder of the one core; a second holder counted at once is allowed only
/// while `revocable`, the worse thread, is revoked (it runs on until its next checkpoint).
/// Its state is read where neither thread can change it: before counting the other thread
/// in (only that one revokes it), after counting itself in (only it ends its revocation).
fn enter_graced(
    holders: &Holders,
    vcores: &Vcores,
    t: &ThreadRecord,
    revocable: &Arc<ThreadRecord>,
) {
    assert_eq!(t.seat().slot(), Some(0), "{} runs without the core", t.id());
    let revoked = || vcores.view(std::slice::from_ref(revocable))[0] == Place::Revoked;
    let itself = t.id() == revocable.id();
    let before = !itself && revoked();
    // SeqCst: as `Holders`.
    let n = holders.0.fetch_add(1, Ordering::SeqCst);
    if n > 0 {
        assert_eq!(n, 1, "three holders of one core");
        let revoked = if itself { revoked() } else { before };
        assert!(revoked, "two holders, and the worse one is not revoked");
        if itself {
            assert!(
                kick_is_set(t.seat().kick_word()),
                "its checkpoint would not look"
            );
        }
    }
}

#[test]
fn a_revocation_races_the_holders_own_checkpoint() {
    // A better waiter kicks the holder; its grace (1 us) is over at its first poll on the
    // model's clock. The holder reaches its checkpoint before or after the waiter takes the
    // core: either way the two run together only while the holder is revoked, the holder gets
    // the core back after the better one, and nothing is left held.
    model(|| {
        let (vcores, t1, t2) = setup_graced(44, 10, 1);
        let holders = Arc::new(Holders::default());
        vcores.acquire(&*t1, SPIN);
        enter_graced(&holders, &vcores, &t1, &t1);
        let th = {
            let (vcores, holders, t1) = (vcores.clone(), holders.clone(), t1.clone());
            loom::thread::spawn(move || {
                vcores.acquire(&*t2, SPIN);
                enter_graced(&holders, &vcores, &t2, &t1);
                holders.leave();
                assert!(vcores.release(&*t2));
            })
        };
        holders.leave();
        let revoked = || vcores.view(std::slice::from_ref(&t1))[0] == Place::Revoked;
        let was_revoked = revoked();
        vcores.checkpoint(&*t1, SPIN);
        assert!(
            !(was_revoked && revoked()),
            "its checkpoint missed the revocation"
        );
        enter_graced(&holders, &vcores, &t1, &t1);
        holders.leave();
        assert!(vcores.release(&*t1));
        th.join().unwrap();
        assert_eq!(vcores.held(), 0, "a core left held");
        assert!(!kick_is_set(t1.seat().kick_word()));
    });
}

/// Two cores, an escape time no model reaches, no grace, and `n` thread records of `priority`
/// allowed on both.
fn setup_two(n: u64, priority: u8) -> (Arc<Vcores>, Vec<Arc<ThreadRecord>>) {
    let config = Config {
        cores: 2,
        vcore_escape_ms: 3_600_000,
        vcore_grace_us: 0,
        ..Config::default()
    };
    let vcores = Arc::new(Vcores::new(&config, Arc::new(Counters::default())));
    let threads = (1..=n)
        .map(|id| {
            let spec = ThreadSpec {
                name: format!("T{id}"),
                priority,
                core_mask: 0b11,
                ideal_core: 0,
                role: Role::Auto,
            };
            Arc::new(ThreadRecord::new(id, &spec, false, false))
        })
        .collect();
    (vcores, threads)
}

/// Counts the holders of each of two cores: at most one a core, so at most two in all.
#[derive(Default)]
struct PerCore([AtomicUsize; 2]);

impl PerCore {
    fn enter(&self, t: &ThreadRecord) -> usize {
        let s = t.seat().slot().expect("runs without a core");
        // SeqCst: as `Holders`.
        let n = self.0[s].fetch_add(1, Ordering::SeqCst);
        assert_eq!(n, 0, "two threads hold core {s}");
        s
    }

    fn leave(&self, s: usize) {
        self.0[s].fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn a_fast_give_races_a_waiter_taking_the_slots_back() {
    // The holder took the one core on the fast path and gives it back without the lock while
    // a better waiter takes the lent slot back and queues: the give comes first (the waiter
    // finds the core free) or fails (the holder gives it back under the lock, to the waiter).
    // No wait may be lost, and the core is lent again once both are done.
    model(|| {
        let (vcores, t1, t2) = setup(44, 10);
        let holders = Arc::new(Holders::default());
        vcores.acquire(&*t1, SPIN);
        holders.enter(&t1);
        let th = spawn_waiter(&vcores, &holders, t2.clone());
        holders.leave();
        assert!(vcores.release(&*t1));
        th.join().unwrap();
        assert_eq!(vcores.held(), 0, "a core left held");
        // Lent again: a take now is the fast path's, and the table learns of it at a view.
        vcores.acquire(&*t1, SPIN);
        assert!(matches!(
            vcores.view(std::slice::from_ref(&t1))[0],
            Place::Holds { slot: 0, .. }
        ));
        assert!(vcores.release(&*t1));
    });
}

#[test]
fn three_threads_on_two_cores_never_make_three_holders() {
    // Each takes a core, fast or by waiting, holds it for a step and gives it back: whatever
    // the order, never two on one core, nobody left waiting, nothing left held.
    model(|| {
        let (vcores, threads) = setup_two(3, 44);
        let holders = Arc::new(PerCore::default());
        let ths: Vec<_> = threads
            .iter()
            .map(|t| {
                let (vcores, holders, t) = (vcores.clone(), holders.clone(), t.clone());
                loom::thread::spawn(move || {
                    vcores.acquire(&*t, SPIN);
                    let s = holders.enter(&t);
                    holders.leave(s);
                    assert!(vcores.release(&*t));
                })
            })
            .collect();
        for th in ths {
            th.join().unwrap();
        }
        assert_eq!(vcores.held(), 0, "a core left held");
    });
}

#[test]
fn the_slots_lent_again_race_a_take() {
    // A waiter is granted the core at the holder's release; once it runs, the table is idle
    // and lends the core with its new holder. The first holder asks again meanwhile: it finds
    // the core lent and held, or not lent yet, and waits either way; the new holder gives the
    // core back without the lock or under it, and the first one gets it.
    model(|| {
        let (vcores, t1, t2) = setup(44, 44);
        let holders = Arc::new(Holders::default());
        vcores.acquire(&*t1, SPIN);
        holders.enter(&t1);
        let th = spawn_waiter(&vcores, &holders, t2);
        holders.leave();
        assert!(vcores.release(&*t1));
        vcores.acquire(&*t1, SPIN);
        holders.enter(&t1);
        holders.leave();
        assert!(vcores.release(&*t1));
        th.join().unwrap();
        assert_eq!(vcores.held(), 0, "a core left held");
    });
}

#[test]
fn a_fast_step_away_races_a_wakers_claim() {
    // The owner took its core on the fast path and steps away into an object wait without the
    // lock while a waker claims a core for it, then comes back for one itself. The claim finds
    // it home (nothing claimed), or away with its core given back (the owner takes the claim
    // under the lock), never away still holding its core; or it comes after the owner came
    // home. One holder, and no claim outlives the wait.
    model(|| {
        let (vcores, t1, t2) = setup(10, 44);
        let holders = Arc::new(Holders::default());
        vcores.acquire(&*t1, SPIN);
        let waker = {
            let (vcores, t1) = (vcores.clone(), t1.clone());
            loom::thread::spawn(move || vcores.claim(&*t1))
        };
        assert!(vcores.step_away(&*t1));
        let other = spawn_waiter(&vcores, &holders, t2);
        vcores.acquire(&*t1, SPIN);
        holders.enter(&t1);
        holders.leave();
        // Kicked by a claim or not, it leaves; a worse thread may wait for the core.
        assert!(vcores.release(&*t1));
        waker.join().unwrap();
        other.join().unwrap();
        assert_eq!(vcores.held(), 0, "a claim outlived its wait");
        assert!(t1.seat().is_home(), "a claim left on a thread that ran");
    });
}

#[test]
fn a_claim_without_the_lock_races_the_thread_and_a_take_back() {
    // The owner stepped away with the core lent and free. A waker claims it without the lock
    // while the owner, woken by another wake, takes a core itself (or first gives back what
    // the claim took, its wait going on; or only after the waker's claim ended), and a worse
    // thread asks for the core, which takes the lent slot back under the lock. The owner
    // finds the claim settled, never half-made; the slot taken for it is its own, or goes
    // back by its cell or under the lock; one holder at a time, and nothing left held.
    for (goes_on, after) in [(false, false), (true, false), (false, true)] {
        model(move || {
            let (vcores, t1, t2) = setup(10, 44);
            let holders = Arc::new(Holders::default());
            vcores.acquire(&*t1, SPIN);
            assert!(vcores.step_away(&*t1));
            let waker = {
                let (vcores, t1) = (vcores.clone(), t1.clone());
                loom::thread::spawn(move || vcores.claim(&*t1))
            };
            let other = spawn_waiter(&vcores, &holders, t2);
            let waker = if after {
                waker.join().unwrap();
                None
            } else {
                Some(waker)
            };
            if goes_on {
                vcores.unclaim(&*t1);
            }
            vcores.acquire(&*t1, SPIN);
            holders.enter(&t1);
            holders.leave();
            assert!(vcores.release(&*t1));
            if let Some(waker) = waker {
                waker.join().unwrap();
            }
            other.join().unwrap();
            assert_eq!(vcores.held(), 0, "a claim outlived its wait");
            assert!(t1.seat().is_home(), "a claim left on a thread that ran");
        });
    }
}

#[test]
fn a_deferred_claim_wake_is_never_lost() {
    // The owner waits on an object (a flag) after it gave its core back. A waker sets the
    // flag and unparks it while a worse thread holds the core, and a second one wakes it
    // spuriously: a claim made while the owner is parked queues, kicks the holder and keeps
    // the wake back, and the holder's checkpoint hands the core over (the grant wakes the
    // owner), or the owner, woken by the other unpark, gives the claim back on its way to park
    // again (which gives the kept wake); a wake that finds it running gives the token as
    // ever. The owner always wakes (a lost wake leaves it parked for ever, which loom
    // reports) and one thread holds the core.
    use crate::parker::with_parker;
    use loom::sync::atomic::AtomicBool;
    model(|| {
        let (vcores, good, bad) = setup_of(
            44,
            45,
            Config {
                vcore_claim_defer: true,
                ..Config::default()
            },
        );
        let holders = Arc::new(Holders::default());
        let (ready, away) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let owner = {
            let (vcores, good, holders) = (vcores.clone(), good.clone(), holders.clone());
            let (ready, away) = (ready.clone(), away.clone());
            loom::thread::spawn(move || {
                with_parker(|p, _| good.bind(p.clone()));
                let hook = {
                    let (v, g) = (vcores.clone(), Arc::downgrade(&good));
                    Arc::new(move || g.upgrade().is_some_and(|g| v.claim(&*g).is_some()))
                };
                good.set_wake_hook(Some(hook));
                vcores.acquire(&*good, SPIN);
                assert!(vcores.step_away(&*good));
                away.store(true, Ordering::SeqCst);
                // block_on's loop: poll, give a claim back if the wait goes on, park.
                with_parker(|p, _| {
                    // Relaxed, the weakest object: the wake, not the flag, must order the poll.
                    while !ready.load(Ordering::Relaxed) {
                        vcores.unclaim(&*good);
                        p.park(None);
                    }
                });
                vcores.acquire(&*good, SPIN);
                holders.enter(&good);
                holders.leave();
                assert!(vcores.release(&*good));
                good.set_wake_hook(None);
            })
        };
        while !away.load(Ordering::SeqCst) {
            loom::thread::yield_now();
        }
        vcores.acquire(&*bad, SPIN);
        holders.enter(&bad);
        let spurious = {
            let good = good.clone();
            loom::thread::spawn(move || good.unpark())
        };
        ready.store(true, Ordering::Relaxed);
        good.unpark();
        holders.leave();
        // Hands the core over here if the claim kicked it, and comes back after the owner.
        vcores.checkpoint(&*bad, SPIN);
        holders.enter(&bad);
        holders.leave();
        assert!(vcores.release(&*bad));
        owner.join().unwrap();
        spurious.join().unwrap();
        assert_eq!(vcores.held(), 0, "a core left held");
    });
}
