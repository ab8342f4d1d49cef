//! What svcWaitForAddress and svcSignalToAddress do to a guest word and to its waiters, case
//! by case against the kernel's rules written out here independently (mesosphère's, where
//! Ryujinx differs): every arbitration type at the signed edges, and every signal type for
//! 0..=3 waiters and counts -1..=3, matching the word or not. An off-by-one in any
//! comparison or in any +1/-1 changes some row. And svcSetThreadPriority re-ranks an address
//! wait, set during the wait or between two waits.
//!
//! Waiters are registered deterministically: each waits with DecrementAndWaitIfLessThan,
//! which decrements the word in the same arbiter operation that queues it, so the word
//! counts the queued. Who a signal woke is counted by draining the rest afterwards.

mod common;
mod until;

use common::rt;
use hos::svc::{self, ArbitrationType, SignalType};
use hos::ResultCode;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use until::until;

const EDGES: [i32; 7] = [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX - 1, i32::MAX];

/// The kernel's rule: whether a wait of `kind` for `value` waits on a word holding `old`,
/// and the word after the check.
fn oracle_wait(kind: ArbitrationType, old: i32, value: i32) -> (bool, i32) {
    match kind {
        ArbitrationType::WaitIfLessThan => (old < value, old),
        ArbitrationType::DecrementAndWaitIfLessThan if old < value => (true, old.wrapping_sub(1)),
        ArbitrationType::DecrementAndWaitIfLessThan => (false, old),
        ArbitrationType::WaitIfEqual => (old == value, old),
    }
}

#[test]
fn every_arbitration_type_at_the_signed_edges() {
    let kinds = [
        ArbitrationType::WaitIfLessThan,
        ArbitrationType::DecrementAndWaitIfLessThan,
        ArbitrationType::WaitIfEqual,
    ];
    for kind in kinds {
        for old in EDGES {
            for value in EDGES {
                let word = AtomicU32::new(old as u32);
                let (waits, after) = oracle_wait(kind, old, value);
                let want = if waits {
                    ResultCode::TIMED_OUT
                } else {
                    ResultCode::INVALID_STATE
                };
                let got = svc::wait_for_address(&word, kind, value, 0);
                assert_eq!(got, Err(want), "{kind:?} word {old} value {value}");
                assert_eq!(
                    word.load(SeqCst) as i32,
                    after,
                    "{kind:?} word {old} value {value}"
                );
            }
        }
    }
}

#[test]
fn wait_if_equal_64_compares_all_64_bits() {
    for (old, value) in [
        (0i64, 0i64),
        (1 << 32, 0),
        (-1, -1),
        (-1, i64::from(u32::MAX)),
        (i64::MIN, i64::MIN),
    ] {
        let word = AtomicU64::new(old as u64);
        let want = if old == value {
            ResultCode::TIMED_OUT
        } else {
            ResultCode::INVALID_STATE
        };
        assert_eq!(
            svc::wait_for_address64(&word, value, 0),
            Err(want),
            "{old:#x} {value:#x}"
        );
    }
}

#[test]
fn raw_types_outside_the_enums_are_invalid_enum_value() {
    for v in 0..=2 {
        assert_eq!(ArbitrationType::try_from(v).map(|t| t as u32), Ok(v));
        assert_eq!(SignalType::try_from(v).map(|t| t as u32), Ok(v));
    }
    for v in [3, 4, 0x8000_0000, u32::MAX] {
        assert_eq!(
            ArbitrationType::try_from(v),
            Err(ResultCode::INVALID_ENUM_VALUE),
            "{v}"
        );
        assert_eq!(
            SignalType::try_from(v),
            Err(ResultCode::INVALID_ENUM_VALUE),
            "{v}"
        );
    }
}

/// The kernel's rule for a signal of `kind` with `count` on a word holding `old`, `value`
/// given, `w` threads waiting: (result, word after, threads woken).
fn oracle_signal(
    kind: SignalType,
    old: i32,
    value: i32,
    count: i32,
    w: usize,
) -> (Result<(), ResultCode>, i32, usize) {
    let woken = if count <= 0 { w } else { w.min(count as usize) };
    let new = match kind {
        SignalType::Signal => return (Ok(()), old, woken),
        SignalType::SignalAndIncrementIfEqual => value.wrapping_add(1),
        // Mesosphère; Ryujinx gives value - 2 for count <= 0 with waiters, and value for
        // w == count.
        SignalType::SignalAndModifyByWaitingCountIfEqual => match (count, w) {
            (_, 0) => value.wrapping_add(1),
            (c, _) if c <= 0 => value.wrapping_sub(1),
            (c, w) if w <= c as usize => value.wrapping_sub(1),
            _ => value,
        },
    };
    if old != value {
        return (Err(ResultCode::INVALID_STATE), old, 0);
    }
    (Ok(()), new, woken)
}

/// Queues `n` guest threads on `word` (left holding -n) and returns them.
fn queue(word: &Arc<AtomicU32>, n: usize) -> Vec<hos::thread::JoinHandle<Result<(), ResultCode>>> {
    word.store(0, SeqCst);
    let threads = (0..n)
        .map(|i| {
            let word = word.clone();
            rt().thread()
                .name(format!("AddressWaiter{i}"))
                .spawn(move || {
                    svc::wait_for_address(&word, ArbitrationType::DecrementAndWaitIfLessThan, 1, -1)
                })
                .expect("spawn")
        })
        .collect();
    until("the waiters queued", || {
        word.load(SeqCst) as i32 == -(n as i32)
    });
    threads
}

/// The most threads a case queues.
const MOST: usize = 3;

/// Wakes the threads still queued on `word`, one a signal, and counts them: a probe that
/// finds nobody writes value + 1.
fn drain(word: &AtomicU32) -> usize {
    let kind = SignalType::SignalAndModifyByWaitingCountIfEqual;
    for left in 0..=MOST {
        word.store(100, SeqCst);
        svc::signal_to_address(word, kind, 100, 1).expect("the probe matches");
        if word.load(SeqCst) == 101 {
            return left;
        }
    }
    panic!(
        "a probe never found the queue empty (word {})",
        word.load(SeqCst)
    );
}

#[test]
fn every_signal_type_for_every_count_and_waiter_number() {
    let kinds = [
        SignalType::Signal,
        SignalType::SignalAndIncrementIfEqual,
        SignalType::SignalAndModifyByWaitingCountIfEqual,
    ];
    let word = Arc::new(AtomicU32::new(0));
    for kind in kinds {
        for w in 0..=MOST {
            for count in -1..=3 {
                for (old, value) in [(7, 7), (7, 8), (i32::MAX, i32::MAX), (i32::MIN, i32::MIN)] {
                    let case =
                        format!("{kind:?} count {count}, {w} waiting, word {old} value {value}");
                    let threads = queue(&word, w);
                    word.store(old as u32, SeqCst);
                    let got = svc::signal_to_address(&word, kind, value, count);
                    let after = word.load(SeqCst) as i32;
                    let left = drain(&word);
                    let (want, want_after, want_woken) = oracle_signal(kind, old, value, count, w);
                    assert_eq!(
                        (got, after, w - left),
                        (want, want_after, want_woken),
                        "{case}"
                    );
                    for t in threads {
                        assert_eq!(t.join().expect("no panic"), Ok(()), "{case}");
                    }
                }
            }
        }
    }
}

/// A guest thread of [`waiter`], and whether its last wait has returned.
struct Waiter {
    t: hos::thread::JoinHandle<Result<(), ResultCode>>,
    done: Arc<AtomicBool>,
}

/// Where a [`waiter`] waits a second time: the word, and the gate it passes first (it sets
/// the flag once it waits at the gate).
type Then = (Arc<AtomicU32>, Arc<hos::os::Event>, Arc<AtomicBool>);

/// Queues a guest thread of priority 44 named `name` on `word` behind those already there
/// (the word counts them, as in [`queue`]) and returns it; once woken, it waits on `then`'s
/// word if given, behind whoever is queued there when its gate opens.
fn waiter(name: &str, word: &Arc<AtomicU32>, then: Option<Then>) -> Waiter {
    let before = word.load(SeqCst) as i32;
    let (w, done) = (word.clone(), Arc::new(AtomicBool::new(false)));
    let d = done.clone();
    let waits = move || {
        svc::wait_for_address(&w, ArbitrationType::DecrementAndWaitIfLessThan, 1, -1)?;
        let Some((next, gate, at_gate)) = then else {
            return Ok(());
        };
        at_gate.store(true, SeqCst);
        gate.wait().expect("the gate opens");
        svc::wait_for_address(&next, ArbitrationType::DecrementAndWaitIfLessThan, 1, -1)
    };
    let t = rt()
        .thread()
        .name(name)
        .priority(44)
        .spawn(move || {
            let r = waits();
            d.store(true, SeqCst);
            r
        })
        .expect("spawn");
    until(&format!("{name} queued"), || {
        word.load(SeqCst) as i32 == before - 1
    });
    Waiter { t, done }
}

/// Signals one waiter of `word`: which of `threads` ended by it (the others still wait).
fn woken_by_one_signal(word: &AtomicU32, threads: &[&Waiter]) -> usize {
    svc::signal_to_address(word, SignalType::Signal, 0, 1).expect("signalled");
    until("a woken waiter", || {
        threads.iter().any(|t| t.done.load(SeqCst))
    });
    let done: Vec<usize> = (0..threads.len())
        .filter(|&i| threads[i].done.load(SeqCst))
        .collect();
    let [one] = done[..] else {
        panic!("one signal ended {done:?}");
    };
    one
}

/// svcSetThreadPriority re-ranks a thread's address wait, whether it is set while the thread
/// waits or between two of its waits (while the arbiter keeps the thread's entry idle).
#[test]
fn a_priority_set_during_a_wait_or_between_waits_ranks_the_wait() {
    let word = Arc::new(AtomicU32::new(0));
    let a = waiter("RankA", &word, None);
    let b = waiter("RankB", &word, None);
    b.t.thread().set_priority(20).expect("a priority");
    assert_eq!(
        woken_by_one_signal(&word, &[&a, &b]),
        1,
        "B, raised while it waited"
    );
    assert_eq!(woken_by_one_signal(&word, &[&a]), 0);
    assert_eq!((a.t.join().unwrap(), b.t.join().unwrap()), (Ok(()), Ok(())));

    let (first, second) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let gate = Arc::new(hos::os::Event::new(hos::os::ClearMode::Manual));
    let at_gate = Arc::new(AtomicBool::new(false));
    let then = (second.clone(), gate.clone(), at_gate.clone());
    let b = waiter("RankB2", &first, Some(then));
    svc::signal_to_address(&first, SignalType::Signal, 0, 1).expect("signalled");
    until("B at the gate", || at_gate.load(SeqCst));
    b.t.thread().set_priority(20).expect("a priority");
    let a = waiter("RankA2", &second, None);
    gate.signal();
    until("B queued behind A", || second.load(SeqCst) as i32 == -2);
    assert_eq!(
        woken_by_one_signal(&second, &[&a, &b]),
        1,
        "B, raised between its waits"
    );
    assert_eq!(woken_by_one_signal(&second, &[&a]), 0);
    assert_eq!((a.t.join().unwrap(), b.t.join().unwrap()), (Ok(()), Ok(())));
}
