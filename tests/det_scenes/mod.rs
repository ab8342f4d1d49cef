//! Guest scenes the deterministic mode's tests share: the guest main thread that spawns the
//! others, the wait for a softlock report, and a lock-order deadlock.
//!
//! Invariant: every guest of a scene is spawned by a guest (the main thread), so each start
//! is a decision of the run; a host thread that spawned while guests ran would do so at a
//! wall-time point, and a guest waiting for a thread not spawned yet would look deadlocked.

use hos::det::softlock::Softlock;
use hos::os::{ClearMode, Event, Mutex};
use hos::Runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Spawns the guest main thread running `body`, which spawns the other guests.
pub(crate) fn main_thread(
    rt: &Runtime,
    body: impl FnOnce(&Runtime) + Send + 'static,
) -> hos::thread::JoinHandle<()> {
    let inner = rt.clone();
    rt.thread()
        .name("MainThread")
        .priority(44)
        .spawn(move || body(&inner))
        .expect("the main guest thread")
}

/// The runtime's softlock once it is reported. A failsafe bound, not a timing: the report is
/// made by the decision that finds the run stuck, so it comes as soon as the guests got there.
pub(crate) fn softlock(rt: &Runtime) -> Softlock {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = rt.det_softlock() {
            return s;
        }
        assert!(Instant::now() < end, "no softlock reported");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Spawns guests "A" (core 0) and "B" (core 1), from a guest: each takes its own mutex, waits
/// until the other holds its own, then waits for the mutex the other holds. Neither ever gets
/// it; the shutdown ends both.
pub(crate) fn lock_order_deadlock(rt: &Runtime) -> [hos::thread::JoinHandle<()>; 2] {
    let (m1, m2) = (Arc::new(Mutex::new(false)), Arc::new(Mutex::new(false)));
    let (a_has, b_has) = (Event::new(ClearMode::Manual), Event::new(ClearMode::Manual));
    let spawn = |name: &str, core: i32, locks: [&Arc<Mutex>; 2], events: [&Event; 2]| {
        let [first, second] = locks.map(Arc::clone);
        let [mine, theirs] = events.map(Event::clone);
        rt.thread()
            .name(name)
            .priority(44)
            .ideal_core(core)
            .spawn(move || {
                let _held = first.lock().expect("its own mutex");
                mine.signal();
                if theirs.wait().is_ok() {
                    let _ = second.lock();
                }
            })
            .expect("a guest thread")
    };
    [
        spawn("A", 0, [&m1, &m2], [&a_has, &b_has]),
        spawn("B", 1, [&m2, &m1], [&b_has, &a_has]),
    ]
}
