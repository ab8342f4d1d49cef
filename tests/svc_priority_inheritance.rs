//! Priority inheritance on the virtual cores: a guest thread that holds an arbitrated lock a
//! better thread waits for runs at that thread's priority until it unlocks. The scenario: a
//! priority-59 holder, a priority-28 waiter, and priority-44 workers busy on every core.
//! Without inheritance the holder waits for a core until the workers give up (their time
//! limit; the escape time is set past it), and the test fails. Own binary: it builds its own
//! runtime with two cores.

mod sdk;
mod until;

use hos::os::{ClearMode, Event};
use hos::svc::{self, Handle, WAITERS};
use hos::{Calibration, Config, ResultCode, Runtime};
use sdk::libnx::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use until::until;

const CORES: usize = 2;
/// How long the workers stay busy at most: the bound of the test, never reached with
/// inheritance.
const WORKERS_LIMIT: Duration = Duration::from_secs(5);

fn runtime() -> Runtime {
    Runtime::builder()
        .config(Config {
            cores: CORES,
            // Far past the workers' limit: no escape lets the holder run.
            vcore_escape_ms: 60_000,
            calibration: Some(Calibration::default()),
            ..Config::default()
        })
        .build()
        .expect("runtime")
}

#[test]
fn a_starved_lock_holder_runs_at_its_waiters_priority() {
    let rt = runtime();
    let lock = Arc::new(Mutex::new());
    let (go, stop) = (
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(AtomicBool::new(false)),
    );
    let busy = Arc::new(AtomicUsize::new(0));

    // The holder takes the lock, then blocks until the workers hold every core.
    let holder = {
        let (lock, go) = (lock.clone(), go.clone());
        rt.thread()
            .name("Holder59")
            .priority(59)
            .spawn(move || {
                lock.lock();
                go.wait().expect("not cancelled");
                // Work that needs a core: a checkpoint at each step.
                for _ in 0..100 {
                    svc::checkpoint();
                    std::hint::spin_loop();
                }
                let lent = svc::get_thread_priority(Handle::CURRENT_THREAD);
                lock.unlock();
                (lent, svc::get_thread_priority(Handle::CURRENT_THREAD))
            })
            .unwrap()
    };
    let holder_handle = holder.thread().handle();
    until("the holder holds the lock", || {
        lock.0.load(SeqCst) == holder_handle.0
    });

    let workers: Vec<_> = (0..CORES)
        .map(|i| {
            let (stop, busy) = (stop.clone(), busy.clone());
            rt.thread()
                .name(format!("Worker44_{i}"))
                .priority(44)
                .spawn(move || {
                    busy.fetch_add(1, SeqCst);
                    let end = Instant::now() + WORKERS_LIMIT;
                    while !stop.load(SeqCst) && Instant::now() < end {
                        svc::checkpoint();
                        std::hint::spin_loop();
                    }
                    stop.load(SeqCst)
                })
                .unwrap()
        })
        .collect();
    until("the workers hold the cores", || busy.load(SeqCst) == CORES);
    go.signal();

    let waiter = {
        let (lock, stop) = (lock.clone(), stop.clone());
        rt.thread()
            .name("Waiter28")
            .priority(28)
            .spawn(move || {
                lock.lock();
                stop.store(true, SeqCst);
                lock.unlock();
            })
            .unwrap()
    };
    // The waiter is queued against the holder once the holder runs at its priority.
    until("the holder inherits", || {
        svc::get_thread_priority(holder_handle) == Ok(28) || stop.load(SeqCst)
    });
    waiter.join().unwrap();
    let stopped: Vec<bool> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(
        stopped,
        vec![true; CORES],
        "the waiter got the lock only once the workers gave up: the holder was starved"
    );
    assert_eq!(
        holder.join().unwrap(),
        (Ok(28), Ok(59)),
        "lent, then given back"
    );
    rt.shutdown();
}

#[test]
fn inheritance_goes_up_a_chain_of_owners() {
    let rt = runtime();
    // L (60) holds m1; M (50) holds m2 and waits for m1; H (20) waits for m2.
    let (m1, m2) = (Arc::new(Mutex::new()), Arc::new(Mutex::new()));
    let (release, mid_holds) = (
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(AtomicBool::new(false)),
    );
    let low = {
        let (m1, release) = (m1.clone(), release.clone());
        rt.thread()
            .name("Low60")
            .priority(60)
            .spawn(move || {
                m1.lock();
                release.wait().expect("not cancelled");
                m1.unlock();
            })
            .unwrap()
    };
    until("L holds m1", || {
        m1.0.load(SeqCst) == low.thread().handle().0
    });
    let mid = {
        let (m1, m2, mid_holds) = (m1.clone(), m2.clone(), mid_holds.clone());
        rt.thread()
            .name("Mid50")
            .priority(50)
            .spawn(move || {
                m2.lock();
                mid_holds.store(true, SeqCst);
                m1.lock();
                m1.unlock();
                m2.unlock();
            })
            .unwrap()
    };
    let (lh, mh) = (low.thread().handle(), mid.thread().handle());
    until("L inherits 50 from M", || {
        svc::get_thread_priority(lh) == Ok(50)
    });
    let high = {
        let m2 = m2.clone();
        rt.thread()
            .name("High20")
            .priority(20)
            .spawn(move || {
                m2.lock();
                m2.unlock();
            })
            .unwrap()
    };
    until("M and through it L inherit 20 from H", || {
        svc::get_thread_priority(mh) == Ok(20) && svc::get_thread_priority(lh) == Ok(20)
    });
    release.signal();
    high.join().unwrap();
    mid.join().unwrap();
    assert_eq!(svc::get_thread_priority(lh), Ok(60), "given back");
    low.join().unwrap();
    rt.shutdown();
}

#[test]
fn a_gone_lock_owner_ends_its_waiters_with_invalid_state() {
    let rt = runtime();
    let word = Arc::new(AtomicU32::new(0));
    // The owner takes the word (as a lock with waiters) and ends holding it.
    let owner = {
        let word = word.clone();
        rt.thread()
            .priority(44)
            .spawn(move || word.store(svc::current_thread_handle().0 | WAITERS, SeqCst))
            .unwrap()
    };
    let owner_handle = owner.thread().handle();
    until("the owner ended", || owner.thread().is_finished());
    let waiter = {
        let word = word.clone();
        rt.thread()
            .priority(10)
            .spawn(move || svc::arbitrate_lock(owner_handle, &word, 1))
            .unwrap()
    };
    until("the waiter is queued", || {
        svc::get_thread_priority(owner_handle) == Ok(10)
    });
    // Joining drops the last hold on the owner's handle: the thread object is gone.
    owner.join().unwrap();
    assert_eq!(waiter.join().unwrap(), Err(ResultCode::INVALID_STATE));
    rt.shutdown();
}
