//! Attached threads: a host's OS thread as a guest thread (virtual cores, waits, its real
//! handle in the SDK's mutex words, shutdown), and the kick flag that generated code tests
//! inline.

mod sdk;

use hos::os::{ClearMode, Event};
use hos::svc::{self, Handle};
use hos::{Calibration, ResultCode, Runtime};
use sdk::libnx;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn runtime(cores: usize, escape_ms: u64) -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        .vcores(cores)
        .vcore_escape_ms(escape_ms)
        // A kicked holder keeps its core until it checkpoints (the kick flag's test counts on
        // it; the grace's own tests are in runtime/src/tests/vcore_grace.rs).
        .vcore_grace_us(0)
        .build()
        .expect("runtime")
}

/// Runs `f` on a new OS thread and waits for it at most 30 s: a hang fails the test.
fn on_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()).expect("send"));
    rx.recv_timeout(Duration::from_secs(30))
        .expect("finished in time")
}

#[test]
fn an_attached_thread_holds_a_virtual_core_until_it_waits() {
    let rt = runtime(1, 60_000);
    let r = rt.clone();
    on_thread(move || {
        let me = r
            .thread()
            .name("Jit0")
            .priority(44)
            .attach()
            .expect("attach");
        assert_eq!(
            hos::thread::current().map(|t| t.id()),
            Some(me.thread().id())
        );
        let ran = Arc::new(AtomicBool::new(false));
        let ev = Arc::new(Event::new(ClearMode::Auto));
        let (ran2, ev2) = (ran.clone(), ev.clone());
        let other = r
            .thread()
            .priority(44)
            .spawn(move || {
                ran2.store(true, Ordering::SeqCst);
                ev2.signal();
            })
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !ran.load(Ordering::SeqCst),
            "the one core is the attached thread's"
        );
        assert_eq!(
            ev.wait(),
            Ok(()),
            "its wait gave the core to the other thread"
        );
        assert!(ran.load(Ordering::SeqCst));
        other.join().expect("joined");
    });
    rt.shutdown();
}

#[test]
fn attach_refuses_bad_values_a_second_attach_and_a_shut_down_runtime() {
    let rt = runtime(2, 2_000);
    let r = rt.clone();
    on_thread(move || {
        let bad = r.thread().priority(64).attach().err();
        assert_eq!(bad, Some(ResultCode::INVALID_PRIORITY));
        let bad = r.thread().core_mask(0).attach().err();
        assert_eq!(bad, Some(ResultCode::INVALID_CORE_ID));
        let me = r.thread().attach().expect("attach");
        assert_eq!(r.thread().attach().err(), Some(ResultCode::INVALID_STATE));
        drop(me);
        assert!(hos::thread::current().is_none(), "detached");
        r.shutdown();
        assert_eq!(r.thread().attach().err(), Some(ResultCode::INVALID_STATE));
    });
}

#[test]
fn detaching_ends_the_thread_for_a_wait_on_its_handle() {
    let rt = runtime(2, 2_000);
    let r = rt.clone();
    let (tx, rx) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        let me = r.thread().name("Attached").attach().expect("attach");
        // A share keeps the handle open past the detach, for the wait below.
        tx.send(me.handle_share()).expect("send");
        wait_go.recv().expect("go");
        drop(me);
    });
    let share = rx.recv().expect("handle");
    let h = share.handle();
    assert_eq!(
        svc::wait_synchronization(&[h], 0),
        Err(ResultCode::TIMED_OUT)
    );
    go.send(()).expect("go");
    assert_eq!(svc::wait_synchronization(&[h], -1), Ok(0));
    t.join().expect("joined");
    drop(share);
    assert_eq!(
        svc::wait_synchronization(&[h], 0),
        Err(ResultCode::INVALID_HANDLE),
        "the last share closed it"
    );
    rt.shutdown();
}

#[test]
fn an_attached_threads_real_handle_is_what_mutex_words_name() {
    let rt = runtime(2, 2_000);
    let r = rt.clone();
    let m = Arc::new(libnx::Mutex::new());
    let (locked, wait_locked) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    let held = m.clone();
    let holder = std::thread::spawn(move || {
        let me = r.thread().name("Holder").attach().expect("attach");
        let h = svc::current_thread_handle();
        assert_eq!(h, me.thread().handle());
        held.lock();
        locked.send(h).expect("send");
        wait_go.recv().expect("go");
        // The waiter flagged the word: ArbitrateUnlock hands the lock over.
        held.unlock();
        drop(me);
    });
    let h = wait_locked.recv().expect("locked");
    assert_eq!(
        m.0.load(Ordering::SeqCst),
        h.0,
        "the SDK's tag: the real handle"
    );
    let wanted = m.clone();
    let waiter = rt
        .thread()
        .spawn(move || {
            wanted.lock();
            let mine = wanted.is_locked_by_current_thread();
            wanted.unlock();
            mine
        })
        .expect("spawn");
    wait_until(|| m.0.load(Ordering::SeqCst) & svc::WAITERS != 0);
    go.send(()).expect("go");
    wait_until(|| waiter.thread().is_finished());
    assert_eq!(waiter.join().ok(), Some(true));
    holder.join().expect("joined");
    assert_eq!(
        svc::handle_object(h).err(),
        Some(ResultCode::INVALID_HANDLE),
        "closed when it detached"
    );
    rt.shutdown();
}

#[test]
fn detaching_with_a_lock_held_ends_the_waits_for_it() {
    let rt = runtime(2, 2_000);
    let r = rt.clone();
    let word = Arc::new(AtomicU32::new(0));
    let (locked, wait_locked) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    let w = word.clone();
    let holder = std::thread::spawn(move || {
        let me = r.thread().name("Holder").attach().expect("attach");
        w.store(svc::current_thread_handle().0, Ordering::SeqCst);
        locked.send(()).expect("send");
        wait_go.recv().expect("go");
        drop(me);
    });
    wait_locked.recv().expect("locked");
    let owner = word.load(Ordering::SeqCst);
    word.store(owner | svc::WAITERS, Ordering::SeqCst);
    let w = word.clone();
    let waiter = rt
        .thread()
        .name("Waiter")
        .spawn(move || svc::arbitrate_lock(Handle(owner), &w, 0x1234))
        .expect("spawn");
    wait_until(|| {
        rt.guest_states().iter().any(|g| {
            g.name == "Waiter"
                && matches!(
                    g.doing,
                    hos::Doing::Waiting {
                        on: "ArbitrateLock",
                        ..
                    }
                )
        })
    });
    go.send(()).expect("go");
    holder.join().expect("joined");
    wait_until(|| waiter.thread().is_finished());
    assert_eq!(
        waiter.join().ok(),
        Some(Err(ResultCode::INVALID_STATE)),
        "the owner is gone, as when the console destroys a thread"
    );
    rt.shutdown();
}

/// Polls `done` for at most 30 s: a hang fails the test.
fn wait_until(done: impl Fn() -> bool) {
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(std::time::Instant::now() < end, "not within 30 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_shutdown_waits_for_attached_threads_to_detach_and_names_those_that_do_not() {
    let rt = runtime(2, 2_000);
    let (r, r2) = (rt.clone(), rt.clone());
    let (ready, started) = mpsc::channel();
    let ready2 = ready.clone();
    let leaver = std::thread::spawn(move || {
        let me = r.thread().name("Leaver").attach().expect("attach");
        let ev = Event::new(ClearMode::Auto);
        ready.send(()).expect("ready");
        let out = ev.wait();
        drop(me);
        out
    });
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let stayer = std::thread::spawn(move || {
        let me = r2.thread().name("Stayer").attach().expect("attach");
        ready2.send(()).expect("ready");
        while !s.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        drop(me);
    });
    started.recv().expect("one attached");
    started.recv().expect("both attached");
    let report = rt.shutdown_timeout(Duration::from_millis(200));
    let names: Vec<_> = report.stragglers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["Stayer"],
        "the leaver's wait was cancelled: it left"
    );
    assert_eq!(report.stragglers[0].doing, hos::Doing::GuestCode);
    assert_eq!(leaver.join().expect("joined"), Err(ResultCode::CANCELLED));
    stop.store(true, Ordering::Relaxed);
    stayer.join().expect("joined");
}

#[test]
fn the_kick_flag_tells_generated_code_when_to_checkpoint() {
    // One core and no escape within the test: the spinning thread gives its core to the better
    // one only if its kick flag says so.
    let rt = runtime(1, 600_000);
    let r = rt.clone();
    let done = on_thread(move || {
        let me = r
            .thread()
            .name("JitLoop")
            .priority(44)
            .attach()
            .expect("attach");
        let kick = me.thread().kick_flag();
        let better_ran = Arc::new(AtomicBool::new(false));
        let b = better_ran.clone();
        let better = r
            .thread()
            .priority(10)
            .spawn(move || b.store(true, Ordering::SeqCst))
            .expect("spawn");
        // The loop of generated code: a plain load at each back-edge.
        let mut spins = 0u64;
        while !better_ran.load(Ordering::SeqCst) {
            if kick.load(Ordering::Relaxed) != 0 {
                svc::checkpoint();
            }
            spins += 1;
        }
        better.join().expect("joined");
        assert_eq!(kick.load(Ordering::Relaxed), 0, "nobody waits any more");
        spins
    });
    assert!(done > 0);
    let stats = rt.stats();
    assert_eq!(stats.vcore_escapes, 0);
    assert!(stats.vcore_kicks_priority >= 1);
    rt.shutdown();
}
