//! Thread roles (docs/design.md section 7): an explicit role decides whatever the thread is
//! named and no rename changes it; `Role::Auto` keeps the reference host's name rule
//! (HOS_SERIAL, HOS_VCORE_FIRST parts). Observed through what the policies do: idle polls
//! happen for workers only, and a first thread kicks a holder of its priority. No timed
//! speed assertions; waits a broken role would never end are bounded.

use hos::os::MessageQueue;
use hos::thread::Role;
use hos::{Calibration, Doing, Runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn runtime() -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .expect("valid switches")
}

/// Spawns a thread named `name` with `role` and returns what `f` made of it there.
fn on<T: Send + 'static>(
    rt: &Runtime,
    name: &str,
    role: Role,
    f: impl FnOnce(&hos::thread::Thread) -> T + Send + 'static,
) -> T {
    rt.thread()
        .name(name)
        .role(role)
        .spawn(move || f(&hos::thread::current().expect("a guest thread")))
        .expect("spawn")
        .join()
        .expect("no panic")
}

fn serial(rt: &Runtime, name: &str, role: Role) -> bool {
    on(rt, name, role, hos::thread::Thread::is_serial)
}

#[test]
fn an_explicit_role_beats_the_name_and_auto_keeps_the_name_rule() {
    let rt = runtime();
    assert!(serial(&rt, "RenderLoop", Role::Serial));
    assert!(serial(&rt, "Job", Role::SerialFirst));
    assert!(!serial(&rt, "MainThread", Role::Worker));
    assert!(!serial(&rt, "Presentation Thread", Role::Worker));
    assert!(serial(&rt, "MainThread", Role::Auto));
    assert!(serial(&rt, "Presentation Thread", Role::Auto));
    assert!(!serial(&rt, "ModuleSystemWorker0", Role::Auto));
    let unnamed = rt.thread().spawn(|| {
        let me = hos::thread::current().expect("a guest thread");
        (me.role(), me.is_serial())
    });
    assert_eq!(
        unnamed.expect("spawn").join().ok(),
        Some((Role::Auto, false)),
        "the default"
    );
    rt.shutdown();

    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .serial(["Render"])
        .build()
        .expect("valid switches");
    assert!(serial(&rt, "RenderLoop", Role::Auto), "HOS_SERIAL's parts");
    assert!(!serial(&rt, "MainThread", Role::Auto));
    assert!(serial(&rt, "MainThread", Role::Serial));
    rt.shutdown();
}

#[test]
fn a_rename_never_changes_an_explicit_role() {
    let rt = runtime();
    let seen = on(&rt, "RenderLoop", Role::Serial, |me| {
        me.set_name("ModuleSystemWorker0");
        let kept = (me.role(), me.is_serial());
        me.set_role(Role::Auto);
        let named = me.is_serial();
        me.set_name("MainThread");
        let renamed = me.is_serial();
        me.set_role(Role::Worker);
        (kept, named, renamed, me.role(), me.is_serial())
    });
    assert_eq!(
        seen,
        ((Role::Serial, true), false, true, Role::Worker, false)
    );
    rt.shutdown();
}

/// Whether a thread named `name` with `role` made an idle poll of a 20 us sleep after a
/// poll of an empty queue.
fn idle_polled(name: &str, role: Role) -> bool {
    let rt = runtime();
    let q = Arc::new(MessageQueue::<u32>::new(1));
    on(&rt, name, role, move |_| {
        assert!(q.try_receive().is_none());
        hos::svc::sleep_thread(20_000);
    });
    let polls = rt.stats().idle_polls;
    rt.shutdown();
    polls == 1
}

#[test]
fn idle_polls_follow_the_role_not_the_name() {
    assert!(idle_polled("MainThread", Role::Worker));
    assert!(idle_polled("ModuleSystemWorker0", Role::Auto));
    assert!(!idle_polled("ModuleSystemWorker0", Role::Serial));
    assert!(!idle_polled("ModuleSystemWorker0", Role::SerialFirst));
    assert!(!idle_polled("MainThread", Role::Auto));
}

#[test]
fn a_serial_first_role_ranks_first_and_a_worker_named_first_does_not() {
    // One core, a slice of a second and no escape in the run: only a first thread's rank
    // kicks a holder of its own priority.
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(1)
        .vcore_slice_us(1_000_000)
        .vcore_escape_ms(3_600_000)
        .vcore_first(["Presentation"])
        .build()
        .expect("valid switches");
    let lead_ran = Arc::new(AtomicBool::new(false));
    let order = Arc::new(AtomicUsize::new(0));
    let holding = Arc::new(AtomicBool::new(false));
    let holder = {
        let (lead_ran, holding) = (lead_ran.clone(), holding.clone());
        rt.thread()
            .name("Holder")
            .spawn(move || {
                let me = hos::thread::current().expect("a guest thread");
                holding.store(true, Ordering::SeqCst);
                while !lead_ran.load(Ordering::SeqCst) {
                    if me.kick_flag().load(Ordering::Relaxed) != 0 {
                        hos::svc::checkpoint();
                    }
                }
            })
            .expect("spawn")
    };
    while !holding.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let turn = |order: &AtomicUsize| order.fetch_add(1, Ordering::SeqCst);
    let worker = {
        let order = order.clone();
        rt.thread()
            .name("Presentation Thread")
            .role(Role::Worker)
            .spawn(move || turn(&order))
            .expect("spawn")
    };
    let waiting = |name: &str| {
        rt.guest_states().iter().any(|g| {
            g.name == name
                && matches!(
                    g.doing,
                    Doing::Waiting {
                        on: "virtual core",
                        ..
                    }
                )
        })
    };
    // A worker that (wrongly) ranked first would kick the holder and run at once, never
    // waiting: bounded, so that fails rather than hangs.
    let limit = Instant::now() + Duration::from_secs(30);
    while !waiting("Presentation Thread") {
        assert!(
            Instant::now() < limit,
            "the worker never waited for the core"
        );
        std::thread::yield_now();
    }
    let lead = {
        let (order, lead_ran) = (order.clone(), lead_ran.clone());
        rt.thread()
            .name("Job")
            .role(Role::SerialFirst)
            .spawn(move || {
                let n = turn(&order);
                lead_ran.store(true, Ordering::SeqCst);
                n
            })
            .expect("spawn")
    };
    assert_eq!(lead.join().ok(), Some(0), "the first thread ran first");
    holder.join().expect("no panic");
    assert_eq!(worker.join().ok(), Some(1));
    let s = rt.stats();
    assert_eq!(
        s.vcore_kicks_first, 1,
        "the serial-first thread's kick alone"
    );
    assert_eq!(s.vcore_escapes, 0);
    rt.shutdown();
}
