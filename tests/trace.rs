//! The trace in standard tools: a known scenario gives exactly the expected slices, instants
//! and flows; every file is valid trace-event JSON whose slices nest (every begin has its
//! end); frame_sim's traces are too; the flight recorder's dump on a forced escape names the
//! holder, and one on a shutdown that times out names the straggler; the wait tree of a
//! deadlocked pair names the cycle, and a running thread's time on its core; a core taken
//! after a kick's grace is an instant of the thread that took it.

mod tracefile;

use hos::os::{ClearMode, Event, Mutex};
use hos::thread::Role;
use hos::{Calibration, Runtime, State};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};
use tracefile::{load, names_of, scratch, track, Item};

/// Runs this file's tests one at a time: the known scenario's schedule is exact only while no
/// other test (frame_sim's build and run, a spinning straggler) takes its processors for
/// longer than its sleep.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding it poisons nothing the next one needs.
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes the parts of core hand-offs that depend on timing alone: a thread queued for a
/// core may be granted it before it first polls its wait (then it never parks and nobody
/// wakes it) or after (then it parks and the releaser's wake ends its wait). Either way the
/// hand-off is checked: a parked core wait has exactly one wake edge in, from `releaser`.
fn without_core_handoffs(tracks: &mut [(u64, Vec<Item>)]) {
    let mut drop_binds = Vec::new();
    for (_, items) in tracks.iter_mut() {
        let waits: Vec<(u64, u64)> = items
            .iter()
            .filter(|i| i.name == "waiting for a vcore")
            .map(|i| (i.ts, i.ts + i.dur))
            .collect();
        for (b, e) in waits {
            let parked = items
                .iter()
                .any(|i| i.name == "parked" && i.ts >= b && i.ts + i.dur <= e);
            let woken: Vec<u64> = items
                .iter()
                .filter(|i| i.flow_in && i.ts == e && i.name.starts_with("woken by"))
                .filter_map(|i| i.bind)
                .collect();
            assert_eq!(
                parked,
                woken.len() == 1,
                "a parked core wait has one wake in"
            );
            drop_binds.extend(woken);
            items.retain(|i| !(i.name == "parked" && i.ts >= b && i.ts + i.dur <= e));
        }
    }
    for (_, items) in tracks.iter_mut() {
        let outs: Vec<u64> = items
            .iter()
            .filter(|i| i.bind.is_some_and(|b| drop_binds.contains(&b)) && !i.flow_in)
            .map(|i| i.ts)
            .collect();
        items.retain(|i| {
            let bound = i.bind.is_some_and(|b| drop_binds.contains(&b));
            let its_wake = i.ph == "i" && i.name.starts_with("wake ") && outs.contains(&i.ts);
            !bound && !its_wake
        });
    }
}

/// Loops on checkpoints (holding the core) until `n` virtual-core waits have begun.
fn until_queued(rt: &Runtime, n: u64) {
    while rt.stats().vcore_waits < n {
        hos::svc::checkpoint();
        std::hint::spin_loop();
    }
}

#[test]
fn a_known_scenario_gives_exactly_its_slices_instants_and_flows() {
    let _serial = serial();
    let dir = scratch("scenario");
    let file = dir.join("scenario.json");
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(1)
        .spin_us(0)
        .spin_other_us(0)
        .vcore_slice_us(1_000_000)
        .vcore_escape_ms(3_600_000)
        // No kick's grace: a waiter parked until its grace ends may wake by that time just as
        // the holder hands the core over, and the scenario's waits must each end by a wake.
        .vcore_grace_us(0)
        // Claims wake at once: the scenario is that schedule's. Deferred (the default), B's
        // wake by A's signal would come at A's hand-over of the core, after A parked, and
        // its instant would sit there on A's track (`runtime/src/tests/vcore_defer.rs` covers deferral).
        .vcore_claim_defer(false)
        .trace(&file)
        .build()
        .unwrap();
    let ping = Arc::new(Event::new(ClearMode::Auto));
    let pong = Arc::new(Event::new(ClearMode::Auto));
    let a_running = Arc::new(AtomicBool::new(false));
    let b_has_core = Arc::new(AtomicBool::new(false));
    // A holds the only core and loops on checkpoints until B, better by priority, kicked it
    // off; then the two hand an event back and forth, each waiting for the other to queue
    // for the core before it blocks, so every wait is sure to block.
    let a = {
        let (rt2, ping, pong) = (rt.clone(), ping.clone(), pong.clone());
        let (running, b_core) = (a_running.clone(), b_has_core.clone());
        rt.thread()
            .name("TraceA")
            .priority(20)
            .spawn(move || {
                running.store(true, Ordering::Release);
                while !b_core.load(Ordering::Acquire) {
                    hos::svc::checkpoint();
                    std::hint::spin_loop();
                }
                ping.signal();
                until_queued(&rt2, 3);
                pong.wait().unwrap();
            })
            .unwrap()
    };
    while !a_running.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let b = {
        let (rt2, ping, pong) = (rt.clone(), ping.clone(), pong.clone());
        // Serial, so that its long sleep is precise, through the reactor (a job worker's is
        // relaxed: its own timer, no reactor wake to see).
        rt.thread()
            .name("TraceB")
            .priority(10)
            .role(Role::Serial)
            .spawn(move || {
                b_has_core.store(true, Ordering::Release);
                hos::thread::current().unwrap().set_priority(20).unwrap();
                ping.wait().unwrap();
                hos::svc::sleep_thread(50_000_000);
                pong.signal();
                until_queued(&rt2, 4);
            })
            .unwrap()
    };
    a.join().unwrap();
    b.join().unwrap();
    rt.shutdown();

    let (items, names, _) = load(&file);
    let (ta, a_items) = track(&items, &names, "TraceA");
    let (tb, b_items) = track(&items, &names, "TraceB");
    assert_eq!(names[&ta], "TraceA (priority 20, mask 0x1)");
    let mut tracks = vec![(ta, a_items), (tb, b_items)];
    without_core_handoffs(&mut tracks);
    let a_want = [
        "i thread start",
        "X vcore 0",
        "X waiting for a vcore",
        "X gave the vcore up",
        "X vcore 0",
        "i wake TraceB",
        "X signal",
        "X wait event::Take",
        "X parked",
        "X woken by TraceB",
        "X waiting for a vcore",
        "X vcore 0",
        "i thread exit",
    ];
    let b_want = [
        "i thread start",
        "i kick TraceA off vcore 0",
        "X kick",
        "X waiting for a vcore",
        "X vcore 0",
        "i priority 20",
        "X wait event::Take",
        "X parked",
        "X woken by TraceA",
        "X waiting for a vcore",
        "X vcore 0",
        "X sleep 50.0 ms",
        "X timer wait",
        "X parked",
        "X woken by hos-reactor",
        "X vcore 0",
        "i wake TraceA",
        "X signal",
        "i thread exit",
    ];
    assert_eq!(names_of(&tracks[0].1), a_want);
    assert_eq!(names_of(&tracks[1].1), b_want);
    // The flows tie the expected ends: B's kick to A's give-up, each signal to the wait it
    // ended, and the reactor's wake to B's timer wait.
    let bind = |t: usize, name: &str| {
        tracks[t]
            .1
            .iter()
            .find(|i| i.name == name)
            .and_then(|i| i.bind)
            .unwrap_or_else(|| panic!("{name} has no flow"))
    };
    assert_eq!(bind(1, "kick"), bind(0, "gave the vcore up"));
    assert_eq!(bind(0, "signal"), bind(1, "woken by TraceA"));
    assert_eq!(bind(1, "signal"), bind(0, "woken by TraceB"));
    let reactor = items
        .iter()
        .find(|i| i.bind == Some(bind(1, "woken by hos-reactor")) && !i.flow_in)
        .expect("the reactor's end of the flow");
    assert!(names[&reactor.tid].starts_with("hos-reactor"));
}

#[test]
fn a_core_taken_after_the_kicks_grace_is_in_the_trace() {
    let _serial = serial();
    let dir = scratch("revoke");
    let file = dir.join("revoke.json");
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(1)
        .spin_us(0)
        .spin_other_us(0)
        .vcore_escape_ms(3_600_000)
        .vcore_grace_us(1_000)
        .trace(&file)
        .build()
        .unwrap();
    let (running, better_has_core) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // The holder runs without a checkpoint (as one the OS does not run would) until the
    // better thread has taken its core after the grace; then its checkpoint finds the core
    // gone and it waits for one.
    let holder = {
        let (running, taken) = (running.clone(), better_has_core.clone());
        rt.thread()
            .name("Holder")
            .priority(30)
            .spawn(move || {
                running.store(true, Ordering::Release);
                while !taken.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                hos::svc::checkpoint();
            })
            .unwrap()
    };
    while !running.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let better = {
        let taken = better_has_core.clone();
        rt.thread()
            .name("Better")
            .priority(10)
            .spawn(move || taken.store(true, Ordering::Release))
            .unwrap()
    };
    better.join().unwrap();
    holder.join().unwrap();
    assert_eq!(rt.stats().vcore_revokes, 1);
    rt.shutdown();
    let (items, names, _) = load(&file);
    let (_, better_items) = track(&items, &names, "Better");
    let seen = names_of(&better_items);
    assert!(
        seen.iter()
            .any(|n| n == "i take vcore 0 from Holder (grace over)"),
        "{seen:?}"
    );
}

/// The dump files in `dir`.
fn dumps(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hos-flight-")
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_flight_recorders_dump_on_a_forced_escape_names_the_holder() {
    let _serial = serial();
    let dir = scratch("escape");
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(1)
        .vcore_escape_ms(50)
        .flight(true)
        .flight_dir(&dir)
        .build()
        .unwrap();
    let holding = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    // The hog holds the only core and never reaches a checkpoint (bounded: 10 s at most).
    let hog = {
        let (holding, done) = (holding.clone(), done.clone());
        rt.thread()
            .name("EscapeHog")
            .spawn(move || {
                holding.store(true, Ordering::Release);
                let start = Instant::now();
                while !done.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(10) {
                    std::hint::spin_loop();
                }
            })
            .unwrap()
    };
    while !holding.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let waiter = rt.thread().name("EscapeWaiter").spawn(|| ()).unwrap();
    waiter.join().unwrap();
    done.store(true, Ordering::Release);
    hog.join().unwrap();
    rt.shutdown();
    assert_eq!(rt.stats().vcore_escapes, 1);
    let files = dumps(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let (items, names, v) = load(&files[0]);
    let reason = v["otherData"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("escape: EscapeWaiter waited"),
        "{reason}"
    );
    assert!(
        reason.contains("holders: 0: EscapeHog (priority 44"),
        "{reason}"
    );
    let tree = v["otherData"]["wait_tree"].as_str().unwrap();
    assert!(
        tree.contains("EscapeHog (priority 44, mask 0x1) runs on vcore 0"),
        "{tree}"
    );
    let (_, hog_items) = track(&items, &names, "EscapeHog");
    assert!(
        hog_items.iter().any(|i| i.name == "vcore 0"),
        "{hog_items:?}"
    );
    let (_, w) = track(&items, &names, "EscapeWaiter");
    assert!(w.iter().any(|i| i.name == "waiting for a vcore"), "{w:?}");
    assert!(w.iter().any(|i| i.name.starts_with("escaped")), "{w:?}");
}

#[test]
fn the_wait_tree_of_a_deadlocked_pair_shows_the_cycle() {
    let _serial = serial();
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .flight(true)
        .build()
        .unwrap();
    let (m1, m2) = (Arc::new(Mutex::new(false)), Arc::new(Mutex::new(false)));
    let (a_has, b_has) = (
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(Event::new(ClearMode::Manual)),
    );
    // Each takes one mutex, waits until the other has taken its own, then asks for the
    // other's: a deadlock that only the shutdown ends (the second locks are cancelled).
    let spawn =
        |name: &str, mine: Arc<Mutex>, theirs: Arc<Mutex>, me: Arc<Event>, them: Arc<Event>| {
            rt.thread()
                .name(name)
                .spawn(move || {
                    let _held = mine.lock().unwrap();
                    me.signal();
                    them.wait().unwrap();
                    theirs.lock().map(drop).map_err(|e| e.code())
                })
                .unwrap()
        };
    let a = spawn(
        "DeadA",
        m1.clone(),
        m2.clone(),
        a_has.clone(),
        b_has.clone(),
    );
    let b = spawn("DeadB", m2, m1, b_has, a_has);
    let (ida, idb) = (a.thread().id(), b.thread().id());
    let start = Instant::now();
    let tree = loop {
        let tree = rt.wait_tree();
        // Waiting on a held object (the mutex), not on the other's event any more.
        let waiting = |id| {
            tree.node(id)
                .is_some_and(|n| matches!(n.state, State::Waiting { .. }) && !n.holders.is_empty())
        };
        if waiting(ida) && waiting(idb) {
            break tree;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no deadlock seen:\n{tree}"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let cycles = tree.cycles();
    assert_eq!(cycles.len(), 1, "{tree}");
    let mut cycle = cycles[0].clone();
    cycle.sort_unstable();
    assert_eq!(cycle, [ida.min(idb), ida.max(idb)], "{tree}");
    assert_eq!(tree.node(ida).unwrap().holders, [idb]);
    assert_eq!(tree.node(idb).unwrap().holders, [ida]);
    let text = tree.to_string();
    assert!(
        text.contains("deadlock: cycle DeadA -> DeadB -> DeadA")
            || text.contains("deadlock: cycle DeadB -> DeadA -> DeadB"),
        "{text}"
    );
    assert!(text.contains("waits on mutex::Lock 0x"), "{text}");
    rt.shutdown();
    // The first cancelled lock releases its thread's mutex, which the other may then take.
    let ends = [a.join().unwrap(), b.join().unwrap()];
    assert!(ends.contains(&Err(hos::ResultCode::CANCELLED)), "{ends:?}");
    assert!(ends
        .iter()
        .all(|e| matches!(e, Ok(()) | Err(hos::ResultCode::CANCELLED))));
}

#[test]
fn the_wait_tree_says_how_long_a_running_thread_has_held_its_core() {
    let _serial = serial();
    // Its core's stamp is on the event clock, the tree's time on the monotonic one: the map
    // between them must put the stamp between the spawn and the thread's first step.
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let (running, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (r, s) = (running.clone(), stop.clone());
    let before = Instant::now();
    let t = rt
        .thread()
        .name("Runner")
        .spawn(move || {
            r.store(true, Ordering::SeqCst);
            while !s.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
        })
        .unwrap();
    while !running.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let after = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    let since_after = after.elapsed();
    let tree = rt.wait_tree();
    let since_before = before.elapsed();
    let id = t.thread().id();
    stop.store(true, Ordering::SeqCst);
    t.join().unwrap();
    rt.shutdown();
    let node = tree.node(id).expect("the runner's node");
    assert!(matches!(node.state, State::Running { .. }), "{tree}");
    let held = Duration::from_nanos(node.for_ns.expect("a running thread's time"));
    // A millisecond for the map's error, which is a clock read's.
    let slack = Duration::from_millis(1);
    assert!(
        held + slack >= since_after && held <= since_before + slack,
        "held {held:?}: between {since_after:?} and {since_before:?}\n{tree}"
    );
}

/// The frame_sim binary of this build: `cargo test` builds frame_sim as a test (its unit
/// tests run), not as a program, so this builds the program through the cargo that runs the
/// tests, into the same target directory and profile, with the same flags (a second build
/// finds it fresh).
fn frame_sim() -> std::path::PathBuf {
    // target/<dir>/release/deps/trace-HASH: the profile's folder is two up, the target
    // directory three.
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let target = profile.parent().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // The profile's folder is named by the profile, except the dev profile's (`debug`).
    let name = profile.file_name().unwrap().to_str().unwrap();
    let name = if name == "debug" { "dev" } else { name };
    let built = std::process::Command::new(cargo)
        .args(["build", "--profile", name, "--example", "frame_sim"])
        .arg("--target-dir")
        .arg(target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(built.success(), "building frame_sim: {built}");
    profile.join("examples").join("frame_sim")
}

#[test]
fn frame_sims_traces_are_valid_trace_event_json() {
    let _serial = serial();
    let bin = frame_sim();
    let dir = scratch("frame_sim");
    let traces = dir.join("traces");
    let out = std::process::Command::new(&bin)
        .args([
            "--pairs",
            "1",
            "--frames",
            "12",
            "--warmup",
            "3",
            "--arms",
            "seeds,reactor",
        ])
        .args(["--scene", "field", "--fps", "120", "--json"])
        .arg(dir.join("r.json"))
        .arg("--out")
        .arg(&dir)
        .arg("--trace")
        .arg(&traces)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("critical path, ms a frame"), "{stdout}");
    for arm in ["seeds", "reactor"] {
        let (items, names, _) = load(&traces.join(format!("{arm}.json")));
        for t in [
            "MainThread (priority 44",
            "Presentation Thread (priority 44",
        ] {
            assert!(
                names.values().any(|n| n.starts_with(t)),
                "{arm}: no {t}: {names:?}"
            );
        }
        let frames = items
            .iter()
            .filter(|i| i.name.starts_with("frame "))
            .count();
        assert!(frames >= 15, "{arm}: {frames} frame marks");
        assert!(
            items.iter().any(|i| i.name.starts_with("woken by")),
            "{arm}: no wake flow"
        );
    }
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    for arm in ["seeds", "reactor"] {
        let path = &json["critical_path_ms"][arm];
        let sum: f64 = [
            "guest",
            "vcore_wait",
            "object_wait",
            "sleep",
            "sleep_late",
            "host",
        ]
        .iter()
        .map(|k| path[k].as_f64().unwrap())
        .sum();
        let frame = path["frame"].as_f64().unwrap();
        assert!(frame > 0.0 && (sum - frame).abs() < 0.01, "{arm}: {path}");
    }
}

#[test]
fn a_shutdown_that_times_out_dumps_the_flight_recorder() {
    let _serial = serial();
    let dir = scratch("shutdown");
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .flight_dir(&dir)
        .build()
        .unwrap();
    assert!(rt.config().flight, "the flight recorder is on by default");
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    // Guest code that never waits (bounded: 10 s at most), so the shutdown times out on it.
    let spinner = rt
        .thread()
        .name("ShutdownSpinner")
        .spawn(move || {
            let start = Instant::now();
            while !s.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(10) {
                std::hint::spin_loop();
            }
        })
        .unwrap();
    let report = rt.shutdown_timeout(Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    assert_eq!(report.stragglers.len(), 1, "{report}");
    let files = dumps(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let (_, names, v) = load(&files[0]);
    let reason = v["otherData"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("shutdown timed out: "), "{reason}");
    assert!(reason.contains("\"ShutdownSpinner\""), "{reason}");
    assert!(
        names.values().any(|n| n.starts_with("ShutdownSpinner")),
        "{names:?}"
    );
}

#[test]
fn an_overlong_wait_and_a_request_dump_the_flight_recorder() {
    let _serial = serial();
    let dir = scratch("overdue");
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .flight(true)
        .flight_dir(&dir)
        .flight_wait_ms(20)
        .build()
        .unwrap();
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let e2 = ev.clone();
    let waiter = rt
        .thread()
        .name("LongWaiter")
        .spawn(move || e2.wait().unwrap())
        .unwrap();
    let start = Instant::now();
    while dumps(&dir).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no dump for the long wait"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    ev.signal();
    waiter.join().unwrap();
    let asked = rt.dump_flight("asked for").expect("a dump on request");
    rt.shutdown();
    let files = dumps(&dir);
    assert_eq!(files.len(), 2, "{files:?}");
    let (_, _, first) = load(&files[0]);
    let reason = first["otherData"]["reason"].as_str().unwrap();
    assert_eq!(reason, "LongWaiter waited past HOS_FLIGHT_WAIT_MS");
    let (items, names, v) = load(&asked);
    assert_eq!(v["otherData"]["reason"], "asked for");
    let (_, w) = track(&items, &names, "LongWaiter");
    assert!(w.iter().any(|i| i.name == "wait event::Take"), "{w:?}");
}
