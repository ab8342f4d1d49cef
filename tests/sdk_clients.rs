//! The SDK's own clients (libnx and stratosphère, ported in `tests/sdk/`) on hos's svcs,
//! stressed from many guest threads at mixed priorities: mutual exclusion, no lost wakeup,
//! counts conserved, barrier generations kept, timed waits that time out. Bounded: each
//! stress does a fixed amount of work, and a hang fails after a generous limit.

mod common;
mod sdk;
mod until;

use common::rt;
use hos::svc::{self, ArbitrationType};
use hos::ResultCode;
use sdk::libnx::{Barrier, CondVar, Mutex, RwLock, Semaphore};
use sdk::stratosphere::{
    InternalConditionVariable, InternalCriticalSection, InternalLightEvent, Status,
};
use sdk::workload::{LibnxQueue, Queue};
use sdk::{join_within, PRIORITIES};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};
use until::until;

const LIMIT: Duration = Duration::from_secs(60);

/// Spawns `n` guest threads at the mixed priorities, each running `f(i)`.
fn spawn<T: Send + 'static>(
    n: usize,
    name: &str,
    f: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<hos::thread::JoinHandle<T>> {
    let f = Arc::new(f);
    (0..n)
        .map(|i| {
            let f = f.clone();
            rt().thread()
                .name(format!("{name}{i}"))
                .priority(PRIORITIES[i % PRIORITIES.len()])
                .spawn(move || f(i))
                .expect("spawn")
        })
        .collect()
}

/// A counter only a lock may touch: a load then a store, so two holders lose an increment,
/// and an occupancy count that must never pass one.
#[derive(Default)]
struct Guarded {
    value: AtomicU64,
    inside: AtomicUsize,
}

impl Guarded {
    fn bump(&self) {
        assert_eq!(self.inside.fetch_add(1, SeqCst), 0, "two holders inside");
        let v = self.value.load(Relaxed);
        std::hint::spin_loop();
        self.value.store(v + 1, Relaxed);
        self.inside.fetch_sub(1, SeqCst);
    }
}

#[test]
fn libnx_mutex_excludes_across_priorities() {
    const THREADS: usize = 8;
    const ROUNDS: u64 = 1_000;
    let (m, g) = (Arc::new(Mutex::new()), Arc::new(Guarded::default()));
    let (m2, g2) = (m.clone(), g.clone());
    join_within(
        spawn(THREADS, "MutexWorker", move |i| {
            for r in 0..ROUNDS {
                if (r + i as u64) % 7 == 0 && m2.try_lock() {
                    assert!(m2.is_locked_by_current_thread());
                } else {
                    m2.lock();
                }
                g2.bump();
                m2.unlock();
            }
        }),
        LIMIT,
    );
    assert_eq!(g.value.load(Relaxed), THREADS as u64 * ROUNDS);
    assert_eq!(m.0.load(Relaxed), 0, "free, and no waiters bit left behind");
}

/// Queues at one priority, where ArbitrateLock's callers wait outside a queue until it drains
/// (the arbiter's table/drain.rs): holders that sleep with the mutex now and then make the
/// others queue behind them and the later ones wait outside. Still one holder at a time, no
/// increment lost, every waiter served, and the word free with no waiters bit at the end.
#[test]
fn libnx_mutex_excludes_while_queues_drain_at_one_priority() {
    const THREADS: usize = 6;
    const ROUNDS: u64 = 400;
    let (m, g) = (Arc::new(Mutex::new()), Arc::new(Guarded::default()));
    let (m2, g2) = (m.clone(), g.clone());
    let workers = (0..THREADS)
        .map(|i| {
            let (m, g) = (m2.clone(), g2.clone());
            rt().thread()
                .name(format!("DrainWorker{i}"))
                .priority(44)
                .spawn(move || {
                    for r in 0..ROUNDS {
                        m.lock();
                        g.bump();
                        if (r + i as u64) % 40 == 0 {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        m.unlock();
                    }
                })
                .expect("spawn")
        })
        .collect();
    join_within(workers, LIMIT);
    assert_eq!(g.value.load(Relaxed), THREADS as u64 * ROUNDS);
    assert_eq!(m.0.load(Relaxed), 0, "free, and no waiters bit left behind");
}

#[test]
fn libnx_condvar_loses_no_wakeup_between_producers_and_consumers() {
    const PAIRS: usize = 4;
    const ITEMS: u64 = 2_000;
    let q = Arc::new(LibnxQueue::with_capacity(2));
    let q2 = q.clone();
    let sums = join_within(
        spawn(2 * PAIRS, "QueueWorker", move |i| {
            if i % 2 == 0 {
                for v in 1..=ITEMS {
                    q2.send(v);
                }
                0
            } else {
                (0..ITEMS).map(|_| q2.receive()).sum::<u64>()
            }
        }),
        LIMIT,
    );
    let want = PAIRS as u64 * ITEMS * (ITEMS + 1) / 2;
    assert_eq!(sums.iter().sum::<u64>(), want, "every item received once");
    assert_eq!(q.len(), 0);
}

#[test]
fn libnx_rwlock_keeps_writers_alone_and_readers_together() {
    const THREADS: usize = 8;
    const ROUNDS: u64 = 300;
    let lock = Arc::new(RwLock::new());
    let (readers, writers, written) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let (l, rd, wr, wn) = (
        lock.clone(),
        readers.clone(),
        writers.clone(),
        written.clone(),
    );
    join_within(
        spawn(THREADS, "RwWorker", move |i| {
            for r in 0..ROUNDS {
                if (r + i as u64) % 4 == 0 {
                    l.write_lock();
                    assert_eq!(wr.fetch_add(1, SeqCst), 0, "two writers");
                    assert_eq!(rd.load(SeqCst), 0, "a reader beside a writer");
                    // A read inside its own write section, as libnx allows.
                    l.read_lock();
                    l.read_unlock();
                    wn.store(wn.load(Relaxed) + 1, Relaxed);
                    wr.fetch_sub(1, SeqCst);
                    l.write_unlock();
                } else {
                    l.read_lock();
                    rd.fetch_add(1, SeqCst);
                    assert_eq!(wr.load(SeqCst), 0, "a writer beside a reader");
                    rd.fetch_sub(1, SeqCst);
                    l.read_unlock();
                }
            }
        }),
        LIMIT,
    );
    assert_eq!(written.load(Relaxed), THREADS as u64 * ROUNDS / 4);
    let t = rt().thread().spawn(move || {
        let free = lock.try_write_lock();
        lock.write_unlock();
        free && lock.try_read_lock()
    });
    assert_eq!(
        join_within(vec![t.unwrap()], LIMIT),
        [true],
        "nothing left held"
    );
}

#[test]
fn libnx_barrier_keeps_its_generations() {
    const THREADS: usize = 6;
    const GENERATIONS: usize = 200;
    let b = Arc::new(Barrier::new(THREADS as u64));
    let arrived: Arc<Vec<AtomicUsize>> =
        Arc::new((0..GENERATIONS).map(|_| AtomicUsize::new(0)).collect());
    let (b2, a2) = (b.clone(), arrived.clone());
    join_within(
        spawn(THREADS, "BarrierWorker", move |_| {
            for gen in 0..GENERATIONS {
                a2[gen].fetch_add(1, SeqCst);
                b2.wait();
                assert_eq!(a2[gen].load(SeqCst), THREADS, "left generation {gen} early");
                if gen + 1 < GENERATIONS {
                    assert!(
                        a2[gen + 1].load(SeqCst) < THREADS,
                        "generation {} ran ahead",
                        gen + 1
                    );
                }
            }
        }),
        LIMIT,
    );
}

#[test]
fn libnx_semaphore_conserves_its_count() {
    const PAIRS: usize = 4;
    const UNITS: usize = 1_000;
    let s = Arc::new(Semaphore::new(1));
    let s2 = s.clone();
    join_within(
        spawn(2 * PAIRS, "SemaphoreWorker", move |i| {
            for _ in 0..UNITS {
                if i % 2 == 0 {
                    s2.signal();
                } else {
                    s2.wait();
                }
            }
        }),
        LIMIT,
    );
    assert!(s.try_wait(), "the starting unit is left");
    assert!(!s.try_wait(), "and nothing else");
}

#[test]
fn stratosphere_critical_section_and_condvar_hand_over_a_counter() {
    const THREADS: usize = 6;
    const TURNS: u64 = 300;
    let cs = Arc::new(InternalCriticalSection::default());
    let cv = Arc::new(InternalConditionVariable::default());
    let turn = Arc::new(AtomicU64::new(0));
    let (cs2, cv2, t2) = (cs.clone(), cv.clone(), turn.clone());
    // Thread i runs the turns t with t % THREADS == i, in order: each waits for its turn
    // and broadcasts when it ends one.
    join_within(
        spawn(THREADS, "TurnWorker", move |i| {
            for k in 0..TURNS {
                let mine = k * THREADS as u64 + i as u64;
                cs2.enter();
                while t2.load(Relaxed) != mine {
                    if k % 2 == 0 {
                        cv2.wait(&cs2);
                    } else {
                        let far = Instant::now() + Duration::from_secs(30);
                        assert_eq!(cv2.timed_wait(&cs2, far), Status::Success);
                    }
                    assert!(cs2.is_locked_by_current_thread());
                }
                t2.store(mine + 1, Relaxed);
                cv2.broadcast();
                cs2.leave();
            }
        }),
        LIMIT,
    );
    assert_eq!(turn.load(Relaxed), THREADS as u64 * TURNS);
    assert!(cs.try_enter(), "left free");
}

#[test]
fn stratosphere_auto_clear_light_event_lets_one_waiter_through_a_signal() {
    const WAITERS: usize = 8;
    let ev = Arc::new(InternalLightEvent::new(false));
    let passed = Arc::new(AtomicUsize::new(0));
    let (e2, p2) = (ev.clone(), passed.clone());
    let waiters = spawn(WAITERS, "LightEventWaiter", move |_| {
        e2.wait_with_auto_clear();
        p2.fetch_add(1, SeqCst);
    });
    for i in 0..WAITERS {
        ev.signal_with_auto_clear();
        until("a signalled waiter passes", || passed.load(SeqCst) > i);
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(passed.load(SeqCst), i + 1, "one signal let two through");
    }
    join_within(waiters, LIMIT);
    assert!(!ev.try_wait_with_auto_clear(), "every signal was consumed");
}

#[test]
fn stratosphere_manual_clear_light_event_lets_every_waiter_through() {
    const WAITERS: usize = 8;
    const ROUNDS: usize = 50;
    for _ in 0..ROUNDS {
        let ev = Arc::new(InternalLightEvent::new(false));
        let e2 = ev.clone();
        let waiters = spawn(WAITERS, "ManualWaiter", move |_| {
            e2.wait_with_manual_clear();
        });
        ev.signal_with_manual_clear();
        join_within(waiters, LIMIT);
        assert!(ev.try_wait_with_manual_clear(), "stays signalled");
        ev.clear();
        assert!(!ev.try_wait_with_manual_clear());
    }
}

#[test]
fn stratosphere_light_event_signals_race_waits_without_loss() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 2_000;
    // Each waiter has its own auto-clear event and its own signaller; the pair ping-pongs.
    let pairs: Arc<Vec<(InternalLightEvent, InternalLightEvent)>> = Arc::new(
        (0..THREADS)
            .map(|_| {
                (
                    InternalLightEvent::new(false),
                    InternalLightEvent::new(false),
                )
            })
            .collect(),
    );
    let p2 = pairs.clone();
    join_within(
        spawn(2 * THREADS, "PingPong", move |i| {
            let (ping, pong) = &p2[i / 2];
            for _ in 0..ROUNDS {
                if i % 2 == 0 {
                    ping.signal_with_auto_clear();
                    pong.wait_with_auto_clear();
                } else {
                    ping.wait_with_auto_clear();
                    pong.signal_with_auto_clear();
                }
            }
        }),
        LIMIT,
    );
}

#[test]
fn timed_waits_time_out() {
    let t = rt()
        .thread()
        .name("TimedWaiter")
        .priority(44)
        .spawn(|| {
            let soon = || Instant::now() + Duration::from_millis(1);
            let ev = InternalLightEvent::new(false);
            assert!(!ev.timed_wait_with_auto_clear(soon()));
            assert!(!ev.timed_wait_with_manual_clear(soon()));
            let (cs, cv) = (
                InternalCriticalSection::default(),
                InternalConditionVariable::default(),
            );
            cs.enter();
            assert_eq!(cv.timed_wait(&cs, soon()), Status::TimedOut);
            assert!(
                cs.is_locked_by_current_thread(),
                "taken again after its timeout"
            );
            assert_eq!(
                cv.timed_wait(&cs, Instant::now()),
                Status::TimedOut,
                "no time left: no svc"
            );
            cs.leave();
            let (m, c) = (Mutex::new(), CondVar::new());
            m.lock();
            assert_eq!(c.wait_timeout(&m, 1_000_000), Err(ResultCode::TIMED_OUT));
            assert!(m.is_locked_by_current_thread());
            m.unlock();
            let word = AtomicU32::new(0);
            let r = svc::wait_for_address(&word, ArbitrationType::WaitIfEqual, 0, 1_000_000);
            assert_eq!(r, Err(ResultCode::TIMED_OUT));
        })
        .unwrap();
    join_within(vec![t], LIMIT);
}
