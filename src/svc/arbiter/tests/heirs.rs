//! The heirs (`table/heirs.rs`, `heir.rs`): a lock waiter woken ahead of its hand-off, without
//! its wait ending or its rank changing, only where its party asked for it.

use super::*;
use crate::svc::arbiter::{locking_caller, waiting_caller};

/// Threads `ids` queue, in that order, on the mutex word `m` that thread 1 holds, each with a
/// waker that counts; then thread 1 unlocks and its wakes are given. The keys and the counts.
fn queued_then_unlocked(h: &mut Harness, ids: &[u32], m: &Word) -> (Vec<WaitKey>, Vec<Arc<Count>>) {
    let keys: Vec<_> = ids
        .iter()
        .map(|&id| h.lock(id, 1, m).unwrap().expect("waits"))
        .collect();
    let counts: Vec<_> = keys
        .iter()
        .map(|k| {
            let (c, w) = counting();
            assert_eq!(h.t.poll(k, &w), None);
            c
        })
        .collect();
    h.unlock(1, m);
    std::mem::take(&mut h.fx).wake.wake();
    (keys, counts)
}

/// Each count's wakes so far.
fn all_wakes(counts: &[Arc<Count>]) -> Vec<u32> {
    counts.iter().map(|c| wakes(c)).collect()
}

/// The heir (heir.rs): an unlock that hands the mutex to its best waiter also wakes the best
/// of the waiters who now wait for the new owner, marked heir, without ending its wait; the
/// others stay asleep. The order stays Horizon's: a better waiter that comes later takes the
/// next hand-off, and the heir is woken again for the one after.
#[test]
fn an_unlock_wakes_the_next_owners_heir_without_ending_its_wait() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44), (4, 44), (5, 30)]);
    let m = word(1 | WAITERS);
    let (keys, counts) = queued_then_unlocked(&mut h, &[2, 3, 4], &m);
    assert_eq!(get(&m), 2 | WAITERS, "handed to the first");
    let woken = all_wakes(&counts);
    assert_eq!(woken, [1, 1, 0], "the new owner and its heir");
    assert_eq!(keys[0].ended(), Some(Ok(())));
    assert!(keys[1].mailbox().is_heir() && !keys[2].mailbox().is_heir());
    assert_eq!(keys[1].ended(), None, "the heir still waits");
    // A better thread comes to the mutex before the new owner unlocks: it is handed it.
    let e = h.lock(5, 2, &m).unwrap().expect("waits");
    h.unlock(2, &m);
    assert_eq!((get(&m), h.poll(&e)), (5 | WAITERS, Some(Ok(()))));
    std::mem::take(&mut h.fx).wake.wake();
    assert_eq!(
        all_wakes(&counts),
        [1, 2, 0],
        "the heir woken again, for the next owner"
    );
    h.unlock(5, &m);
    assert_eq!((get(&m), h.poll(&keys[1])), (3 | WAITERS, Some(Ok(()))));
    h.unlock(3, &m);
    assert_eq!((get(&m), h.poll(&keys[2])), (4, Some(Ok(()))));
}

/// The heir at a signal: the best condition-variable waiter that the signal queues on a held
/// mutex is woken then, marked heir, still waiting (its OS wake runs while the signaller
/// still holds the mutex); one queued behind it is not woken, whichever wait was made first.
#[test]
fn a_signal_wakes_the_best_waiter_it_queues_on_a_held_mutex() {
    // (the wait made first, the second): thread 1 is the better or the earlier each time.
    for (first, second) in [((1, 44), (3, 44)), ((3, 50), (1, 44))] {
        let mut h = Harness::new(&[first, (2, 44), second]);
        let (m, key) = (word(first.0), word(0));
        let a = h.wait_condvar(first.0, &m, &key, false).unwrap();
        m.store(second.0, Ordering::SeqCst);
        let b = h.wait_condvar(second.0, &m, &key, false).unwrap();
        let (ca, wa) = counting();
        let (cb, wb) = counting();
        assert_eq!((h.t.poll(&a, &wa), h.t.poll(&b, &wb)), (None, None));
        // Thread 2 holds the mutex and wakes both.
        m.store(2, Ordering::SeqCst);
        h.signal_condvar(&key, -1);
        assert_eq!(get(&m), 2 | WAITERS);
        std::mem::take(&mut h.fx).wake.wake();
        let (best, other, woken) = if first.0 == 1 {
            (a, b, (wakes(&ca), wakes(&cb)))
        } else {
            (b, a, (wakes(&cb), wakes(&ca)))
        };
        assert_eq!(
            woken,
            (1, 0),
            "thread 1 is the heir: {first:?} then {second:?}"
        );
        assert!(best.mailbox().is_heir() && !other.mailbox().is_heir());
        assert_eq!(best.ended(), None, "the heir still waits for the unlock");
        h.unlock(2, &m);
        assert_eq!((get(&m), h.poll(&best)), (1 | WAITERS, Some(Ok(()))));
        h.unlock(1, &m);
        assert_eq!((get(&m), h.poll(&other)), (3, Some(Ok(()))));
    }
}

/// A waiter whose party did not ask for an early wake (its runtime's machine has no room for
/// it, or its role does not spin) is woken by its hand-off only: the unlock before it wakes
/// nobody else, and marks no heir.
#[test]
fn a_heir_that_did_not_ask_is_woken_by_its_hand_off_only() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    h.late.push(3);
    let m = word(1 | WAITERS);
    let (keys, counts) = queued_then_unlocked(&mut h, &[2, 3], &m);
    let woken = all_wakes(&counts);
    assert_eq!(woken, [1, 0], "the new owner only");
    assert!(!keys[1].mailbox().is_heir());
    h.unlock(2, &m);
    assert_eq!((get(&m), h.poll(&keys[1])), (3, Some(Ok(()))));
}

/// A guest thread's lock waits ask for an early wake by its runtime's policy: from 3 logical
/// processors, with its role's spin; never with 2, nor for a host thread, nor for an address
/// wait.
#[test]
fn a_callers_early_wake_is_its_runtimes_policy() {
    use crate::{Calibration, Config, Runtime};
    let early_on = |processors: usize, spin_us: u64| {
        let rt = Runtime::builder()
            .config(Config {
                spin_us,
                spin_other_us: Some(spin_us),
                ..Config::default()
            })
            .calibration(Calibration::default())
            .logical_processors(Some(processors))
            .build()
            .expect("runtime");
        let guest = rt.thread().spawn(|| {
            let lock = locking_caller().expect("running").early;
            assert!(!waiting_caller().expect("running").early, "an address wait");
            lock
        });
        let early = guest.expect("spawned").join().expect("ran");
        rt.shutdown();
        early
    };
    assert!(early_on(16, 20));
    assert!(early_on(3, 20));
    assert!(!early_on(2, 20), "no room for the spin");
    assert!(!early_on(16, 0), "a role that does not spin");
    assert!(
        !locking_caller().expect("no runtime").early,
        "a host thread"
    );
}

/// Each heir's wake counts once in its runtime's stats, by its own thread: late when its
/// hand-off is there at its first look (the wait key's take), caught when its spin sees the
/// hand-off come, missed when the spin gives up first. A take with no heir's mark counts none.
#[test]
fn the_heirs_own_thread_counts_its_wake_once() {
    use crate::svc::arbiter::{heir, mailbox::Mailbox};
    use crate::{thread::Role, Calibration, Config, Runtime};
    // A serial thread spins for a second, a worker not at all.
    let rt = Runtime::builder()
        .config(Config {
            spin_us: 1_000_000,
            spin_other_us: Some(0),
            ..Config::default()
        })
        .calibration(Calibration::default())
        .logical_processors(Some(16))
        .build()
        .expect("runtime");
    // A newer runtime, so that `rt` is no host thread's default (the newest running): the
    // host threads of tests running beside this one count their heirs' wakes there.
    let newer = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .expect("runtime");
    let serial = rt.thread().role(Role::Serial).spawn(|| {
        let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44), (4, 44)]);
        let m = word(1 | WAITERS);
        let (keys, _) = queued_then_unlocked(&mut h, &[2, 3, 4], &m);
        assert_eq!(keys[0].ended(), Some(Ok(())), "the owner: no heir");
        // Thread 3, the heir, is handed the mutex before it looks: late.
        h.unlock(2, &m);
        assert_eq!(keys[1].ended(), Some(Ok(())));
        // Thread 4, the heir now, spins while thread 3 unlocks: caught.
        assert!(keys[2].mailbox().is_heir());
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                h.unlock(3, &m);
            });
            assert_eq!(heir::spin(keys[2].mailbox()), Some(Ok(())));
        });
    });
    serial.expect("spawned").join().expect("ran");
    // A heir whose spin is over at once: missed.
    let worker = rt.thread().role(Role::Worker).spawn(|| {
        let mail = Mailbox::default();
        mail.mark_heir();
        assert_eq!(heir::spin(&mail), None);
    });
    worker.expect("spawned").join().expect("ran");
    let s = rt.stats();
    rt.shutdown();
    newer.shutdown();
    assert_eq!((s.heir_caught, s.heir_missed, s.heir_late), (1, 1, 1));
}
