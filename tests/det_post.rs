//! Host events, recording, replay and verify in the deterministic mode, end to end
//! (docs/determinism.md sections 5 and 6): a host thread posts on wall time while a guest pump
//! takes the posts and a guest worker sleeps through frames; the run recorded replays with
//! no divergence and the same guest log, decision hash and virtual time; a tampered file or
//! another config is refused naming what is wrong; `verify` agrees on a clean program and
//! names the decision where a host thread's wall-time signal landed.

use hos::det::clock::Pacing;
use hos::det::feed::PostError;
use hos::det::record::RecordError;
use hos::det::selector::Spec;
use hos::det::verifier::Expected;
use hos::os::{ClearMode, Event};
use hos::svc;
use hos::{BuildError, Calibration, DetStats, Runtime, RuntimeBuilder};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A 60 Hz frame, in ns.
const FRAME: u64 = 16_666_667;
/// Frames the worker sleeps through, and vsyncs posted.
const FRAMES: u64 = 12;
/// The live posts the host thread makes on wall time.
const LIVE: u64 = 8;
/// The sources: vsync (post_at), input (post, on wall time), and the end of the run.
const VSYNC: u32 = 1;
const INPUT: u32 = 2;
const QUIT: u32 = 3;

type Log = Arc<Mutex<Vec<String>>>;

fn builder(spec: Spec) -> RuntimeBuilder {
    Runtime::builder()
        .calibration(Calibration::default())
        .det(Some(spec))
        .det_pace(Pacing::Free)
        .det_quantum(5)
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hos-det-post-{}-{name}.hosrec", std::process::id()))
}

/// What one run did: its figures, the guest log, its divergence.
#[derive(Debug)]
struct Run {
    stats: DetStats,
    log: Vec<String>,
    divergence: Option<hos::det::verifier::Divergence>,
}

/// The guest side: a pump that takes posts until QUIT and a worker that sleeps through
/// FRAMES frames, each logging what it sees with the virtual tick.
fn guests(rt: &Runtime, log: &Log) {
    // Guests wait on events, never join an OS thread (which holds the token).
    let done = Event::new(ClearMode::Manual);
    let pumped = Event::new(ClearMode::Manual);
    let pump = rt
        .thread()
        .name("Pump")
        .priority(40)
        .ideal_core(1)
        .spawn({
            let (rt, log, pumped) = (rt.clone(), log.clone(), pumped.clone());
            move || {
                loop {
                    let p = rt.next_post(None).expect("a post");
                    let tick = svc::get_system_tick();
                    log.lock().unwrap().push(format!(
                        "post {} #{} vt {} {:?} at tick {tick}",
                        p.source, p.seq, p.vt, p.payload
                    ));
                    if p.source == QUIT {
                        break;
                    }
                }
                pumped.signal();
            }
        })
        .expect("the pump");
    let worker = rt
        .thread()
        .name("Worker")
        .priority(44)
        .ideal_core(0)
        .spawn({
            let (log, done) = (log.clone(), done.clone());
            move || {
                for frame in 0..FRAMES {
                    svc::sleep_thread(FRAME as i64 / 2);
                    let tick = svc::get_system_tick();
                    log.lock()
                        .unwrap()
                        .push(format!("frame {frame} at tick {tick}"));
                    svc::checkpoint();
                }
                done.signal();
            }
        })
        .expect("the worker");
    done.wait().expect("the worker ends");
    pumped.wait().expect("the pump ends");
    drop((pump, worker));
}

/// One run of `b`; `host` posts from a host thread while the guests run.
fn run(b: RuntimeBuilder, host: impl FnOnce(&Runtime) + Send + 'static) -> Run {
    let rt = b.build().expect("a runtime in the deterministic mode");
    let log: Log = Arc::default();
    let poster = std::thread::spawn({
        let rt = rt.clone();
        move || host(&rt)
    });
    let main = rt
        .thread()
        .name("MainThread")
        .priority(44)
        .spawn({
            let (rt, log) = (rt.clone(), log.clone());
            move || guests(&rt, &log)
        })
        .expect("the main guest thread");
    main.join().expect("main did not panic");
    poster.join().expect("the host thread did not panic");
    let stats = rt.det_stats().expect("the mode is on");
    rt.shutdown();
    // After the shutdown: a replay's end is checked then.
    let divergence = rt.det_divergence();
    let log = std::mem::take(&mut *log.lock().unwrap());
    Run {
        stats,
        log,
        divergence,
    }
}

/// The host of a live run: vsyncs at their virtual times, inputs on wall time, then the end
/// after the last vsync.
fn live_host(rt: &Runtime) {
    for frame in 0..FRAMES {
        rt.post_at(VSYNC, frame * FRAME, [frame as u8])
            .expect("posted");
    }
    for i in 0..LIVE {
        std::thread::sleep(Duration::from_micros(300));
        rt.post(INPUT, [0xA0 | i as u8; 16]).expect("posted");
    }
    // After the last vsync: the inputs, posted before it at earlier times, all precede it.
    rt.post_at(QUIT, FRAMES * FRAME, []).expect("posted");
}

/// The host of a replay: its posts are refused, the recording supplies them.
fn replay_host(rt: &Runtime) {
    assert_eq!(rt.post(INPUT, [1]), Err(PostError::Replaying));
    assert_eq!(rt.post_at(VSYNC, 5, [1]), Err(PostError::Replaying));
}

#[test]
fn posts_reach_the_pump_in_time_source_sequence_order() {
    let r = run(builder(Spec::Stable), live_host);
    let posts: Vec<&String> = r.log.iter().filter(|l| l.starts_with("post")).collect();
    assert_eq!(posts.len() as u64, FRAMES + LIVE + 1, "{:#?}", r.log);
    assert!(posts.last().unwrap().starts_with("post 3 #0"), "QUIT last");
    for frame in 0..FRAMES {
        let vsync = format!("post 1 #{frame} vt {} [{frame}]", frame * FRAME);
        assert!(r.log.iter().any(|l| l.starts_with(&vsync)), "{vsync}");
    }
    assert_eq!(r.log.iter().filter(|l| l.starts_with("frame")).count(), 12);
    assert!(r.stats.vt >= FRAMES * FRAME / 2, "{:?}", r.stats);
}

#[test]
fn a_post_outside_the_mode_or_a_take_by_a_host_thread_is_refused() {
    let off = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let e = off.post(1, [1]).unwrap_err();
    assert_eq!(e, PostError::Off);
    assert!(e.to_string().contains("HOS_DET is off"), "{e}");
    assert_eq!(off.post_at(1, 5, []), Err(PostError::Off));
    assert_eq!(off.next_post(None).unwrap_err(), PostError::Off);
    assert_eq!(off.det_divergence(), None);
    off.shutdown();

    let rt = builder(Spec::Stable).build().unwrap();
    assert_eq!(rt.next_post(None).unwrap_err(), PostError::NotAGuest);
    let (taken, waited) = rt
        .thread()
        .spawn({
            let rt = rt.clone();
            move || {
                let vt = || rt.det_stats().expect("the mode is on").vt;
                let before = vt();
                let taken = rt.next_post(Some(Duration::from_millis(3)));
                (taken, vt() - before)
            }
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(taken, Err(PostError::TimedOut), "a virtual timeout");
    assert!(
        waited >= 3_000_000,
        "it waited its 3 ms of virtual time: {waited} ns"
    );
    rt.shutdown();
    assert_eq!(rt.post(1, []), Err(PostError::Stopped));
}

#[test]
fn a_recorded_run_with_live_posts_replays_without_divergence() {
    for decisions in [false, true] {
        let path = temp(&format!("replay-{decisions}"));
        let recorded = run(
            builder(Spec::Random { seed: 9 })
                .det_record(Some(path.clone()))
                .det_record_decisions(decisions),
            live_host,
        );
        let replayed = run(builder(Spec::Replay(path.clone())), replay_host);
        assert_eq!(replayed.divergence, None, "decisions {decisions}");
        assert_eq!(replayed.stats, recorded.stats, "decisions {decisions}");
        assert_eq!(replayed.log, recorded.log, "decisions {decisions}");

        // A posted payload changed in the file: the witnesses cover it, the end's hash says so.
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.windows(16).position(|w| w == [0xA1; 16]).unwrap();
        bytes[at] = 0xA2;
        let changed = temp(&format!("changed-{decisions}"));
        std::fs::write(&changed, &bytes).unwrap();
        let r = run(builder(Spec::Replay(changed.clone())), replay_host);
        let d = r.divergence.expect("a changed payload is caught");
        assert!(matches!(d.expected, Expected::Hash { .. }), "{d}");
        assert!(
            r.log.iter().any(|l| l.contains("[162, 161, 161")),
            "{:?}",
            r.log
        );
        std::fs::remove_file(&changed).unwrap();

        // A replay of another program diverges, and says where.
        let other = {
            let b = builder(Spec::Replay(path.clone()));
            let rt = b.build().unwrap();
            rt.thread()
                .spawn(|| (0..3).for_each(|_| svc::sleep_thread(1_000)))
                .unwrap()
                .join()
                .unwrap();
            rt.shutdown();
            rt.det_divergence().expect("another program diverges")
        };
        assert!(other.decision < recorded.stats.decisions, "{other}");
        assert!(
            other.to_string().starts_with("diverged at decision"),
            "{other}"
        );
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_tampered_recording_or_another_config_is_refused_by_name() {
    let path = temp("tamper");
    run(
        builder(Spec::Stable).det_record(Some(path.clone())),
        live_host,
    );
    let replay = |b: RuntimeBuilder| match b.build() {
        Err(BuildError::Replay(e)) => e,
        other => panic!("expected a replay error, got {other:?}"),
    };
    let e = replay(builder(Spec::Replay(path.clone())).det_quantum(7));
    assert_eq!(
        e,
        RecordError::Config {
            field: "quantum",
            recorded: 5,
            live: 7
        }
    );
    let e = replay(builder(Spec::Replay(path.clone())).vcores(2));
    assert!(e.to_string().contains("cores recorded 6, live 2"), "{e}");

    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 1);
    std::fs::write(&path, &bytes).unwrap();
    let e = replay(builder(Spec::Replay(path.clone())));
    assert!(matches!(e, RecordError::Truncated { .. }), "{e}");
    bytes[30] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    let e = replay(builder(Spec::Replay(path.clone())));
    assert!(
        e.to_string().starts_with("recording corrupt at byte"),
        "{e}"
    );
    std::fs::remove_file(&path).unwrap();
    let e = replay(builder(Spec::Replay(path.clone())));
    assert!(matches!(e, RecordError::Io { .. }), "{e}");

    let dir = std::env::temp_dir();
    match builder(Spec::Stable).det_record(Some(dir.clone())).build() {
        Err(e @ BuildError::Record { .. }) => {
            assert!(e.to_string().contains("HOS_DET_RECORD"), "{e}");
        }
        other => panic!("a folder is no recording: {other:?}"),
    }
}

/// REPLAY.md's budget through the wired writer: ten minutes of 60 Hz, 16-byte posts taken by
/// a guest stay under 1 MB without the decision log, and replay.
#[test]
fn ten_minutes_of_posts_record_under_1_mb() {
    const TEN_MINUTES: u64 = 10 * 60 * 60;
    let path = temp("size");
    let program = |rt: &Runtime| {
        let main = rt
            .thread()
            .spawn({
                let rt = rt.clone();
                move || {
                    let mut sum = 0u64;
                    for _ in 0..TEN_MINUTES {
                        sum += u64::from(rt.next_post(None).expect("a post").payload[0]);
                    }
                    sum
                }
            })
            .unwrap();
        main.join().unwrap()
    };
    let rt = builder(Spec::Stable)
        .det_record(Some(path.clone()))
        .build()
        .unwrap();
    for frame in 0..TEN_MINUTES {
        rt.post_at(VSYNC, frame * FRAME, [frame as u8; 16]).unwrap();
    }
    let sum = program(&rt);
    let recorded = rt.det_stats().unwrap();
    rt.shutdown();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 1_000_000, "{size} bytes");
    assert!(size > TEN_MINUTES * 16, "{size} bytes: the payloads are in");

    let rt = builder(Spec::Replay(path.clone())).build().unwrap();
    assert_eq!(program(&rt), sum);
    assert_eq!(rt.det_stats().unwrap(), recorded);
    rt.shutdown();
    assert_eq!(rt.det_divergence(), None);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn verify_agrees_on_a_clean_program_and_names_a_wall_time_signal() {
    let build = || builder(Spec::Random { seed: 3 }).build();
    let clean = Runtime::det_verify(build, |rt| {
        run_clean(rt);
    })
    .unwrap();
    assert_eq!(clean.divergence, None);
    assert_eq!(clean.runs[0], clean.runs[1]);
    assert!(clean.runs[0].decisions > 20, "{clean:?}");

    // The planted leak: a host thread signals the guest's event on wall time. In the first
    // run it signals only once the guest's loop is over; in the second, before it starts: as
    // a machine's timing would move it.
    let runs = Arc::new(Mutex::new(0));
    let leaky = Runtime::det_verify(build, |rt| {
        let n = {
            let mut n = runs.lock().unwrap();
            *n += 1;
            *n
        };
        let event = Event::new(ClearMode::Manual);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        if n == 2 {
            event.signal();
        }
        let main = rt
            .thread()
            .spawn({
                let (rt, event) = (rt.clone(), event.clone());
                move || {
                    let fin = Event::new(ClearMode::Manual);
                    let waiter = rt
                        .thread()
                        .spawn({
                            let fin = fin.clone();
                            move || {
                                event.wait().expect("signalled");
                                fin.signal();
                            }
                        })
                        .unwrap();
                    for _ in 0..50 {
                        svc::sleep_thread(0);
                    }
                    tx.send(()).unwrap();
                    fin.wait().expect("the waiter ends");
                    drop(waiter);
                }
            })
            .unwrap();
        rx.recv().unwrap();
        event.signal();
        main.join().unwrap();
    })
    .unwrap();
    let d = leaky.divergence.expect("the leak is named");
    assert!(d.decision < leaky.runs[0].decisions, "{d}");
    assert!(
        d.actual.is_some(),
        "named at a witness, not at the end: {d}"
    );
    assert!(matches!(d.expected, Expected::Witness(_)), "{d}");
    assert!(d.to_string().contains("expected decision"), "{d}");
}

/// A program with no leak: two threads ping-pong through sleeps and yields.
fn run_clean(rt: &Runtime) {
    let main = rt
        .thread()
        .spawn({
            let rt = rt.clone();
            move || {
                let fin = Event::new(ClearMode::Manual);
                let other = rt
                    .thread()
                    .spawn({
                        let fin = fin.clone();
                        move || {
                            (0..10).for_each(|i| svc::sleep_thread(i * 1_000));
                            fin.signal();
                        }
                    })
                    .unwrap();
                (0..10).for_each(|_| svc::sleep_thread(0));
                fin.wait().expect("the other ends");
                drop(other);
            }
        })
        .unwrap();
    main.join().unwrap();
}

/// One run of a guest that never rests (it waits 1 ms of virtual time on an event nobody
/// signals, over and over), cut by its host's shutdown at a wall-time point once `enough`
/// says so; its figures at the shutdown and its divergence after it.
fn cut_run(b: RuntimeBuilder, enough: impl Fn(&DetStats) -> bool) -> (DetStats, Option<String>) {
    let rt = b.build().expect("a runtime in the deterministic mode");
    let busy = rt
        .thread()
        .name("Busy")
        .priority(44)
        .spawn(|| {
            let never = Event::new(ClearMode::Auto);
            // A timeout goes on; the shutdown's Cancelled ends the loop.
            while never.wait_timeout(Duration::from_millis(1)) != Err(hos::ResultCode::CANCELLED) {}
        })
        .expect("the guest");
    while !rt.det_stats().is_some_and(|s| enough(&s)) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Let it run on a little past the point, on wall time: where the cut lands is the host's.
    std::thread::sleep(Duration::from_millis(20));
    let stats = rt.det_stats().expect("the mode is on");
    rt.shutdown();
    drop(busy);
    (stats, rt.det_divergence().map(|d| d.to_string()))
}

#[test]
fn a_replay_of_a_cut_run_holds_at_its_end() {
    let path = temp("cut");
    let (live, d) = cut_run(builder(Spec::Stable).det_record(Some(path.clone())), |s| {
        s.decisions >= 200
    });
    assert_eq!(d, None);
    let rec = hos::det::record::Recording::open(&path).expect("the recording");
    assert!(rec.cut, "the host stopped a run that could go on");
    assert!(
        rec.total >= live.decisions,
        "{} < {}",
        rec.total,
        live.decisions
    );
    // The replay reaches the recording's end and takes no decision past it, however long
    // its host waits, then its shutdown finds nothing to report.
    let (replayed, d) = cut_run(builder(Spec::Replay(path.clone())), |s| {
        s.decisions >= rec.total
    });
    assert_eq!(replayed.decisions, rec.total, "held at the end");
    assert_eq!(d, None);
    std::fs::remove_file(&path).expect("the recording removed");
}

/// Whether a run recorded under `stable` was cut (`Recording::cut`): `guest`, if any, runs as
/// the main guest thread (never joined), `host` acts, then the runtime is shut down.
fn recorded_cut(
    name: &str,
    guest: Option<Box<dyn FnOnce() + Send>>,
    host: impl FnOnce(&Runtime),
) -> bool {
    let path = temp(name);
    let rt = builder(Spec::Stable)
        .det_record(Some(path.clone()))
        .build()
        .expect("a runtime in the deterministic mode");
    let main = guest.map(|g| rt.thread().name("MainThread").spawn(g).expect("the guest"));
    host(&rt);
    rt.shutdown();
    drop(main);
    let rec = hos::det::record::Recording::open(&path).expect("the recording");
    std::fs::remove_file(&path).expect("the recording removed");
    rec.cut
}

/// Waits for the run's softlock report: the guest waits for good (its token rests).
fn until_deadlocked(rt: &Runtime) {
    while rt.det_softlock().is_none() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_stop_cuts_a_run_unless_it_had_come_to_rest() {
    // Ended: every guest thread gone.
    let ended = |rt: &Runtime| {
        let t = rt.thread().spawn(|| svc::sleep_thread(1_000)).unwrap();
        t.join().expect("the guest ended");
    };
    assert!(!recorded_cut("ended", None, ended), "an ended run");
    // At rest: the one guest waits on an event nobody signals, with no deadline.
    let never = Event::new(ClearMode::Manual);
    let wait = Box::new(move || {
        never.wait().expect_err("only the shutdown ends the wait");
    });
    assert!(
        !recorded_cut("rest", Some(wait), until_deadlocked),
        "at rest"
    );
    // A post due, made before any guest thread: it waits for one, and a stop cuts it.
    let posted = |rt: &Runtime| {
        rt.post_at(1, 1_000_000, [1]).expect("posted");
    };
    assert!(recorded_cut("posted", None, posted), "a post pending");
    // Woken by the host as it stops: whether the guest's wake is decided before the stop or
    // not, a thread could run (after it, the guest waits with a deadline, for good).
    let go = Event::new(ClearMode::Manual);
    let woken = Box::new({
        let go = go.clone();
        move || {
            go.wait().expect("the host's wake");
            let never = Event::new(ClearMode::Auto);
            // A timeout goes on; the shutdown's Cancelled ends the loop.
            while never.wait_timeout(Duration::from_millis(1)) != Err(hos::ResultCode::CANCELLED) {}
        }
    });
    let wake = move |rt: &Runtime| {
        until_deadlocked(rt);
        go.signal();
    };
    assert!(recorded_cut("woken", Some(woken), wake), "a woken waiter");
}
