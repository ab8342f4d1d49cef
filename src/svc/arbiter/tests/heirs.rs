//! The heirs (`table/heirs.rs`, `heir.rs`): a lock waiter woken ahead of its hand-off, without
//! its wait ending or its rank changing, only where its party asked for it.

use super::*;

/// The heir (heir.rs): an unlock that hands the mutex to its best waiter also wakes the best
/// of the waiters who now wait for the new owner, marked heir, without ending its wait; the
/// others stay asleep. The order stays Horizon's: a better waiter that comes later takes the
/// next hand-off, and the heir is woken again for the one after.
#[test]
fn an_unlock_wakes_the_next_owners_heir_without_ending_its_wait() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44), (4, 44), (5, 30)]);
    let m = word(1 | WAITERS);
    let keys: Vec<_> = [2, 3, 4]
        .map(|id| h.lock(id, 1, &m).unwrap().expect("waits"))
        .into();
    let counts: Vec<_> = keys
        .iter()
        .map(|k| {
            let (c, w) = counting();
            assert_eq!(h.t.poll(k, &w), None);
            c
        })
        .collect();
    h.unlock(1, &m);
    assert_eq!(get(&m), 2 | WAITERS, "handed to the first");
    std::mem::take(&mut h.fx).wake.wake();
    let woken: Vec<_> = counts.iter().map(|c| wakes(c)).collect();
    assert_eq!(woken, [1, 1, 0], "the new owner and its heir");
    assert_eq!(keys[0].ended(), Some(Ok(())));
    assert!(keys[1].mailbox().is_heir() && !keys[2].mailbox().is_heir());
    assert_eq!(keys[1].ended(), None, "the heir still waits");
    // A better thread comes to the mutex before the new owner unlocks: it is handed it.
    let e = h.lock(5, 2, &m).unwrap().expect("waits");
    h.unlock(2, &m);
    assert_eq!((get(&m), h.poll(&e)), (5 | WAITERS, Some(Ok(()))));
    std::mem::take(&mut h.fx).wake.wake();
    let woken: Vec<_> = counts.iter().map(|c| wakes(c)).collect();
    assert_eq!(woken, [1, 2, 0], "the heir woken again, for the next owner");
    h.unlock(5, &m);
    assert_eq!((get(&m), h.poll(&keys[1])), (3 | WAITERS, Some(Ok(()))));
    h.unlock(3, &m);
    assert_eq!((get(&m), h.poll(&keys[2])), (4, Some(Ok(()))));
}

/// The heir at a signal: a condition-variable waiter that the signal queues first on a held
/// mutex is woken then, marked heir, still waiting (its OS wake runs while the signaller
/// still holds the mutex); one queued behind it is not woken.
#[test]
fn a_signal_wakes_the_waiter_it_queues_first_on_a_held_mutex() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    let (m, key) = (word(1), word(0));
    let a = h.wait_condvar(1, &m, &key, false).unwrap();
    m.store(3, Ordering::SeqCst);
    let c = h.wait_condvar(3, &m, &key, false).unwrap();
    let (ca, wa) = counting();
    let (cc, wc) = counting();
    assert_eq!((h.t.poll(&a, &wa), h.t.poll(&c, &wc)), (None, None));
    // B holds the mutex and wakes both.
    m.store(2, Ordering::SeqCst);
    h.signal_condvar(&key, -1);
    assert_eq!(get(&m), 2 | WAITERS);
    std::mem::take(&mut h.fx).wake.wake();
    assert_eq!(
        (wakes(&ca), wakes(&cc)),
        (1, 0),
        "the first queued is the heir"
    );
    assert!(a.mailbox().is_heir() && !c.mailbox().is_heir());
    assert_eq!(a.ended(), None, "the heir still waits for the unlock");
    h.unlock(2, &m);
    assert_eq!((get(&m), h.poll(&a)), (1 | WAITERS, Some(Ok(()))));
    h.unlock(1, &m);
    assert_eq!((get(&m), h.poll(&c)), (3, Some(Ok(()))));
}

/// A waiter whose party did not ask for an early wake (its runtime's machine has no room for
/// it, or its role does not spin) is woken by its hand-off only: the unlock before it wakes
/// nobody else, and marks no heir.
#[test]
fn a_heir_that_did_not_ask_is_woken_by_its_hand_off_only() {
    let mut h = Harness::new(&[(1, 44), (2, 44), (3, 44)]);
    h.late.push(3);
    let m = word(1 | WAITERS);
    let keys: Vec<_> = [2, 3]
        .map(|id| h.lock(id, 1, &m).unwrap().expect("waits"))
        .into();
    let counts: Vec<_> = keys
        .iter()
        .map(|k| {
            let (c, w) = counting();
            assert_eq!(h.t.poll(k, &w), None);
            c
        })
        .collect();
    h.unlock(1, &m);
    std::mem::take(&mut h.fx).wake.wake();
    let woken: Vec<_> = counts.iter().map(|c| wakes(c)).collect();
    assert_eq!(woken, [1, 0], "the new owner only");
    assert!(!keys[1].mailbox().is_heir());
    h.unlock(2, &m);
    assert_eq!((get(&m), h.poll(&keys[1])), (3, Some(Ok(()))));
}
