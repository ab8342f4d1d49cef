//! The spin of a wait for a core, with real threads and thread records: it follows the
//! waiting thread's own gate (`Occupant::core_gate`), so a thread whose core waits outlast
//! their spin stops spinning. No timing asserts: the holder keeps its core 2 ms, a hundred
//! times the spin.

use super::vcore_runtime::{rig, thread, until};
use crate::policy::Spin;
use crate::spin_gate::SpinGate;
use std::sync::mpsc::channel;

#[test]
fn a_thread_whose_core_waits_outlast_its_spin_parks_without_spinning() {
    let r = rig(1, 2000, 5_000);
    let (holder, waiter) = (thread(1, 44, 1, false), thread(2, 44, 1, false));
    assert!(r.v.acquire(&*holder, Spin::without_runtime()).is_none());
    let rounds = SpinGate::MISSES_TO_CLOSE + 3;
    let (queued_tx, queued_rx) = channel::<()>();
    let (go_tx, go_rx) = channel::<()>();
    let (done_tx, done_rx) = channel::<()>();
    let w = {
        let v = r.v.clone();
        std::thread::spawn(move || {
            for _ in 0..rounds {
                go_rx.recv().expect("the holder");
                queued_tx.send(()).expect("the holder");
                // Queued behind the holder, who keeps the core 2 ms: far past the spin.
                assert!(v.acquire(&*waiter, Spin::without_runtime()).is_none());
                assert!(v.release(&*waiter));
                done_tx.send(()).expect("the holder");
            }
        })
    };
    for round in 1..=rounds {
        go_tx.send(()).expect("the waiter");
        queued_rx.recv().expect("the waiter");
        until(|| r.stats.snapshot().vcore_waits, u64::from(round));
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(r.v.release(&*holder));
        // After the waiter's release: the holder's own acquire never waits.
        done_rx.recv().expect("the waiter");
        assert!(r.v.acquire(&*holder, Spin::without_runtime()).is_none());
    }
    w.join().expect("the waiter ran");
    let s = r.stats.snapshot();
    assert_eq!(
        (s.spins_missed, s.spins_skipped, s.spins_caught),
        (
            u64::from(SpinGate::MISSES_TO_CLOSE),
            u64::from(rounds - SpinGate::MISSES_TO_CLOSE),
            0
        ),
        "the first waits spin and miss, the rest park at once"
    );
}
