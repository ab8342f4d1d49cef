//! A runtime with guest and host threads blocked in every kind of wait, for start/stop
//! cycles: shared by `examples/restart` (the full count, with figures) and `tests/restart.rs`
//! (a bounded count).

use hos::os::{
    wait_any, ClearMode, ConditionVariable, Event, MessageQueue, Mutex, Semaphore, TimerEvent,
    Waitable,
};
use hos::{Calibration, ResultCode, Runtime, ShutdownReport};
use std::sync::Arc;
use std::time::Duration;

/// Longer than any run: a wait that returns before it was cancelled.
const LONG: Duration = Duration::from_secs(3600);

/// The kinds of wait one cycle's threads block in.
pub(crate) const KINDS: usize = 11;

/// What every blocked thread of a cycle shares.
struct Objects {
    ev: Event,
    sem: Semaphore,
    empty: MessageQueue<u32>,
    full: MessageQueue<u32>,
    mutex: Mutex,
    cv: ConditionVariable,
    cv_mutex: Mutex,
    timer: TimerEvent,
}

/// One wait of kind `k`; every kind ends Cancelled at shutdown.
fn wait(o: &Objects, k: usize) -> Result<(), ResultCode> {
    match k % KINDS {
        0 => o.ev.wait(),
        1 => o.sem.acquire(),
        2 => o.empty.receive().map(drop),
        3 => o.full.send(1).map_err(|e| e.code),
        4 => o.mutex.lock().map(drop).map_err(|e| e.code()),
        5 => {
            let g = o.cv_mutex.lock().map_err(|e| e.code())?;
            let (g, r) = o.cv.wait(g);
            drop(g);
            r
        }
        6 => {
            let objects: [&dyn Waitable; 2] = [&o.ev, &o.sem];
            wait_any(&objects, None).map(drop)
        }
        7 => o.ev.wait_async().timeout(LONG).block(),
        8 => hos::svc::wait_synchronization(&[], -1).map(drop),
        9 => {
            // A periodic timer event signalled every hour: its wait is cancelled.
            o.timer.wait()
        }
        _ => {
            hos::svc::sleep_thread(LONG.as_nanos() as i64);
            Err(ResultCode::CANCELLED)
        }
    }
}

/// A runtime (its calibration measured when `measure`, else pinned) with `guests` guest
/// threads and `hosts` host threads blocked in every kind of wait in turn. Make it and stop it
/// on one thread: that thread holds the mutex the lock waits wait for.
pub(crate) struct Cycle {
    pub rt: Runtime,
    guests: Vec<hos::thread::JoinHandle<Result<(), ResultCode>>>,
    hosts: Vec<std::thread::JoinHandle<Result<(), ResultCode>>>,
    held: Arc<Objects>,
}

impl Cycle {
    pub(crate) fn start(guests: usize, hosts: usize, measure: bool) -> Cycle {
        let mut builder = Runtime::builder();
        if !measure {
            builder = builder.calibration(Calibration::default());
        }
        let rt = builder.build().expect("runtime");
        let o = Arc::new(Objects {
            ev: Event::new(ClearMode::Auto),
            sem: Semaphore::new(0, 1),
            empty: MessageQueue::new(1),
            full: MessageQueue::new(1),
            mutex: Mutex::new(false),
            cv: ConditionVariable::new(),
            cv_mutex: Mutex::new(false),
            timer: TimerEvent::new(ClearMode::Auto),
        });
        o.full.send(0).expect("room");
        o.timer
            .start_periodic(LONG, LONG)
            .expect("the runtime runs");
        // The mutex is held by the cycle's own thread until every waiter has left.
        o.mutex.lock().expect("free").leak();
        let mut all = Vec::with_capacity(guests);
        all.extend((0..guests).map(|i| {
            let o = o.clone();
            rt.thread()
                .name(format!("Blocked{i}"))
                .spawn(move || wait(&o, i))
                .expect("spawn")
        }));
        let hosts = (0..hosts)
            .map(|i| {
                let o = o.clone();
                std::thread::spawn(move || wait(&o, i))
            })
            .collect();
        Cycle {
            rt,
            guests: all,
            hosts,
            held: o,
        }
    }

    /// Shuts the runtime down and checks that every wait ended Cancelled; the report.
    pub(crate) fn stop(self) -> ShutdownReport {
        let report = self.rt.shutdown_timeout(Duration::from_secs(60));
        assert!(report.is_clean(), "{report}");
        for (i, g) in self.guests.into_iter().enumerate() {
            let out = g.join().expect("no panic");
            assert_eq!(
                out,
                Err(ResultCode::CANCELLED),
                "guest {i}, wait kind {}",
                i % KINDS
            );
        }
        for (i, h) in self.hosts.into_iter().enumerate() {
            let out = h.join().expect("no panic");
            assert_eq!(out, Err(ResultCode::CANCELLED), "host {i}, wait kind {i}");
        }
        self.held.mutex.unlock().expect("held since the start");
        report
    }
}
