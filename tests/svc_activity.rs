//! svcSetThreadActivity and the runtime's pause of every guest thread: a spinning guest stops
//! at its checkpoint and goes on when resumed; a thread paused in a wait stays paused after
//! the wait ends; the result codes of bad calls; a shutdown releases paused threads and ends
//! a pause that waits for a thread to stop. nn::os SuspendThread and ResumeThread are this
//! svc (HORIZON-KERNEL.md section 6.2).

mod common;
mod sdk;
mod until;

use common::rt;
use hos::os::Semaphore;
use hos::svc::{self, Handle, ThreadActivity};
use hos::{Doing, ResultCode, Runtime};
use sdk::join_within;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::Duration;
use until::until;

const LIMIT: Duration = Duration::from_secs(60);

/// A guest thread of `rt` that counts at every loop head (a checkpoint) until told to stop.
struct Spinner {
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: hos::thread::JoinHandle<()>,
}

impl Spinner {
    fn new(rt: &Runtime, name: &str) -> Spinner {
        let (count, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (c, s) = (count.clone(), stop.clone());
        let handle = rt
            .thread()
            .name(name)
            .spawn(move || {
                while !s.load(Relaxed) {
                    c.fetch_add(1, Relaxed);
                    svc::checkpoint();
                }
            })
            .unwrap();
        until("it counts", || count.load(Relaxed) > 0);
        Spinner {
            count,
            stop,
            handle,
        }
    }

    fn h(&self) -> Handle {
        self.handle.thread().handle()
    }

    /// Whether it counts on over a few milliseconds.
    fn advances(&self) -> bool {
        let at = self.count.load(Relaxed);
        std::thread::sleep(Duration::from_millis(5));
        self.count.load(Relaxed) != at
    }

    fn end(self) {
        self.stop.store(true, Relaxed);
        join_within(vec![self.handle], LIMIT);
    }
}

fn shows_paused(rt: &Runtime, id: u64) -> bool {
    rt.guest_states()
        .iter()
        .any(|g| g.id == id && matches!(g.doing, Doing::Waiting { on: "pause", .. }))
}

#[test]
fn a_paused_thread_stops_at_its_checkpoint_and_goes_on_when_resumed() {
    let s = Spinner::new(rt(), "Spinner");
    svc::set_thread_activity(s.h(), ThreadActivity::Paused).unwrap();
    assert!(!s.advances(), "no guest code runs while it is paused");
    assert!(!s.advances());
    assert!(shows_paused(rt(), s.handle.thread().id()));
    svc::set_thread_activity(s.h(), ThreadActivity::Runnable).unwrap();
    until("it counts again", || s.advances());
    s.end();
}

#[test]
fn the_wait_tree_shows_a_paused_thread() {
    let own = Runtime::builder()
        .calibration(hos::Calibration::default())
        .flight(true)
        .build()
        .unwrap();
    let s = Spinner::new(&own, "TreeSpinner");
    svc::set_thread_activity(s.h(), ThreadActivity::Paused).unwrap();
    let id = s.handle.thread().id();
    let paused = |tree: &hos::WaitTree| {
        let node = tree.node(id);
        node.is_some_and(
            |n| matches!(&n.state, hos::State::Waiting { what } if what.contains("pause")),
        )
    };
    until("the tree shows the pause", || paused(&own.wait_tree()));
    svc::set_thread_activity(s.h(), ThreadActivity::Runnable).unwrap();
    until("the tree shows it running", || !paused(&own.wait_tree()));
    s.end();
    own.shutdown();
}

#[test]
fn a_thread_paused_in_a_wait_stays_paused_when_the_wait_ends() {
    let sem = Arc::new(Semaphore::new(0, 1));
    let passed = Arc::new(AtomicBool::new(false));
    let (s, p) = (sem.clone(), passed.clone());
    let t = rt()
        .thread()
        .name("PausedWaiter")
        .spawn(move || {
            s.acquire().unwrap();
            p.store(true, SeqCst);
        })
        .unwrap();
    let h = t.thread().handle();
    until("it waits", || {
        rt().guest_states().iter().any(|g| {
            g.name == "PausedWaiter"
                && matches!(
                    g.doing,
                    Doing::Waiting {
                        on: "semaphore",
                        ..
                    }
                )
        })
    });
    // It waits: the pause returns at once.
    svc::set_thread_activity(h, ThreadActivity::Paused).unwrap();
    sem.release(1).unwrap();
    until("the wait ended in the pause", || {
        shows_paused(rt(), t.thread().id())
    });
    assert_eq!(sem.count(), 0, "its wait took the count");
    std::thread::sleep(Duration::from_millis(5));
    assert!(!passed.load(SeqCst), "no guest code ran after the wait");
    svc::set_thread_activity(h, ThreadActivity::Runnable).unwrap();
    join_within(vec![t], LIMIT);
    assert!(passed.load(SeqCst));
}

#[test]
fn bad_calls_get_their_codes() {
    assert_eq!(
        ThreadActivity::try_from(2),
        Err(ResultCode::INVALID_ENUM_VALUE)
    );
    assert_eq!(ThreadActivity::try_from(0), Ok(ThreadActivity::Runnable));
    assert_eq!(
        svc::set_thread_activity(Handle(0x1234_5678), ThreadActivity::Paused),
        Err(ResultCode::INVALID_HANDLE)
    );
    assert_eq!(
        svc::set_thread_activity(Handle::CURRENT_THREAD, ThreadActivity::Paused),
        Err(ResultCode::INVALID_HANDLE),
        "no guest thread calls"
    );
    let me = rt()
        .thread()
        .spawn(|| svc::set_thread_activity(Handle::CURRENT_THREAD, ThreadActivity::Paused))
        .unwrap();
    assert_eq!(join_within(vec![me], LIMIT), [Err(ResultCode::BUSY)]);
    let s = Spinner::new(rt(), "BadCalls");
    let h = s.h();
    assert_eq!(
        svc::set_thread_activity(h, ThreadActivity::Runnable),
        Err(ResultCode::INVALID_STATE),
        "not paused"
    );
    svc::set_thread_activity(h, ThreadActivity::Paused).unwrap();
    assert_eq!(
        svc::set_thread_activity(h, ThreadActivity::Paused),
        Err(ResultCode::INVALID_STATE),
        "paused already"
    );
    svc::set_thread_activity(h, ThreadActivity::Runnable).unwrap();
    let thread = s.handle.thread().clone();
    let share = s.handle.handle_share();
    s.end();
    assert_eq!(
        svc::set_thread_activity(thread.handle(), ThreadActivity::Paused),
        Err(ResultCode::INVALID_STATE),
        "ended"
    );
    drop(share);
}

#[test]
fn pause_guests_stops_every_guest_but_the_caller() {
    let own = Runtime::builder()
        .calibration(hos::Calibration::default())
        .build()
        .unwrap();
    let spinners: Vec<_> = (0..3)
        .map(|i| Spinner::new(&own, &format!("All{i}")))
        .collect();
    let r = own.clone();
    let pauser = own
        .thread()
        .name("Pauser")
        .spawn(move || r.pause_guests(None))
        .unwrap();
    assert_eq!(
        join_within(vec![pauser], LIMIT),
        [Ok(3)],
        "the pauser is no guest it pauses"
    );
    assert!(spinners.iter().all(|s| !s.advances()));
    // Paused one by one too: it counts, and resuming it alone works.
    assert_eq!(own.pause_guests(Some(LIMIT)), Ok(3));
    assert_eq!(own.resume_guests(), 3);
    assert_eq!(own.resume_guests(), 0, "nothing left paused");
    for s in &spinners {
        until("it counts again", || s.advances());
    }
    spinners.into_iter().for_each(Spinner::end);
    own.shutdown();
}

#[test]
fn a_shutdown_releases_paused_threads_and_ends_a_pause_that_waits() {
    let own = Runtime::builder()
        .calibration(hos::Calibration::default())
        .build()
        .unwrap();
    let s = Spinner::new(&own, "ShutPaused");
    svc::set_thread_activity(s.h(), ThreadActivity::Paused).unwrap();
    // A thread that runs without checkpoints never stops: its pause waits.
    let (stop, started) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (st, go) = (stop.clone(), started.clone());
    let busy = own
        .thread()
        .name("NoCheckpoints")
        .spawn(move || {
            go.store(true, Relaxed);
            while !st.load(Relaxed) {}
        })
        .unwrap();
    // Paused before its body runs, it would stop at its first core: let it run first.
    until("it runs", || started.load(Relaxed));
    let h = busy.thread().handle();
    let pause = std::thread::spawn(move || svc::set_thread_activity(h, ThreadActivity::Paused));
    std::thread::sleep(Duration::from_millis(20));
    assert!(!pause.is_finished(), "it waits for the thread to stop");
    // Both threads run on (they wait for no flag a shutdown sets): the join gives up on them.
    let report = own.shutdown_timeout(Duration::from_millis(50));
    assert_eq!(report.stragglers.len(), 2);
    assert_eq!(pause.join().unwrap(), Err(ResultCode::CANCELLED));
    // The paused thread was released: it runs guest code again.
    until("it counts again", || s.advances());
    assert_eq!(
        svc::set_thread_activity(s.h(), ThreadActivity::Paused),
        Err(ResultCode::CANCELLED),
        "a shut-down runtime pauses nothing"
    );
    assert_eq!(own.resume_guests(), 0, "the shutdown lifted every pause");
    stop.store(true, Relaxed);
    s.end();
    join_within(vec![busy], LIMIT);
    assert_eq!(own.pause_guests(None), Err(ResultCode::CANCELLED));
}
